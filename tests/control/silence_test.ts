/**
 * Silence judged on the control plane's clock, and `push --behind` without churn, against the
 * real broker (a vhost of its own) and PostgreSQL, through `mesh-control`.
 *
 * - A node's clock that disagrees with the control plane's changes nothing: a report stamped
 *   three days ago by its node, received now, is heard now; one stamped three days ahead goes
 *   silent all the same once its interval allows no more.
 * - `push --behind` leaves an identical declaration waiting for a node that has not reported on
 *   it: same generation, same first-pushed time, said; a changed one is pushed.
 *
 * @module
 */

import { connect } from "amqplib";
import { Buffer } from "node:buffer";
import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { EXCHANGE, nodeQueue, reportKey, type ReportMessage } from "../../lib/broker.ts";
import { controlCli, mustControl, reportOf, uniqueNode } from "./support.ts";
import { enrollIn, withVhost } from "./vhost.ts";
import { NO_BYTES_DIGEST } from "../../host/link.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const DAY = 24 * 3600_000;

/** Publishes `report` with the node's own credential, confirmed by the broker. */
async function sendReport(url: string, report: ReportMessage): Promise<void> {
  const conn = await connect(url);
  conn.on("error", () => {});
  try {
    const ch = await conn.createConfirmChannel();
    await new Promise<void>((resolve, reject) =>
      ch.publish(
        EXCHANGE,
        reportKey(report.node),
        Buffer.from(JSON.stringify(report)),
        { persistent: true },
        (error: unknown) => error ? reject(error) : resolve(),
      )
    );
  } finally {
    await conn.close().catch(() => {});
  }
}

/**
 * A report of a link that holds no declaration (`undeclared`): the nodes here are never pushed,
 * or not reached by their push yet, and a report claiming a declaration never pushed to its node
 * is an unknown claim (docs/design.md, "Hostile inputs", rule 7).
 */
function report(node: string, fields: Partial<ReportMessage>): ReportMessage {
  return reportOf(node, {
    generation: 0,
    trigger: "interval",
    intervalMs: 1000,
    outcome: "undeclared",
    declaration: NO_BYTES_DIGEST,
    ...fields,
  });
}

interface Machine {
  name: string;
  verdict: string;
  lastReportAt?: string;
  said?: string;
}

async function board(env: Record<string, string>, grace: string) {
  const out = await controlCli(["board", "--json", "--grace", grace], env);
  assertEquals(out.code, 0, out.stderr);
  const b = JSON.parse(out.stdout) as { generatedAt: string; machines: Machine[] };
  return { ...b, byName: new Map(b.machines.map((m) => [m.name, m])) };
}

Deno.test(
  "silence is judged by when the control plane received a report, never by the node's clock",
  opts,
  async (t) => {
    await withVhost(async (_inv, vhost) => {
      const behind = uniqueNode("slow-clock");
      const ahead = uniqueNode("fast-clock");
      const now = Date.now();
      await sendReport(
        await enrollIn(vhost, behind),
        report(behind, { at: new Date(now - 3 * DAY).toISOString() }),
      );
      await sendReport(
        await enrollIn(vhost, ahead),
        report(ahead, { at: new Date(now + 3 * DAY).toISOString() }),
      );
      await mustControl(vhost.env, ["ingest", "--drain"]);

      await t.step("a node whose clock is three days behind is heard now", async () => {
        const b = await board(vhost.env, "10m");
        for (const name of [behind, ahead]) {
          const m = b.byName.get(name)!;
          assertEquals(m.verdict, "not-pushed", `${name}: ${JSON.stringify(m)}`);
          // Its last-heard time is the receipt, not what its clock said.
          const heard = Date.parse(m.lastReportAt!);
          assert(Math.abs(heard - now) < 60_000, `${name} last heard ${m.lastReportAt}`);
        }
      });

      await t.step(
        "a node whose clock is three days ahead goes silent when its interval allows no more",
        async () => {
          // Every 1 s, heard for 2 intervals + 1 s: silent once 3 s passed since the receipt.
          const deadline = Date.now() + 60_000;
          for (;;) {
            const b = await board(vhost.env, "1s");
            const m = b.byName.get(ahead)!;
            if (m.verdict === "silent") {
              assertEquals(m.said, "not-pushed");
              assert(
                Date.parse(b.generatedAt) - Date.parse(m.lastReportAt!) > 3000,
                JSON.stringify(m),
              );
              break;
            }
            assertEquals(m.verdict, "not-pushed");
            assert(Date.now() < deadline, "never went silent");
            await new Promise((r) => setTimeout(r, 500));
          }
          const status = await controlCli(["status", "--grace", "1s"], vhost.env);
          assertEquals(status.code, 1, status.stdout);
          assertMatch(status.stdout, new RegExp(`\\n${ahead}\\s+silent\\s`));
          assertMatch(status.stdout, new RegExp(`\\n${behind}\\s+silent\\s`));
        },
      );
    });
  },
);

