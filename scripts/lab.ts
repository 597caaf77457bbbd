/**
 * `deno task lab up|down|status|help`: the lab for people (tests boot their own machines).
 *
 * - `up [--bare] [systemd|openrc|musl|android]`: builds what is missing (saying each stage on
 *   stderr as it goes), starts the registry and boots one machine of each Debian kind (or the one
 *   named: `musl` and `android`, the kinds without glibc, only when named), printing how to enter
 *   them; `--bare`: machines with neither Deno nor the checkout (`musl` and `android` always are).
 * - `down`: removes every lab machine and stops the registry.
 * - `status`: lab machines running, images cached, registry answering.
 * - `prove-bootstrap`: the quick start on a fresh Debian machine. Boots a systemd lab machine on
 *   its own network (bridged: its ports are its own, so PostgreSQL and RabbitMQ can start inside),
 *   with no Deno and a writable copy of the checkout, gives it what every machine of this kind has
 *   before a session (Node and npm from Debian, this machine's CA certificates and npm settings,
 *   the TLS variables of this environment), then runs the README's commands: `sh
 *   scripts/bootstrap.sh && deno task demo`, and the control-plane tests that need PostgreSQL and
 *   RabbitMQ. Downloads a few hundred MB from Debian's archive and npm: not part of the suite.
 * - `help`, `-h`, `--help`: the usage, exit 0. An unknown command or argument: the usage on
 *   stderr, exit 2.
 */

import { run } from "../lib/command.ts";
import { ROOT } from "../tests/support/mod.ts";
import {
  bootLab,
  ensureLabImage,
  ensureRegistry,
  isNoglibcKind,
  LAB_CACHE,
  LAB_KINDS,
  labImage,
  type LabKind,
  REGISTRY,
  runningLabs,
  stopRegistry,
} from "../tests/lab/mod.ts";

/** What `deno task lab --help` prints; an unknown command prints it on stderr and exits 2. */
export const USAGE = `usage: deno task lab COMMAND

  up [--bare] [systemd|openrc|musl|android]
                                build what is missing (saying each stage on stderr), start the
                                registry, boot a systemd and an openrc machine (or the kind named:
                                musl, Alpine-like, and android have no glibc and are always bare)
                                and print how to enter it; --bare: with neither Deno nor the
                                checkout (copy a built file in, see docs/lab.md), named
                                mesh-lab-KIND-bare
  down                          remove every lab machine, stop the registry
  status                        machines running, images built, registry answering (the default)
  prove-bootstrap               run the README's quick start on a fresh lab machine (downloads)
  help, -h, --help              this text

docs/lab.md says more.
`;

