/**
 * The drift verdict's clock rule, as the database judges it (control/node_state.ts): a result's
 * age is the time since its report arrived (our clock) plus its age when the node reported it (the
 * node's clock), so a node whose clock is an hour off is judged right either way, and a result is
 * stale only past twice its interval. A stored summary this program does not read is
 * `unreadable` with the reason, and never fails the read of the fleet.
 *
 * @module
 */

import { assert, assertEquals } from "../support/assert.ts";
import { freshInventory, type TestInventory } from "./support.ts";
import { type GivenNode, judgeNodes } from "./judge.ts";
import { NOT_KEPT_PROBLEM, ranAt } from "../../control/drift.ts";
import type { DriftSummary } from "../../lib/drift.ts";

const NOW = new Date("2026-12-01T12:00:00Z");
const at = (ms: number) => new Date(NOW.getTime() + ms);

function clean(ranAt: Date | string): DriftSummary {
  return {
    status: "clean",
    ranAt: typeof ranAt === "string" ? ranAt : ranAt.toISOString(),
    intervalSeconds: 900,
    registry: "/r.yaml",
    entries: 1,
    findings: [],
  };
}

/** The drift views of `nodes` judged at NOW, by name. */
async function driftOf(inv: TestInventory, nodes: GivenNode[]) {
  const { board } = await judgeNodes(inv.sql, nodes, { now: NOW });
  return new Map(board.machines.map((m) => [m.name, m.drift]));
}

