/**
 * Each node's drift verdict: the latest mesh-reconcile result its link summarised, stored as it
 * arrived (`node_drift`, migration 0004) and judged at read time, next to (never instead of) the
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

import { CHECKS, DIRECTIONS } from "../lib/drift_checks.ts";
import type { DriftSummary, FindingCount } from "../lib/drift.ts";
import type { ReportMessage } from "../lib/broker.ts";
import type { Queryable, Sql } from "./db.ts";
import { printable } from "../lib/printable.ts";
import { formatDuration } from "../lib/duration.ts";
import { NODES_PER_ROW } from "./read_rows.ts";

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

/** A result this many intervals old is stale (one missed run is allowed). */
export const STALE_AFTER_INTERVALS = 2;

/** A node's latest summary as stored. */
export interface StoredDrift {
  summary: DriftSummary;
  /** The carrying report's time on the node's clock. */
  reportedAt: Date;
  /** When the carrying report arrived (ours). */
  receivedAt: Date;
}

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

/** The drift view of a node that never carried a summary. */
export const NOT_CHECKED: DriftView = Object.freeze({
  verdict: "not-checked",
  words: DRIFT_WORDS["not-checked"],
  findings: 0,
  counts: [],
}) as DriftView;

/**
 * How old a stored result is at `now`, in ms: the time since its report arrived (our clock) plus
 * the result's age when the node reported it (the node's clock), each never below 0.
 */
function driftAgeMs(stored: StoredDrift, ranAt: string, now: Date): number {
  return Math.max(0, now.getTime() - stored.receivedAt.getTime()) +
    Math.max(0, stored.reportedAt.getTime() - Date.parse(ranAt));
}

/** Whether a result `ageMs` old, of a run every `intervalSeconds`, is stale. */
const isStale = (ageMs: number, intervalSeconds: number) =>
  ageMs > STALE_AFTER_INTERVALS * intervalSeconds * 1000;

/**
 * The verdict of {@linkcode judgeDrift} alone, without the view (what counting a node that is not
 * listed needs): always `judgeDrift(stored, now).verdict`.
 */
export function driftVerdict(stored: StoredDrift | undefined, now: Date): DriftVerdict {
  if (stored === undefined) return "not-checked";
  const s = stored.summary;
  if (s.status === "unreadable") return "unreadable";
  return isStale(driftAgeMs(stored, s.ranAt, now), s.intervalSeconds) ? "stale" : s.status;
}

/** Judges a node's stored summary at `now` (pure). */
export function judgeDrift(stored: StoredDrift | undefined, now: Date): DriftView {
  if (stored === undefined) return { ...NOT_CHECKED, counts: [] };
  const s = stored.summary;
  if (s.status === "unreadable") {
    return {
      verdict: "unreadable",
      words: DRIFT_WORDS.unreadable,
      findings: 0,
      counts: [],
      path: s.path,
      problem: s.problem,
    };
  }
  const ageMs = driftAgeMs(stored, s.ranAt, now);
  const verdict: DriftVerdict = isStale(ageMs, s.intervalSeconds) ? "stale" : s.status;
  const view: DriftView = {
    verdict,
    words: DRIFT_WORDS[verdict],
    findings: s.findings.reduce((n, f) => n + f.count, 0),
    // Built in the schema's key order (a summary read from jsonb has its keys in jsonb's order).
    counts: s.findings.map((f) => ({ check: f.check, direction: f.direction, count: f.count })),
    last: s.status,
    ranAt: new Date(Date.parse(s.ranAt)).toISOString(),
    ageSeconds: Math.floor(ageMs / 1000),
    intervalSeconds: s.intervalSeconds,
    registry: s.registry,
  };
  if (s.status === "unobservable") view.unobserved = [...s.unobserved];
  return view;
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
  const rows = carried.map((r) => ({
    node: r.node,
    summary: JSON.stringify(r.drift),
    reported_at: r.at,
  }));
  await tx`
    insert into node_drift (node, summary, reported_at)
    select x.node, x.summary::jsonb, x.reported_at::timestamptz
    from json_to_recordset(${JSON.stringify(rows)}::text::json)
      as x(node text, summary text, reported_at text)
    on conflict (node) do update set summary = excluded.summary,
      reported_at = excluded.reported_at, received_at = now()`;
}

/**
 * Reads every node's stored summary (or only `names`'), one query.
 *
 * A stored summary that no longer matches the schema (written by another version) is judged as
 * `unreadable` with the reason, never dropped silently.
 */
