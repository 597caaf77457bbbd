/**
 * Every source on one state directory, in the systemd lab, with the real Debian host carrying the
 * layout part of its real bundle (tests/launcher/layout_host.ts: the machine shares the VM's
 * network, where the whole substrate would take the VM's own PostgreSQL and RabbitMQ ports; the
 * whole bundle is applied in tests/lab/fleet_test.ts): two local declarations in /etc/mesh/declarations, the carried bundle, and the link's
 * declaration pushed by a real control plane (PostgreSQL, RabbitMQ on the VM, reached from the lab
 * machine over the host network). Each source converges, none removes another's work, the
 * supervisor's next reconcile changes nothing, and a local declaration removed takes its footprint
 * with it (a file it took over is put back) while the others stay.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";
import { controlCli, freshInventory, type TestInventory, uniqueNode } from "../control/support.ts";
import { readNodeStates } from "../../control/inventory.ts";
import { TEST_KEYS } from "../support/signing.ts";

/** The Debian host carrying the layout part of its bundle (directories and files). */
const HOST = "tests/launcher/layout_host.ts";

interface Result {
  source: string;
  outcome: string;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; message: string }[];
}

const UNIT = `[Unit]
Description=mesh lab web

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`;

async function mustControl(inv: TestInventory, args: string[]) {
  const out = await controlCli(args, inv.env);
  assertEquals(out.code, 0, `mesh-control ${args.join(" ")}: ${out.stderr}${out.stdout}`);
  return out;
}

async function writeIn(m: LabMachine, path: string, text: string) {
  await m.exec([
    "sh",
    "-c",
    'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"',
    "sh",
    path,
    text,
  ]);
}

async function reconcile(m: LabMachine) {
  const r = await m.host(HOST, ["reconcile", "--json"], { allowFailure: true });
  const results = r.stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Result);
  return { ...r, results, by: (s: string) => results.find((x) => x.source === s) };
}

const exists = async (m: LabMachine, path: string) =>
  (await m.exec(["test", "-e", path], { allowFailure: true })).code === 0;

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