Deno.test("the drift verdict's clock rule, in the database", async (t) => {
  const inv = await freshInventory();
  try {
    await t.step("a node's clock an hour off does not make its result stale or fresh", async () => {
      const skews = [-3_600_000, 0, 3_600_000];
      // Ran a minute before its report, by its own clock; the report arrived just now.
      const drift = await driftOf(
        inv,
        skews.map((skew, i) => ({
          name: `n${i}`,
          drift: { summary: clean(at(skew - 60_000)), reportedAt: at(skew), receivedAt: NOW },
        })),
      );
      for (const [i, skew] of skews.entries()) {
        const view = drift.get(`n${i}`)!;
        assertEquals([view.verdict, view.ageSeconds], ["clean", 60], `skew ${skew}`);
      }
    });

    await t.step("stale past twice the interval, counted from the report's arrival", async () => {
      const given = (name: string, sinceArrival: number, atNode: number): GivenNode => ({
        name,
        drift: {
          summary: clean(at(-sinceArrival - atNode)),
          reportedAt: at(-sinceArrival),
          receivedAt: at(-sinceArrival),
        },
      });
      const drift = await driftOf(inv, [
        given("exactly", 1_740_000, 60_000), // 30m exactly: allowed
        given("past", 1_741_000, 60_000),
        given("old", 0, 1_801_000), // already old when reported
        given("last", 1_801_000, 0),
      ]);
      assertEquals(drift.get("exactly")!.verdict, "clean");
      assertEquals(drift.get("past")!.verdict, "stale");
      assertEquals(drift.get("old")!.verdict, "stale");
      assertEquals(drift.get("last")!.last, "clean");
    });

    await t.step("no summary is not checked, with no time", async () => {
      const drift = await driftOf(inv, [{ name: "none" }]);
      assertEquals(drift.get("none"), {
        verdict: "not-checked",
        words: "not checked",
        findings: 0,
        counts: [],
      });
    });

    await t.step("each status, with its counts and what it could not observe", async () => {
      const drift = await driftOf(inv, [
        {
          name: "drift",
          drift: {
            summary: {
              ...clean(at(-60_000)),
              status: "drift",
              findings: [
                { check: "port", direction: "rogue", count: 2 },
                { check: "container", direction: "missing", count: 1 },
              ],
            },
            reportedAt: NOW,
            receivedAt: NOW,
          },
        },
        {
          name: "unobservable",
          drift: {
            summary: { ...clean(at(-60_000)), status: "unobservable", unobserved: ["docker@root"] },
            reportedAt: NOW,
            receivedAt: NOW,
          },
        },
        {
          name: "unreadable",
          drift: {
            summary: { status: "unreadable", path: "/x", problem: "missing" },
            reportedAt: NOW,
            receivedAt: NOW,
          },
        },
      ]);
      assertEquals(drift.get("drift"), {
        verdict: "drift",
        words: "drift",
        findings: 3,
        counts: [
          { check: "port", direction: "rogue", count: 2 },
          { check: "container", direction: "missing", count: 1 },
        ],
        last: "drift",
        ranAt: at(-60_000).toISOString(),
        ageSeconds: 60,
        intervalSeconds: 900,
        registry: "/r.yaml",
      });
      assertEquals(drift.get("unobservable")!.unobserved, ["docker@root"]);
      assertEquals(drift.get("unreadable"), {
        verdict: "unreadable",
        words: "unreadable",
        findings: 0,
        counts: [],
        path: "/x",
        problem: "missing",
      });
    });

    await t.step(
      "a time PostgreSQL cannot read is judged by the instant ingest read, never a failed read",
      async () => {
        // Year 0000 and an offset beyond 15:59: the schema accepts both, a timestamptz cast of
        // either fails (and would fail the whole status).
        const drift = await driftOf(inv, [
          {
            name: "year0",
            drift: { summary: clean("0000-02-29T00:00:00Z"), reportedAt: NOW, receivedAt: NOW },
          },
          {
            name: "offset",
            drift: {
              summary: clean("2026-12-01T11:59:00+23:59"),
              reportedAt: at(-86_340_000),
              receivedAt: NOW,
            },
          },
        ]);
        assertEquals(drift.get("year0")!.verdict, "stale");
        assertEquals(drift.get("year0")!.ranAt, "0000-02-29T00:00:00.000Z");
        assertEquals(drift.get("offset")!.verdict, "clean");
        assertEquals(drift.get("offset")!.ranAt, "2026-11-30T12:00:00.000Z");
      },
    );

    await t.step(
      "a stored summary this program does not read is unreadable, with why",
      async () => {
        const without = (key: string) => {
          const { [key]: _, ...rest } = clean(NOW) as unknown as Record<string, unknown>;
          return rest;
        };
        const spoiled: Record<string, Record<string, unknown>> = {
          "other-status": { ...clean(NOW), status: "ok" },
          "no-interval": without("intervalSeconds"),
          "zero-interval": { ...clean(NOW), intervalSeconds: 0 },
          "text-interval": { ...clean(NOW), intervalSeconds: "900" },
          "fraction-interval": { ...clean(NOW), intervalSeconds: 1.5 },
          "no-time": without("ranAt"),
          "bad-time": { ...clean(NOW), ranAt: "yesterday" },
          "not-an-object": [1, 2] as unknown as Record<string, unknown>,
          "a-string": JSON.stringify(clean(NOW)) as unknown as Record<string, unknown>,
        };
        const { board } = await judgeNodes(
          inv.sql,
          Object.entries(spoiled).map(([name, summary]) => ({
            name,
            drift: { summary, reportedAt: NOW, receivedAt: NOW },
          })),
          { now: NOW },
        );
        assertEquals(board.driftCounts.unreadable, Object.keys(spoiled).length);
        for (const m of board.machines) {
          assertEquals([m.name, m.drift.verdict, m.drift.path, m.drift.problem], [
            m.name,
            "unreadable",
            "(inventory)",
            NOT_KEPT_PROBLEM,
          ]);
          assert(!("ranAt" in m.drift), m.name);
        }
      },
    );
  } finally {
    await inv.drop();
  }
});

Deno.test("the instant ingest stores beside a summary: as Date reads it, none when it cannot", () => {
  assertEquals(ranAt(clean("2026-12-01T11:00:00+01:00")), {
    ran_at_ms: Date.parse("2026-12-01T10:00:00Z"),
    ran_at: "2026-12-01T10:00:00.000Z",
  });
  assertEquals(ranAt(clean("yesterday")), { ran_at_ms: null, ran_at: null });
  assertEquals(ranAt({ status: "unreadable", path: "/x", problem: "missing" }), {
    ran_at_ms: null,
    ran_at: null,
  });
});