export async function readDrift(
  sql: Sql,
  names?: string[],
  nodesPerRow: number = NODES_PER_ROW,
): Promise<Map<string, StoredDrift>> {
  // One line of text a node, like readNodeStates' (./node_state.ts), and each row the lines of up
  // to `nodesPerRow` nodes, newline-separated: the node, when it reported and when we received it
  // (epoch milliseconds: the same instants, truncated to the millisecond as a Date is), and the
  // summary as jsonb's text (which holds no raw tab or newline), parsed here as the driver would
  // parse jsonb.
  const rows = await sql<{ s: string }[]>`
    select string_agg(s, E'\n') as s from (
      select (row_number() over () - 1) / ${nodesPerRow}::int as chunk,
        node || E'\t' || (extract(epoch from reported_at) * 1000)::float8 || E'\t' ||
        (extract(epoch from received_at) * 1000)::float8 || E'\t' || summary::text as s
      from node_drift
      ${names === undefined ? sql`` : sql`where node = any(${names})`}) x
    group by chunk`;
  const out = new Map<string, StoredDrift>();
  // Summaries the precompiled check does not accept, judged by the schema after the loop (zod is
  // loaded only then: a status with every summary well-formed never loads it).
  const doubtful: [unknown, StoredDrift][] = [];
  for (const row of rows) {
    for (const s of row.s.split("\n")) readLine(s);
  }
  function readLine(s: string): void {
    const a = s.indexOf("\t");
    const b = s.indexOf("\t", a + 1);
    const c = s.indexOf("\t", b + 1);
    const value: unknown = JSON.parse(s.slice(c + 1));
    const stored: StoredDrift = {
      summary: value as DriftSummary,
      reportedAt: new Date(Number(s.slice(a + 1, b))),
      receivedAt: new Date(Number(s.slice(b + 1, c))),
    };
    if (!isDriftSummary(value)) doubtful.push([value, stored]);
    out.set(s.slice(0, a), stored);
  }
  if (doubtful.length > 0) {
    const { DriftSummary } = await import("../lib/drift.ts");
    for (const [value, stored] of doubtful) stored.summary = storedSummary(value, DriftSummary);
  }
  return out;
}

/**
 * A stored summary as this mesh-control reads it: the summary when it matches
 * {@linkcode DriftSummary}, else an `unreadable` one saying why. The schema is the boundary: a
 * summary the precompiled {@linkcode isDriftSummary} accepts is one the schema accepts (asserted
 * by tests/control/drift_judge_test.ts); anything else goes through the schema itself, which
 * either accepts it or gives the reason.
 */
export function storedSummary(
  value: unknown,
  schema: typeof import("../lib/drift.ts").DriftSummary,
): DriftSummary {
  if (isDriftSummary(value)) return value;
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : {
    status: "unreadable",
    path: "(inventory)",
    problem: `the stored summary does not match this mesh-control's: ${
      parsed.error.issues[0]?.message ?? "invalid"
    }`,
  };
}

const CHECK_SET: ReadonlySet<unknown> = new Set(CHECKS);
const DIRECTION_SET: ReadonlySet<unknown> = new Set(DIRECTIONS);
/**
 * zod's own pattern for `ranAt`, `z.iso.datetime({ offset: true })` (an ISO 8601 time with an
 * offset), copied so that the check needs no zod; tests/control/drift_judge_test.ts asserts it is
 * still zod's.
 */
export const RAN_AT_PATTERN: RegExp =
  /^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$/;
const MAX_INTERVAL_SECONDS = 366 * 86_400;
const MAX_FINDINGS = CHECKS.length * DIRECTIONS.length;

/** Own enumerable keys of `o`, counted without allocating (a JSON object's are all own). */
function keyCount(o: object): number {
  let n = 0;
  for (const _ in o) n++;
  return n;
}

const isRecord = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const isCount = (x: unknown, min: number): x is number =>
  typeof x === "number" && Number.isSafeInteger(x) && x >= min;
const isBounded = (x: unknown, max: number): x is string =>
  typeof x === "string" && x.length <= max;

/**
 * A precompiled check of {@linkcode DriftSummary} for reading 10,000 stored summaries at once: no
 * more lenient than the schema (strict objects, the same enums, bounds and time pattern; safe
 * integers only), and true for every summary a link writes. False means "ask the schema", which
 * gives the reason; it is never the only judge of a summary.
 */
export function isDriftSummary(x: unknown): x is DriftSummary {
  if (!isRecord(x)) return false;
  const status = x.status;
  if (status === "unreadable") {
    return keyCount(x) === 3 && isBounded(x.path, 4096) && isBounded(x.problem, 2000);
  }
  let keys = 6;
  if (status === "unobservable") {
    const unobserved = x.unobserved;
    if (!Array.isArray(unobserved) || unobserved.length > 100) return false;
    for (const u of unobserved) if (!isBounded(u, 200)) return false;
    keys = 7;
  } else if (status !== "clean" && status !== "drift") return false;
  if (
    keyCount(x) !== keys || typeof x.ranAt !== "string" || !RAN_AT_PATTERN.test(x.ranAt) ||
    !isCount(x.intervalSeconds, 1) || x.intervalSeconds > MAX_INTERVAL_SECONDS ||
    !isBounded(x.registry, 4096) || !isCount(x.entries, 0)
  ) return false;
  const findings = x.findings;
  if (!Array.isArray(findings) || findings.length > MAX_FINDINGS) return false;
  for (const f of findings) {
    if (
      !isRecord(f) || keyCount(f) !== 3 || !CHECK_SET.has(f.check) ||
      !DIRECTION_SET.has(f.direction) || !isCount(f.count, 1)
    ) return false;
  }
  return true;
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
