/**
 * A report is judged against what was pushed to that node (docs/design.md, "Hostile inputs", rule
 * 7): a report claiming a generation, or a digest at that generation, that the control plane never
 * pushed to its node is never `ok`, whatever outcome it claims; status and board show it as an
 * `unknown claim` with why, and status exits 1. The field case: a node never pushed reported
 * generation 1 with another node's digest and showed `ok`. Real enroll, push and ingest (a vhost
 * of its own), reports published as the nodes' links would; the verdict rules also judged directly.
 *
 * @module
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import { isAlarm } from "../../control/state.ts";
import { readNodeStates } from "../../control/inventory.ts";
import { type GivenNode, judgeNodes } from "./judge.ts";
import {
  controlCli,
  freshInventory,
  mustControl,
  publishReports,
  reportOf,
  uniqueNode,
} from "./support.ts";
import { enrollIn, type TestVhost, withVhost } from "./vhost.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

interface Machine {
  name: string;
  verdict: string;
  words: string;
  claim?: string;
  reportedGeneration?: number;
}

/** Publishes `report` as `node`'s link would, ingests, and returns the board's machine of `node`. */
async function reported(
  vhost: TestVhost,
  node: string,
  report: ReportMessage,
): Promise<Machine> {
  await publishReports(vhost.amqp, [[node, report]]);
  const ingest = await mustControl(vhost.env, ["ingest", "--drain"]);
  assertMatch(ingest.stdout, /ingested 1 report/, ingest.stdout + ingest.stderr);
  const board = await mustControl(vhost.env, ["board", "--json", "--grace", "60s"]);
  return (JSON.parse(board.stdout).machines as Machine[]).find((m) => m.name === node)!;
}

/** Pushes `node` (`mesh-control push NODE`) and returns the digest pushed, as the board says it. */
async function pushed(vhost: TestVhost, node: string): Promise<{ digest: string }> {
  await mustControl(vhost.env, ["push", node]);
  const board = await mustControl(vhost.env, ["board", "--json"]);
  const m = (JSON.parse(board.stdout).machines as { name: string; digest: string }[])
    .find((x) => x.name === node)!;
  return { digest: m.digest };
}

