/**
 * Each node's drift verdict: the latest mesh-reconcile result its link summarised, stored as it
 * arrived (`node_drift`, migrations 0004 and 0010) and judged by the database at read time
 * (./node_state.ts `readFleet`, where the rule is written), next to (never instead of) the
 * declaration verdict of `./state.ts`.
 *
 * Verdicts (docs/design.md, "Board"; distinct outcomes keep distinct words):
 * - `clean`: the last run observed everything and found nothing.
 * - `drift`: the last run found differences (counted per check and direction).
 * - `unobservable`: the last run could not observe some source; it cannot be clean.
 * - `unreadable`: the node's link could not read its result file (missing, too large, truncated,
 *   not a result); the node runs a link that was told to read one, so this is an alarm.
 * - `stale`: the last result is older than twice its run interval (one missed run allowed): the
 *   dead-man rule, applied fleet-wide. Judged on this control plane's clock: the time since the
 *   report arrived plus the result's age when the node reported it (both differences on one
 *   clock each, so no node's clock is compared with ours).
 * - `not-checked`: the node never carried a summary (it runs no mesh-reconcile, or never spoke);
 *   never shown as clean.
 *
 * @module
 */

import type { DriftSummary, FindingCount } from "../lib/drift.ts";
import type { ReportMessage } from "../lib/broker.ts";
import type { Queryable } from "./db.ts";
import { printable } from "../lib/printable.ts";
import { formatDuration } from "../lib/duration.ts";

/** A node's drift verdict. */
export type DriftVerdict =
  | "clean"
  | "drift"
  | "unobservable"
  | "unreadable"
  | "stale"
  | "not-checked";

/** Every drift verdict, alarms first (the order boards list them). */
export const DRIFT_VERDICTS: readonly DriftVerdict[] = [
  "drift",
  "unobservable",
  "unreadable",
  "stale",
  "not-checked",
  "clean",
];

/** The words an operator reads for each drift verdict. */
export const DRIFT_WORDS: Record<DriftVerdict, string> = {
  "clean": "clean",
  "drift": "drift",
  "unobservable": "unobservable",
  "unreadable": "unreadable",
  "stale": "stale",
  "not-checked": "not checked",
};

/** True for the verdicts `status` lists and exits 1 for. */
export function isDriftAlarm(verdict: DriftVerdict): boolean {
  switch (verdict) {
    case "drift":
    case "unobservable":
    case "unreadable":
    case "stale":
      return true;
    case "clean":
    case "not-checked":
      return false;
  }
}

/** A result this many intervals old is stale (one missed run is allowed; ./node_state.ts applies it). */
export const STALE_AFTER_INTERVALS = 2;

/**
 * A node's drift on the board. Optional fields are absent, never null; a node whose result was
 * never read carries no time.
 */
export interface DriftView {
  verdict: DriftVerdict;
  /** The verdict in words ("not checked"). */
  words: string;
  /** Findings of the last result, in all (0 when none or none known). */
  findings: number;
  /** Findings of the last result per check and direction (empty when none). */
  counts: FindingCount[];
  /** The last result's own status (`clean`, `drift`, `unobservable`), also when it is stale. */
  last?: "clean" | "drift" | "unobservable";
  /** When the last run observed (the node's clock, ISO 8601). */
  ranAt?: string;
  /** How old the last result is now, in whole seconds (this control plane's clock). */
  ageSeconds?: number;
  /** How often the node's mesh-reconcile runs, in seconds. */
  intervalSeconds?: number;
  /** The registry the last run compared (a path on the node). */
  registry?: string;
  /** Sources the last run could not observe (`source@account`). */
  unobserved?: string[];
  /** `unreadable`: the result file the link was told to read. */
  path?: string;
  /** `unreadable`: why it could not be read. */
  problem?: string;
}

/** Why a stored summary this program does not read is `unreadable`. */
export const NOT_KEPT_PROBLEM =
  "the stored summary does not match this mesh-control's (another version wrote it)";

/**
 * The instant a summary's run observed, as epoch milliseconds and as ISO 8601 in UTC
 * (`toISOString`), read from the summary the schema accepted; null for an `unreadable` one (and
 * for a time `Date.parse` cannot read): the columns `ran_at_ms` and `ran_at` of `node_drift`
 * (migration 0010_drift_ran_at).
 */
export function ranAt(summary: DriftSummary): { ran_at_ms: number | null; ran_at: string | null } {
  if (summary.status === "unreadable") return { ran_at_ms: null, ran_at: null };
  const ms = Date.parse(summary.ranAt);
  // Every time the schema accepts parses; one that did not would be stored without its instant
  // (shown unreadable), never fail the batch.
  if (!Number.isFinite(ms)) return { ran_at_ms: null, ran_at: null };
  return { ran_at_ms: ms, ran_at: new Date(ms).toISOString() };
}

/**
 * Records the drift summaries of a batch of accepted reports (inside the ingest's transaction):
 * per node, the last report of the batch wins; a report with a summary replaces the node's row,
 * one without removes it (the node stopped carrying one: "not checked", not its old verdict).
 */
export async function recordDrift(
  tx: Queryable,
  reports: readonly ReportMessage[],
): Promise<void> {
  if (reports.length === 0) return;
  const last = new Map<string, ReportMessage>();
  for (const r of reports) last.set(r.node, r);
  const carried = [...last.values()].filter((r) => r.drift !== undefined);
  const without = [...last.values()].filter((r) => r.drift === undefined).map((r) => r.node);
  if (without.length > 0) await tx`delete from node_drift where node = any(${without})`;
  if (carried.length === 0) return;
  // The instant the run observed, read here from the summary the schema accepted (the database
  // judges staleness from it; migration 0010_drift_ran_at says why it is not read there).
  const rows = carried.map((r) => ({
    node: r.node,
    summary: JSON.stringify(r.drift),
    reported_at: r.at,
    ...ranAt(r.drift!),
  }));
  await tx`
    insert into node_drift (node, summary, reported_at, ran_at_ms, ran_at)
    select x.node, x.summary::jsonb, x.reported_at::timestamptz, x.ran_at_ms, x.ran_at
    from json_to_recordset(${JSON.stringify(rows)}::text::json)
      as x(node text, summary text, reported_at text, ran_at_ms bigint, ran_at text)
    on conflict (node) do update set summary = excluded.summary,
      reported_at = excluded.reported_at, ran_at_ms = excluded.ran_at_ms,
      ran_at = excluded.ran_at, received_at = now()`;
}

/** Findings counts in words: `1 port/rogue, 2 container/missing`. */
export function countsWords(counts: readonly FindingCount[]): string {
  return counts.map((c) => `${c.count} ${c.check}/${c.direction}`).join(", ");
}

/** One line for people about a node's drift (machine text escaped). */
export function driftText(view: DriftView): string {
  let head = `drift: ${view.words}`;
  if (view.counts.length > 0) head += ` (${countsWords(view.counts)})`;
  if (view.verdict === "stale" && view.last !== undefined) head += ` (last result ${view.last})`;
  const parts = [head];
  if (view.ranAt !== undefined) {
    parts.push(
      `ran ${view.ranAt}, ${formatDuration((view.ageSeconds ?? 0) * 1000)} ago, every ${
        formatDuration((view.intervalSeconds ?? 0) * 1000)
      }`,
    );
  }
  if (view.registry !== undefined) parts.push(`registry ${view.registry}`);
  if (view.unobserved?.length) parts.push(`could not observe ${view.unobserved.join(", ")}`);
  if (view.path !== undefined) parts.push(`${view.path}: ${view.problem}`);
  return printable(parts.join("; "));
}