const [command = "status", ...rest] = Deno.args;
const progress = (line: string) => console.error(`lab: ${line}`);
switch (command) {
  case "help":
  case "-h":
  case "--help":
    console.log(USAGE.trimEnd());
    break;
  case "up": {
    if (rest.some((a) => a === "-h" || a === "--help")) {
      console.log(USAGE.trimEnd());
      break;
    }
    const bare = rest.includes("--bare");
    const named = rest.filter((a) => a !== "--bare");
    const bad = named.filter((a) => !(LAB_KINDS as readonly string[]).includes(a));
    if (bad.length > 0 || named.length > 1) {
      console.error(
        `lab up: ${
          bad.length > 0
            ? `"${bad[0]}" is not a machine kind (${LAB_KINDS.join(", ")})`
            : "name one kind at most"
        }\n\n${USAGE.trimEnd()}`,
      );
      Deno.exit(2);
    }
    const kinds: LabKind[] = named.length === 1 ? [named[0] as LabKind] : ["systemd", "openrc"];
    await ensureRegistry();
    for (const kind of kinds) {
      const bareKind = bare || isNoglibcKind(kind);
      const name = `mesh-lab-${kind}${bareKind ? "-bare" : ""}`;
      // bash on the Debian kinds; busybox sh on the others (/system/bin/sh on android, in PATH).
      const shell = isNoglibcKind(kind) ? "sh" : "bash";
      const m = await bootLab(kind, { name, bare: bareKind, progress }).catch((error) => {
        if (String(error).includes("already in use")) return undefined;
        throw error;
      });
      console.log(
        m
          ? `${kind}: up as ${name}${
            bareKind ? " (bare: no Deno, no checkout)" : ""
          }; enter with: podman exec -it ${name} ${shell}`
          : `${kind}: ${name} already up; enter with: podman exec -it ${name} ${shell}`,
      );
      if (m && bareKind) {
        const [system, dest] = kind === "musl"
          ? ["alpine", "/usr/local/sbin/mesh-host"]
          : kind === "android"
          ? ["android", "/data/local/tmp/mesh-host"]
          : ["debian", "/usr/local/sbin/mesh-host"];
        console.log(
          `  copy a built file in: podman cp dist/mesh-host-${system}-x86_64 ${name}:${dest}`,
        );
      }
    }
    console.log(`registry: ${REGISTRY}`);
    break;
  }
  case "down": {
    for (const name of await runningLabs()) {
      await run(["podman", "rm", "-f", "-v", "-t", "0", name]); // -v: android's /data volume
      console.log(`removed ${name}`);
    }
    await stopRegistry();
    console.log("registry stopped");
    break;
  }
  case "status": {
    console.log(`machines: ${(await runningLabs()).join(", ") || "none"}`);
    for (const kind of LAB_KINDS) {
      const image = await labImage(kind);
      const has =
        (await run(["podman", "image", "exists", image], { allowFailure: true })).code === 0;
      console.log(`image ${image}: ${has ? "built" : "not built"} (cache ${LAB_CACHE})`);
    }
    const answers = await fetch(`http://${REGISTRY}/v2/`).then(
      (r) => (r.body?.cancel(), r.ok),
      () => false,
    );
    console.log(`registry ${REGISTRY}: ${answers ? "answers" : "not running"}`);
    break;
  }
  case "prove-bootstrap": {
    const image = await ensureLabImage("systemd", { progress });
    const name = `mesh-bootstrap-proof-${crypto.randomUUID().slice(0, 6)}`;
    const env = ["SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "DENO_CERT"]
      .flatMap((k) => Deno.env.get(k) ? ["--env", `${k}=${Deno.env.get(k)}`] : []);
    await run([
      "podman",
      "run",
      "-d",
      "--name",
      name,
      "--hostname",
      "bootstrap-proof",
      "--systemd=always",
      "--privileged",
      "--network",
      "podman",
      "-v",
      `${ROOT}:/mesh:ro`,
      image,
      "/sbin/init",
    ]);
    try {
      await run(["podman", "exec", name, "systemctl", "is-system-running", "--wait"], {
        allowFailure: true,
      });
      for await (const entry of Deno.readDir("/usr/local/share/ca-certificates")) {
        await run([
          "podman",
          "cp",
          `/usr/local/share/ca-certificates/${entry.name}`,
          `${name}:/usr/local/share/ca-certificates/`,
        ]);
      }
      const home = Deno.env.get("HOME") ?? "/root";
      if (await Deno.stat(`${home}/.npmrc`).then(() => true, () => false)) {
        await run(["podman", "cp", `${home}/.npmrc`, `${name}:/root/.npmrc`]);
      }
      const script = [
        "set -eux",
        "export DEBIAN_FRONTEND=noninteractive",
        "mkdir -p -m 1777 /tmp && update-ca-certificates >/dev/null",
        "apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null",
        "if command -v deno psql rabbitmqctl; then echo 'not a fresh machine'; exit 1; fi",
        "cp -a /mesh /root/mesh && cd /root/mesh",
        "sh scripts/bootstrap.sh && deno task demo",
        "sh scripts/bootstrap.sh",
        "deno test -A --no-check=remote tests/control/migrate_test.ts tests/control/enroll_test.ts",
      ].join("\n");
      const r = await run(["podman", "exec", ...env, name, "sh", "-c", script], {
        allowFailure: true,
        timeoutMs: 1_800_000,
      });
      console.log(r.stdout + r.stderr);
      console.log(
        r.code === 0 ? "prove-bootstrap: passed" : `prove-bootstrap: failed (exit ${r.code})`,
      );
      if (r.code !== 0) Deno.exitCode = 1;
    } finally {
      await run(["podman", "rm", "-f", "-t", "0", name], { allowFailure: true });
    }
    break;
  }
  default:
    console.error(`lab: "${command}" is not a command\n\n${USAGE.trimEnd()}`);
    Deno.exit(2);
}
