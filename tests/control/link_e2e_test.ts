/**
 * The control plane and the link end to end, against the real PostgreSQL and RabbitMQ, with host
 * processes (`deno run systems/debian/main.ts link`) under temporary roots on this Debian machine: real
 * apt for the package that does not exist.
 *
 * @tier whole (host links, the control plane and the broker end to end, 35 s; and one test stops
 * the machine's RabbitMQ application, which would fail the broker tests test:fast runs beside it)
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { type JsonLinesProcess, ROOT } from "../support/mod.ts";
import {
  controlCli,
  freshInventory,
  mustControl,
  type TestInventory,
  uniqueNode,
  waitFor,
} from "./support.ts";
import { startTestLink } from "./vhost.ts";
import { readNodeStates } from "../../control/inventory.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import { run } from "../../lib/command.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** A running `mesh-host link`, printing each report as JSON. */
type LinkProcess = JsonLinesProcess<ReportMessage>;

const startLink = (
  url: string,
  stateDir: string,
  every = "2s",
  entry = `${ROOT}tests/support/host_no_bundle.ts`,
): LinkProcess => startTestLink(url, stateDir, { every, entry });

/** Enrolls a node and returns its broker URL (printed once). */
async function enroll(inv: TestInventory, node: string): Promise<string> {
  const out = await mustControl(inv.env, [
    "node",
    "enroll",
    node,
    "--system",
    "debian",
    "--node-is-local",
  ]);
  const url = out.stdout.split("\n").find((l) => l.startsWith("amqp://"));
  assert(url, `enroll printed no URL: ${out.stdout}`);
  return url;
}

async function deleteAccount(node: string) {
  const { deleteNodeAccount } = await import("../../control/broker_admin.ts");
  await deleteNodeAccount({
    amqp: "amqp://guest:guest@127.0.0.1:5672/%2F",
    api: "http://guest:guest@127.0.0.1:15672",
  }, node).catch(() => {});
}

/** Drains reports into the inventory and returns the node's state. */
async function stateOf(inv: TestInventory, node: string) {
  await mustControl(inv.env, ["ingest", "--drain"]);
  const [state] = await readNodeStates(inv.sql, [node]);
  return state!;
}

async function writeModule(dir: string, name: string, resources: unknown[]): Promise<string> {
  const path = `${dir}/${name}.json`;
  await Deno.writeTextFile(path, JSON.stringify({ version: 1, resources }));
  return path;
}

