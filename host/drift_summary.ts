/**
 * The link's view of mesh-reconcile: read the node's latest result file (written by
 * `mesh-reconcile run --result FILE`) and summarise it for the next report. The findings stay on
 * the node; the report says how many of which kind, when the run was, how often it runs and which
 * registry it compared.
 *
 * A result that cannot be read is not an error of the link: it becomes an `unreadable` summary
 * naming the file and the reason (missing, too large, truncated, not a result), and the link goes
 * on applying and reporting.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import { NotRegularFileError, readRegularFile } from "../lib/regular_file.ts";
import { jsonTooDeep, jsonTooDeepMessage } from "../lib/text_bounds.ts";
import { formatPath } from "../lib/json_path.ts";
import type { DriftSummary } from "../lib/drift.ts";
import { reportText } from "../lib/report_rules.ts";

/** Options for {@linkcode readDriftSummary}. */
export interface ReadDriftOptions {
  /** The largest file read, in bytes (default `MAX_RESULT_BYTES` of lib/drift.ts). */
  maxBytes?: number;
}

/**
 * Reads the result file at `path` and summarises it. Never throws: every way the file can fail
 * to be a result becomes `{status: "unreadable", path, problem}`.
 */
export async function readDriftSummary(
  path: string,
  options: ReadDriftOptions = {},
): Promise<DriftSummary> {
  // lib/drift.ts (zod and the result's schema) loads at the first read, not with the link: a
  // link told to read no result (`--reconcile-result none`) never loads it.
  const { MAX_RESULT_BYTES, ResultFile, summarise } = await import("../lib/drift.ts");
  const maxBytes = options.maxBytes ?? MAX_RESULT_BYTES;
  const unreadable = (problem: string): DriftSummary => ({
    status: "unreadable",
    path: reportText(path, 4096),
    problem: reportText(problem, 2000),
  });
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, { maxBytes });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return unreadable("no result there (does mesh-reconcile run with --result at this path?)");
    }
    if (error instanceof RangeError) {
      return unreadable(`larger than the ${maxBytes} bytes a result may have`);
    }
    if (error instanceof NotRegularFileError) return unreadable(error.message);
    return unreadable(`cannot read it: ${messageOf(error)}`);
  }
  let value: unknown;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch (error) {
    return unreadable(
      bytes.length === 0 ? "empty" : `not UTF-8 JSON (truncated?): ${messageOf(error)}`,
    );
  }
  const deep = jsonTooDeep(text);
  if (deep !== undefined) return unreadable(jsonTooDeepMessage(deep));
  const parsed = ResultFile.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    return unreadable(
      `not a mesh-reconcile result: ${
        issues.slice(0, 5).map((i) =>
          `${formatPath(i.path as (string | number)[]) || "$"}: ${i.message}`
        ).join("; ")
      }${issues.length > 5 ? ` (+${issues.length - 5} more)` : ""}`,
    );
  }
  return summarise(parsed.data);
}

/**
 * Notices a new result: the file's identity and modification time, compared with the last look.
 * The link reports again when a new result appears, so drift travels when it is found rather than
 * at the link's next interval.
 */
export class ResultWatch {
  #path: string;
  #last: string | undefined;

  /** Watches `path`; the first {@linkcode changed} compares with the file as it is now. */
  constructor(path: string) {
    this.#path = path;
  }

  /** Takes the file's current identity as seen (call after a report carried it). */
  async mark(): Promise<void> {
    this.#last = await this.#identity();
  }

  /** True when the file's identity differs from the last {@linkcode mark}. Never throws. */
  async changed(): Promise<boolean> {
    return (await this.#identity()) !== this.#last;
  }

  async #identity(): Promise<string> {
    try {
      const s = await Deno.stat(this.#path);
      return `${s.ino}:${s.size}:${s.mtime?.getTime()}`;
    } catch (error) {
      return `absent:${error instanceof Deno.errors.NotFound ? "" : messageOf(error)}`;
    }
  }
}
