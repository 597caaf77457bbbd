/**
 * Rendering a run's result: text for people, JSON for programs, the stamp line and the
 * Prometheus textfile. Everything here is a pure function of a {@linkcode ReconcileResult};
 * nothing prints and nothing observes.
 *
 * @module
 */

import { CHECKS as CHECK_TABLE } from "./compare.ts";
import type { Check, Direction } from "./finding.ts";
import type { ReconcileResult } from "./run.ts";
import { printable } from "../lib/printable.ts";
// The words of the result file without its schema (lib/drift.ts, which would load zod).
import { CHECKS as DRIFT_CHECKS, DIRECTIONS as DRIFT_DIRECTIONS } from "../lib/drift_checks.ts";
import type { ResultFile } from "../lib/drift.ts";

/**
 * The result file's version (lib/drift.ts `RESULT_FILE_VERSION`), typed by its schema: the
 * assignment fails to type-check when the schema's version changes.
 */
const RESULT_FILE_VERSION: ResultFile["version"] = 1;

/** The checks, in the table's order: every one gets its textfile lines, findings or not. */
const CHECKS: readonly Check[] = CHECK_TABLE.map((row) => row.check);
const DIRECTIONS: readonly Direction[] = DRIFT_DIRECTIONS;
// The result file's schema (lib/drift.ts) names the same checks and directions: the two
// assignments below fail to type-check when its lists and the types part ways.
const _everyCheck: readonly (typeof DRIFT_CHECKS)[number][] = [] as Check[];
const _everyDirection: readonly (typeof DRIFT_DIRECTIONS)[number][] = [] as Direction[];

/** The `--json` form of a run (docs/design.md, "Reconcile result"): the result without internals. */
export type ReconcileJson = Pick<
  ReconcileResult,
  | "clean"
  | "status"
  | "exitCode"
  | "time"
  | "registry"
  | "entries"
  | "findings"
  | "sources"
  | "observed"
  | "subprocesses"
>;

/** The JSON form (docs/design.md's reconcile result contract), as a plain object. */
export function toJson(result: ReconcileResult): ReconcileJson {
  return {
    clean: result.clean,
    status: result.status,
    exitCode: result.exitCode,
    time: result.time,
    registry: result.registry,
    entries: result.entries,
    findings: result.findings,
    sources: result.sources,
    observed: result.observed,
    subprocesses: result.subprocesses,
  };
}

/**
 * The `--result` file: the JSON form with the file's version and the interval the run is repeated
 * at (`lib/drift.ts`, {@linkcode ResultFile}), for the node's link to summarise.
 *
 * @param intervalSeconds how often the run is repeated (its timer or mesh-every), in seconds.
 */
export function toResultFile(result: ReconcileResult, intervalSeconds: number): ResultFile {
  return { version: RESULT_FILE_VERSION, intervalSeconds, ...toJson(result) };
}

/** One line summing the run up, as the stamp and the text form's first line say it. */
export function summaryLine(result: ReconcileResult): string {
  const o = result.observed;
  const seen = `${o.containers} containers, ${o.ports} ports, ${o.addresses} addresses`;
  switch (result.status) {
    case "clean":
      return `clean: ${result.entries} entries agree with ${seen}`;
    case "drift":
      return `drift: ${result.findings.length} finding${
        result.findings.length === 1 ? "" : "s"
      } over ${result.entries} entries and ${seen}`;
    case "unobservable": {
      const failed = result.sources.filter((s) => s.state === "failed");
      return `not clean: could not observe ${
        failed.map((s) => s.account ? `${s.source}@${s.account}` : s.source).join(", ")
      }`;
    }
  }
}

/** The text form for people. */
export function toText(result: ReconcileResult): string {
  const lines = [`mesh-reconcile ${result.registry}: ${summaryLine(result)}`];
  const failed = result.sources.filter((s) => s.state === "failed");
  if (failed.length > 0) {
    lines.push("", "could not observe:");
    for (const s of failed) {
      lines.push(`  ${s.account ? `${s.source}@${s.account}` : s.source}: ${printable(s.detail)}`);
    }
  }
  if (result.findings.length > 0) {
    lines.push("", "findings:");
    const width = Math.max(...result.findings.map((f) => f.check.length));
    for (const f of result.findings) {
      lines.push(
        `  ${f.direction.padEnd(7)} ${f.check.padEnd(width)}  ${f.service ?? "-"}: ${
          printable(f.detail)
        }`,
      );
    }
  }
  lines.push("", "sources:");
  for (const s of result.sources) {
    lines.push(
      `  ${(s.account ? `${s.source}@${s.account}` : s.source).padEnd(16)} ${s.state.padEnd(8)} ${
        printable(s.detail)
      } (${printable(s.method)})`,
    );
  }
  return lines.join("\n") + "\n";
}

/** The stamp's content: the run's time and a one-line summary, one line. */
export function stampLine(result: ReconcileResult): string {
  return `${result.time} ${summaryLine(result)}\n`;
}

const LAST_CLEAN = "mesh_reconcile_last_clean_timestamp_seconds";

/**
 * Reads the last clean time (seconds since the epoch) from a previous textfile's content;
 * `undefined` when it has none (a run that was never clean has no time, not zero).
 */
export function lastCleanFrom(previous: string | undefined): number | undefined {
  const m = previous?.match(new RegExp(`^${LAST_CLEAN} (\\d+(?:\\.\\d+)?)$`, "m"));
  return m ? Number(m[1]) : undefined;
}

/**
 * The node_exporter textfile (Prometheus text exposition format 0.0.4): last run and last
 * clean run times, whether it was clean and observable, and findings by check and direction.
 *
 * @param lastClean seconds since the epoch of the last clean run before this one, if any.
 */
export function toTextfile(result: ReconcileResult, lastClean: number | undefined): string {
  const now = Date.parse(result.time) / 1000;
  const clean = result.clean ? now : lastClean;
  const out: string[] = [
    "# HELP mesh_reconcile_last_run_timestamp_seconds When the last reconcile run started.",
    "# TYPE mesh_reconcile_last_run_timestamp_seconds gauge",
    `mesh_reconcile_last_run_timestamp_seconds ${now}`,
  ];
  if (clean !== undefined) {
    out.push(
      `# HELP ${LAST_CLEAN} When the last clean reconcile run started (absent until one was).`,
      `# TYPE ${LAST_CLEAN} gauge`,
      `${LAST_CLEAN} ${clean}`,
    );
  }
  out.push(
    "# HELP mesh_reconcile_clean 1 when the last run found no drift and observed every source.",
    "# TYPE mesh_reconcile_clean gauge",
    `mesh_reconcile_clean ${result.clean ? 1 : 0}`,
    "# HELP mesh_reconcile_observable 1 when the last run could observe every source.",
    "# TYPE mesh_reconcile_observable gauge",
    `mesh_reconcile_observable ${result.status === "unobservable" ? 0 : 1}`,
    "# HELP mesh_reconcile_findings Findings of the last run by check and direction.",
    "# TYPE mesh_reconcile_findings gauge",
  );
  for (const check of CHECKS) {
    for (const direction of DIRECTIONS) {
      const n = result.findings.filter((f) =>
        f.check === check && f.direction === direction
      ).length;
      out.push(`mesh_reconcile_findings{check="${check}",direction="${direction}"} ${n}`);
    }
  }
  return out.join("\n") + "\n";
}
