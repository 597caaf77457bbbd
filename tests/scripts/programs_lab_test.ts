/**
 * What ships is what is proven: the built `mesh-reconcile`, `mesh-control` and `mesh-builder`
 * (`deno task programs`, the files, not the checkout), copied onto one bare lab machine (systemd,
 * no Deno, no checkout, the VM's network), run every command of their own command tables with the
 * permissions they carry (reconcile/permissions.ts, control/permissions.ts,
 * builder/permissions.ts):
 *
 * - `mesh-reconcile init` and `run` see a listening socket, a unit, a container (the lab
 *   registry's pinned busybox) and a git repository made inside the machine; `stamp serve` answers
 *   `watch`; the other commands do their one job.
 * - `mesh-control` migrates its own database and sets up its own vhost on the VM's PostgreSQL and
 *   RabbitMQ, enrolls, assigns, pushes, reads status and board, issues a builder account and has
 *   `mesh-builder` (started with it) build one module from a repository in the machine and publish
 *   it to the lab registry.
 *
 * The commands run are held to the command tables (RECONCILE_COMMANDS, CONTROL_COMMANDS): a new
 * command without a run here fails the test by name.
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { freePort } from "../support/mod.ts";
import { oneFileProgram } from "../support/onefile.ts";
import { bootLab, type LabMachine, pinnedBusybox, REGISTRY } from "../lab/mod.ts";
import { brokerApi } from "../control/vhost.ts";
import { PG_SERVER } from "../control/support.ts";
import { RECONCILE_COMMANDS } from "../../reconcile/main.ts";
import { CONTROL_COMMANDS } from "../../control/main.ts";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { run } from "../../lib/command.ts";

/** Every command path of a table: `run`, `stamp serve`, `node enroll`, ... */
function commandPaths<C>(table: readonly CommandEntry<C>[]): string[] {
  return table.flatMap((c) =>
    c.subcommands === undefined ? [c.name] : c.subcommands.map((s) => `${c.name} ${s}`)
  );
}

/** The command path `args` names in `table` (`run`, `stamp serve`), as {@linkcode commandPaths}. */
function pathOf<C>(table: readonly CommandEntry<C>[], args: string[]): string {
  const entry = table.find((c) => c.name === args[0]);
  return entry?.subcommands === undefined ? args[0] ?? "" : args.slice(0, 2).join(" ");
}

