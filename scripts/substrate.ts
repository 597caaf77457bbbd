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
 *   scram-sha-256 on every address, TLS on with the certificate `/run/mesh/store.crt` and key
 *   `/run/secrets/store.key`, and from any address but loopback TLS only (`hostssl`);
 * - `mesh-rabbitmq`: `rabbitmq-server` with its management plugin, with an entrypoint whose
 *   administrative account `mesh` takes its password from `/run/secrets/broker-password`, AMQPS
 *   on 5671 and HTTPS on 15671 with `/run/mesh/broker.crt`, `/run/secrets/broker.key` and
 *   `/run/mesh/ca.crt`, plain AMQP (5672) and HTTP (15672) on loopback only;
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
import { CA_KEY_FILE, RENEW_BEFORE_DAYS } from "../lib/mesh_ca.ts";
import { DEFAULT_CA_FILE } from "../lib/wire_trust.ts";
import { CONTROL_KEY_PATH, SIGNING_KEY_PATH } from "../lib/signing.ts";
import { MAX_DECLARATION_MESSAGE_BYTES } from "../lib/broker_names.ts";
import { CONTROL_CA_PERMISSIONS, CONTROL_SERVICE_PERMISSIONS } from "../control/permissions.ts";
import { BUILD_QUEUE, EXCHANGE, REPORTS_QUEUE } from "../lib/broker_names.ts";
import { buildCacheDir, bundleProgram, fetchRuntime } from "./onefile.ts";
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

/**
 * The store's client authentication (`hba_file`, carried by the image): peer on the socket, any
 * method over loopback, and from every other address only over TLS (`hostssl`) with
 * scram-sha-256. A plain connection from the network finds no line and is refused.
 */
const POSTGRES_HBA = `# mesh-store (image mesh-postgres): who may connect, and how.
local   all all                 peer
host    all all 127.0.0.1/32    scram-sha-256
host    all all ::1/128         scram-sha-256
hostssl all all 0.0.0.0/0       scram-sha-256
hostssl all all ::/0            scram-sha-256
`;

const POSTGRES_ENTRYPOINT = `#!/bin/sh
# mesh-store: PostgreSQL 15 with its data in /var/lib/postgresql/data (a named volume). On first
# start the data directory is initialised with the superuser postgres's password read from
# /run/secrets/store-password (a root-only file of the node, mounted read-only); the password
# never reaches an argument or the environment. Then postgres runs as postgres, in the
# foreground, listening on every address with scram-sha-256, TLS on (ssl = on) with the server
# certificate /run/mesh/store.crt and its key /run/secrets/store.key (both mounted read-only from
# the node; the key, root-only there, is copied at every start to a file only postgres reads),
# and from any address but loopback only over TLS (the image's pg_hba.conf, hostssl).
set -eu
data=/var/lib/postgresql/data
secret=/run/secrets/store-password
cert=/run/mesh/store.crt
key=/run/secrets/store.key
[ -s "$secret" ] || { echo "mesh-store: no password at $secret: mount the node's secret there" >&2; exit 2; }
[ -s "$cert" ] || { echo "mesh-store: no TLS certificate at $cert: mount the node's store certificate there" >&2; exit 2; }
[ -s "$key" ] || { echo "mesh-store: no TLS key at $key: mount the node's store key there" >&2; exit 2; }
mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
chmod 0700 "$data"
# The certificate and key as postgres reads them: the key postgres's own and 0600, as PostgreSQL
# requires, copied anew at every start (a restart takes a renewed certificate).
tls=/run/postgresql/tls
rm -rf "$tls"
install -d -o postgres -g postgres -m 0700 "$tls"
install -o postgres -g postgres -m 0644 "$cert" "$tls/server.crt"
install -o postgres -g postgres -m 0600 "$key" "$tls/server.key"
if [ ! -s "$data/PG_VERSION" ]; then
  umask 077
  pwfile=$(mktemp)
  cat "$secret" >"$pwfile"
  chown postgres "$pwfile"
  setpriv --reuid=postgres --regid=postgres --init-groups \\
    /usr/lib/postgresql/15/bin/initdb -D "$data" -U postgres --pwfile="$pwfile" \\
    --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups /usr/lib/postgresql/15/bin/postgres -D "$data" \\
  -c listen_addresses='*' -c hba_file=/etc/mesh-store/pg_hba.conf \\
  -c ssl=on -c ssl_cert_file="$tls/server.crt" -c ssl_key_file="$tls/server.key" \\
  -c ssl_min_protocol_version=TLSv1.2
`;

