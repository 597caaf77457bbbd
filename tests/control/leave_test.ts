/**
 * Leaving the mesh against the REAL broker (RabbitMQ 3.10 with its management API) and
 * PostgreSQL, through the command line: `node remove`, `node rotate`, `module remove`,
 * `builder revoke`. Each test runs in a vhost of its own.
 *
 * Every refusal is a confirmed operation: a connect refused with 403 ACCESS_REFUSED, a publish
 * waited for with publisher confirms, a connection the broker closed (its close event, carrying
 * CONNECTION_FORCED and the reason mesh-control gave). Each has a positive control (the same
 * account doing the allowed thing before, or the new credential after).
 *
 * @module
 */

import { connect } from "amqplib";
import type { ChannelModel } from "amqplib";
import { Buffer } from "node:buffer";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import {
  BUILD_REQUEST_KEY,
  EXCHANGE,
  nodeQueue,
  reportKey,
  type ReportMessage,
} from "../../lib/broker.ts";
import { type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import {
  controlCli,
  mustControl,
  reportOf,
  type TestInventory,
  uniqueNode,
  waitFor,
} from "./support.ts";
import { brokerApi, enrollIn, withVhost } from "./vhost.ts";
import { within } from "../support/within.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** An open connection and how it ended, if it did. */
interface Watched {
  conn: ChannelModel;
  /** Resolves with the close's error text ("" for a clean close) when the connection closes. */
  closed: Promise<string>;
}

async function open(url: string): Promise<Watched> {
  const conn = await connect(url);
  conn.on("error", () => {});
  const closed = new Promise<string>((resolve) =>
    conn.once("close", (error?: Error) => resolve(error ? String(error.message) : ""))
  );
  return { conn, closed };
}

/** Connecting with `url` is refused with 403 ACCESS_REFUSED (a confirmed refusal). */
async function assertConnectRefused(url: string, what: string): Promise<void> {
  const error = await connect(url).then(async (c) => {
    await c.close();
    return undefined;
  }, (e: Error) => e);
  assert(error !== undefined, `${what}: the broker accepted the connection`);
  assertStringIncludes(error.message, "ACCESS_REFUSED", what);
}

/** Publishes one message with a publisher confirm; resolves or rejects with the broker's word. */
async function publishConfirmed(conn: ChannelModel, key: string, body: string): Promise<void> {
  const ch = await conn.createConfirmChannel();
  ch.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    ch.publish(EXCHANGE, key, Buffer.from(body), { persistent: true }, (error: unknown) => {
      if (error) reject(error);
      else resolve();
    });
  });
  await ch.close().catch(() => {});
}

/** Everything in the inventory, to show a refused command changed nothing. */
async function snapshot(inv: TestInventory) {
  return {
    nodes: await inv.sql`select * from nodes order by name`,
    modules: await inv.sql`select name, version, digest from modules order by name`,
    assignments: await inv.sql`select node, module from assignments order by node, module`,
    declarations: await inv.sql`select node, generation from declarations order by 1, 2`,
    reports: await inv.sql`select id from reports order by id`,
    removals: await inv.sql`select * from removals order by what, name`,
  };
}

function report(node: string, fields: Partial<ReportMessage> = {}): ReportMessage {
  return reportOf(node, { trigger: "interval", intervalMs: 60_000, ...fields });
}

