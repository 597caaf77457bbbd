/**
 * The first node raises the mesh, in the lab. A bare systemd machine (no Deno, no checkout, on
 * its own network address) gets the one-file debian host copied in; `reconcile` raises the
 * substrate the host carries (a lock produced on this machine by scripts/substrate.ts, carried with
 * `deno task hosts --bundle`, so the test does not depend on the digests committed in
 * bundles/substrate-debian.lock: the container runtime, the node's
 * credentials, PostgreSQL, the inventory database and its schema, RabbitMQ and its topology), the
 * second changes nothing; the machine is rebooted and everything is back before the host runs
 * again; three reconciles change nothing; then mesh-control, pointed at that node's database and
 * broker, enrolls a bare OpenRC machine, which links with its own credential, is assigned a
 * module, converges it and reports; `board --json` shows both nodes.
 *
 * Every check asks the thing itself: the database answers with its migration rows, the broker
 * takes an authenticated AMQP connection and its management API answers.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { bootLab, labAddress, type LabMachine, rebootLab, registryForBridge } from "../lab/mod.ts";
import { MIGRATIONS } from "../../control/db.ts";
import { run } from "../../lib/command.ts";
import { freshSubstrateLock, substrateHost } from "../support/substrate.ts";

interface Result {
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; change: string }[];
  problems: { id?: string; message: string }[];
}

/** Runs the carried bundle once on `m`; returns the parsed result and the raw output. */
async function reconcile(m: LabMachine): Promise<Result & { code: number | null; raw: string }> {
  const r = await m.exec(["mesh-host", "reconcile", "--json"], {
    allowFailure: true,
    timeoutMs: 900_000,
  });
  let parsed: Result;
  try {
    parsed = JSON.parse(r.stdout) as Result;
  } catch {
    throw new Error(`reconcile printed no result (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...parsed, code: r.code, raw: r.stdout + r.stderr };
}

const changed = (r: Result) => r.changes.filter((c) => c.change !== "unchanged");

/** mesh-control on this VM, pointed at the first node's database and broker. */
function control(env: Record<string, string>) {
  return (args: string[], allowFailure = false) =>
    run([Deno.execPath(), "run", "-A", "--quiet", `${ROOT}control/main.ts`, ...args], {
      env,
      allowFailure,
      timeoutMs: 120_000,
    });
}

Deno.test({
  name: "the first node raises the mesh from one file, survives a reboot, and a second node joins",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const lock = await freshSubstrateLock();
    const host = await substrateHost(lock.path);
    assertStringIncludes(host.said, `carrying the bundle ${lock.path}`);
    const file = host.path;
    const first = await bootLab("systemd", { bare: true, network: "bridge" });
    let second: LabMachine | undefined;
    const stopForwarder = await registryForBridge(first);
    try {
      const bare = await first.exec(["sh", "-c", "command -v deno || ls /mesh"], {
        allowFailure: true,
      });
      assert(bare.code !== 0, `the machine has Deno or a checkout: ${bare.stdout}`);
      await first.copyIn(file, "/usr/local/sbin/mesh-host");

      const r1 = await reconcile(first);
      assertEquals([r1.code, r1.outcome], [0, "applied"], r1.raw);
      assertEquals(r1.applied, r1.total);
      const r2 = await reconcile(first);
      assertEquals([r2.code, changed(r2)], [0, []], r2.raw);

      // Asked of the things themselves, on the node.
      const address = await labAddress(first);
      const secret = async (name: string) =>
        (await first.exec(["cat", `/etc/mesh/secrets/${name}`])).stdout.trim();
      const store = await secret("store");
      const broker = await secret("broker");
      assert(/^[0-9a-f]{64}$/.test(store) && /^[0-9a-f]{64}$/.test(broker), "credentials made");
      const modes = await first.exec([
        "stat",
        "-c",
        "%n %a %U",
        "/etc/mesh/secrets",
        "/etc/mesh/secrets/store",
        "/etc/mesh/secrets/broker",
      ]);
      assertEquals(
        modes.stdout.trim().split("\n"),
        [
          "/etc/mesh/secrets 700 root",
          "/etc/mesh/secrets/store 600 root",
          "/etc/mesh/secrets/broker 600 root",
        ],
      );
      // Never in a report, the store or the bundle the host carries.
      const storeJson = (await first.exec(["cat", "/var/lib/mesh/host/store.json"])).stdout;
      const logs = (await first.exec([
        "sh",
        "-c",
        "podman logs mesh-store 2>&1; podman logs mesh-broker 2>&1; journalctl --no-pager 2>&1",
      ])).stdout;
      for (const text of [r1.raw, r2.raw, storeJson, logs]) {
        assert(!text.includes(store) && !text.includes(broker), "a credential leaked");
      }
      assert(!lock.text.includes(store) && !lock.text.includes(broker));

      const envAt = (at: string) => ({
        MESH_DATABASE_URL: `postgres://postgres:${store}@${at}:5432/inventory`,
        MESH_BROKER_URL: `amqp://mesh:${broker}@${at}:5672/%2F`,
        MESH_BROKER_API_URL: `http://mesh:${broker}@${at}:15672`,
      });
      let mc = control(envAt(address));
      const migrations = MIGRATIONS.map((m) => m.name).join(",");
      const rows = async () =>
        (await first.exec([
          "podman",
          "exec",
          "-u",
          "postgres",
          "mesh-store",
          "psql",
          "-X",
          "-At",
          "-d",
          "inventory",
          "-c",
          "select string_agg(name, ',' order by name) from schema_migrations",
        ])).stdout.trim();
      assertEquals(await rows(), migrations);
      const checked = await mc(["broker", "check", "--topology"]);
      assertStringIncludes(checked.stdout, 'AMQP: authenticated as "mesh"');
      assertStringIncludes(checked.stdout, "management API answering");
      assertStringIncludes(checked.stdout, "exchange mesh exists");

      // Rebooted: the init brings the containers back (podman-restart.service, policy always)
      // before the host runs again; then three reconciles change nothing.
      await rebootLab(first);
      // A restarted machine may get another address on the bridge.
      mc = control(envAt(await labAddress(first)));
      const policies = await first.exec([
        "podman",
        "ps",
        "--format",
        "{{.Names}} {{.Status}}",
      ]);
      assertStringIncludes(policies.stdout, "mesh-store Up");
      assertStringIncludes(policies.stdout, "mesh-broker Up");
      // Asked before any reconcile: the database holds its schema, and the broker answers.
      let answered = "";
      for (let i = 0; i < 120 && answered === ""; i++) {
        const probe = await mc(["broker", "check", "--topology"], true);
        if (probe.code === 0) answered = probe.stdout;
        else await new Promise((r) => setTimeout(r, 1000));
      }
      assertStringIncludes(answered, "management API answering");
      assertEquals(await rows(), migrations);
      for (let i = 0; i < 3; i++) {
        const r = await reconcile(first);
        assertEquals([r.code, changed(r)], [0, []], r.raw);
      }

      // mesh-control, pointed at that node, enrolls the OpenRC machine and the first node.
      await mc(["migrate"]);
      const enrolled = await mc(["node", "enroll", "lab-second", "--system", "debian"]);
      const url = /amqp:\/\/lab-second:[^\s]+/.exec(enrolled.stdout)?.[0];
      assert(url, `enroll printed no broker URL: ${enrolled.stdout}`);
      const enrolledFirst = await mc(["node", "enroll", "lab-first", "--system", "debian"]);
      const firstUrl = /amqp:\/\/lab-first:[^\s]+/.exec(enrolledFirst.stdout)?.[0];
      assert(firstUrl, `enroll printed no broker URL: ${enrolledFirst.stdout}`);
      const dir = await Deno.makeTempDir();
      try {
        await Deno.writeTextFile(
          `${dir}/hello.json`,
          JSON.stringify({
            version: 1,
            resources: [
              { id: "hello-dir", type: "directory", path: "/srv/hello", mode: "0755" },
              {
                id: "hello-file",
                type: "file",
                path: "/srv/hello/greeting",
                mode: "0644",
                content: "hello from the first node\n",
              },
            ],
          }),
        );
        await mc(["module", "add", `${dir}/hello.json`]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
      await mc(["node", "assign", "lab-second", "hello"]);

      second = await bootLab("openrc", { bare: true });
      await second.copyIn(file, "/usr/local/sbin/mesh-host");
      // The link runs in the background on the node, its credential in its environment only.
      await second.exec([
        "sh",
        "-c",
        "nohup mesh-host link --node lab-second --every 1h >/var/log/mesh-link.log 2>&1 &",
      ], { env: { MESH_BROKER_URL: url } });
      await mc(["push", "lab-second"]);
      let node: { name: string; verdict?: string } | undefined;
      for (let i = 0; i < 120; i++) {
        await mc(["ingest", "--drain"]);
        const board = JSON.parse((await mc(["board", "--json"])).stdout) as {
          machines: { name: string; verdict?: string }[];
        };
        node = board.machines.find((n) => n.name === "lab-second");
        if (node?.verdict === "ok") break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      const log = (await second.exec(["cat", "/var/log/mesh-link.log"])).stdout;
      assertEquals(node?.verdict, "ok", `board: ${JSON.stringify(node)}; link log: ${log}`);
      assertEquals(
        (await second.exec(["cat", "/srv/hello/greeting"])).stdout,
        "hello from the first node\n",
      );
      // The joining node carries the same bundle in its one file and never took it: its link
      // did not raise a second substrate.
      const containers = await second.exec(["podman", "ps", "-a", "--format", "{{.Names}}"], {
        allowFailure: true,
      });
      assert(!containers.stdout.includes("mesh-store"), `a substrate on the joining node`);
      assert(
        (await second.exec(["test", "-e", "/etc/mesh/secrets"], { allowFailure: true })).code !==
          0,
        "the joining node made substrate credentials",
      );

      // The first node joins its own mesh: its link applies the pushed module beside the bundle
      // it took, and the module removes nothing of the substrate.
      await mc(["node", "assign", "lab-first", "hello"]);
      await first.exec([
        "sh",
        "-c",
        "nohup mesh-host link --node lab-first --every 1h --reconcile-result none " +
        ">/var/log/mesh-link.log 2>&1 &",
      ], { env: { MESH_BROKER_URL: firstUrl } });
      await mc(["push", "lab-first"]);
      let self: { name: string; verdict?: string } | undefined;
      for (let i = 0; i < 120; i++) {
        await mc(["ingest", "--drain"]);
        const board = JSON.parse((await mc(["board", "--json"])).stdout) as {
          machines: { name: string; verdict?: string }[];
        };
        self = board.machines.find((n) => n.name === "lab-first");
        if (self?.verdict === "ok") break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      const firstLog = (await first.exec(["cat", "/var/log/mesh-link.log"])).stdout;
      assertEquals(self?.verdict, "ok", `board: ${JSON.stringify(self)}; link log: ${firstLog}`);
      assertEquals(
        (await first.exec(["cat", "/srv/hello/greeting"])).stdout,
        "hello from the first node\n",
      );
      const after = await first.exec(["podman", "ps", "--format", "{{.Names}} {{.Status}}"]);
      assertStringIncludes(after.stdout, "mesh-store Up");
      assertStringIncludes(after.stdout, "mesh-broker Up");
      assertEquals(await rows(), migrations);
      const owned = JSON.parse(
        (await first.exec(["mesh-host", "owned", "--json"])).stdout,
      ) as { source: string; id: string }[] | { resources: { source: string; id: string }[] };
      const records = Array.isArray(owned) ? owned : owned.resources;
      const sources = new Set(records.map((r) => r.source));
      assert(sources.has("bundle") && sources.has("link"), `owned: ${JSON.stringify(records)}`);

      const board = JSON.parse((await mc(["board", "--json"])).stdout) as {
        machines: { name: string }[];
      };
      assertEquals(board.machines.map((n) => n.name).sort(), ["lab-first", "lab-second"]);
    } finally {
      stopForwarder();
      await second?.destroy();
      await first.destroy();
    }
  },
});