Deno.test(
  "two hosts: push --behind names the broken one only, and it recovers without being named",
  opts,
  async (t) => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-link-" });
    const healthy = uniqueNode("good");
    const broken = uniqueNode("bad");
    const links: LinkProcess[] = [];
    try {
      await mustControl(inv.env, ["broker", "setup"]);
      const healthyUrl = await enroll(inv, healthy);
      const brokenUrl = await enroll(inv, broken);
      await mustControl(inv.env, [
        "module",
        "add",
        await writeModule(dir, `files-${healthy}`, [
          { id: "root", type: "directory", path: `${dir}/${healthy}`, mode: "0755" },
          {
            id: "motd",
            type: "file",
            path: `${dir}/${healthy}/motd`,
            content: "hi\n",
            mode: "0644",
          },
        ]),
      ]);
      const brokenModule = `app-${broken}`;
      await mustControl(inv.env, [
        "module",
        "add",
        await writeModule(dir, brokenModule, [
          { id: "root", type: "directory", path: `${dir}/${broken}`, mode: "0755" },
          { id: "tool", type: "package", package: "mesh-no-such-package-e2e" },
        ]),
      ]);
      await mustControl(inv.env, ["node", "assign", healthy, `files-${healthy}`]);
      await mustControl(inv.env, ["node", "assign", broken, brokenModule]);
      links.push(startLink(healthyUrl, `${dir}/state-${healthy}`));
      links.push(startLink(brokenUrl, `${dir}/state-${broken}`));

      await t.step("the first push --behind reaches both: never pushed", async () => {
        const out = await mustControl(inv.env, ["push", "--behind"]);
        // Whether their links' first reports (no declaration yet) were recorded before it: either
        // never heard, or heard and not pushed.
        const why = "(never pushed, never spoke|linked and reporting, never pushed a declaration)";
        assertMatch(out.stdout, new RegExp(`pushed generation 1 to ${healthy}: ${why}`));
        assertMatch(out.stdout, new RegExp(`pushed generation 1 to ${broken}: ${why}`));
      });

      await t.step("the healthy node applies cleanly; the broken one fails 1 of 2", async () => {
        await waitFor("the healthy node's clean report", async () => {
          const s = await stateOf(inv, healthy);
          return s.said === "ok" ? s : undefined;
        });
        const s = await waitFor("the broken node's failed report", async () => {
          const s = await stateOf(inv, broken);
          return s.said === "failed" ? s : undefined;
        });
        assertEquals([s.report!.applied, s.report!.total], [1, 2]);
        assertEquals(s.report!.problems[0]!.id, "tool");
        assertEquals(await Deno.readTextFile(`${dir}/${healthy}/motd`), "hi\n");
      });

      await t.step(
        "push --behind names the broken node, with why, and not the healthy one",
        async () => {
          const out = await mustControl(inv.env, ["push", "--behind"]);
          assertMatch(
            out.stdout,
            new RegExp(
              `pushed generation 2 to ${broken}: failed generation 1 \\(1 of 2 applied\\): tool: `,
            ),
          );
          assert(!out.stdout.includes(healthy), out.stdout);
          assertMatch(out.stdout, /pushed to 1 of 2 nodes; 1 not behind/);
        },
      );

      await t.step("status says failed, 1 of 2, and exits 1", async () => {
        await waitFor("the broken node's report on generation 2", async () => {
          const s = await stateOf(inv, broken);
          return s.report?.generation === 2 ? s : undefined;
        });
        const out = await controlCli(["status"], inv.env);
        assertEquals(out.code, 1);
        assertMatch(out.stdout, new RegExp(`${broken}\\s+failed\\s+1 of 2`));
        assert(!out.stdout.includes(healthy), out.stdout);
      });

      await t.step("failing the same way for hours is pushed to anyway, and said", async () => {
        await inv.sql`update reports set received_at = received_at - interval '6 hours'
                      where node = ${broken}`;
        const out = await mustControl(inv.env, ["push", "--behind"]);
        assertMatch(out.stdout, new RegExp(`pushed generation 3 to ${broken}`));
        assertMatch(
          out.stdout,
          new RegExp(`${broken}: failed the same way since .* pushed anyway`),
        );
      });

      await t.step(
        "the module is corrected; the next push --behind reaches it unnamed",
        async () => {
          await mustControl(inv.env, [
            "module",
            "add",
            await writeModule(dir, brokenModule, [
              { id: "root", type: "directory", path: `${dir}/${broken}`, mode: "0755" },
              {
                id: "tool",
                type: "file",
                path: `${dir}/${broken}/tool`,
                content: "ok\n",
                mode: "0755",
              },
            ]),
          ]);
          const out = await mustControl(inv.env, ["push", "--behind"]);
          assertMatch(out.stdout, new RegExp(`pushed generation 4 to ${broken}`));
          assert(!out.stdout.includes(healthy), out.stdout);
          const s = await waitFor("the corrected node's clean report", async () => {
            const s = await stateOf(inv, broken);
            return s.said === "ok" ? s : undefined;
          });
          assertEquals([s.report!.generation, s.report!.applied, s.report!.total], [4, 2, 2]);
          assertEquals(await Deno.readTextFile(`${dir}/${broken}/tool`), "ok\n");
        },
      );

      await t.step("now nothing is behind, and it says so", async () => {
        const out = await mustControl(inv.env, ["push", "--behind"]);
        assertMatch(out.stdout, /nothing behind: 2 of 2 nodes report a clean apply/);
        const status = await controlCli(["status"], inv.env);
        assertEquals(status.code, 0, status.stdout);
        assertMatch(status.stdout, /all 2 nodes are doing what they were told/);
      });
    } finally {
      for (const l of links) await l.kill();
      await deleteAccount(healthy);
      await deleteAccount(broken);
      await inv.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test(
  "a node that was offline receives the latest declaration, not the backlog",
  opts,
  async () => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-link-" });
    const node = uniqueNode("away");
    let link: LinkProcess | undefined;
    try {
      await mustControl(inv.env, ["broker", "setup"]);
      const url = await enroll(inv, node);
      for (const n of [1, 2, 3]) {
        await mustControl(inv.env, [
          "module",
          "add",
          "--name",
          "m",
          await writeModule(dir, `m${n}`, [
            { id: "f", type: "file", path: `${dir}/f`, content: `${n}\n`, mode: "0644" },
          ]),
        ]);
        if (n === 1) await mustControl(inv.env, ["node", "assign", node, "m"]);
        await mustControl(inv.env, ["push", node]);
      }
      link = startLink(url, `${dir}/state`);
      const first = await waitFor("a report", () => link!.lines[0]);
      assertEquals([first.trigger, first.generation, first.outcome], ["push", 3, "applied"]);
      assertEquals(await Deno.readTextFile(`${dir}/f`), "3\n");
      // And the older ones never arrive: a fourth push is applied next, and anything left
      // before it on the queue (or put back there) would have come first.
      await mustControl(inv.env, [
        "module",
        "add",
        "--name",
        "m",
        await writeModule(dir, "m4", [
          { id: "f", type: "file", path: `${dir}/f`, content: "4\n", mode: "0644" },
        ]),
      ]);
      await mustControl(inv.env, ["push", node]);
      await waitFor("the fourth push's report", () => link!.lines.find((r) => r.generation === 4));
      assertEquals(
        link.lines.filter((r) => r.trigger === "push").map((r) => [r.generation, r.outcome]),
        [[3, "applied"], [4, "applied"]],
      );
      assertEquals(await Deno.readTextFile(`${dir}/f`), "4\n");
    } finally {
      await link?.kill();
      await deleteAccount(node);
      await inv.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test(
  "a node fed by its bundle and by the link keeps both: neither source removes the other's work",
  opts,
  async () => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-link-" });
    const node = uniqueNode("both");
    // A host entry of its own, carrying a bundle under the temporary root.
    const entry = `${ROOT}host/_link_bundle_probe_${crypto.randomUUID().slice(0, 8)}.ts`;
    await Deno.writeTextFile(
      `${dir}/bundle.lock`,
      JSON.stringify({
        bundle: 1,
        system: "debian",
        says: "the substrate of a first node, under a temporary root",
        declaration: {
          version: 1,
          resources: [
            { id: "substrate", type: "directory", path: `${dir}/substrate`, mode: "0755" },
            {
              id: "broker-conf",
              type: "file",
              path: `${dir}/substrate/broker.conf`,
              content: "listeners.tcp = 5672\n",
              mode: "0644",
            },
          ],
        },
      }),
    );
    await Deno.writeTextFile(
      entry,
      `import { debian } from "../systems/debian/mod.ts";\nimport { hostMain } from "./cli.ts";\n` +
        `Deno.exit(await hostMain(Deno.args, { system: debian, bundle: Deno.readTextFileSync(${
          JSON.stringify(`${dir}/bundle.lock`)
        }) }));\n`,
    );
    let link: LinkProcess | undefined;
    try {
      await mustControl(inv.env, ["broker", "setup"]);
      const url = await enroll(inv, node);
      await mustControl(inv.env, [
        "module",
        "add",
        await writeModule(dir, `app-${node}`, [
          { id: "app", type: "directory", path: `${dir}/app`, mode: "0755" },
        ]),
      ]);
      await mustControl(inv.env, ["node", "assign", node, `app-${node}`]);
      // A node that never took its bundle (a node joining a mesh) is not raised by the link:
      // the link keeps only the sources the node holds.
      link = startLink(url, `${dir}/state`, "2s", entry);
      await mustControl(inv.env, ["push", node]);
      await waitFor("the push's report", () => link!.lines.find((r) => r.trigger === "push"));
      await waitFor(
        "an interval's report",
        () => link!.lines.find((r) => r.trigger === "interval"),
      );
      assert(
        !(await Deno.stat(`${dir}/substrate`).then(() => true, () => false)),
        "the link raised a bundle the node never took",
      );
      await link.kill();
      // That node keeps that it joined a mesh (host/joined.ts): no later reconcile raises its
      // bundle. Made a first node after all, by the documented undo: the record removed.
      const joined = JSON.parse(await Deno.readTextFile(`${dir}/state/joined`));
      assertEquals(joined.by, "link");
      await Deno.remove(`${dir}/state/joined`);
      // The first node: raised from its bundle by reconcile, then linked: the link keeps both.
      const raised = await run([
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        entry,
        "reconcile",
        "--declarations",
        "/nonexistent/mesh-declarations",
        "--state-dir",
        `${dir}/state`,
      ]);
      assertEquals(raised.code, 0);
      assert(await Deno.stat(`${dir}/substrate/broker.conf`).then(() => true, () => false));
      link = startLink(url, `${dir}/state`, "2s", entry);
      await mustControl(inv.env, ["push", node]);
      const pushed = await waitFor(
        "the push's report",
        () => link!.lines.find((r) => r.trigger === "push"),
      );
      assertEquals([pushed.outcome, pushed.source], ["applied", "link"]);
      assertEquals(pushed.changes.map((c) => [c.id, c.change]), [["app", "unchanged"]]);
      // An interval later (the bundle, the kept link declaration and the local declarations in
      // one run) both are still there, unchanged.
      const interval = await waitFor(
        "an interval's report",
        () => link!.lines.find((r) => r.trigger === "interval"),
      );
      assertEquals(interval.changes.map((c) => c.change), ["unchanged"]);
      for (const p of ["substrate/broker.conf", "app"]) {
        assert(await Deno.stat(`${dir}/${p}`).then(() => true, () => false), p);
      }
      const store = JSON.parse(await Deno.readTextFile(`${dir}/state/store.json`));
      assertEquals(
        store.resources.map((e: { source: string; id: string }) => `${e.source}/${e.id}`).sort(),
        ["bundle/broker-conf", "bundle/substrate", "link/app"],
      );
      assertMatch(
        link.stderr(),
        /interval {"outcome":"applied","applied":2,"total":2,.*"source":"bundle"/,
      );
      // The control plane sees the link's reports only: the node does what it was told.
      assertEquals((await stateOf(inv, node)).said, "ok");
    } finally {
      await link?.kill();
      await deleteAccount(node);
      await inv.drop();
      await Deno.remove(entry).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  },
);

async function rabbitmqctl(...args: string[]) {
  await run(["rabbitmqctl", ...args], { timeoutMs: 120_000 });
}

Deno.test(
  "a report made while the broker is away survives the agent dying and the broker restarting",
  opts,
  async () => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-link-" });
    const node = uniqueNode("held");
    let link: LinkProcess | undefined;
    let stopped = false;
    try {
      await mustControl(inv.env, ["broker", "setup"]);
      const url = await enroll(inv, node);
      await mustControl(inv.env, [
        "module",
        "add",
        "--name",
        `m-${node}`,
        await writeModule(dir, "m", [
          { id: "f", type: "file", path: `${dir}/f`, content: "x\n", mode: "0644" },
        ]),
      ]);
      await mustControl(inv.env, ["node", "assign", node, `m-${node}`]);
      await mustControl(inv.env, ["push", node]);
      const state = `${dir}/state`;
      link = startLink(url, state, "1s");
      await waitFor("the first report", () => link!.lines[0]);
      await waitFor("the journal to empty", async () => {
        for await (const _ of Deno.readDir(`${state}/link/outbox`)) return undefined;
        return true;
      });

      await rabbitmqctl("stop_app");
      stopped = true;
      // The host goes on reconciling; what it reports now can only be journaled.
      const held = await waitFor("a report journaled while the broker is away", async () => {
        for await (const e of Deno.readDir(`${state}/link/outbox`)) {
          return JSON.parse(
            await Deno.readTextFile(`${state}/link/outbox/${e.name}`),
          ) as ReportMessage;
        }
        return undefined;
      }, 30_000);
      await link.kill("SIGKILL");
      await rabbitmqctl("start_app");
      stopped = false;
      await rabbitmqctl("await_startup");

      link = startLink(url, state, "1s");
      await waitFor("the held report in the inventory", async () => {
        await controlCli(["ingest", "--drain"], inv.env);
        const rows = await inv.sql`select 1 from reports where node = ${node}
                                   and reported_at = ${held.at}`;
        return rows.length === 1 ? true : undefined;
      }, 60_000);
    } finally {
      await link?.kill();
      if (stopped) await rabbitmqctl("start_app").catch(() => {});
      await rabbitmqctl("await_startup").catch(() => {});
      await deleteAccount(node);
      await inv.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test(
  "a host killed while applying applies the declaration again when it returns, and reports it",
  opts,
  async () => {
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-link-" });
    const node = uniqueNode("kill");
    let link: LinkProcess | undefined;
    try {
      await mustControl(inv.env, ["broker", "setup"]);
      const url = await enroll(inv, node);
      const resources: unknown[] = [
        { id: "root", type: "directory", path: `${dir}/files`, mode: "0755" },
      ];
      for (let i = 0; i < 3000; i++) {
        resources.push({
          id: `f${i}`,
          type: "file",
          path: `${dir}/files/${i}`,
          content: `${i}\n`,
          mode: "0644",
        });
      }
      await mustControl(inv.env, [
        "module",
        "add",
        await writeModule(dir, `many-${node}`, resources),
      ]);
      await mustControl(inv.env, ["node", "assign", node, `many-${node}`]);
      await mustControl(inv.env, ["push", node]);
      const state = `${dir}/state`;
      link = startLink(url, state);
      await waitFor("the apply to be under way", async () => {
        let n = 0;
        try {
          for await (const _ of Deno.readDir(`${dir}/files`)) if (++n > 50) return true;
        } catch { /* not yet */ }
        return undefined;
      });
      await link.kill("SIGKILL");
      assertEquals(link.lines.length, 0, "killed before it finished");
      link = startLink(url, state);
      const report = await waitFor("the report after the restart", () => link!.lines[0]);
      assertEquals(
        [report.trigger, report.generation, report.outcome, report.applied],
        ["push", 1, "applied", 3001],
      );
      const s = await waitFor("the inventory to say ok", async () => {
        const s = await stateOf(inv, node);
        return s.said === "ok" ? s : undefined;
      });
      assertEquals(s.report!.applied, 3001);
    } finally {
      await link?.kill();
      await deleteAccount(node);
      await inv.drop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