/** Says a built program ran into its own permissions (Deno's words), whatever it exited with. */
function assertPermitted(what: string, out: { stdout: string; stderr: string }): void {
  const text = out.stderr + out.stdout;
  assert(
    !/NotCapable|Requires [a-z]+ access|run again with the --allow/.test(text),
    `${what} was refused by its own permissions:\n${text}`,
  );
}

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test(
  "every command of the built programs works on a bare machine with the permissions they carry",
  opts,
  async (t) => {
    const files = {
      reconcile: await oneFileProgram("reconcile"),
      control: await oneFileProgram("control"),
      builder: await oneFileProgram("builder"),
    };
    const image = await pinnedBusybox();
    const id = crypto.randomUUID().replaceAll("-", "").slice(0, 10);
    const database = `mesh_programs_lab_${id}`;
    const vhost = `mesh-programs-lab-${id}`;
    const admin = `${PG_SERVER}/postgres`;
    await run(["psql", admin, "-qc", `CREATE DATABASE ${database}`]);
    const made = await brokerApi("PUT", `/api/vhosts/${encodeURIComponent(vhost)}`, {});
    assert(made.status === 201 || made.status === 204, `creating vhost ${vhost}: ${made.status}`);
    const granted = await brokerApi("PUT", `/api/permissions/${encodeURIComponent(vhost)}/guest`, {
      configure: ".*",
      write: ".*",
      read: ".*",
    });
    assert(granted.status === 201 || granted.status === 204, `granting: ${granted.status}`);
    const brokerUsers: string[] = [];
    let clean = false;
    const ran = { reconcile: new Set<string>(), control: new Set<string>() };
    const m: LabMachine = await bootLab("systemd", { bare: true });
    const controlEnv = {
      MESH_RUNTIME_CACHE: "/var/lib/mesh/runtime",
      MESH_DATABASE_URL: `${PG_SERVER}/${database}`,
      MESH_BROKER_URL: `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`,
      MESH_BROKER_API_URL: "http://guest:guest@127.0.0.1:15672",
      MESH_ARTIFACT_STORE: REGISTRY,
    };
    const reconcile = async (args: string[], codes = [0]) => {
      const out = await m.exec(["mesh-reconcile", ...args], {
        allowFailure: true,
        env: { MESH_RUNTIME_CACHE: "/var/lib/mesh/runtime" },
      });
      ran.reconcile.add(pathOf(RECONCILE_COMMANDS, args));
      assertPermitted(`mesh-reconcile ${args.join(" ")}`, out);
      assert(
        out.code !== null && codes.includes(out.code),
        `mesh-reconcile ${args.join(" ")} exited ${out.code}:\n${out.stderr}${out.stdout}`,
      );
      return out;
    };
    const control = async (args: string[], codes = [0]) => {
      const out = await m.exec(["mesh-control", ...args], {
        allowFailure: true,
        env: controlEnv,
        timeoutMs: 600_000,
      });
      ran.control.add(pathOf(CONTROL_COMMANDS, args));
      assertPermitted(`mesh-control ${args.join(" ")}`, out);
      assert(
        out.code !== null && codes.includes(out.code),
        `mesh-control ${args.join(" ")} exited ${out.code}:\n${out.stderr}${out.stdout}`,
      );
      return out;
    };
    try {
      // Bare: no Deno anywhere, no checkout. The built files are the install.
      const deno = await m.exec(["sh", "-c", "command -v deno || ls /mesh"], {
        allowFailure: true,
      });
      assert(deno.code !== 0, `the machine has Deno or a checkout: ${deno.stdout}`);
      for (const [name, file] of Object.entries(files)) {
        await m.copyIn(file, `/usr/local/sbin/mesh-${name}`);
      }
      // git, which the programs run (the repo check, the builder's checkout, the catalogue).
      await m.exec(["sh", "-c", "apt-get update -qq && apt-get install -y -qq git >/dev/null"], {
        timeoutMs: 600_000,
      });

      await t.step("mesh-reconcile sees sockets, units, containers and a repository", async () => {
        const port = freePort();
        // A unit holding a listening socket, and a container of the pinned busybox.
        await m.exec([
          "sh",
          "-c",
          // (`$$` is systemd's escape of `$`.)
          `cat > /etc/systemd/system/probe-listen.service <<'EOF'
[Service]
ExecStart=/usr/bin/perl -MIO::Socket::INET -e '$$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => ${port}, Listen => 5, ReuseAddr => 1) or die; sleep 1 while 1'
[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload && systemctl enable --now probe-listen.service`,
        ]);
        // Brought back at boot as podman 4.3 does it: restart policy always, podman-restart.service.
        await m.exec(["systemctl", "enable", "podman-restart.service"]);
        await m.exec([
          "podman",
          "run",
          "-d",
          "--name",
          "probe-box",
          "--restart",
          "always",
          image,
          "sleep",
          "100000",
        ], { timeoutMs: 300_000 });
        // A deployment repository with an origin.
        await m.exec([
          "sh",
          "-c",
          `set -e
git init -q --bare -b main /srv/origin.git
git init -q -b main /srv/deploy
cd /srv/deploy
git remote add origin /srv/origin.git
printf 'version: 1\\nfiles: []\\n' > deploy.yaml
git add deploy.yaml
git -c user.name=t -c user.email=t@example.org commit -q -m one
git push -q -u origin main`,
        ]);
        // A timer-driven job for batch enable/disable.
        await m.exec([
          "sh",
          "-c",
          `printf '[Service]\\nType=oneshot\\nExecStart=/bin/true\\n' > /etc/systemd/system/probe-job.service
printf '[Timer]\\nOnCalendar=yearly\\n[Install]\\nWantedBy=timers.target\\n' > /etc/systemd/system/probe-job.timer
systemctl daemon-reload`,
        ]);
        for (let i = 0; i < 50; i++) {
          const listening = await m.exec([
            "sh",
            "-c",
            `grep -qi ':${port.toString(16).padStart(4, "0")} ' /proc/net/tcp`,
          ], {
            allowFailure: true,
          });
          if (listening.code === 0) break;
          await new Promise((r) => setTimeout(r, 200));
        }

        // As root first: it unpacks the runtime cache (the units' ExecStartPre=+ does the same).
        const version = await m.exec(["mesh-reconcile", "--version"], {
          env: { MESH_RUNTIME_CACHE: "/var/lib/mesh/runtime" },
        });
        assertMatch(version.stdout.trim(), /^\d/);
        const schema = await reconcile(["schema"]);
        assertStringIncludes(schema.stdout, '"$schema"');

        await reconcile(["init", "--output", "/root/registry.yaml", "--accounts", "root"]);
        const registry = (await m.exec(["cat", "/root/registry.yaml"])).stdout;
        // The unit's listener, named by the process holding it (its fd links and comm read), and
        // the container.
        assertMatch(
          registry,
          new RegExp(`  perl:\\n    kind: daemon\\n    user: root\\n    port: ${port}\\n`),
        );
        assertStringIncludes(registry, "  probe-box:\n    kind: service\n");
        await reconcile(["check-registry", "/root/registry.yaml"]);
        // Where the shipped units keep its stamp (their StateDirectory= makes it).
        await m.exec(["mkdir", "-p", "/var/lib/mesh/reconcile"]);

        // Between init and run, other listeners of the VM's network may come and go (this machine
        // shares it): drift (1) is possible, not being unable to observe (2).
        const result = await reconcile([
          "run",
          "--registry",
          "/root/registry.yaml",
          "--json",
          "--repo",
          "/srv/deploy",
          "--stamp",
          "/var/lib/mesh/reconcile/stamp",
          "--result",
          "/root/result.json",
          "--interval",
          "5m",
        ], [0, 1]);
        const json = JSON.parse(result.stdout) as {
          sources: { source: string; state: string; detail: string }[];
          observed: { containers: number; listeners: number };
          findings: { check: string; subject: string; detail: string }[];
        };
        const failed = json.sources.filter((s) => s.state === "failed");
        assertEquals(failed, [], result.stdout);
        for (const source of ["sockets", "podman", "boot-units", "repo"]) {
          assert(
            json.sources.some((s) => s.source === source && s.state === "observed"),
            `run did not observe ${source}: ${JSON.stringify(json.sources)}`,
          );
        }
        assert(json.observed.containers >= 1 && json.observed.listeners >= 1, result.stdout);
        // What was made here is as adopted: its socket, its unit (enabled: the boot view read the
        // cgroup of the process holding the port), its container, the repository.
        assertEquals(
          json.findings.filter((f) =>
            f.check === "repo" || /perl|probe/.test(`${f.subject} ${f.detail}`)
          ),
          [],
        );
        clean = result.code === 0;

        await reconcile(["render", "caddy", "--registry", "/root/registry.yaml"]);
        await reconcile(["render", "backup", "--registry", "/root/registry.yaml"]);
        const next = await reconcile(["port", "next", "--registry", "/root/registry.yaml"]);
        assertMatch(next.stdout.trim(), /^\d+$/);
        await reconcile([
          "batch",
          "enable",
          "probe-job",
          "--timer",
          "probe-job.timer",
          "--registry",
          "/root/registry.yaml",
        ]);
        assertEquals(
          (await m.exec(["systemctl", "is-enabled", "probe-job.timer"])).stdout.trim(),
          "enabled",
        );
        await reconcile(["batch", "disable", "probe-job", "--registry", "/root/registry.yaml"]);
      });

      await t.step("mesh-reconcile stamp serve answers watch", async () => {
        const port = freePort();
        // The stamp of the clean run above (up, 0), or none when the VM's network drifted between
        // init and run (new: never stamped, 3): either is the server's answer, read by watch.
        await m.exec(["mkdir", "-p", "/var/lib/mesh/reconcile"]);
        await m.exec([
          "systemd-run",
          "--unit",
          "probe-stamp",
          "--setenv=MESH_RUNTIME_CACHE=/var/lib/mesh/runtime",
          "/usr/local/sbin/mesh-reconcile",
          "stamp",
          "serve",
          "--listen",
          `127.0.0.1:${port}`,
          "--stamp",
          "/var/lib/mesh/reconcile/stamp",
        ]);
        ran.reconcile.add("stamp serve");
        let watched;
        for (let i = 0; i < 100; i++) {
          watched = await reconcile([
            "watch",
            "--max-age",
            "1h",
            "--state",
            "/root/watch-state.json",
            `http://127.0.0.1:${port}/stamp`,
          ], [0, 3, 4, 5, 6]);
          if (watched.code !== 6) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        assertEquals(watched?.code, clean ? 0 : 3, watched?.stderr + "" + watched?.stdout);
        const served = await m.exec(["systemctl", "is-active", "probe-stamp.service"]);
        assertEquals(served.stdout.trim(), "active");
        const journal = await m.exec(["journalctl", "-u", "probe-stamp", "--no-pager", "-q"]);
        assertPermitted("mesh-reconcile stamp serve", journal);
        await m.exec(["systemctl", "stop", "probe-stamp.service"]);
      });

      await t.step(
        "mesh-control and mesh-builder against PostgreSQL, RabbitMQ and the registry",
        async () => {
          const migrate = await control(["migrate"]);
          assertMatch(migrate.stdout, /applied \d+ migrations/);
          await control(["broker", "setup"]);
          const check = await control(["broker", "check", "--topology"]);
          assertStringIncludes(check.stdout, 'authenticated as "guest"');
          await control(["broker", "convert", "--queue-type", "classic"]);
          // The mesh's CA in a directory of its own (the default /etc/mesh/ca.crt would turn this
          // machine's connections to TLS), and control's signing key where push reads it.
          await m.exec(["mkdir", "-p", "/root/meshca"]);
          await control(["ca", "init", "--dir", "/root/meshca"]);
          const ca = ["--name", "127.0.0.1", "--dir", "/root/meshca"];
          await control(["ca", "issue", "broker", ...ca]);
          await control(["ca", "renew", "broker", ...ca]);
          assertStringIncludes(
            (await control(["ca", "show", "--dir", "/root/meshca"])).stdout,
            "broker",
          );
          await control(["key", "init"]);
          assertStringIncludes((await control(["key", "show"])).stdout, "BEGIN PUBLIC KEY");

          const node = `lab-${id}`;
          brokerUsers.push(node);
          // The lab machine shares the VM's network: the broker it reaches is 127.0.0.1, so the
          // node is this machine (a loopback address is refused for any other).
          const enrolled = await control([
            "node",
            "enroll",
            node,
            "--system",
            "debian",
            "--node-is-local",
          ]);
          assertStringIncludes(enrolled.stdout, "amqp://");
          await m.exec([
            "sh",
            "-c",
            `printf '%s' '{"version":1,"resources":[{"id":"d","type":"directory","path":"/srv/x","mode":"0755"}]}' > /root/fragment.json`,
          ]);
          await control(["module", "add", "/root/fragment.json", "--name", "probe"]);
          await control(["node", "assign", node, "probe"]);
          await control(["push", node]);
          // A rotation: the next push is signed by the new key and hands it over.
          await control(["key", "rotate"]);
          await control(["push", node]);
          await control(["node", "kind", node, "episodic"]);
          // A node that never spoke: status says so (1).
          const status = await control(["status"], [1]);
          assertStringIncludes(status.stdout, node);
          await control(["board", "--html", "/root/board.html"]);
          assertStringIncludes((await m.exec(["cat", "/root/board.html"])).stdout, node);
          await control(["node", "rotate", node, "--node-is-local"]);
          await control(["node", "unassign", node, "probe"]);
          await control(["ingest", "--drain"]);
          await control(["prune", "--keep", "30d", "--dry-run"]);

          // A builder account, the builder started with it as a unit, one module built by it from
          // a repository in this machine and published to the lab registry.
          const builderName = `lab-${id}`;
          brokerUsers.push(`builder.${builderName}`);
          const issued = await control(["builder", "issue", builderName]);
          const url = issued.stdout.split("\n").find((l) => l.startsWith("amqp://"));
          assert(url, issued.stdout);
          await m.exec(["mkdir", "-p", "/var/lib/mesh-builder"]);
          await m.exec([
            "systemd-run",
            "--unit",
            "probe-builder",
            "--setenv=MESH_RUNTIME_CACHE=/var/lib/mesh/runtime",
            "/usr/local/sbin/mesh-builder",
            "--broker",
            url,
            "--work-dir",
            "/var/lib/mesh-builder",
          ]);
          const source = await m.exec([
            "sh",
            "-c",
            `set -e
git init -q --bare -b main /srv/app.git
git init -q -b main /srv/app
cd /srv/app
printf 'FROM ${image}\\nCOPY hello /hello\\n' > Containerfile
echo hello > hello
git add -A
git -c user.name=t -c user.email=t@example.org commit -q -m one
git remote add origin /srv/app.git
git push -q origin main
git rev-parse HEAD`,
          ]);
          const commit = source.stdout.trim();
          const built = await control([
            "module",
            "build",
            "app",
            "--source",
            "/srv/app.git",
            "--commit",
            commit,
          ]);
          assertMatch(
            built.stdout,
            new RegExp(`built app at ${commit.slice(0, 12)} by builder\\.`),
          );
          const list = await control(["module", "list"]);
          assertStringIncludes(list.stdout, `${REGISTRY}/mesh/app@sha256:`);
          // Its source asked with git (its default branch at build time, that branch's head now).
          assertStringIncludes(list.stdout, "current");
          const journal = await m.exec(["journalctl", "-u", "probe-builder", "--no-pager", "-q"]);
          assertPermitted("mesh-builder", journal);
          await m.exec(["systemctl", "stop", "probe-builder.service"]);
          await control(["builder", "revoke", builderName]);
          await control(["module", "remove", "app"]);
          await control(["node", "remove", node]);
        },
      );

      await t.step("every command of the tables was run", () => {
        const missing = [
          ...commandPaths(RECONCILE_COMMANDS).filter((c) => !ran.reconcile.has(c)).map((c) =>
            `mesh-reconcile ${c}`
          ),
          ...commandPaths(CONTROL_COMMANDS).filter((c) => !ran.control.has(c)).map((c) =>
            `mesh-control ${c}`
          ),
        ];
        assertEquals(missing, [], `commands of the built programs this test does not run`);
      });
    } finally {
      await m.destroy();
      for (const user of brokerUsers) {
        await brokerApi("DELETE", `/api/users/${encodeURIComponent(user)}`);
      }
      await brokerApi("DELETE", `/api/vhosts/${encodeURIComponent(vhost)}`);
      await run(["psql", admin, "-qc", `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`], {
        allowFailure: true,
      });
    }
  },
);