Deno.test({
  name: "systemd lab: two local declarations, the bundle and the link keep each other's work",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const inv = await freshInventory();
    const node = uniqueNode("srcs");
    const m = await bootLab("systemd");
    let link: Promise<unknown> | undefined;
    try {
      const motd = (await m.exec(["cat", "/etc/motd"])).stdout;
      await writeIn(
        m,
        "/etc/mesh/declarations/web.json",
        JSON.stringify({
          version: 1,
          resources: [
            { id: "web", type: "directory", path: "/srv/web", mode: "0755" },
            {
              id: "index",
              type: "file",
              path: "/srv/web/index.html",
              content: "hello\n",
              mode: "0644",
            },
            { id: "motd", type: "file", path: "/etc/motd", content: "a web node\n", mode: "0644" },
            {
              id: "unit",
              type: "file",
              path: "/etc/systemd/system/meshweb.service",
              content: UNIT,
              mode: "0644",
            },
            {
              id: "svc",
              type: "service",
              unit: "meshweb.service",
              state: "running",
              boot: "enabled",
            },
          ],
        }),
      );
      await writeIn(
        m,
        "/etc/mesh/declarations/db.json",
        JSON.stringify({
          version: 1,
          resources: [
            { id: "hello", type: "package", package: "hello" },
            { id: "db", type: "directory", path: "/srv/db", mode: "0750" },
            { id: "cnf", type: "file", path: "/srv/db/my.cnf", content: "x=1\n", mode: "0640" },
          ],
        }),
      );

      // The supervisor's command without a control plane: bundle + every local declaration.
      const first = await reconcile(m);
      assertEquals(first.code, 0, first.stderr + first.stdout);
      assertEquals(first.results.map((r) => [r.source, r.outcome]), [
        ["bundle", "applied"],
        ["db", "applied"],
        ["web", "applied"],
      ]);
      assertEquals(
        (await m.exec(["systemctl", "is-active", "meshweb.service"], { allowFailure: true }))
          .stdout.trim(),
        "active",
      );

      // The link, as the supervisor runs it with a control plane; a push as source `link`.
      await mustControl(inv, ["broker", "setup"]);
      const enrolled = await mustControl(inv, [
        "node",
        "enroll",
        node,
        "--system",
        "debian",
        // The lab machine shares this machine's network: the broker's loopback address is its own.
        "--node-is-local",
      ]);
      const url = enrolled.stdout.split("\n").find((l) => l.startsWith("amqp://"))!;
      const module = `/tmp/${node}-app.json`;
      await Deno.writeTextFile(
        module,
        JSON.stringify({
          version: 1,
          resources: [
            { id: "app", type: "directory", path: "/srv/app", mode: "0755" },
            { id: "conf", type: "file", path: "/srv/app/app.conf", content: "on\n", mode: "0644" },
          ],
        }),
      );
      await mustControl(inv, ["module", "add", "--name", `app-${node}`, module]);
      await Deno.remove(module);
      await mustControl(inv, ["node", "assign", node, `app-${node}`]);
      // Control's public key where the link reads it (/etc/mesh/control.pub): the suite's test
      // key, which signs every push (tests/support/signing.ts).
      await writeIn(m, "/etc/mesh/control.pub", await Deno.readTextFile(TEST_KEYS.controlKey));
      link = m.exec([
        "sh",
        "-c",
        "echo $$ > /run/mesh-link.pid; exec deno run -A --quiet /mesh/tests/launcher/layout_host.ts link --every 3s --json",
      ], { allowFailure: true, env: { MESH_BROKER_URL: url }, timeoutMs: 600_000 });
      await mustControl(inv, ["push", node]);
      // The push's report, then an interval's (bundle, link and local declarations in one
      // run): the latest report soon is an interval's, so both are read from the reports table.
      const triggers = async () => {
        await mustControl(inv, ["ingest", "--drain"]);
        return (await inv.sql<{ trigger: string; outcome: string; generation: number }[]>`
          select trigger, outcome, generation from reports where node = ${node} order by id`);
      };
      const seen = await waitFor("the push and an interval reported", async () => {
        const rows = await triggers();
        return rows.some((r) => r.trigger === "push") &&
            rows.some((r) => r.trigger === "interval" && r.generation === 1)
          ? rows
          : undefined;
      });
      // Before the push its link reported that it held no declaration (`undeclared`, generation 0).
      assert(
        seen.every((r) => r.outcome === (r.generation === 0 ? "undeclared" : "applied")),
        JSON.stringify(seen),
      );
      assertEquals((await readNodeStates(inv.sql, [node]))[0]!.said, "ok");
      await m.exec(["sh", "-c", 'kill -TERM "$(cat /run/mesh-link.pid)"']);
      const stopped = await link as { code: number | null; stderr: string };
      assertEquals(stopped.code, 0, stopped.stderr);
      assertMatch(
        stopped.stderr,
        /interval \{"outcome":"applied","applied":5,"total":5,[^\n]*"source":"web"/,
        "the link kept the local declarations converged at its interval",
      );
      link = undefined;

      // The supervisor's next reconcile changes nothing, and nobody removed anybody's work.
      const again = await reconcile(m);
      assertEquals(again.code, 0, again.stderr + again.stdout);
      for (const r of again.results) {
        assertEquals(
          r.changes.filter((c) => c.change !== "unchanged"),
          [],
          `${r.source} changed something`,
        );
      }
      for (
        const p of [
          "/etc/mesh/README",
          "/srv/web/index.html",
          "/srv/db/my.cnf",
          "/srv/app/app.conf",
        ]
      ) {
        assert(await exists(m, p), p);
      }
      const owned = JSON.parse((await m.host(HOST, ["owned", "--json"])).stdout) as {
        source: string;
      }[];
      assertEquals([...new Set(owned.map((e) => e.source))].sort(), [
        "bundle",
        "db",
        "link",
        "web",
      ]);

      // web.json removed: its footprint leaves at the next reconcile, /etc/motd is put back.
      await m.exec(["rm", "/etc/mesh/declarations/web.json"]);
      const gone = await reconcile(m);
      assertEquals(gone.code, 0, gone.stderr + gone.stdout);
      assertEquals(
        Object.fromEntries(gone.by("web")!.changes.map((c) => [c.id, c.change])),
        { web: "removed", index: "removed", motd: "restored", unit: "removed", svc: "forgotten" },
      );
      assertEquals((await m.exec(["cat", "/etc/motd"])).stdout, motd);
      assertEquals(await exists(m, "/srv/web"), false);
      for (const p of ["/etc/mesh/README", "/srv/db/my.cnf", "/srv/app/app.conf"]) {
        assert(await exists(m, p), p);
      }
      const last = await reconcile(m);
      assertEquals(last.results.map((r) => r.source), ["bundle", "db"]);
      assert(last.results.every((r) => r.changes.every((c) => c.change === "unchanged")));
    } finally {
      if (link !== undefined) {
        await m.exec(["sh", "-c", 'kill -TERM "$(cat /run/mesh-link.pid)"'], {
          allowFailure: true,
        });
        await link.catch(() => {});
      }
      await m.destroy();
      const { deleteNodeAccount } = await import("../../control/broker_admin.ts");
      await deleteNodeAccount({
        amqp: "amqp://guest:guest@127.0.0.1:5672/%2F",
        api: "http://guest:guest@127.0.0.1:15672",
      }, node).catch(() => {});
      await inv.drop();
    }
  },
});
