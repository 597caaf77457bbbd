/**
 * An inventory seeded with one node in every drift state (and a few declaration states), shared
 * by the drift board test and the browser test. Reports go in as ingest records them (SQL, as
 * tests/control/board_test.ts does); drift summaries go in through `recordDrift`, the function
 * ingest itself calls, so the stored form is the real one.
 *
 * @module
 */

import type { TestInventory } from "./support.ts";
import { recordDrift } from "../../control/drift.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import type { DriftSummary } from "../../lib/drift.ts";
import { disguised } from "../support/disguise.ts";

/** The seeded nodes by what they show. */
export const NODES = {
  /** ok, drift clean. */
  clean: "dr-clean",
  /** ok, one port/rogue finding. */
  rogue: "dr-rogue",
  /** ok, podman could not be asked. */
  blind: "dr-blind",
  /** ok, its link could not read the result (a problem text that tries to be HTML). */
  unreadable: "dr-unreadable",
  /** ok and reporting, but its last result (clean) is two hours old: twice its interval is 30m. */
  stale: "dr-stale",
  /** ok, runs no mesh-reconcile. */
  unchecked: "dr-unchecked",
  /** failed 3 of 8 (a problem that tries to be HTML), drift with findings. */
  failed: "dr-failed",
  /** never spoke. */
  silent: "dr-silent",
} as const;

/** The nodes `status` must list (declaration not ok, or a drift alarm). */
export const ATTENTION: string[] = [
  NODES.rogue,
  NODES.blind,
  NODES.unreadable,
  NODES.stale,
  NODES.failed,
  NODES.silent,
];

/** The drift verdict each node must get. */
export const EXPECTED_DRIFT: Record<string, string> = {
  [NODES.clean]: "clean",
  [NODES.rogue]: "drift",
  [NODES.blind]: "unobservable",
  [NODES.unreadable]: "unreadable",
  [NODES.stale]: "stale",
  [NODES.unchecked]: "not-checked",
  [NODES.failed]: "drift",
  [NODES.silent]: "not-checked",
};

/**
 * Machine text that must show as `<U+XXXX>`, never raw: bidirectional controls, zero-width
 * characters, a byte order mark, C1 controls (tests/support/disguise.ts). The failed node's
 * problem carries it.
 */
export const DISGUISED: string = disguised("apt printed");

/** Machine text that must reach a page as text, never as markup. */
export const HOSTILE =
  `<img src=x onerror="document.title='owned'"><script>document.title='owned'</script>&amp;`;

const digest = (c: string) => `sha256:${c.repeat(64)}`;

function summary(
  status: "clean" | "drift" | "unobservable",
  findings: { check: "port" | "container"; direction: "rogue" | "missing"; count: number }[],
  ranAgoSeconds: number,
  extra: { registry?: string } = {},
): DriftSummary {
  const base = {
    ranAt: new Date(Date.now() - ranAgoSeconds * 1000).toISOString(),
    intervalSeconds: 900,
    registry: extra.registry ?? "/var/lib/mesh/reconcile/registry.yaml",
    entries: 4,
    findings,
  };
  return status === "unobservable"
    ? { status, ...base, unobserved: ["podman@root"] }
    : { status, ...base };
}

function report(node: string, drift: DriftSummary | undefined): ReportMessage {
  return {
    kind: "report",
    node,
    generation: 1,
    trigger: "interval",
    at: new Date().toISOString(),
    hostVersion: "0.1.0-test",
    outcome: "applied",
    applied: 8,
    total: 8,
    declaration: digest("a"),
    changes: [],
    problems: [],
    ...(drift ? { drift } : {}),
  };
}

/** Seeds the estate; returns the node names in {@linkcode NODES}. */
export async function seedDriftEstate(inv: TestInventory): Promise<void> {
  const sql = inv.sql;
  const names = Object.values(NODES);
  for (const name of names) {
    await sql`insert into nodes (name, system) values (${name}, 'debian')`;
  }
  for (const name of names) {
    if (name === NODES.silent) continue;
    await sql`insert into declarations (node, generation, digest, body, total)
      values (${name}, 1, ${name === NODES.failed ? digest("c") : digest("a")}, '{}', 8)`;
    const failed = name === NODES.failed;
    const problems = failed ? [{ id: "pkg", message: `apt said ${HOSTILE} ${DISGUISED}` }] : [];
    await sql`
      insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
        changes, host_version, reported_at)
      values (${name}, 1, ${failed ? digest("c") : digest("a")}, ${failed ? "failed" : "applied"},
        ${failed ? 3 : 8}, 8, 'interval', ${JSON.stringify(problems)}::text::jsonb, '[]'::jsonb,
        '0.1.0-test', now() - interval '1 minute')`;
  }
  await sql.begin(async (tx) => {
    await recordDrift(tx, [
      report(NODES.clean, summary("clean", [], 60)),
      report(NODES.rogue, summary("drift", [{ check: "port", direction: "rogue", count: 1 }], 60)),
      report(NODES.blind, summary("unobservable", [], 60)),
      report(NODES.unreadable, {
        status: "unreadable",
        path: "/var/lib/mesh/reconcile/result.json",
        problem: `not UTF-8 JSON (truncated?): ${HOSTILE}`,
      }),
      // Its reports keep coming; its mesh-reconcile stopped two hours ago.
      report(NODES.stale, summary("clean", [], 7200)),
      report(NODES.unchecked, undefined),
      report(
        NODES.failed,
        summary(
          "drift",
          [
            { check: "container", direction: "missing", count: 2 },
            { check: "port", direction: "rogue", count: 1 },
          ],
          120,
          { registry: `/srv/${HOSTILE}/registry.yaml` },
        ),
      ),
    ]);
  });
}