const RABBITMQ_ENTRYPOINT = `#!/bin/sh
# mesh-broker: RabbitMQ with the management plugin, node rabbit@localhost, data in
# /var/lib/rabbitmq (a named volume). The administrative account is "mesh", its password read
# from /run/secrets/broker-password (a root-only file of the node, mounted read-only) into a
# root-only configuration file; there is no guest account. The password is taken at the first
# start (when the broker's database is created), as RabbitMQ does.
#
# TLS: AMQPS on 5671 and the management API over HTTPS on 15671, on every address, with the
# server certificate /run/mesh/broker.crt, its key /run/secrets/broker.key and the mesh's CA
# certificate /run/mesh/ca.crt (mounted read-only from the node; the key, root-only there, is
# copied at every start to a file only root and the rabbitmq group read, so a restart takes a
# renewed certificate). Plain AMQP (5672) and plain HTTP (15672) listen on loopback only: the
# network is offered TLS alone.
set -eu
secret=/run/secrets/broker-password
cert=/run/mesh/broker.crt
key=/run/secrets/broker.key
ca=/run/mesh/ca.crt
[ -s "$secret" ] || { echo "mesh-broker: no password at $secret: mount the node's secret there" >&2; exit 2; }
[ -s "$cert" ] || { echo "mesh-broker: no TLS certificate at $cert: mount the node's broker certificate there" >&2; exit 2; }
[ -s "$key" ] || { echo "mesh-broker: no TLS key at $key: mount the node's broker key there" >&2; exit 2; }
[ -s "$ca" ] || { echo "mesh-broker: no CA certificate at $ca: mount the mesh's CA certificate there" >&2; exit 2; }
umask 027
tls=/etc/rabbitmq/tls
rm -rf "$tls"
install -d -o root -g rabbitmq -m 0750 "$tls"
install -o root -g rabbitmq -m 0644 "$cert" "$tls/broker.crt"
install -o root -g rabbitmq -m 0644 "$ca" "$tls/ca.crt"
install -o root -g rabbitmq -m 0640 "$key" "$tls/broker.key"
{
  printf 'default_user = mesh\\n'
  printf 'default_pass = %s\\n' "$(cat "$secret")"
  printf 'default_permissions.configure = .*\\ndefault_permissions.read = .*\\ndefault_permissions.write = .*\\n'
  printf 'default_user_tags.administrator = true\\n'
  printf 'loopback_users = none\\n'
  # No message larger than the largest a mesh program takes (a declaration message, 64 MiB:
  # MAX_DECLARATION_MESSAGE_BYTES of lib/broker_names.ts): the broker refuses its publish.
  printf 'max_message_size = ${MAX_DECLARATION_MESSAGE_BYTES}\\n'
  printf 'listeners.tcp.1 = 127.0.0.1:5672\\n'
  printf 'listeners.ssl.default = 5671\\n'
  printf 'ssl_options.cacertfile = %s/ca.crt\\nssl_options.certfile = %s/broker.crt\\nssl_options.keyfile = %s/broker.key\\n' "$tls" "$tls" "$tls"
  printf 'ssl_options.verify = verify_none\\nssl_options.fail_if_no_peer_cert = false\\n'
  printf 'management.tcp.ip = 127.0.0.1\\nmanagement.tcp.port = 15672\\n'
  printf 'management.ssl.port = 15671\\n'
  printf 'management.ssl.cacertfile = %s/ca.crt\\nmanagement.ssl.certfile = %s/broker.crt\\nmanagement.ssl.keyfile = %s/broker.key\\n' "$tls" "$tls" "$tls"
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
  const runtime = await fetchRuntime(arch, buildCacheDir());
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
      files: { "entrypoint.sh": POSTGRES_ENTRYPOINT, "pg_hba.conf": POSTGRES_HBA },
      containerfile: (base) =>
        `FROM ${base}\n${
          APT(["postgresql-15"])
        }\nCOPY entrypoint.sh /usr/local/sbin/mesh-store\nRUN chmod 0755 /usr/local/sbin/mesh-store\n` +
        `COPY pg_hba.conf /etc/mesh-store/pg_hba.conf\nRUN chmod 0644 /etc/mesh-store/pg_hba.conf\n` +
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
        `VOLUME /var/lib/rabbitmq\nEXPOSE 5671 15671\nENTRYPOINT ["/usr/local/sbin/mesh-broker"]\n`,
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

/** The mesh CA's certificate on the first node (public; `mesh-control ca init` makes it). */
export const CA_CERT = DEFAULT_CA_FILE;
/** The mesh CA's private key (PKCS#8 PEM, 0600 root). */
export const CA_KEY = CA_KEY_FILE;
/** Control's private signing key on the first node (PKCS#8 PEM, Ed25519, 0600 root; `mesh-control key init`). */
export const SIGNING_KEY = SIGNING_KEY_PATH;
/** Its public half (SPKI PEM, 0644): what the first node's link and every node verify declarations with. */
export const CONTROL_PUB = CONTROL_KEY_PATH;
/** Where the substrate's server certificates are (`NAME.crt`, public; their keys under `secrets/tls`). */
export const CERTS = "/etc/mesh/tls";
/**
 * Names and addresses, besides the host's own, that the broker's and the store's certificates
 * carry: one a line, `#` starts a comment. The operator writes it (a DNS name or an address the
 * nodes use that the machine does not hold, e.g. behind NAT); optional.
 */
