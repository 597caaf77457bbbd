/**
 * The fleet's truth end to end: real links (`deno run systems/debian/main.ts link`, temporary roots on
 * this machine) reporting every second through the real broker (a vhost of its own) into a real
 * inventory, judged by `mesh-control status` and `board`.
 *
 * - Two servers and an episodic node: killing a server makes it `silent` once its interval allows
 *   no more, while the other stays `ok`; restarted it is `ok` again. The episodic node killed is
 *   `away`, and status exits 0 for it.
 * - Rotating a running node's credential: its link is disconnected and says so, is refused with
 *   the old credential, and works again only with the new one.
 * - Removing a node whose link is running: the link is disconnected and says so, and is refused
 *   from then on; nothing it sends is recorded.
 *
 * @tier whole (links, the broker and the control plane end to end, waiting out report intervals:
 * 41 s and 20 s of CPU in test:fast; the verdicts are held there by board_test and silence_test)
 *
 * @module
 */

import { connect } from "amqplib";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import {
  controlCli,
  freshInventory,
  mustControl,
  type TestInventory,
  uniqueNode,
  waitFor,
} from "./support.ts";
import { enrollIn, freshVhost, type TestVhost } from "./vhost.ts";
import { TEST_KEYS } from "../support/signing.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
/** The silence rule's grace in these tests: heard for 2 × 1 s + 3 s after the last report. */
const GRACE = "3s";

type LinkProcess = JsonLinesProcess<ReportMessage>;

function startLink(url: string, stateDir: string): LinkProcess {
  return spawnJsonLines([
    `${ROOT}systems/debian/main.ts`,
    "link",
    "--control-key",
    TEST_KEYS.controlKey,
    "--broker",
    url,
    "--state-dir",
    stateDir,
    "--every",
    "1s",
    // No mesh-reconcile runs for these nodes: their reports carry no drift summary, so the board
    // judges their declarations and their silence alone.
    "--reconcile-result",
    "none",
    "--json",
  ]);
}