Deno.test(
  "node remove: account, open connection and queue gone, rows removed, a removal kept",
  opts,
  async (t) => {
    await withVhost(async (inv, vhost) => {
      const node = uniqueNode("rm");
      const other = uniqueNode("keep");
      const url = await enrollIn(vhost, node);
      await enrollIn(vhost, other);
      const dir = await Deno.makeTempDir({ prefix: "mesh-leave-" });
      await Deno.writeTextFile(`${dir}/m.json`, JSON.stringify({ version: 1, resources: [] }));
      await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", `m-${node}`]);
      await Deno.remove(dir, { recursive: true });
      await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
      await mustControl(vhost.env, ["push", node]);
      // It reported once (published as itself: the positive control for its credential), of its
      // epoch, as its link would about the declaration pushed.
      const { epoch } = (await inv.sql<{ epoch: string }[]>`
        select epoch::text as epoch from nodes where name = ${node}`)[0]!;
      const before = await open(url);
      await publishConfirmed(before.conn, reportKey(node), JSON.stringify(report(node, { epoch })));
      await mustControl(vhost.env, ["ingest", "--drain"]);
      assertEquals((await inv.sql`select 1 from reports where node = ${node}`).length, 1);

      await t.step("it is removed, and says what went", async () => {
        const out = await mustControl(vhost.env, ["node", "remove", node]);
        assertMatch(
          out.stdout,
          new RegExp(
            `^removed ${node}: broker account deleted, 1 open connection closed, queue deleted; 1 declarations, 1 reports and 1 assignments deleted; removal recorded at `,
          ),
        );
      });

      await t.step("its open connection was closed by the broker, saying why", async () => {
        const why = await within(before.closed, 30_000, "the open connection's close");
        // RabbitMQ closes a deleted user's connections itself; mesh-control closes whatever is
        // left with its own reason. Either way the broker forced it (under load the client may
        // see the socket reset before it reads the broker's close).
        if (/ECONNRESET/.test(why)) return;
        assertStringIncludes(why, "CONNECTION_FORCED");
        assertMatch(
          why,
          new RegExp(`node ${node} was removed from the mesh|user '${node}' is deleted`),
        );
      });

      await t.step("its credential is refused; its queue is gone", async () => {
        await assertConnectRefused(url, "the removed node's credential");
        const queue = await brokerApi(
          "GET",
          `/api/queues/${encodeURIComponent(vhost.name)}/${encodeURIComponent(nodeQueue(node))}`,
        );
        assertEquals(queue.status, 404, "its queue still exists");
        assertEquals((await brokerApi("GET", `/api/users/${node}`)).status, 404);
      });

      await t.step(
        "its rows are deleted, a removal record is kept, the other node untouched",
        async () => {
          for (const table of ["nodes", "assignments", "declarations", "reports"] as const) {
            const column = table === "nodes" ? "name" : "node";
            const rows = await inv.sql`select 1 from ${inv.sql(table)} where ${
              inv.sql(column)
            } = ${node}`;
            assertEquals(rows.length, 0, `${table} still has rows of ${node}`);
          }
          const [removal] = await inv.sql`select detail from removals where name = ${node}`;
          assertEquals(
            [removal?.detail.system, removal?.detail.kind, removal?.detail.reports],
            ["debian", "server", 1],
          );
          assertEquals((await inv.sql`select 1 from nodes where name = ${other}`).length, 1);
          assertEquals((await brokerApi("GET", `/api/users/${other}`)).status, 200);
        },
      );

      await t.step("a report arriving for it is dropped and said, not re-creating it", async () => {
        // Published by the administrator under its key: the node itself can no longer publish.
        const admin = await open(vhost.amqp);
        await publishConfirmed(admin.conn, reportKey(node), JSON.stringify(report(node)));
        await admin.conn.close();
        const out = await controlCli(["ingest", "--drain"], vhost.env);
        assertEquals(out.code, 0, out.stderr);
        assertMatch(out.stdout, /ingested 0 reports; dropped 1/);
        assertMatch(
          out.stderr,
          new RegExp(`node "${node}" was removed at .*; its report is not recorded`),
        );
        assertEquals((await inv.sql`select 1 from nodes where name = ${node}`).length, 0);
        assertEquals((await inv.sql`select 1 from reports where node = ${node}`).length, 0);
      });

      await t.step("removing it again says so and changes nothing", async () => {
        const was = await snapshot(inv);
        const out = await mustControl(vhost.env, ["node", "remove", node]);
        assertMatch(
          out.stdout,
          new RegExp(
            `^${node} was already removed at .*; broker checked again: no broker account left, 0 open connections closed`,
          ),
        );
        assertEquals(await snapshot(inv), was);
      });

      await t.step("enrolled again under the same name, it is a new node", async () => {
        const again = await enrollIn(vhost, node);
        const c = await open(again);
        await c.conn.close();
        assertEquals((await inv.sql`select 1 from removals where name = ${node}`).length, 0);
        await mustControl(vhost.env, ["node", "remove", node]);
      });
    });
  },
);

