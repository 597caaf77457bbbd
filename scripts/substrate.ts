/**
 * `deno task substrate --registry ADDR [--insecure] [--lock FILE]`: builds the Debian substrate's
 * images from Debian's packages, pushes them to the registry at `ADDR` and writes the Debian
 * bundle (`bundles/substrate-debian.lock`) pinning them by digest.
 *
 * Public image registries are unreachable from these machines, so every image starts from a
 * Debian root built here: `debootstrap --variant=minbase` of the lab's suite from Debian's
 * archive, cached under the lab's cache directory (`/var/cache/mesh-lab`) and imported with
 * `podman import`. On it, `podman build` installs from Debian's archive
 * (`--no-install-recommends`, apt lists removed):
 *
 * - `mesh-postgres`: `postgresql-15`, with an entrypoint that initialises the data directory (a
 *   named volume) on first start with the password in `/run/secrets/store-password` and serves
 *   scram-sha-256 on every address;
 * - `mesh-rabbitmq`: `rabbitmq-server` with its management plugin, with an entrypoint whose
 *   administrative account `mesh` takes its password from `/run/secrets/broker-password`;
 * - `mesh-control`: the Deno runtime (npm `@deno/linux-x64-glibc`, as `deno task hosts` uses) and
 *   mesh-control bundled into one JavaScript file, for the schema and topology steps.
 *
 * Every image is tagged by the digest of its recipe (and of its base, and for mesh-control of
 * its program), so it is built once and reused. A second stage adds labels recording the Debian
 * package versions inside (`mesh.debian.packages`, read with `dpkg-query` from the built image).
 * Exit 0 when the bundle was written; 1 when a build or push failed (the bundle is not written);
 * 2 on bad arguments.
 */

import { parseArgs } from "node:util";
import { run } from "../lib/command.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { LAB_CACHE, MIRROR, SUITE } from "../tests/lab/mod.ts";
import { MIGRATIONS } from "../control/db.ts";
import { MAX_DECLARATION_MESSAGE_BYTES } from "../lib/broker_names.ts";
import { CONTROL_SERVICE_PERMISSIONS } from "../control/permissions.ts";
import { BUILD_QUEUE, EXCHANGE, REPORTS_QUEUE } from "../lib/broker_names.ts";
import { bundleProgram, fetchRuntime } from "./onefile.ts";
import { isLoopback } from "../lib/registry_manifest.ts";

const root = new URL("../", import.meta.url).pathname;
// Podman on these VMs needs the project's containers.conf (runc, no default ulimits).
if (Deno.env.get("CONTAINERS_CONF") === undefined) {
  Deno.env.set("CONTAINERS_CONF", `${root}containers.conf`);
}

const sha256Hex = async (text: string): Promise<string> =>
  Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const imageExists = async (image: string) =>
  (await run(["podman", "image", "exists", image], { allowFailure: true })).code === 0;