Deno.test(
  "a report claiming what was never pushed to its node is an unknown claim, never ok",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const [a, b] = [uniqueNode("claima"), uniqueNode("claimb")];
      await enrollIn(vhost, a);
      await enrollIn(vhost, b);
      const dir = await Deno.makeTempDir({ prefix: "mesh-claim-" });
      try {
        await Deno.writeTextFile(
          `${dir}/m.json`,
          JSON.stringify({
            version: 1,
            resources: [{ id: "d", type: "directory", path: `${dir}/made`, mode: "0755" }],
          }),
        );
        await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", `m-${a}`]);
        await mustControl(vhost.env, ["node", "assign", a, `m-${a}`]);
        const ofA = await pushed(vhost, a);
        const epochOf = async (node: string) =>
          (await inv.sql<{ epoch: string }[]>`
            select epoch::text as epoch from nodes where name = ${node}`)[0]!.epoch;

        // The field case: b was never pushed; it reports generation 1 with a's digest, applied.
        const never = await reported(
          vhost,
          b,
          reportOf(b, { generation: 1, declaration: ofA.digest, total: 1, applied: 1 }),
        );
        assertEquals([never.verdict, never.words], ["unknown-claim", "unknown claim"]);
        assertEquals(
          never.claim,
          `its last report claims generation 1 with digest ${ofA.digest}, and nothing was ever pushed to it`,
        );
        const status = await controlCli(["status", "--grace", "60s"], vhost.env);
        assertEquals(status.code, 1, status.stdout + status.stderr);
        assertMatch(status.stdout, new RegExp(`${b}\\s+unknown claim\\s+0 of 0`));
        assertStringIncludes(status.stdout, "and nothing was ever pushed to it");
        const json = JSON.parse((await controlCli(["status", "--json"], vhost.env)).stdout);
        assertEquals(json.counts["unknown-claim"], 1);
        assertEquals(json.machines.find((m: Machine) => m.name === b)?.verdict, "unknown-claim");
        // push --behind pushes it, saying why.
        const dry = await mustControl(vhost.env, ["push", "--behind", "--dry-run"]);
        assertMatch(dry.stdout, new RegExp(`${b}: unknown claim: its last report claims`));

        // Pushed now (its own, empty, declaration): another node's digest at its generation 1.
        const ofB = await pushed(vhost, b);
        assert(ofB.digest !== ofA.digest);
        const epoch = await epochOf(b);
        const digestClaim = await reported(
          vhost,
          b,
          reportOf(b, { generation: 1, declaration: ofA.digest, epoch }),
        );
        assertEquals(digestClaim.verdict, "unknown-claim");
        assertEquals(
          digestClaim.claim,
          `its last report claims generation 1 with digest ${ofA.digest}, which was never pushed to it (its generation 1 has digest ${ofB.digest})`,
        );

        // Its own digest at a generation never pushed to it.
        const generationClaim = await reported(
          vhost,
          b,
          reportOf(b, { generation: 7, declaration: ofB.digest, epoch }),
        );
        assertEquals(generationClaim.verdict, "unknown-claim");
        assertEquals(
          generationClaim.claim,
          `its last report claims generation 7 with digest ${ofB.digest}, and the last generation pushed to it is 1`,
        );

        // What was pushed: ok, no claim said.
        const ok = await reported(
          vhost,
          b,
          reportOf(b, { generation: 1, declaration: ofB.digest, epoch }),
        );
        assertEquals([ok.verdict, ok.claim], ["ok", undefined]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

/** A node: generation 2 pushed (digest b, after a at 1); its last report `report`. */
function given(name: string, report: Partial<NonNullable<GivenNode["report"]>>): GivenNode {
  const now = new Date("2026-01-01T00:00:00Z");
  return {
    name,
    declaration: { generation: 2, digest: `sha256:${"b".repeat(64)}`, total: 3, pushedAt: now },
    report: {
      generation: 2,
      digest: `sha256:${"b".repeat(64)}`,
      outcome: "applied",
      applied: 3,
      total: 3,
      trigger: "push",
      problems: [],
      reportedAt: now,
      receivedAt: now,
      ...report,
    },
  };
}

Deno.test("the verdict rules of a claim", async () => {
  const a = `sha256:${"a".repeat(64)}`;
  const c = `sha256:${"c".repeat(64)}`;
  const never = given("never", { generation: 1, digest: a, pushed: false });
  delete never.declaration;
  const inv = await freshInventory();
  try {
    const { states } = await judgeNodes(inv.sql, [
      // The current declaration, as pushed: ok.
      given("current", {}),
      // An earlier generation, with the digest pushed then (the inventory says so): outstanding.
      given("earlier", { generation: 1, digest: a, pushed: true }),
      // The same claims, not pushed: unknown, whatever the outcome.
      ...(["applied", "failed", "refused"] as const).map((outcome) =>
        given(`other-${outcome}`, { generation: 1, digest: c, pushed: false, outcome })
      ),
      // A later generation than any pushed, with the current digest (was: ok).
      given("later", { generation: 3, pushed: false }),
      // The current generation with another digest.
      given("digest", { digest: c, pushed: false }),
      // Never pushed, claiming an apply (was: ok).
      never,
      // Saying it holds no declaration claims nothing.
      given("undeclared", { outcome: "undeclared", generation: 0, digest: c }),
    ], { now: new Date("2026-01-01T00:00:01Z") });
    const of = new Map(states.map((s) => [s.name, s]));
    assertEquals(of.get("current")!.said, "ok");
    assertEquals(of.get("earlier")!.said, "outstanding");
    for (const outcome of ["applied", "failed", "refused"]) {
      assertEquals(of.get(`other-${outcome}`)!.said, "unknown-claim", outcome);
    }
    assertEquals(of.get("later")!.said, "unknown-claim");
    assertEquals(
      of.get("later")!.claim,
      `its last report claims generation 3 with digest sha256:${
        "b".repeat(64)
      }, and the last generation pushed to it is 2`,
    );
    assertEquals(of.get("digest")!.said, "unknown-claim");
    assertEquals(
      of.get("digest")!.claim,
      `its last report claims generation 2 with digest ${c}, which was never pushed to it (its generation 2 has digest sha256:${
        "b".repeat(64)
      })`,
    );
    const n = of.get("never")!;
    assertEquals([n.said, n.applied, n.total], ["unknown-claim", 0, 0]);
    assertEquals(
      n.claim,
      `its last report claims generation 1 with digest ${a}, and nothing was ever pushed to it`,
    );
    assert(isAlarm("unknown-claim"));
    assertEquals(of.get("undeclared")!.said, "outstanding");
    assertEquals(of.get("undeclared")!.claim, undefined);
  } finally {
    await inv.drop();
  }
});

Deno.test(
  "whether a claim was pushed is kept with the last report, also when the report is recorded before its push commits",
  async () => {
    const inv = await freshInventory();
    try {
      const sql = inv.sql;
      const [a, b] = [`sha256:${"a".repeat(64)}`, `sha256:${"b".repeat(64)}`];
      await sql`insert into nodes (name, system) values ('n', 'debian')`;
      const insertReport = (generation: number, digest: string) =>
        sql`insert into reports (node, generation, digest, outcome, applied, total, trigger,
              problems, changes, host_version, reported_at)
            values ('n', ${generation}, ${digest}, 'applied', 1, 1, 'push', '[]', '[]', 't', now())`;
      const verdict = async () => (await readNodeStates(sql))[0]!.said;
      // The node reports generation 1 before the push's transaction committed; generation 2 is
      // pushed right after: the report is about an earlier generation pushed to it.
      await insertReport(1, a);
      assertEquals(await verdict(), "unknown-claim");
      await sql`insert into declarations (node, generation, digest, body, total)
                values ('n', 1, ${a}, '{}', 1)`;
      assertEquals(await verdict(), "ok");
      await sql`insert into declarations (node, generation, digest, body, total)
                values ('n', 2, ${b}, '{}', 1)`;
      assertEquals(await verdict(), "outstanding");
      await sql`delete from declarations where node = 'n' and generation = 2`;
      assertEquals(await verdict(), "ok");
      // Another digest at generation 1, then a generation never pushed.
      await insertReport(1, b);
      assertEquals(await verdict(), "unknown-claim");
      await insertReport(2, a);
      assertEquals(await verdict(), "unknown-claim");
      // The claimed report deleted: the last one before it is judged again (ok).
      await sql`delete from reports where node = 'n' and digest = ${b}`;
      await sql`delete from reports where node = 'n' and generation = 2`;
      assertEquals(await verdict(), "ok");
      // Generation 2 pushed with another digest: the report of 1 is outstanding, not unknown.
      await sql`insert into declarations (node, generation, digest, body, total)
                values ('n', 2, ${b}, '{}', 1)`;
      assertEquals(await verdict(), "outstanding");
    } finally {
      await inv.drop();
    }
  },
);