Deno.test(
  "node remove and node rotate of a node that does not exist: exit 2, nothing changed",
  opts,
  async () => {
    await withVhost(async (inv, vhost) => {
      const node = uniqueNode("real");
      await enrollIn(vhost, node);
      const was = await snapshot(inv);
      const ghost = uniqueNode("ghost");
      for (const verb of ["remove", "rotate"]) {
        const out = await controlCli(["node", verb, ghost], vhost.env);
        assertEquals(out.code, 2, `${verb}: ${out.stdout}${out.stderr}`);
        assertEquals(out.stdout, "", verb);
        assertMatch(out.stderr, new RegExp(`node "${ghost}": No node "${ghost}" is enrolled`));
      }
      const bad = await controlCli(["node", "remove", "Not_A_Name"], vhost.env);
      assertEquals(bad.code, 2, bad.stderr);
      assertEquals(await snapshot(inv), was);
      assertEquals((await brokerApi("GET", `/api/users/${ghost}`)).status, 404);
      assertEquals((await brokerApi("GET", `/api/users/${node}`)).status, 200);
    });
  },
);

Deno.test(
  "node remove and node rotate with a management API that refuses: exit 2, nothing changed",
  opts,
  async () => {
    await withVhost(async (inv, vhost) => {
      const node = uniqueNode("keep");
      const url = await enrollIn(vhost, node);
      const was = await snapshot(inv);
      const refusing = {
        ...vhost.env,
        MESH_BROKER_API_URL: "http://guest:not-the-password@127.0.0.1:15672",
      };
      for (const verb of ["remove", "rotate"]) {
        const local = verb === "rotate" ? ["--node-is-local"] : [];
        const out = await controlCli(["node", verb, node, ...local], refusing);
        assertEquals(out.code, 2, `${verb}: ${out.stdout}${out.stderr}`);
        assertEquals(out.stdout, "", verb);
        assertStringIncludes(out.stderr, "the management API refused the credential");
        assert(!out.stderr.includes("not-the-password"), out.stderr);
      }
      // The inventory rolled back, and the node's credential still opens a connection.
      assertEquals(await snapshot(inv), was);
      const still = await open(url);
      await publishConfirmed(still.conn, reportKey(node), JSON.stringify(report(node)));
      await still.conn.close();
    });
  },
);

Deno.test(
  "node rotate: a new credential once; the old refused at once, on an open connection too",
  opts,
  async () => {
    await withVhost(async (inv, vhost) => {
      const node = uniqueNode("rot");
      const old = await enrollIn(vhost, node);
      const openBefore = await open(old);
      // Positive control: the old credential publishes its own report, confirmed.
      await publishConfirmed(openBefore.conn, reportKey(node), JSON.stringify(report(node)));

      const out = await mustControl(vhost.env, ["node", "rotate", node, "--node-is-local"]);
      assertMatch(
        out.stdout,
        new RegExp(
          `^rotated the credential of ${node}: the old one is refused, 1 open connection closed`,
        ),
      );
      const fresh = out.stdout.split("\n").find((l) => l.startsWith("amqp://"));
      assert(fresh !== undefined && fresh !== old, out.stdout);

      const why = await within(openBefore.closed, 30_000, "the old connection's close");
      assertStringIncludes(why, "CONNECTION_FORCED");
      assertStringIncludes(why, `the credential of node ${node} was rotated`);
      await assertConnectRefused(old, "the old credential");

      // The new credential does what the old one did, with the same permissions.
      const now = await open(fresh);
      await publishConfirmed(now.conn, reportKey(node), JSON.stringify(report(node)));
      const ch = await now.conn.createChannel();
      assertEquals((await ch.checkQueue(nodeQueue(node))).queue, nodeQueue(node));
      // ...and no more: another node's report key is refused (confirmed).
      const refused = await publishConfirmed(now.conn, reportKey("someone-else"), "{}").then(
        () => undefined,
        (e: Error) => e,
      );
      assert(refused !== undefined, "the new credential published another node's report");
      await now.conn.close();

      // The inventory holds no credential: nothing there changed but the reports.
      assertEquals((await inv.sql`select 1 from nodes where name = ${node}`).length, 1);
      // Rotating again works the same way (each run a new credential).
      const again = await mustControl(vhost.env, ["node", "rotate", node, "--node-is-local"]);
      assertMatch(again.stdout, /0 open connections closed/);
      await assertConnectRefused(fresh, "the credential rotated away");
    });
  },
);