/** The base: a minbase Debian root, cached under the lab's cache and imported. */
async function ensureBase(log: (s: string) => void): Promise<string> {
  const recipe = JSON.stringify({ suite: SUITE, variant: "minbase", mirror: MIRROR, v: 1 });
  const tag = (await sha256Hex(recipe)).slice(0, 12);
  const image = `localhost/mesh-substrate-base:${SUITE}-${tag}`;
  if (await imageExists(image)) return image;
  const dir = `${LAB_CACHE}/substrate-base-${tag}-root`;
  const done = `${dir}.complete`;
  if (!(await exists(done))) {
    log(`debootstrap ${SUITE} (minbase) into ${dir}`);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.mkdir(LAB_CACHE, { recursive: true });
    try {
      await run(["debootstrap", "--variant=minbase", SUITE, dir, MIRROR], {
        timeoutMs: 20 * 60_000,
      });
      await run(["chroot", dir, "apt-get", "clean"]);
      await run([
        "sh",
        "-c",
        'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin',
        "sh",
        dir,
      ]);
      await Deno.writeTextFile(done, new Date().toISOString() + "\n");
    } catch (error) {
      // A root half built is of no use to the next run, which starts it again: not left behind.
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
  }
  const tar = `${dir}.tar`;
  try {
    await run(["tar", "-C", dir, "-cf", tar, "."], { timeoutMs: 10 * 60_000 });
    await run(["podman", "import", "--change", 'CMD ["/bin/sh"]', tar, image], {
      timeoutMs: 10 * 60_000,
    });
  } finally {
    await Deno.remove(tar).catch(() => {});
  }
  return image;
}

const APT = (packages: string[]) =>
  `RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${
    packages.join(" ")
  } && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/*`;

const POSTGRES_ENTRYPOINT = `#!/bin/sh
# mesh-store: PostgreSQL 15 with its data in /var/lib/postgresql/data (a named volume). On first
# start the data directory is initialised with the superuser postgres's password read from
# /run/secrets/store-password (a root-only file of the node, mounted read-only); the password
# never reaches an argument or the environment. Then postgres runs as postgres, in the
# foreground, listening on every address with scram-sha-256.
set -eu
data=/var/lib/postgresql/data
secret=/run/secrets/store-password
[ -s "$secret" ] || { echo "mesh-store: no password at $secret: mount the node's secret there" >&2; exit 2; }
mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
chmod 0700 "$data"
if [ ! -s "$data/PG_VERSION" ]; then
  umask 077
  pwfile=$(mktemp)
  cat "$secret" >"$pwfile"
  chown postgres "$pwfile"
  setpriv --reuid=postgres --regid=postgres --init-groups \\
    /usr/lib/postgresql/15/bin/initdb -D "$data" -U postgres --pwfile="$pwfile" \\
    --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  printf "listen_addresses = '*'\\n" >>"$data/postgresql.conf"
  printf 'host all all 0.0.0.0/0 scram-sha-256\\nhost all all ::/0 scram-sha-256\\n' >>"$data/pg_hba.conf"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups /usr/lib/postgresql/15/bin/postgres -D "$data"
`;

const RABBITMQ_ENTRYPOINT = `#!/bin/sh
# mesh-broker: RabbitMQ with the management plugin, node rabbit@localhost, data in
# /var/lib/rabbitmq (a named volume). The administrative account is "mesh", its password read
# from /run/secrets/broker-password (a root-only file of the node, mounted read-only) into a
# root-only configuration file; there is no guest account. The password is taken at the first
# start (when the broker's database is created), as RabbitMQ does.
set -eu
secret=/run/secrets/broker-password
[ -s "$secret" ] || { echo "mesh-broker: no password at $secret: mount the node's secret there" >&2; exit 2; }
umask 027
{
  printf 'default_user = mesh\\n'
  printf 'default_pass = %s\\n' "$(cat "$secret")"
  printf 'default_permissions.configure = .*\\ndefault_permissions.read = .*\\ndefault_permissions.write = .*\\n'
  printf 'default_user_tags.administrator = true\\n'
  printf 'loopback_users = none\\n'
  # No message larger than the largest a mesh program takes (a declaration message, 64 MiB:
  # MAX_DECLARATION_MESSAGE_BYTES of lib/broker_names.ts): the broker refuses its publish.
  printf 'max_message_size = ${MAX_DECLARATION_MESSAGE_BYTES}\\n'
} >/etc/rabbitmq/rabbitmq.conf
chown root:rabbitmq /etc/rabbitmq/rabbitmq.conf
chmod 0640 /etc/rabbitmq/rabbitmq.conf
mkdir -p /var/lib/rabbitmq /var/log/rabbitmq
chown -R rabbitmq:rabbitmq /var/lib/rabbitmq /var/log/rabbitmq
export HOME=/var/lib/rabbitmq RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_LOGS=-
exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups /usr/lib/rabbitmq/bin/rabbitmq-server
`;

/** One substrate image: its name, recipe and the Debian packages whose versions it records. */
interface Recipe {
  name: string;
  /** Files written into the build context, by name. */
  files: Record<string, string | Uint8Array>;
  containerfile: (base: string) => string;
  packages: string[];
}

async function recipes(work: string, log: (s: string) => void): Promise<Recipe[]> {
  // mesh-control: the runtime from npm (as `deno task hosts` uses) and the bundled program.
  const arch = Deno.build.arch === "aarch64" ? "aarch64" : "x86_64";
  const runtime = await fetchRuntime(arch, `${root}dist/.cache`);
  log(`bundling mesh-control`);
  // As the one-file programs carry it (code splitting: a command loads only its own modules), the
  // files checked against their SHA256SUMS when the image is built.
  const program = await bundleProgram(`${root}control/main.ts`, `${work}/mesh-control-program`, {
    config: `${root}deno.json`,
  });
  const programFiles: Record<string, Uint8Array> = {};
  for (const name of [...program.files, "SHA256SUMS"]) {
    programFiles[`mesh-control/${name}`] = await Deno.readFile(`${program.dir}/${name}`);
  }
  const denoGz = await Deno.readFile(runtime.gzPath);
  return [
    {
      name: "mesh-postgres",
      files: { "entrypoint.sh": POSTGRES_ENTRYPOINT },
      containerfile: (base) =>
        `FROM ${base}\n${
          APT(["postgresql-15"])
        }\nCOPY entrypoint.sh /usr/local/sbin/mesh-store\nRUN chmod 0755 /usr/local/sbin/mesh-store\n` +
        `VOLUME /var/lib/postgresql/data\nEXPOSE 5432\nSTOPSIGNAL SIGINT\nENTRYPOINT ["/usr/local/sbin/mesh-store"]\n`,
      packages: ["postgresql-15"],
    },
    {
      name: "mesh-rabbitmq",
      files: { "entrypoint.sh": RABBITMQ_ENTRYPOINT },
      containerfile: (base) =>
        `FROM ${base}\n${
          APT(["rabbitmq-server"])
        }\nRUN rabbitmq-plugins enable --offline rabbitmq_management >/dev/null\n` +
        `COPY entrypoint.sh /usr/local/sbin/mesh-broker\nRUN chmod 0755 /usr/local/sbin/mesh-broker\n` +
        `VOLUME /var/lib/rabbitmq\nEXPOSE 5672 15672\nENTRYPOINT ["/usr/local/sbin/mesh-broker"]\n`,
      packages: ["rabbitmq-server", "erlang-base"],
    },
    {
      name: "mesh-control",
      files: { "deno.gz": denoGz, ...programFiles },
      containerfile: (base) =>
        `FROM ${base}\nCOPY deno.gz /usr/lib/mesh/deno.gz\nCOPY mesh-control /usr/lib/mesh/mesh-control\n` +
        `RUN gzip -d /usr/lib/mesh/deno.gz && chmod 0755 /usr/lib/mesh/deno && ` +
        `echo "${runtime.sha256}  /usr/lib/mesh/deno" | sha256sum -c --quiet && ` +
        `cd /usr/lib/mesh/mesh-control && sha256sum -c --quiet SHA256SUMS\n` +
        `ENV DENO_DIR=/var/cache/mesh-control DENO_NO_UPDATE_CHECK=1 DENO_NO_PACKAGE_JSON=1\n` +
        `LABEL mesh.runtime="${runtime.source}" mesh.runtime.integrity="${runtime.integrity}"\n` +
        `ENTRYPOINT ["/usr/lib/mesh/deno", "run", "--quiet", "--no-config", "--no-lock", "--no-remote", "--no-prompt", ${
          CONTROL_SERVICE_PERMISSIONS.map((p) => JSON.stringify(p)).join(", ")
        }, "/usr/lib/mesh/mesh-control/main.js"]\n`,
      packages: ["libc6", "libgcc-s1"],
    },
  ];
}

/** Builds `recipe` on `base` unless its content-addressed tag exists; returns the image. */
async function ensureImage(
  recipe: Recipe,
  base: string,
  work: string,
  log: (s: string) => void,
): Promise<string> {
  const parts: string[] = [recipe.containerfile(base)];
  for (const [name, content] of Object.entries(recipe.files).sort()) {
    const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
    const digest = Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    parts.push(`${name}:${digest}`);
  }
  const tag = (await sha256Hex(parts.join("\n"))).slice(0, 12);
  const image = `localhost/${recipe.name}:${tag}`;
  if (await imageExists(image)) {
    log(`${image}: built before, reused`);
    return image;
  }
  const context = `${work}/${recipe.name}`;
  await Deno.mkdir(context, { recursive: true });
  for (const [name, content] of Object.entries(recipe.files)) {
    if (name.includes("/")) {
      await Deno.mkdir(`${context}/${name.slice(0, name.lastIndexOf("/"))}`, { recursive: true });
    }
    if (typeof content === "string") await Deno.writeTextFile(`${context}/${name}`, content);
    else await Deno.writeFile(`${context}/${name}`, content);
  }
  await Deno.writeTextFile(`${context}/Containerfile`, recipe.containerfile(base));
  const stage = `localhost/${recipe.name}-stage:${tag}`;
  log(`building ${recipe.name} on ${base}`);
  await run(["podman", "build", "--quiet", "--layers=false", "-t", stage, context], {
    timeoutMs: 30 * 60_000,
  });
  // The versions of the Debian packages inside, read from the image itself.
  const versions = await run([
    "podman",
    "run",
    "--rm",
    "--entrypoint",
    "dpkg-query",
    stage,
    "-W",
    "-f",
    "${Package}=${Version} ",
    ...recipe.packages,
  ]);
  const debian = await run([
    "podman",
    "run",
    "--rm",
    "--entrypoint",
    "cat",
    stage,
    "/etc/debian_version",
  ]);
  const label = `${context}/Containerfile.labels`;
  await Deno.writeTextFile(
    label,
    `FROM ${stage}\nLABEL mesh.debian.packages=${JSON.stringify(versions.stdout.trim())} ` +
      `mesh.debian.version=${JSON.stringify(debian.stdout.trim())} mesh.debian.suite=${
        JSON.stringify(SUITE)
      } org.opencontainers.image.title=${JSON.stringify(recipe.name)}\n`,
  );
  try {
    await run(["podman", "build", "--quiet", "-t", image, "-f", label, context]);
  } finally {
    // The first stage is of no use once the second is built, or failed: not left behind.
    await run(["podman", "rmi", stage], { allowFailure: true });
  }
  log(`${image}: ${versions.stdout.trim()}`);
  return image;
}

/** Pushes `image` to `registry` as `name`; returns the reference pinned by digest. */
async function push(
  image: string,
  registry: string,
  name: string,
  insecure: boolean,
  work: string,
): Promise<string> {
  const digestFile = `${work}/${name}.digest`;
  await run([
    "podman",
    "push",
    "--quiet",
    `--tls-verify=${!insecure}`,
    "--digestfile",
    digestFile,
    image,
    `${registry}/${name}:${image.split(":").pop()}`,
  ], { timeoutMs: 30 * 60_000 });
  const digest = (await Deno.readTextFile(digestFile)).trim();
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
    throw new Error(`podman push of ${image} gave no digest: "${digest}"`);
  }
  return `${registry}/${name}@${digest}`;
}

