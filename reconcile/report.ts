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
import { DIRECTIONS as DRIFT_DIRECTIONS } from "../lib/drift_checks.ts";
import type { ResultFile } from "../lib/drift.ts";

/**
 * The result file's version (lib/drift.ts `RESULT_FILE_VERSION`), typed by its schema: the
 * assignment fails to type-check when the schema's version changes.
 */
const RESULT_FILE_VERSION: ResultFile["version"] = 1;

/** The checks, in the table's order: every one gets its textfile lines, findings or not. */
const CHECKS: readonly Check[] = CHECK_TABLE.map((row) => row.check);
const DIRECTIONS: readonly Direction[] = DRIFT_DIRECTIONS;

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

/**
 * The JSON form (docs/design.md's reconcile result contract), as a plain object.
 *
 * @example What `mesh-reconcile run --json` prints
 * ```ts
 * import { type ReconcileResult, toJson } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * const json = JSON.parse(JSON.stringify(toJson(result)));
 * assert.equal(json.status, "drift");
 * assert.equal(json.findings[0].subject, "root/shop");
 * ```
 */
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
 *
 * @example The file a run every 15 minutes leaves for the link
 * ```ts
 * import { type ReconcileResult, ResultFile, toResultFile } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * const file = toResultFile(result, 15 * 60);
 * assert.equal(file.version, 1);
 * assert.equal(file.intervalSeconds, 900);
 * // What the link reads back is checked against the same schema.
 * assert(ResultFile.safeParse(JSON.parse(JSON.stringify(file))).success);
 * ```
 */
export function toResultFile(result: ReconcileResult, intervalSeconds: number): ResultFile {
  return { version: RESULT_FILE_VERSION, intervalSeconds, ...toJson(result) };
}

/**
 * One line summing the run up, as the stamp and the text form's first line say it.
 *
 * @example A run that found drift
 * ```ts
 * import { type ReconcileResult, summaryLine } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * assert.equal(
 *   summaryLine(result),
 *   "drift: 1 finding over 4 entries and 2 containers, 5 ports, 0 addresses",
 * );
 * ```
 */
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

/**
 * The text form for people.
 *
 * @example What `mesh-reconcile run` prints
 * ```ts
 * import { type ReconcileResult, toText } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * assert.equal(
 *   toText(result),
 *   `mesh-reconcile /var/lib/mesh/reconcile/registry.yaml: drift: 1 finding over 4 entries and \
 * 2 containers, 5 ports, 0 addresses
 *
 * findings:
 *   missing container  shop: container "shop" of account root is not running
 *
 * sources:
 *   podman@root      observed 2 running (podman ps --all --format json)
 * `,
 * );
 * ```
 */
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

/**
 * The stamp's content: the run's time and a one-line summary, one line.
 *
 * @example The stamp a watcher reads
 * ```ts
 * import { type ReconcileResult, stampLine } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * assert.equal(
 *   stampLine(result),
 *   "2026-12-06T12:00:00.000Z drift: 1 finding over 4 entries and 2 containers, 5 ports, " +
 *     "0 addresses\n",
 * );
 * ```
 */
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
 *
 * @example node_exporter's textfile after a run with drift
 * ```ts
 * import { type ReconcileResult, toTextfile } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ReconcileResult = {
 *   clean: false,
 *   status: "drift",
 *   exitCode: 1,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [{
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   }],
 *   sources: [{
 *     source: "podman",
 *     account: "root",
 *     state: "observed",
 *     method: "podman ps --all --format json",
 *     detail: "2 running",
 *   }],
 *   observed: { containers: 2, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 2,
 * };
 * const textfile = toTextfile(result, Date.parse("2026-12-06T11:45:00.000Z") / 1000);
 * const lines = textfile.split("\n");
 * assert(lines.includes("mesh_reconcile_clean 0"));
 * assert(lines.includes("mesh_reconcile_last_clean_timestamp_seconds 1796557500"));
 * assert(lines.includes('mesh_reconcile_findings{check="container",direction="missing"} 1'));
 * assert(lines.includes('mesh_reconcile_findings{check="port",direction="rogue"} 0'));
 * ```
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