Deno.test(
  "module remove: refused while assigned, naming the nodes; then removed",
  opts,
  async () => {
    await withVhost(async (inv, vhost) => {
      const [a, b] = [uniqueNode("ma"), uniqueNode("mb")].sort();
      await enrollIn(vhost, a!);
      await enrollIn(vhost, b!);
      const dir = await Deno.makeTempDir({ prefix: "mesh-leave-" });
      try {
        const module = `web-${a}`;
        await Deno.writeTextFile(`${dir}/m.json`, JSON.stringify({ version: 1, resources: [] }));
        await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", module]);
        await mustControl(vhost.env, ["node", "assign", a!, module]);
        await mustControl(vhost.env, ["node", "assign", b!, module]);
        const was = await snapshot(inv);
        const refused = await controlCli(["module", "remove", module], vhost.env);
        assertEquals(refused.code, 2, refused.stdout + refused.stderr);
        assertStringIncludes(
          refused.stderr,
          `Cannot remove module "${module}": 2 nodes are assigned it (${a}, ${b}); unassign it from them first`,
        );
        assertEquals(await snapshot(inv), was);

        const shipped = await controlCli(["module", "remove", "mesh-host-state"], vhost.env);
        assertEquals(shipped.code, 2, shipped.stderr);
        assertStringIncludes(shipped.stderr, "shipped with the control plane");

        const none = await controlCli(["module", "remove", "no-such-module"], vhost.env);
        assertEquals(none.code, 2, none.stderr);
        assertStringIncludes(none.stderr, `Cannot remove module "no-such-module": no such module`);
        assertEquals(await snapshot(inv), was);

        await mustControl(vhost.env, ["node", "unassign", a!, module]);
        await mustControl(vhost.env, ["node", "unassign", b!, module]);
        const out = await mustControl(vhost.env, ["module", "remove", module]);
        assertEquals(
          out.stdout,
          `removed module ${module} (version 1); its build history is kept\n`,
        );
        assertEquals((await inv.sql`select 1 from modules where name = ${module}`).length, 0);
        const list = await mustControl(vhost.env, ["module", "list"]);
        assert(!list.stdout.includes(module), list.stdout);
        const again = await mustControl(vhost.env, ["module", "remove", module]);
        assertMatch(again.stdout, new RegExp(`^module ${module} was already removed at `));
        // Added again, it is in the catalogue anew.
        await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", module]);
        assertEquals((await inv.sql`select 1 from removals where name = ${module}`).length, 0);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  },
);

Deno.test(
  "builder revoke: account gone, open connection closed, the build it had taken goes to another",
  opts,
  async () => {
    // A git source that accepts connections and never answers: a build that takes its time.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const held: Deno.Conn[] = [];
    const holding = (async () => {
      try {
        for await (const conn of listener) held.push(conn);
      } catch { /* closed */ }
    })();
    const builders: JsonLinesProcess<unknown>[] = [];
    try {
      await withVhost(async (_inv, vhost) => {
        const issue = async (name: string) => {
          vhost.users.push(`builder.${name}`);
          const out = await mustControl(vhost.env, ["builder", "issue", name]);
          return out.stdout.split("\n").find((l) => l.startsWith("amqp://"))!;
        };
        const start = (url: string) => {
          const b = spawnJsonLines<unknown>([`${ROOT}builder/main.ts`, "--broker", url]);
          builders.push(b);
          return b;
        };
        const nameA = uniqueNode("ba");
        const urlA = await issue(nameA);
        const urlB = await issue(uniqueNode("bb"));
        const a = start(urlA);
        await waitFor("builder A connected", () => a.stderr().includes("connected to"));

        const admin = await open(vhost.amqp);
        const id = crypto.randomUUID();
        const port = (listener.addr as Deno.NetAddr).port;
        const request = {
          kind: "build-request",
          id,
          module: "slow",
          source: `http://127.0.0.1:${port}/slow.git`,
          commit: "main",
          artifactStore: { address: "127.0.0.1:5000" },
          replyTo: "build.reply.leave-test",
          requestedAt: new Date().toISOString(),
        };
        await publishConfirmed(admin.conn, BUILD_REQUEST_KEY, JSON.stringify(request));
        await admin.conn.close();
        await waitFor(
          "builder A to take the build",
          () => a.stderr().includes(`building slow at main (request ${id})`),
        );
        await waitFor("builder A's clone to reach the source", () => held.length > 0);

        const out = await mustControl(vhost.env, ["builder", "revoke", nameA]);
        assertEquals(
          out.stdout,
          `revoked builder.${nameA}: account deleted, 1 open connection closed\n`,
        );
        // mesh-builder itself says nothing yet: it finishes the build in hand before it looks at
        // its connection again. The broker lists no connection of it any more:
        const left = await brokerApi(
          "GET",
          `/api/connections/username/${encodeURIComponent(`builder.${nameA}`)}`,
        );
        assertEquals(left.body, []);
        await assertConnectRefused(urlA, "the revoked builder's credential");

        // Builder B gets the same request, which A had taken and not answered.
        const b = start(urlB);
        await waitFor(
          "builder B to take the same build",
          () => b.stderr().includes(`building slow at main (request ${id})`),
        );

        // Again: nothing to revoke, said, exit 2 (a wrong name must not read as done).
        const twice = await controlCli(["builder", "revoke", nameA], vhost.env);
        assertEquals(twice.code, 2, twice.stdout);
        assertStringIncludes(twice.stderr, `there is no broker account builder.${nameA}`);
        for (const builder of builders) await builder.kill("SIGKILL");
      });
    } finally {
      for (const builder of builders) await builder.kill("SIGKILL");
      listener.close();
      for (const conn of held) conn.close();
      await holding;
    }
  },
);

// Issue 32, item 4: `module list` says which nodes run each module. The catalogue's tests saw only
// a module no node runs; here two nodes are assigned it, then one is unassigned, then the other
// removed, and the list follows each step (text and JSON).
Deno.test(
  "module list: the nodes a module runs on, after assign, unassign and node remove",
  opts,
  async () => {
    await withVhost(async (_inv, vhost) => {
      const [a, b] = [uniqueNode("la"), uniqueNode("lb")].sort();
      await enrollIn(vhost, a!);
      await enrollIn(vhost, b!);
      const module = `list-${a}`;
      const dir = await Deno.makeTempDir({ prefix: "mesh-leave-" });
      try {
        await Deno.writeTextFile(`${dir}/m.json`, JSON.stringify({ version: 1, resources: [] }));
        await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", module]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
      /** The nodes `module list --json` names for the module, and its text's `runs on` line. */
      const runsOn = async () => {
        const json = JSON.parse(
          (await mustControl(vhost.env, ["module", "list", "--json"])).stdout,
        );
        const entry = (json.modules as { name: string; nodes: { name: string }[] }[])
          .find((m) => m.name === module);
        assert(entry !== undefined, `${module} is not in the catalogue`);
        const text = (await mustControl(vhost.env, ["module", "list"])).stdout.split("\n");
        const at = text.findIndex((l) => l.startsWith(`${module} v1 `));
        const line = text.slice(at + 1).find((l) => l.startsWith("  runs on: "));
        return { nodes: entry.nodes.map((n) => n.name), text: line };
      };

      assertEquals(await runsOn(), { nodes: [], text: "  runs on: no node" });
      await mustControl(vhost.env, ["node", "assign", a!, module]);
      await mustControl(vhost.env, ["node", "assign", b!, module]);
      const both = await runsOn();
      assertEquals(both.nodes, [a, b]);
      assertMatch(both.text ?? "", new RegExp(`^  runs on: ${a} \\([^)]+\\), ${b} \\([^)]+\\)$`));

      await mustControl(vhost.env, ["node", "unassign", a!, module]);
      const one = await runsOn();
      assertEquals(one.nodes, [b]);
      assertMatch(one.text ?? "", new RegExp(`^  runs on: ${b} \\([^)]+\\)$`));

      await mustControl(vhost.env, ["node", "remove", b!]);
      assertEquals(await runsOn(), { nodes: [], text: "  runs on: no node" });
    });
  },
);