/** The images the Debian bundle pins, by role. */
export interface SubstrateImages {
  store: string;
  broker: string;
  control: string;
}

/** The sizes of the built images, bytes, as podman reports them. */
export type ImageSizes = Record<string, number>;

const SECRETS = "/etc/mesh/secrets";

/** Where the bundle puts podman's events configuration (a containers.conf drop-in). */
export const PODMAN_EVENTS_CONF = "/etc/containers/containers.conf.d/50-mesh-events.conf";

/**
 * podman's events (one for every exec, healthcheck, start and stop of a container) into a file
 * of bounded size, rotated by podman (default path `/run/libpod/events/events.log`, on tmpfs), not
 * the journal: podman 4.3 logs each to journald by default, and the substrate's probes (every
 * `podman exec` of every apply) filled it. `podman events` still reads them.
 */
const PODMAN_EVENTS =
  `# Written by mesh-host (bundle substrate-debian). podman's events (one for every exec,
# healthcheck, start and stop of a container) go to a file podman rotates at 1 MB
# (/run/libpod/events/events.log), not to the journal. podman events still reads them.
[engine]
events_logger = "file"
events_logfile_max_size = "1m"
`;

/**
 * The Debian bundle pinning `images`: the mesh layout, the container runtime package and its
 * events configuration ({@linkcode PODMAN_EVENTS_CONF}: events to a bounded file, not the
 * journal), the node's
 * credentials (generated on the node at its first apply, root-only files under
 * `/etc/mesh/secrets`), the store, the inventory database, its schema, the broker and its
 * topology, each verified by asking the thing itself.
 */
