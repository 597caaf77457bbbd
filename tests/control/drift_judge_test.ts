/**
 * The drift verdict's clock rule (control/drift.ts, `judgeDrift`): a result's age is the time
 * since its report arrived (our clock) plus its age when the node reported it (the node's clock),
 * so a node whose clock is an hour off is judged right either way, and a result is stale only past
 * twice its interval.
 *
 * @module
 */

import { assertEquals } from "../support/assert.ts";
import { z } from "zod";
import {
  isDriftSummary,
  judgeDrift,
  NOT_CHECKED,
  RAN_AT_PATTERN,
  storedSummary,
} from "../../control/drift.ts";
import { DriftSummary } from "../../lib/drift.ts";

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

// The precompiled check that status runs on every stored summary (control/drift.ts) is never more
// lenient than the schema: what it accepts the schema accepts; what it refuses goes to the schema.
const SUMMARIES: Record<string, unknown> = {
  clean: {
    status: "clean",
    ranAt: "2026-12-01T10:00:00.000Z",
    intervalSeconds: 900,
    registry: "/var/lib/mesh/reconcile/registry.yaml",
    entries: 3,
    findings: [],
  },
  drift: {
    status: "drift",
    ranAt: "2024-02-29T10:00:00+01:00",
    intervalSeconds: 900,
    registry: "r",
    entries: 3,
    findings: [{ check: "port", direction: "rogue", count: 2 }],
  },
  unobservable: {
    status: "unobservable",
    ranAt: "2026-12-01T10:00:00Z",
    intervalSeconds: 1,
    registry: "r",
    entries: 0,
    findings: [],
    unobserved: ["docker@root"],
  },
  unreadable: { status: "unreadable", path: "/x", problem: "missing" },
};

/** Each summary changed one way the schema refuses. */
function spoiled(summary: Record<string, unknown>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [{ ...summary, extra: 1 }, { ...summary, status: "ok" }];
  for (const key of Object.keys(summary)) {
    if (key === "status") continue;
    const { [key]: _, ...without } = summary;
    out.push(without);
    for (const bad of [null, "x", -1, 1.5, 2 ** 53, [], {}, "x".repeat(5000), [1], [{}]]) {
      out.push({ ...summary, [key]: bad });
    }
  }
  out.push({ ...summary, ranAt: "2026-02-30T10:00:00Z" }, { ...summary, ranAt: "2026-12-01" });
  out.push({ ...summary, findings: [{ check: "port", direction: "rogue", count: 0 }] });
  out.push({ ...summary, findings: [{ check: "port", direction: "up", count: 1 }] });
  out.push({ ...summary, findings: [{ check: "port", direction: "rogue", count: 1, x: 1 }] });
  out.push({ ...summary, intervalSeconds: 366 * 86_400 + 1 });
  out.push({ ...summary, unobserved: Array(101).fill("a") }, {
    ...summary,
    unobserved: ["a".repeat(201)],
  });
  return out;
}

Deno.test("the precompiled check accepts what the schema accepts, and nothing it refuses", () => {
  for (const [name, summary] of Object.entries(SUMMARIES)) {
    assertEquals([name, isDriftSummary(summary)], [name, true]);
    assertEquals([name, DriftSummary.safeParse(summary).success], [name, true]);
    // Through JSON, as the inventory stores it.
    assertEquals(isDriftSummary(JSON.parse(JSON.stringify(summary))), true);
    for (const bad of spoiled(summary as Record<string, unknown>)) {
      if (isDriftSummary(bad)) {
        assertEquals([JSON.stringify(bad), DriftSummary.safeParse(bad).success], [
          JSON.stringify(bad),
          true,
        ]);
      }
    }
  }
  assertEquals(
    isDriftSummary(JSON.parse('{"__proto__": 1, "status": "unreadable", "path": "/x"}')),
    false,
  );
});

Deno.test("the check's time pattern is still the schema's", () => {
  assertEquals(RAN_AT_PATTERN.source, z.iso.datetime({ offset: true }).def.pattern!.source);
});

Deno.test("a stored summary the schema refuses is unreadable with the schema's reason", () => {
  const summary = storedSummary({ ...SUMMARIES.clean as object, intervalSeconds: 0 }, DriftSummary);
  assertEquals(summary.status, "unreadable");
  if (summary.status !== "unreadable") return;
  assertEquals(summary.path, "(inventory)");
  assertEquals(
    summary.problem.startsWith("the stored summary does not match this mesh-control's: "),
    true,
  );
  // One the check accepts is the summary itself.
  assertEquals(storedSummary(SUMMARIES.drift, DriftSummary), SUMMARIES.drift as DriftSummary);
});
