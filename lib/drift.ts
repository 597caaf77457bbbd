/**
 * Drift on the link: the two formats that carry mesh-reconcile's verdict from a node to the
 * control plane, defined once and imported by mesh-reconcile (which writes the result file),
 * the host's link (which reads it and summarises it) and the control plane (which stores and
 * judges the summary).
 *
 * - {@linkcode ResultFile}: what `mesh-reconcile run --result FILE --interval D` writes
 *   atomically after every run: the run's JSON result plus the file's `version` and the interval
 *   the run is repeated at. It stays on the node (its findings never leave it).
 * - {@linkcode DriftSummary}: what the link attaches to each report (`drift`): the verdict,
 *   findings counted per check and direction, when the run was and how often it runs, and the
 *   registry it compared; or `unreadable` with the path and the reason.
 *
 * @module
 */

import { z } from "zod";
import { CHECKS, DIRECTIONS, RUN_STATUSES } from "./drift_checks.ts";
import { isReportText, REPORT_TEXT_PROBLEM, reportText } from "./report_rules.ts";

/** The version of the result file this program writes and reads. */
export const RESULT_FILE_VERSION = 1;

/** The largest result file the link reads (bytes); a larger one is `unreadable`. */
export const MAX_RESULT_BYTES = 4 * 1024 * 1024;

export { DEFAULT_RESULT_PATH } from "./link_interval.ts";

export { CHECKS, DIRECTIONS, RUN_STATUSES };

const time = z.iso.datetime({ offset: true });

/** One finding as the result file holds it. */
const FileFinding = z.strictObject({
  check: z.enum(CHECKS),
  direction: z.enum(DIRECTIONS),
  service: z.string().optional(),
  subject: z.string(),
  detail: z.string(),
});

/** One source of observation as the result file holds it. */
const FileSource = z.strictObject({
  source: z.string(),
  account: z.string().optional(),
  state: z.enum(["observed", "absent", "failed"]),
  method: z.string(),
  detail: z.string(),
});

/**
 * The result file (JSON) of `mesh-reconcile run --result FILE`: the run's `--json` form with
 * `version` and `intervalSeconds` (how often the run is repeated, from `--interval`).
 */
export const ResultFile = z.strictObject({
  version: z.literal(RESULT_FILE_VERSION),
  /** How often the run is repeated (its timer or mesh-every), in seconds. */
  intervalSeconds: z.int().min(1).max(366 * 86_400),
  clean: z.boolean(),
  status: z.enum(RUN_STATUSES),
  exitCode: z.union([z.literal(0), z.literal(1), z.literal(2)]),
  /** When the run's observation started (the node's clock, ISO 8601). */
  time,
  /** The registry file compared. */
  registry: z.string(),
  entries: z.int().min(0),
  findings: z.array(FileFinding),
  sources: z.array(FileSource),
  observed: z.strictObject({
    containers: z.int().min(0),
    listeners: z.int().min(0),
    ports: z.int().min(0),
    addresses: z.int().min(0),
  }),
  subprocesses: z.int().min(0),
});
/** The result file of `mesh-reconcile run --result FILE`. */
export type ResultFile = z.infer<typeof ResultFile>;

/** Findings of one check in one direction. */
export const FindingCount = z.strictObject({
  check: z.enum(CHECKS),
  direction: z.enum(DIRECTIONS),
  count: z.int().min(1),
});
/** Findings of one check in one direction. */
export type FindingCount = z.infer<typeof FindingCount>;

/**
 * A summary's text: at most `n` characters, no NUL character and no lone surrogate (a report's
 * text, lib/report_rules.ts {@linkcode isReportText}; the host writes them so, {@linkcode summarise}).
 */
const bounded = (n: number) => z.string().max(n).refine(isReportText, REPORT_TEXT_PROBLEM);

/** A summary of a result that could be read. */
const ReadSummary = z.strictObject({
  /** When the run's observation started (the node's clock). */
  ranAt: time,
  /** How often it runs, in seconds. */
  intervalSeconds: z.int().min(1).max(366 * 86_400),
  /** The registry it compared (a path on the node). */
  registry: bounded(4096),
  /** Entries in that registry. */
  entries: z.int().min(0),
  /** Findings counted per check and direction (only those with findings), in a stable order. */
  findings: z.array(FindingCount).max(CHECKS.length * DIRECTIONS.length),
});

/**
 * The drift summary a report carries (`drift`), discriminated by `status`:
 * - `clean` / `drift` / `unobservable`: the latest result's verdict, with {@linkcode ReadSummary}
 *   fields; `unobservable` also names the sources that could not be observed (`source@account`).
 * - `unreadable`: the result file at `path` is missing, too large, truncated or not a result;
 *   `problem` says which.
 */
export const DriftSummary = z.discriminatedUnion("status", [
  ReadSummary.extend({ status: z.literal("clean") }),
  ReadSummary.extend({ status: z.literal("drift") }),
  ReadSummary.extend({
    status: z.literal("unobservable"),
    unobserved: z.array(bounded(200)).max(100),
  }),
  z.strictObject({
    status: z.literal("unreadable"),
    /** The result file the link was told to read. */
    path: bounded(4096),
    /** Why it could not be read. */
    problem: bounded(2000),
  }),
]);
/** The drift summary a report carries. */
export type DriftSummary = z.infer<typeof DriftSummary>;

/** Counts `findings` per check and direction, in {@linkcode CHECKS} × {@linkcode DIRECTIONS} order. */
export function countFindings(
  findings: readonly { check: typeof CHECKS[number]; direction: typeof DIRECTIONS[number] }[],
): FindingCount[] {
  const out: FindingCount[] = [];
  for (const check of CHECKS) {
    for (const direction of DIRECTIONS) {
      const count = findings.filter((f) => f.check === check && f.direction === direction).length;
      if (count > 0) out.push({ check, direction, count });
    }
  }
  return out;
}

/**
 * Summarises a result file (pure). Its texts are made a report's text, cut to their bounds
 * (lib/report_rules.ts `reportText`: a NUL as `\0`, a lone surrogate or half a cut pair as U+FFFD).
 */
export function summarise(result: ResultFile): DriftSummary {
  const base = {
    ranAt: result.time,
    intervalSeconds: result.intervalSeconds,
    registry: reportText(result.registry, 4096),
    entries: result.entries,
    findings: countFindings(result.findings),
  };
  switch (result.status) {
    case "clean":
      return { status: "clean", ...base };
    case "drift":
      return { status: "drift", ...base };
    case "unobservable":
      return {
        status: "unobservable",
        ...base,
        unobserved: result.sources.filter((s) => s.state === "failed").slice(0, 100).map((s) =>
          reportText(s.account ? `${s.source}@${s.account}` : s.source, 200)
        ),
      };
  }
}