export const PUBLIC_NAMES = "/etc/mesh/public-names";
/**
 * How many days before expiry the substrate reissues a server certificate: when `ca renew`
 * judges one due (lib/mesh_ca.ts), so that the bundle's check and the renewal agree.
 */
export const SUBSTRATE_RENEW_BEFORE_DAYS = RENEW_BEFORE_DAYS;

/**
 * Shell (sh) that sets `names` to the names and addresses the substrate's server certificates
 * carry, one a line, sorted, each once: `localhost` and `127.0.0.1` (the substrate's own steps),
 * the host's name (`hostname`), its full name (`hostname -f`), every address it holds
 * (`hostname -I`: all but loopback and IPv6 link-local) and the lines of {@linkcode PUBLIC_NAMES}
 * (`#` starts a comment). Globbing is off (`set -f`) before the list is split on words.
 */
export const SERVER_NAMES_SH =
  `set -f; names=$({ echo localhost; echo 127.0.0.1; hostname; hostname -f 2>/dev/null; ` +
  `hostname -I 2>/dev/null; if [ -e ${PUBLIC_NAMES} ]; then sed 's/#.*//' ${PUBLIC_NAMES}; fi; } ` +
  `| tr -s ' \\t' '\\n\\n' | sed '/^$/d' | sort -u)`;

