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
import { REPORT_TEXT, REPORT_TEXT_PROBLEM, reportText } from "./report_rules.ts";

/**
 * The version of the result file this program writes and reads.
 *
 * @example A file of another version named as such, before its fields are judged
 * ```ts
 * import { RESULT_FILE_VERSION } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * function versionProblem(value: unknown): string | undefined {
 *   const version = (value as { version?: unknown }).version;
 *   return version === RESULT_FILE_VERSION
 *     ? undefined
 *     : `result file version ${version}; this program reads version ${RESULT_FILE_VERSION}`;
 * }
 * assert.equal(versionProblem({ version: 1, intervalSeconds: 900 }), undefined);
 * assert.equal(
 *   versionProblem({ version: 2 }),
 *   "result file version 2; this program reads version 1",
 * );
 * ```
 */
export const RESULT_FILE_VERSION = 1;

/**
 * The largest result file the link reads (bytes); a larger one is `unreadable`.
 *
 * @example A result file refused by its size before it is read
 * ```ts
 * import { MAX_RESULT_BYTES, ResultFile } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * async function readResult(path: string): Promise<ResultFile> {
 *   const { size } = await Deno.stat(path);
 *   if (size > MAX_RESULT_BYTES) {
 *     throw new Error(`${path} is larger than the ${MAX_RESULT_BYTES} bytes a result may have`);
 *   }
 *   return ResultFile.parse(JSON.parse(await Deno.readTextFile(path)));
 * }
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.truncate(path, MAX_RESULT_BYTES + 1);
 * await assert.rejects(readResult(path), /larger than the 4194304 bytes/);
 * await Deno.remove(path);
 * ```
 */
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
 *
 * @example A result file checked as the link reads it
 * ```ts
 * import { ResultFile } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const text = `{"version": 1, "intervalSeconds": 900, "clean": true, "status": "clean",
 *   "exitCode": 0, "time": "2026-12-06T12:00:00.000Z",
 *   "registry": "/var/lib/mesh/reconcile/registry.yaml", "entries": 4, "findings": [],
 *   "sources": [{"source": "podman", "account": "root", "state": "observed",
 *     "method": "podman ps --all --format json", "detail": "2 running"}],
 *   "observed": {"containers": 2, "listeners": 6, "ports": 5, "addresses": 0},
 *   "subprocesses": 2}`;
 * const parsed = ResultFile.safeParse(JSON.parse(text));
 * assert(parsed.success);
 * assert.equal(parsed.data.status, "clean");
 * // A field this version does not know refuses the whole file.
 * assert(!ResultFile.safeParse({ ...parsed.data, comment: "edited by hand" }).success);
 * ```
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
 * text, lib/report_rules.ts {@linkcode REPORT_TEXT}; the host writes them so, {@linkcode summarise}).
 */
const bounded = (n: number) => z.string().max(n).regex(REPORT_TEXT, REPORT_TEXT_PROBLEM);

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
 *
 * @example A report's `drift` checked as the control plane stores it
 * ```ts
 * import { DriftSummary } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const drift = DriftSummary.parse({
 *   status: "unreadable",
 *   path: "/var/lib/mesh/reconcile/result.json",
 *   problem: "no result there (does mesh-reconcile run with --result at this path?)",
 * });
 * assert.equal(drift.status, "unreadable");
 * // A verdict must say when the run was, on the node's clock, as ISO 8601.
 * const undated = DriftSummary.safeParse({
 *   status: "clean",
 *   ranAt: "yesterday",
 *   intervalSeconds: 900,
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [],
 * });
 * assert.deepEqual(undated.error?.issues.map((i) => i.path), [["ranAt"]]);
 * ```
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

/**
 * Counts `findings` per check and direction, in {@linkcode CHECKS} × {@linkcode DIRECTIONS} order.
 *
 * @example A run's findings as a report counts them
 * ```ts
 * import { countFindings, type Finding } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const findings: Finding[] = [
 *   {
 *     check: "port",
 *     direction: "rogue",
 *     subject: "9000",
 *     detail: "port 9000 listens (python3, pid 2211, account alice) and no entry claims it",
 *   },
 *   {
 *     check: "container",
 *     direction: "missing",
 *     service: "shop",
 *     subject: "root/shop",
 *     detail: 'container "shop" of account root is not running',
 *   },
 *   {
 *     check: "container",
 *     direction: "missing",
 *     service: "wiki",
 *     subject: "alice/wiki",
 *     detail: 'container "wiki" of account alice is not running',
 *   },
 * ];
 * assert.deepEqual(countFindings(findings), [
 *   { check: "container", direction: "missing", count: 2 },
 *   { check: "port", direction: "rogue", count: 1 },
 * ]);
 * ```
 */
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
 *
 * @example A run that could not ask one account's podman
 * ```ts
 * import { type ResultFile, summarise } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const result: ResultFile = {
 *   version: 1,
 *   intervalSeconds: 900,
 *   clean: false,
 *   status: "unobservable",
 *   exitCode: 2,
 *   time: "2026-12-06T12:00:00.000Z",
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [],
 *   sources: [{
 *     source: "podman",
 *     account: "alice",
 *     state: "failed",
 *     method: "podman ps --all --format json",
 *     detail: 'account "alice" does not exist in /etc/passwd',
 *   }],
 *   observed: { containers: 0, listeners: 6, ports: 5, addresses: 0 },
 *   subprocesses: 1,
 * };
 * assert.deepEqual(summarise(result), {
 *   status: "unobservable",
 *   ranAt: "2026-12-06T12:00:00.000Z",
 *   intervalSeconds: 900,
 *   registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   entries: 4,
 *   findings: [],
 *   unobserved: ["podman@alice"],
 * });
 * ```
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