export function debianBundle(images: SubstrateImages): unknown {
  const migrations = MIGRATIONS.map((m) => m.name).join(",");
  // Each credential is read from its file into the environment of the one process that needs
  // it: never an argument (visible in ps), never in this bundle.
  const env = `store=$(cat ${SECRETS}/store) && broker=$(cat ${SECRETS}/broker) && ` +
    `export MESH_DATABASE_URL="postgres://postgres:$store@127.0.0.1:5432/inventory" ` +
    `MESH_BROKER_URL="amqp://mesh:$broker@127.0.0.1:5672/%2F" ` +
    `MESH_BROKER_API_URL="http://mesh:$broker@127.0.0.1:15672" && `;
  const control = (args: string) =>
    `${env}exec podman run --rm --network host -e MESH_DATABASE_URL -e MESH_BROKER_URL -e MESH_BROKER_API_URL ${images.control} ${args}`;
  const psql = (
    sql: string,
    database = "postgres",
  ) => [
    "podman",
    "exec",
    "-u",
    "postgres",
    "mesh-store",
    "psql",
    "-X",
    "-q",
    "-At",
    "-v",
    "ON_ERROR_STOP=1",
    "-d",
    database,
    "-c",
    sql,
  ];
  // The broker asked from inside its own container (`podman exec`: no container is made). A
  // verify runs at every apply; a `podman run --rm` of mesh-control there was a container that
  // the node's drift check, run at that moment, rightly found undeclared.
  // The node is rabbit@localhost (the entrypoint's RABBITMQ_NODENAME, not in an exec's environment).
  const rabbit = (tool: string, args: string, exec = "podman exec") =>
    `${exec} mesh-broker ${tool} -q -n rabbit@localhost ${args}`;
  const brokerAnswers = [
    // Both ports accept (AMQP, the management API); each CLI run below starts an Erlang VM.
    `timeout 5 bash -c "</dev/tcp/127.0.0.1/5672 && </dev/tcp/127.0.0.1/15672"`,
    // RabbitMQ itself answers and the account authenticates, its password on standard input
    // (rabbitmqctl reads it there when it is not an argument): never an argument, visible in ps.
    `${
      rabbit("rabbitmqctl", "authenticate_user mesh", "podman exec -i")
    } <${SECRETS}/broker >/dev/null`,
  ].join(" && ");
  // The topology `mesh-control broker setup` declares, read from the broker's own listing: the
  // exchange (topic, durable) and the shared queues (durable), each named when it is missing.
  const has = (listing: string, line: string, what: string) =>
    `printf '%s\\n' "$${listing}" | grep -qxF '${line}' || { echo "the broker has no ${what}" >&2; exit 1; }`;
  const brokerTopology = [
    `exchanges=$(${
      rabbit("rabbitmqctl", "--no-table-headers list_exchanges name type durable")
    }) || exit 1`,
    `queues=$(${rabbit("rabbitmqctl", "--no-table-headers list_queues name durable")}) || exit 1`,
    has("exchanges", `${EXCHANGE}\ttopic\ttrue`, `durable topic exchange named ${EXCHANGE}`),
    ...[REPORTS_QUEUE, BUILD_QUEUE].map((q) =>
      has("queues", `${q}\ttrue`, `durable queue named ${q}`)
    ),
  ].join("; ");
  // Waits, bounded, for a thing that was just started to answer; the verify then asks it.
  const waitFor = (what: string, probe: string) =>
    `i=0; until said=$(${probe} 2>&1); do i=$((i+1)); if [ $i -ge 120 ]; then echo "${what} did not answer within 120 s: $said" >&2; exit 1; fi; sleep 1; done`;
  return {
    bundle: 1,
    system: "debian",
    says:
      "The Debian substrate: the mesh layout, the container runtime (podman, its events to a bounded file rather than the journal), the node's credentials (generated here at the first apply, root-only files under /etc/mesh/secrets, never in this bundle), the store (PostgreSQL, data in the named volume mesh-store-data), the inventory database and its schema (mesh-control migrate), the broker (RabbitMQ with its management API, data in mesh-broker-data) and its topology (mesh-control broker setup). Images were built from Debian's packages by `deno task substrate` and are pinned by digest.",
    declaration: {
      version: 1,
      resources: [
        { id: "mesh-state", type: "directory", path: "/var/lib/mesh", mode: "0755" },
        { id: "mesh-host-state", type: "directory", path: "/var/lib/mesh/host", mode: "0700" },
        { id: "mesh-lib", type: "directory", path: "/usr/lib/mesh", mode: "0755" },
        { id: "mesh-etc", type: "directory", path: "/etc/mesh", mode: "0755" },
        {
          id: "mesh-etc-readme",
          type: "file",
          path: "/etc/mesh/README",
          mode: "0644",
          content:
            "This directory is maintained by mesh-host (bundle substrate-debian).\nState: /var/lib/mesh/host (store.json, known-good, failures). Host binaries: /usr/lib/mesh.\nCredentials: /etc/mesh/secrets (root only): store (PostgreSQL's postgres), broker (RabbitMQ's mesh).\n",
        },
        { id: "mesh-secrets", type: "directory", path: SECRETS, mode: "0700" },
        { id: "container-runtime", type: "package", package: "podman" },
        {
          id: "container-runtime-config",
          type: "directory",
          path: "/etc/containers/containers.conf.d",
          mode: "0755",
        },
        {
          id: "container-runtime-events",
          type: "file",
          path: PODMAN_EVENTS_CONF,
          mode: "0644",
          content: PODMAN_EVENTS,
        },
        {
          id: "credentials",
          type: "action",
          command: [
            "sh",
            "-c",
            `umask 077 && for n in store broker; do f=${SECRETS}/$n; [ -s "$f" ] && continue; ` +
            `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' >"$f.tmp" && mv "$f.tmp" "$f" || { rm -f "$f.tmp"; exit 1; }; done`,
          ],
          verify: [
            "sh",
            "-c",
            `for n in store broker; do f=${SECRETS}/$n; [ -s "$f" ] || { echo "$f is missing or empty" >&2; exit 1; }; ` +
            `m=$(stat -c %a:%u "$f"); [ "$m" = 600:0 ] || { echo "$f is $m, not 600:0 (mode:owner)" >&2; exit 1; }; done`,
          ],
        },
        {
          id: "store",
          type: "container",
          name: "mesh-store",
          image: images.store,
          volumes: [
            "mesh-store-data:/var/lib/postgresql/data",
            `${SECRETS}/store:/run/secrets/store-password:ro`,
          ],
          args: ["--network", "host"],
        },
        {
          id: "inventory-database",
          type: "action",
          command: [
            "sh",
            "-c",
            `${
              waitFor(
                "the store (PostgreSQL in mesh-store)",
                "podman exec -u postgres mesh-store pg_isready",
              )
            }; ` +
            `podman exec -u postgres mesh-store psql -X -q -At -d postgres -c "select 1 from pg_database where datname = 'inventory'" | grep -q 1 || ` +
            `podman exec -u postgres mesh-store createdb inventory`,
          ],
          verify: psql("select 'inventory answers'", "inventory"),
        },
        {
          id: "inventory-schema",
          type: "action",
          command: ["sh", "-c", control("migrate")],
          verify: [
            "sh",
            "-c",
            `got=$(podman exec -u postgres mesh-store psql -X -At -d inventory -c "select string_agg(name, ',' order by name) from schema_migrations") || exit 1; ` +
            `[ "$got" = "${migrations}" ] || { echo "schema_migrations holds \\"$got\\", not ${migrations}" >&2; exit 1; }`,
          ],
        },
        {
          id: "broker",
          type: "container",
          name: "mesh-broker",
          image: images.broker,
          volumes: [
            "mesh-broker-data:/var/lib/rabbitmq",
            `${SECRETS}/broker:/run/secrets/broker-password:ro`,
          ],
          args: ["--network", "host"],
        },
        {
          id: "broker-answers",
          type: "action",
          command: [
            "sh",
            "-c",
            // Ports that accept are the cheap wait (each mesh-control run copies its image's root
            // on vfs storage); the verify, run after it, asks the broker itself.
            waitFor(
              "the broker (RabbitMQ in mesh-broker)",
              `timeout 5 bash -c "</dev/tcp/127.0.0.1/5672 && </dev/tcp/127.0.0.1/15672"`,
            ),
          ],
          verify: ["sh", "-c", brokerAnswers],
        },
        {
          id: "broker-topology",
          type: "action",
          command: ["sh", "-c", control("broker setup")],
          verify: ["sh", "-c", brokerTopology],
        },
      ],
    },
  };
}