/** The server certificates the substrate serves, by name: the broker's and the store's. */
const SERVERS = ["store", "broker"] as const;

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
 * journal), the node's credentials (generated on the node at its first apply, root-only files
 * under `/etc/mesh/secrets`), the mesh's CA (made once, `mesh-control ca init` in the control
 * image), control's signing key (made once, `mesh-control key init` there: its public half at
 * {@linkcode CONTROL_PUB}, which the nodes verify declarations with) and the store's and broker's
 * server certificates ({@linkcode CERTS}, for the names of {@linkcode SERVER_NAMES_SH}; `ca renew`
 * when the check of every apply finds one not good for every name
 * {@linkcode SUBSTRATE_RENEW_BEFORE_DAYS} days ahead), the store, its TLS (the listener
 * serves the file's certificate, or the container is restarted), the inventory database, its
 * schema, the broker, its TLS (likewise, and plain AMQP and HTTP on loopback only) and its
 * topology, each verified by asking the thing itself. mesh-control's steps connect over TLS,
 * verified against the CA.
 */
export function debianBundle(images: SubstrateImages): unknown {
  const migrations = MIGRATIONS.map((m) => m.name).join(",");
  // Each credential is read from its file into the environment of the one process that needs
  // it: never an argument (visible in ps), never in this bundle.
  // Over TLS, verified against the mesh's CA (mounted read-only at the same path), on loopback:
  // the certificates carry 127.0.0.1.
  const env = `store=$(cat ${SECRETS}/store) && broker=$(cat ${SECRETS}/broker) && ` +
    `export MESH_DATABASE_URL="postgres://postgres:$store@127.0.0.1:5432/inventory?sslmode=verify-full&sslrootcert=${CA_CERT}" ` +
    `MESH_BROKER_URL="amqps://mesh:$broker@127.0.0.1:5671/%2F?cacertfile=${CA_CERT}" ` +
    `MESH_BROKER_API_URL="https://mesh:$broker@127.0.0.1:15671" MESH_CA_FILE=${CA_CERT} && `;
  const control = (args: string) =>
    `${env}exec podman run --rm --network host -v ${CA_CERT}:${CA_CERT}:ro -e MESH_DATABASE_URL -e MESH_BROKER_URL -e MESH_BROKER_API_URL -e MESH_CA_FILE ${images.control} ${args}`;
  // mesh-control's CA commands, in its image, with /etc/mesh mounted: no network, and writing
  // only under /etc/mesh (the image's own entry point writes nothing).
  const meshControl = (args: string) =>
    `podman run --rm --network none -v /etc/mesh:/etc/mesh --entrypoint /usr/lib/mesh/deno ${images.control} run ${
      CONTROL_CA_PERMISSIONS.join(" ")
    } /usr/lib/mesh/mesh-control/main.js ${args}`;
  const caCommand = (args: string) => meshControl(`ca ${args}`);
  // The same for the control plane's signing key (`key init`, `key show`): its files are under
  // /etc/mesh, and MESH_SIGNING_KEY is not set in the container, so the defaults are its places.
  const names = SERVER_NAMES_SH;
  // A server certificate good for the next SUBSTRATE_RENEW_BEFORE_DAYS days for every name: it
  // chains to the mesh's CA, is for a TLS server, carries the name, and its key (0600 root) is
  // its own. What `ca renew` reissues when it is not (fewer days left, or other names).
  const certGood = (name: string) => {
    const crt = `${CERTS}/${name}.crt`;
    const key = `${SECRETS}/tls/${name}.key`;
    return `[ -s ${crt} ] || { echo "${crt} is missing" >&2; exit 1; }; ` +
      `[ -s ${key} ] || { echo "${key} is missing" >&2; exit 1; }; ` +
      `m=$(stat -c %a:%u ${key}); [ "$m" = 600:0 ] || { echo "${key} is $m, not 600:0 (mode:owner)" >&2; exit 1; }; ` +
      `a=$(openssl x509 -in ${crt} -noout -pubkey) && b=$(openssl pkey -in ${key} -pubout) && [ "$a" = "$b" ] || { echo "${key} is not the key of ${crt}" >&2; exit 1; }; ` +
      `for n in $names; do case $n in *:*) o=-verify_ip;; *[!0-9.]*) o=-verify_hostname;; *) o=-verify_ip;; esac; ` +
      `said=$(openssl verify -CAfile ${CA_CERT} -purpose sslserver -attime $at $o "$n" ${crt} 2>&1) || ` +
      `{ echo "${crt} is not good for $n until ${SUBSTRATE_RENEW_BEFORE_DAYS} days from now against ${CA_CERT}: $said" >&2; exit 1; }; done`;
  };
  const at = `at=$(($(date +%s) + ${SUBSTRATE_RENEW_BEFORE_DAYS * 86_400}))`;
  // The certificate a TLS listener serves is the file's, and verifies against the CA for
  // 127.0.0.1 (openssl s_client; `starttls` for PostgreSQL's own negotiation).
  const serves = (what: string, connect: string, name: string) =>
    `said=$(timeout 20 openssl s_client ${connect} -CAfile ${CA_CERT} -verify_return_error -verify_ip 127.0.0.1 </dev/null 2>&1) || ` +
    `{ echo "${what} does not present a certificate verified against ${CA_CERT} for 127.0.0.1: $(printf '%s\\n' "$said" | tail -n 3)" >&2; exit 1; }; ` +
    `served=$(printf '%s\\n' "$said" | openssl x509 -noout -fingerprint -sha256) && ` +
    `file=$(openssl x509 -in ${CERTS}/${name}.crt -noout -fingerprint -sha256) && [ "$served" = "$file" ] || ` +
    `{ echo "${what} serves a certificate other than ${CERTS}/${name}.crt (a renewed certificate not taken yet)" >&2; exit 1; }`;
  const storeServes = serves(
    "the store (PostgreSQL, 127.0.0.1:5432)",
    "-starttls postgres -connect 127.0.0.1:5432",
    "store",
  );
  const brokerServes = [
    serves("the broker's AMQPS listener (127.0.0.1:5671)", "-connect 127.0.0.1:5671", "broker"),
    serves(
      "the broker's management API (HTTPS, 127.0.0.1:15671)",
      "-connect 127.0.0.1:15671",
      "broker",
    ),
  ].join("; ");
  // Plain AMQP and HTTP are not offered on any address of the host but loopback.
  const brokerPlainLoopbackOnly =
    `for a in $(hostname -I 2>/dev/null); do for p in 5672 15672; do if timeout 3 bash -c "</dev/tcp/$a/$p" 2>/dev/null; then ` +
    `echo "the broker offers plain port $p on $a, not only on loopback" >&2; exit 1; fi; done; done`;
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
  // Every port accepts: AMQPS, HTTPS (the management API), and on loopback plain AMQP and HTTP.
  const brokerPorts =
    `timeout 5 bash -c "</dev/tcp/127.0.0.1/5671 && </dev/tcp/127.0.0.1/15671 && </dev/tcp/127.0.0.1/5672 && </dev/tcp/127.0.0.1/15672"`;
  const brokerAnswers = [
    // Each CLI run below starts an Erlang VM.
    brokerPorts,
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
  // The store answers (PostgreSQL in mesh-store): waited for before each step that asks it.
  const storeReady = waitFor(
    "the store (PostgreSQL in mesh-store)",
    "podman exec -u postgres mesh-store pg_isready",
  );
  return {
    bundle: 1,
    system: "debian",
    says:
      "The Debian substrate: the mesh layout, the container runtime (podman, its events to a bounded file rather than the journal), the node's credentials (generated here at the first apply, root-only files under /etc/mesh/secrets, never in this bundle), the store (PostgreSQL, data in the named volume mesh-store-data), the inventory database and its schema (mesh-control migrate), the mesh's CA (made once here, mesh-control ca init: /etc/mesh/ca.crt, its key root-only under /etc/mesh/secrets), control's signing key (made once here, mesh-control key init: its private half root-only at /etc/mesh/secrets/signing.key, its public half /etc/mesh/control.pub, which every node is given) and the store's and the broker's server certificates (for this host's names and addresses and /etc/mesh/public-names; reissued when due, the containers restarted to serve them), the broker (RabbitMQ with its management API, data in mesh-broker-data; AMQPS 5671 and HTTPS 15671 to the network, plain AMQP and HTTP on loopback only) and its topology (mesh-control broker setup), the store offering the network TLS only. mesh-control connects over TLS, verified against the CA. Images were built from Debian's packages by `deno task substrate` and are pinned by digest.",
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
            "This directory is maintained by mesh-host (bundle substrate-debian).\nState: /var/lib/mesh/host (store.json, known-good, failures). Host binaries: /usr/lib/mesh.\nCredentials: /etc/mesh/secrets (root only): store (PostgreSQL's postgres), broker (RabbitMQ's mesh), ca.key (the mesh CA's key), signing.key (control's key, which signs every declaration), tls/store.key and tls/broker.key (the server certificates' keys).\nSignatures: control.pub (control's public key, which every node verifies declarations with).\nTLS: ca.crt (the mesh's CA certificate, which every node verifies against), tls/store.crt (PostgreSQL) and tls/broker.crt (RabbitMQ's AMQPS and HTTPS), for localhost, 127.0.0.1, this host's names and addresses and the lines of /etc/mesh/public-names (yours to write); renewed by the bundle 30 days before they expire.\n",
        },
        { id: "mesh-secrets", type: "directory", path: SECRETS, mode: "0700" },
        { id: "container-runtime", type: "package", package: "podman" },
        // openssl: the verifies below read certificates and ask the listeners with it.
        { id: "tls-tools", type: "package", package: "openssl" },
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
          // The mesh's CA, made once on this node: its key never leaves /etc/mesh/secrets.
          id: "mesh-ca",
          type: "action",
          command: ["sh", "-c", caCommand("init")],
          verify: [
            "sh",
            "-c",
            `[ -s ${CA_CERT} ] || { echo "${CA_CERT} is missing" >&2; exit 1; }; ` +
            `[ -s ${CA_KEY} ] || { echo "${CA_KEY} is missing" >&2; exit 1; }; ` +
            `m=$(stat -c %a:%u ${CA_KEY}); [ "$m" = 600:0 ] || { echo "${CA_KEY} is $m, not 600:0 (mode:owner)" >&2; exit 1; }; ` +
            `openssl x509 -in ${CA_CERT} -noout -ext basicConstraints | grep -q 'CA:TRUE' || { echo "${CA_CERT} is not a CA certificate" >&2; exit 1; }; ` +
            `a=$(openssl x509 -in ${CA_CERT} -noout -pubkey) && b=$(openssl pkey -in ${CA_KEY} -pubout) && [ "$a" = "$b" ] || { echo "${CA_KEY} is not the key of ${CA_CERT}" >&2; exit 1; }`,
          ],
        },
        {
          // Control's signing key, made once on this node (key init never replaces one): its
          // private half never leaves /etc/mesh/secrets; its public half (control.pub) is what this
          // node's link verifies declarations with and what every other node is given. When the
          // key is there but control.pub is missing or another key's, control.pub is written again
          // from the key (`key show`, which refuses a key that is not 0600 or not a key).
          id: "signing-key",
          type: "action",
          command: [
            "sh",
            "-c",
            `if [ ! -e ${SIGNING_KEY} ]; then ${meshControl("key init")}; else ` +
            `umask 022 && ${
              meshControl("key show")
            } >${CONTROL_PUB}.tmp && mv ${CONTROL_PUB}.tmp ${CONTROL_PUB} || { rm -f ${CONTROL_PUB}.tmp; exit 1; }; fi`,
          ],
          verify: [
            "sh",
            "-c",
            `[ -s ${SIGNING_KEY} ] || { echo "${SIGNING_KEY} is missing" >&2; exit 1; }; ` +
            `[ -s ${CONTROL_PUB} ] || { echo "${CONTROL_PUB} is missing" >&2; exit 1; }; ` +
            `m=$(stat -c %a:%u ${SIGNING_KEY}); [ "$m" = 600:0 ] || { echo "${SIGNING_KEY} is $m, not 600:0 (mode:owner)" >&2; exit 1; }; ` +
            `m=$(stat -c %a:%u ${CONTROL_PUB}); [ "$m" = 644:0 ] || { echo "${CONTROL_PUB} is $m, not 644:0 (mode:owner)" >&2; exit 1; }; ` +
            `t=$(openssl pkey -in ${SIGNING_KEY} -noout -text_pub 2>&1) && case "$t" in "ED25519 Public-Key:"*) ;; *) false;; esac && ` +
            `a=$(openssl pkey -in ${SIGNING_KEY} -pubout) || { echo "${SIGNING_KEY} is not an Ed25519 private key: $(printf '%s\\n' "$t" | head -n 1)" >&2; exit 1; }; ` +
            `b=$(openssl pkey -pubin -in ${CONTROL_PUB} -pubout 2>&1) && [ "$a" = "$b" ] || { echo "${CONTROL_PUB} is not the public half of ${SIGNING_KEY}" >&2; exit 1; }`,
          ],
        },
        {
          // The store's and the broker's server certificates, for the names and addresses nodes
          // use; reissued (ca renew) when fewer than SUBSTRATE_RENEW_BEFORE_DAYS days are left or
          // the names changed. Each apply asks.
          id: "server-certificates",
          type: "action",
          command: [
            "sh",
            "-c",
            `${names}; set --; for n in $names; do set -- "$@" --name "$n"; done; ` +
            SERVERS.map((name) => `${caCommand(`renew ${name}`)} "$@"`).join(" && "),
          ],
          verify: [
            "sh",
            "-c",
            `${names}; ${at}; ` + SERVERS.map(certGood).join("; "),
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
            `${CERTS}/store.crt:/run/mesh/store.crt:ro`,
            `${SECRETS}/tls/store.key:/run/secrets/store.key:ro`,
          ],
          args: ["--network", "host"],
        },
        {
          // The store serves the certificate on file: after a renewal the container is
          // restarted (its entrypoint copies the certificate and key at every start).
          id: "store-tls",
          type: "action",
          command: [
            "sh",
            "-c",
            `${storeReady}; ` +
            `(${storeServes}) 2>/dev/null && exit 0; podman restart -t 30 mesh-store >/dev/null || exit 1; ` +
            `${storeReady}`,
          ],
          verify: ["sh", "-c", storeServes],
        },
        {
          id: "inventory-database",
          type: "action",
          command: [
            "sh",
            "-c",
            `${storeReady}; ` +
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
            `${CA_CERT}:/run/mesh/ca.crt:ro`,
            `${CERTS}/broker.crt:/run/mesh/broker.crt:ro`,
            `${SECRETS}/tls/broker.key:/run/secrets/broker.key:ro`,
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
            waitFor("the broker (RabbitMQ in mesh-broker)", brokerPorts),
          ],
          verify: ["sh", "-c", brokerAnswers],
        },
        {
          // The broker serves the certificate on file on AMQPS and HTTPS, and plain AMQP and
          // HTTP on loopback only: after a renewal the container is restarted (its entrypoint
          // copies the certificate and key at every start).
          id: "broker-tls",
          type: "action",
          command: [
            "sh",
            "-c",
            `(${brokerServes}) 2>/dev/null && exit 0; podman restart -t 30 mesh-broker >/dev/null || exit 1; ` +
            waitFor("the broker (RabbitMQ in mesh-broker)", brokerPorts),
          ],
          verify: ["sh", "-c", `${brokerServes}; ${brokerPlainLoopbackOnly}`],
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
