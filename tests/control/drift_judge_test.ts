/**
 * The drift verdict's clock rule (control/drift.ts, `judgeDrift`): a result's age is the time
 * since its report arrived (our clock) plus its age when the node reported it (the node's clock),
 * so a node whose clock is an hour off is judged right either way, and a result is stale only past
 * twice its interval.
 *
 * @module
 */

import { assertEquals } from "../support/assert.ts";
import { judgeDrift, NOT_CHECKED } from "../../control/drift.ts";
import type { DriftSummary } from "../../lib/drift.ts";

const NOW = new Date("2026-12-01T12:00:00Z");
const at = (ms: number) => new Date(NOW.getTime() + ms);

function clean(ranAt: Date): DriftSummary {
  return {
    status: "clean",
    ranAt: ranAt.toISOString(),
    intervalSeconds: 900,
    registry: "/r.yaml",
    entries: 1,
    findings: [],
  };
}

Deno.test("a node's clock an hour off does not make its result stale or fresh", () => {
  for (const skew of [-3_600_000, 0, 3_600_000]) {
    // Ran a minute before its report, by its own clock; the report arrived just now.
    const fresh = judgeDrift(
      { summary: clean(at(skew - 60_000)), reportedAt: at(skew), receivedAt: NOW },
      NOW,
    );
    assertEquals([fresh.verdict, fresh.ageSeconds], ["clean", 60], `skew ${skew}`);
  }
});

Deno.test("stale past twice the interval, counted from the report's arrival", () => {
  const judge = (sinceArrival: number, atNode: number) =>
    judgeDrift({
      summary: clean(at(-sinceArrival - atNode)),
      reportedAt: at(-sinceArrival),
      receivedAt: at(-sinceArrival),
    }, NOW);
  assertEquals(judge(1_740_000, 60_000).verdict, "clean"); // 30m exactly: allowed
  assertEquals(judge(1_741_000, 60_000).verdict, "stale");
  assertEquals(judge(0, 1_801_000).verdict, "stale"); // already old when reported
  assertEquals(judge(1_801_000, 0).last, "clean");
});

Deno.test("no summary is not checked, with no time", () => {
  assertEquals(judgeDrift(undefined, NOW), { ...NOT_CHECKED, counts: [] });
  assertEquals("ranAt" in judgeDrift(undefined, NOW), false);
});