Deno.test(
  "push --behind leaves an identical declaration waiting: same generation, same pushed time",
  opts,
  async (t) => {
    await withVhost(async (inv, vhost) => {
      const node = uniqueNode("phone");
      const url = await enrollIn(vhost, node, ["--episodic"]);
      const dir = await Deno.makeTempDir({ prefix: "mesh-churn-" });
      try {
        const module = async (content: string) => {
          await Deno.writeTextFile(
            `${dir}/m.json`,
            JSON.stringify({
              version: 1,
              resources: [{ id: "f", type: "file", path: `${dir}/f`, content, mode: "0644" }],
            }),
          );
          await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", `m-${node}`]);
        };
        await module("one\n");
        await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
        const first = await mustControl(vhost.env, ["push", "--behind"]);
        assertMatch(first.stdout, new RegExp(`pushed generation 1 to ${node}: never pushed`));
        const [pushed] = await inv.sql`select generation, pushed_at from declarations
                                       where node = ${node}`;

        const declarations = async () =>
          (await inv.sql`select generation, pushed_at from declarations where node = ${node}
                         order by generation`).map((r) => [r.generation, r.pushed_at.getTime()]);
        const queued = async () => {
          const conn = await connect(vhost.amqp);
          try {
            return (await (await conn.createChannel()).checkQueue(nodeQueue(node))).messageCount;
          } finally {
            await conn.close();
          }
        };

        await t.step("never spoke since: left waiting, and said", async () => {
          const out = await mustControl(vhost.env, ["push", "--behind"]);
          assertMatch(
            out.stdout,
            new RegExp(
              `${node}: left generation 1 waiting, pushed ${
                pushed!.pushed_at.toISOString()
              }: it has never spoken, and its modules render the same declaration`,
            ),
          );
          assertMatch(out.stdout, /pushed to 0 of 1 nodes; 0 not behind; 1 left waiting/);
          assertEquals(await declarations(), [[1, pushed!.pushed_at.getTime()]]);
          assertEquals(await queued(), 1, "the declaration is still in its queue");
        });

        await t.step("spoke about an older declaration: still left waiting", async () => {
          await sendReport(url, report(node, { generation: 0 }));
          const out = await mustControl(vhost.env, ["push", "--behind"]);
          assertMatch(
            out.stdout,
            new RegExp(`${node}: left generation 1 waiting, .*it has not reported on it yet`),
          );
          assertEquals(await declarations(), [[1, pushed!.pushed_at.getTime()]]);
          const status = await controlCli(["status"], vhost.env);
          assertMatch(status.stdout, new RegExp(`\\n${node}\\s+outstanding\\s+0 of 1\\s+episodic`));
        });

        await t.step("a changed declaration is pushed as the next generation", async () => {
          await module("two\n");
          const out = await mustControl(vhost.env, ["push", "--behind"]);
          assertMatch(out.stdout, new RegExp(`pushed generation 2 to ${node}: outstanding`));
          assertEquals((await declarations()).length, 2);
        });
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  },
);

Deno.test("node kind: set, said when unchanged, refused for a bad kind or node", opts, async () => {
  await withVhost(async (inv, vhost) => {
    const node = uniqueNode("kind");
    vhost.users.push(node);
    const enrolled = await mustControl(vhost.env, [
      "node",
      "enroll",
      node,
      "--system",
      "android",
      "--episodic",
      "--node-is-local",
    ]);
    assertMatch(enrolled.stdout, new RegExp(`^enrolled ${node} \\(android, episodic\\)`));
    const kind = async () => (await inv.sql`select kind from nodes where name = ${node}`)[0]?.kind;
    assertEquals(await kind(), "episodic");
    assertEquals(
      (await mustControl(vhost.env, ["node", "kind", node, "server"])).stdout,
      `${node} is now server (was episodic)\n`,
    );
    assertEquals(
      (await mustControl(vhost.env, ["node", "kind", node, "server"])).stdout,
      `${node} is already server\n`,
    );
    const bad = await controlCli(["node", "kind", node, "laptop"], vhost.env);
    assertEquals(bad.code, 2, bad.stdout);
    assertMatch(bad.stderr, /"laptop" is not one of server, episodic/);
    const ghost = await controlCli(["node", "kind", uniqueNode("ghost"), "server"], vhost.env);
    assertEquals(ghost.code, 2, ghost.stdout);
    assertMatch(ghost.stderr, /No node "ghost-.*" is enrolled/);
    assertEquals(await kind(), "server");
    const board = JSON.parse((await mustControl(vhost.env, ["board", "--json"])).stdout);
    assertEquals(board.machines[0].kind, "server");
  });
});