if (import.meta.main) {
  const log = (s: string) => console.error(`substrate: ${s}`);
  let parsed;
  try {
    parsed = parseArgs({
      args: Deno.args,
      options: {
        registry: { type: "string" },
        insecure: { type: "boolean" },
        lock: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    console.error(`deno task substrate: ${messageOf(error)}`);
    Deno.exit(2);
  }
  const registry = parsed.values.registry;
  if (registry === undefined || !/^[A-Za-z0-9.-]+(:\d+)?$/.test(registry)) {
    console.error(
      `deno task substrate: --registry HOST[:PORT] is required${
        registry === undefined ? "" : `, not "${registry}"`
      }`,
    );
    Deno.exit(2);
  }
  const loopback = isLoopback(registry);
  const insecure = parsed.values.insecure === true || loopback;
  const lock = parsed.values.lock ?? `${root}bundles/substrate-debian.lock`;
  const work = await Deno.makeTempDir({ prefix: "mesh-substrate-" });
  // Interrupted (Ctrl-C, a service stopped), the run removes its work directory before it exits:
  // an exit from a signal runs no finally.
  const interrupted = (signal: "SIGINT" | "SIGTERM", code: number) => () => {
    log(`${signal}: removing ${work}`);
    try {
      Deno.removeSync(work, { recursive: true });
    } catch { /* already gone */ }
    Deno.exit(code);
  };
  const onInt = interrupted("SIGINT", 130);
  const onTerm = interrupted("SIGTERM", 143);
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  try {
    const base = await ensureBase(log);
    const built: Record<string, string> = {};
    const sizes: ImageSizes = {};
    for (const recipe of await recipes(work, log)) {
      const image = await ensureImage(recipe, base, work, log);
      built[recipe.name] = await push(image, registry, recipe.name, insecure, work);
      sizes[recipe.name] = Number(
        (await run(["podman", "image", "inspect", "--format", "{{.Size}}", image])).stdout.trim(),
      );
      log(`pushed ${built[recipe.name]} (${(sizes[recipe.name]! / 1e6).toFixed(0)} MB)`);
    }
    const bundle = debianBundle({
      store: built["mesh-postgres"]!,
      broker: built["mesh-rabbitmq"]!,
      control: built["mesh-control"]!,
    });
    await writeFileAtomic(lock, JSON.stringify(bundle, null, 2) + "\n");
    console.log(JSON.stringify({ lock, images: built, sizes }, null, 2));
  } catch (error) {
    console.error(`deno task substrate: ${messageOf(error)}`);
    // Not Deno.exit: it would leave before the finally below removed the work directory.
    Deno.exitCode = 1;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
    Deno.removeSignalListener("SIGINT", onInt);
    Deno.removeSignalListener("SIGTERM", onTerm);
  }
}