/** A module with one file under `dir`, assigned to `node`. */
async function giveModule(vhost: TestVhost, dir: string, node: string): Promise<void> {
  await Deno.mkdir(`${dir}/files`, { recursive: true });
  const path = `${dir}/m-${node}.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      version: 1,
      resources: [{
        id: "motd",
        type: "file",
        path: `${dir}/files/${node}`,
        content: `${node}\n`,
        mode: "0644",
      }],
    }),
  );
  await mustControl(vhost.env, ["module", "add", path, "--name", `m-${node}`]);
  await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
}

interface Machine {
  name: string;
  kind: string;
  verdict: string;
  lastReportAt?: string;
  said?: string;
}

/** Drains the reports into the inventory, then reads the board (judged with {@linkcode GRACE}). */
async function verdicts(vhost: TestVhost): Promise<Map<string, Machine>> {
  await mustControl(vhost.env, ["ingest", "--drain"]);
  const out = await mustControl(vhost.env, ["board", "--json", "--grace", GRACE]);
  const board = JSON.parse(out.stdout) as { machines: Machine[] };
  return new Map(board.machines.map((m) => [m.name, m]));
}

async function until(
  vhost: TestVhost,
  what: string,
  wanted: Record<string, string>,
): Promise<Map<string, Machine>> {
  let last = new Map<string, Machine>();
  try {
    return await waitFor(what, async () => {
      last = await verdicts(vhost);
      return Object.entries(wanted).every(([n, v]) => last.get(n)?.verdict === v)
        ? last
        : undefined;
    });
  } catch (error) {
    throw new Error(
      `${(error as Error).message}: last seen ${
        JSON.stringify([...last.values()].map((m) => [m.name, m.verdict]))
      }`,
    );
  }
}

async function world(
  fn: (inv: TestInventory, vhost: TestVhost, dir: string, links: LinkProcess[]) => Promise<void>,
) {
  const inv = await freshInventory();
  const vhost = await freshVhost(inv);
  const dir = await Deno.makeTempDir({ prefix: "mesh-fleet-" });
  const links: LinkProcess[] = [];
  try {
    await fn(inv, vhost, dir, links);
  } finally {
    for (const l of links) await l.kill();
    await vhost.drop();
    await inv.drop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test(
  "a killed server goes silent while the other stays ok; an episodic node killed is away",
  opts,
  async (t) => {
    await world(async (_inv, vhost, dir, links) => {
      const [good, dead] = [uniqueNode("good"), uniqueNode("dead")];
      const phone = uniqueNode("phone");
      const urls = new Map<string, string>();
      for (const node of [good, dead]) urls.set(node, await enrollIn(vhost, node));
      urls.set(phone, await enrollIn(vhost, phone, ["--episodic"]));
      const running = new Map<string, LinkProcess>();
      const start = (node: string) => {
        const link = startLink(urls.get(node)!, `${dir}/state-${node}`);
        links.push(link);
        running.set(node, link);
      };
      for (const node of urls.keys()) {
        await giveModule(vhost, dir, node);
        start(node);
      }
      await mustControl(vhost.env, ["push", "--behind"]);

      await t.step("all three report a clean apply: ok", async () => {
        const v = await until(vhost, "all ok", { [good]: "ok", [dead]: "ok", [phone]: "ok" });
        assertEquals(v.get(phone)!.kind, "episodic");
        const status = await controlCli(["status", "--grace", GRACE], vhost.env);
        assertEquals(status.code, 0, status.stdout);
      });

      await t.step("a server and the episodic node are killed", async () => {
        await running.get(dead)!.kill("SIGKILL");
        await running.get(phone)!.kill("SIGKILL");
      });

      await t.step(
        "the killed server is silent, the episodic node away, the other ok",
        async () => {
          const v = await until(vhost, "silent and away", {
            [dead]: "silent",
            [phone]: "away",
            [good]: "ok",
          });
          assertEquals([v.get(dead)!.said, v.get(phone)!.said], ["ok", "ok"]);
          const status = await controlCli(["status", "--grace", GRACE], vhost.env);
          assertEquals(status.code, 1, status.stdout);
          assertMatch(status.stdout, /^1 of 3 nodes are not doing what they were told/);
          assertMatch(status.stdout, new RegExp(`\\n${dead}\\s+silent\\s+1 of 1\\s+server`));
          assertMatch(status.stdout, new RegExp(`last heard ${v.get(dead)!.lastReportAt}, quiet `));
          assertMatch(status.stdout, new RegExp(`\\n${phone}\\s+away\\s+1 of 1\\s+episodic`));
          assert(!new RegExp(`\\n${good}\\s`).test(status.stdout), status.stdout);
        },
      );

      await t.step("the server restarted is ok again; the episodic one away exits 0", async () => {
        start(dead);
        await until(vhost, "the restarted server ok", {
          [dead]: "ok",
          [good]: "ok",
          [phone]: "away",
        });
        const status = await controlCli(["status", "--grace", GRACE], vhost.env);
        assertEquals(status.code, 0, status.stdout);
        assertMatch(
          status.stdout,
          /^all 3 nodes are doing what they were told or are away \(episodic, no alarm\)/,
        );
        assertMatch(status.stdout, new RegExp(`\\n${phone}\\s+away\\s`));
      });
    });
  },
);

/** Connecting with `url` is refused with 403 ACCESS_REFUSED. */
async function assertRefused(url: string): Promise<void> {
  const error = await connect(url).then(async (c) => {
    await c.close();
    return undefined;
  }, (e: Error) => e);
  assert(error !== undefined, "the broker accepted the credential");
  assertStringIncludes(error.message, "ACCESS_REFUSED");
}

Deno.test(
  "rotating a running node's credential: its link is cut, refused, and works with the new one",
  opts,
  async () => {
    await world(async (inv, vhost, dir, links) => {
      const node = uniqueNode("rot");
      const old = await enrollIn(vhost, node);
      await giveModule(vhost, dir, node);
      await mustControl(vhost.env, ["push", node]);
      const link = startLink(old, `${dir}/state`);
      links.push(link);
      await until(vhost, "the node ok", { [node]: "ok" });

      const out = await mustControl(vhost.env, ["node", "rotate", node, "--node-is-local"]);
      assertMatch(out.stdout, /the old one is refused, 1 open connection closed/);
      const fresh = out.stdout.split("\n").find((l) => l.startsWith("amqp://"))!;

      // The link says it was cut, and why; then its old credential is refused.
      await waitFor(
        "the link to say it was cut",
        () => link.stderr().includes(`the credential of node ${node} was rotated`) || undefined,
      );
      assertMatch(link.stderr(), /the broker closed the connection \(.*CONNECTION_FORCED/);
      await waitFor(
        "the link to be refused",
        () => /ACCESS_REFUSED.*retrying in/.test(link.stderr()) || undefined,
      );
      await assertRefused(old);
      await link.kill();

      // Given the new credential, it reports again.
      const before = (await inv.sql`select count(*)::int as n from reports`)[0]!.n;
      const again = startLink(fresh, `${dir}/state`);
      links.push(again);
      await waitFor("a report over the new credential", async () => {
        await mustControl(vhost.env, ["ingest", "--drain"]);
        const [row] = await inv.sql`select count(*)::int as n from reports where node = ${node}`;
        return row!.n > before ? true : undefined;
      });
      assert(!again.stderr().includes("ACCESS_REFUSED"), again.stderr());
      await until(vhost, "the node ok again", { [node]: "ok" });
    });
  },
);

Deno.test(
  "removing a node whose link is running: the link is disconnected and says so",
  opts,
  async () => {
    await world(async (inv, vhost, dir, links) => {
      const node = uniqueNode("gone");
      const url = await enrollIn(vhost, node);
      await giveModule(vhost, dir, node);
      await mustControl(vhost.env, ["push", node]);
      const link = startLink(url, `${dir}/state`);
      links.push(link);
      await until(vhost, "the node ok", { [node]: "ok" });

      const out = await mustControl(vhost.env, ["node", "remove", node]);
      assertMatch(out.stdout, new RegExp(`^removed ${node}: broker account deleted, 1 open`));
      await waitFor(
        "the link to say it was disconnected",
        () =>
          /the broker closed the connection \(.*CONNECTION_FORCED/.test(link.stderr()) ||
          undefined,
      );
      assertMatch(
        link.stderr(),
        new RegExp(`node ${node} was removed from the mesh|user '${node}' is deleted`),
      );
      await waitFor(
        "the link to be refused",
        () => /ACCESS_REFUSED.*retrying in/.test(link.stderr()) || undefined,
      );
      await assertRefused(url);
      // It goes on reconciling what it was told; nothing of it reaches the inventory.
      const applied = link.lines.length;
      await waitFor("another apply while cut off", () => link.lines.length > applied || undefined);
      await mustControl(vhost.env, ["ingest", "--drain"]);
      assertEquals((await inv.sql`select 1 from nodes where name = ${node}`).length, 0);
      assertEquals((await inv.sql`select 1 from reports where node = ${node}`).length, 0);
      const status = await controlCli(["status"], vhost.env);
      assertEquals([status.code, status.stdout], [0, "no nodes enrolled\n"]);
    });
  },
);
