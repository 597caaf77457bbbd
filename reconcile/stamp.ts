/**
 * The dead-man stamp: one line, `<ISO time> <kind>: <summary>`, written atomically by
 * `mesh-reconcile run` after a clean run (`clean: ...`) and by `mesh-reconcile watch` after each
 * run it completed (`watched: ...`). This module parses and reads a stamp, and defines the JSON
 * that `stamp serve` answers with. It observes only: nothing here writes or prints.
 *
 * A stamp's age is measured from the time written in its line, never from the file's mtime: the
 * line is the run's own claim of when it ran, while an mtime is moved by `touch`, by a copy or
 * restore that does not keep times, or by a sync job putting an old stamp back (which would make
 * a dead reconciler look alive). Over HTTP there is no mtime to read anyway.
 *
 * @module
 */

import { dirname } from "node:path";
import { z } from "zod";
import { messageOf } from "../lib/atomic.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import { printable } from "../lib/printable.ts";

/** Where the packaged units keep the reconciler's stamp (`run --stamp`, `stamp serve`). */
export const DEFAULT_STAMP_PATH = "/var/lib/mesh/reconcile/stamp";

/** The largest stamp file read, in bytes; a larger file is garbage, not read into memory. */
export const STAMP_LIMIT_BYTES = 4096;

/**
 * How far ahead of the reader's clock a stamp's time may be (milliseconds) before its age is
 * unknowable: beyond it the reader's clock went back, or the line was not written by a clock
 * in step with it, and the stamp is reported as garbage rather than as fresh.
 */
export const FUTURE_TOLERANCE_MS = 60_000;

/** The kinds of stamp line: a clean reconcile run, or a completed watcher run. */
export const STAMP_KINDS = ["clean", "watched"] as const;
/** A kind of stamp line. */
export type StampKind = typeof STAMP_KINDS[number];

/** What kind of trouble stopped a stamp from being read: the file, or what it holds. */
export const STAMP_PROBLEMS = ["cannot-read", "garbage"] as const;
/** `cannot-read`: the file could not be read; `garbage`: it was read and is not a stamp. */
export type StampProblem = typeof STAMP_PROBLEMS[number];

/** A parsed stamp line. */
export interface Stamp {
  /** The line without its newline. */
  line: string;
  /** The time written at the start of the line, as written (ISO 8601, UTC, `Z`). */
  time: string;
  /** The same time in milliseconds since the epoch. */
  timeMs: number;
  /** `clean` (a reconcile run) or `watched` (a watcher run). */
  kind: StampKind;
  /** The rest of the line after `<kind>: `. */
  summary: string;
}

/**
 * A stamp that is not one. `reason` says why without quoting the content (safe to serve to
 * anybody: a stamp path pointed at the wrong file must not leak that file); `excerpt`, when
 * there is one, is the start of the content, printable, for the operator; `message` is both.
 */
export class StampGarbageError extends Error {
  override name = "StampGarbageError";
  /** Why, without the content. */
  readonly reason: string;
  /** The start of the content (at most 60 characters, controls escaped, quoted), if useful. */
  readonly excerpt?: string;

  constructor(reason: string, excerpt?: string) {
    super(excerpt === undefined ? reason : `${reason}: ${excerpt}`);
    this.reason = reason;
    if (excerpt !== undefined) this.excerpt = excerpt;
  }
}

const LINE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z) (clean|watched): ([^\s].*)$/;
// C0 controls except tab, DEL and C1 controls: a stamp line holds none of them.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;

function excerpt(text: string): string {
  const head = text.length > 60 ? `${text.slice(0, 60)}...` : text;
  return `"${printable(head)}"`;
}

/**
 * Parses a stamp file's content. One line (a final newline is allowed, nothing after it), UTF-8,
 * no control characters, `<ISO time> clean|watched: <summary>` with a real calendar time.
 *
 * @param content the file's bytes (or its text).
 * @throws {StampGarbageError} saying what is wrong (empty, not UTF-8, more than one line, no
 *   time, an impossible time, an unknown kind), with a printable excerpt of the content apart.
 */
export function parseStamp(content: Uint8Array | string): Stamp {
  let text: string;
  if (typeof content === "string") text = content;
  else {
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(content);
    } catch {
      throw new StampGarbageError("it is not UTF-8 text");
    }
  }
  if (text.length === 0) {
    throw new StampGarbageError(
      "it is empty (a stamp is one line: <ISO time> clean: ... or <ISO time> watched: ...)",
    );
  }
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (body.includes("\n")) {
    throw new StampGarbageError(
      `it has ${body.split("\n").length} lines; a stamp is one line`,
      `it starts ${excerpt(body)}`,
    );
  }
  if (CONTROL.test(body)) {
    throw new StampGarbageError("it holds control characters", excerpt(body));
  }
  const m = LINE.exec(body);
  if (!m) {
    throw new StampGarbageError(
      `it is not "<ISO time> clean: ..." or "<ISO time> watched: ..."`,
      excerpt(body),
    );
  }
  const time = m[1]!;
  const timeMs = Date.parse(time);
  // Date.parse accepts 2026-02-30 (as 2026-03-02): a time that does not round-trip is not real.
  if (
    !Number.isFinite(timeMs) || new Date(timeMs).toISOString().slice(0, 19) !== time.slice(0, 19)
  ) {
    throw new StampGarbageError(`its time "${time}" is not a real time`);
  }
  return { line: body, time, timeMs, kind: m[2] as StampKind, summary: m[3]! };
}

/** What reading a stamp file found. Expected failures are results, never thrown. */
export type StampReading =
  | {
    state: "stamped";
    stamp: Stamp;
    /** Age in milliseconds: the reader's now minus the stamp's own time (never negative). */
    ageMs: number;
  }
  | {
    /** No stamp file, in a directory that exists: never stamped. */
    state: "never";
    detail: string;
  }
  | {
    state: "error";
    problem: StampProblem;
    /** Why, without the path and without the content (safe to serve). */
    reason: string;
    /** For garbage: the start of the content, printable, for the operator only. */
    excerpt?: string;
  };

/** Options for {@linkcode readStamp}. */
export interface ReadStampOptions {
  /** The reader's clock, milliseconds since the epoch; default `Date.now()`. */
  now?: number;
}

/**
 * Reads and parses the stamp at `path` and measures its age against the reader's clock.
 *
 * - no file, in a directory that exists: `never`;
 * - a missing directory, a file that is not a regular file (a FIFO would block), a permission
 *   error: `error` / `cannot-read` (absence of the directory is a misconfiguration, not "never");
 * - a file larger than {@linkcode STAMP_LIMIT_BYTES}, content {@linkcode parseStamp} refuses, or a
 *   time more than {@linkcode FUTURE_TOLERANCE_MS} ahead of `now`: `error` / `garbage`.
 */
export async function readStamp(
  path: string,
  options: ReadStampOptions = {},
): Promise<StampReading> {
  const cannotRead = (reason: string): StampReading => ({
    state: "error",
    problem: "cannot-read",
    reason,
  });
  try {
    await Deno.stat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) return cannotRead(messageOf(error));
    const dir = dirname(path);
    try {
      if (!(await Deno.stat(dir)).isDirectory) return cannotRead(`"${dir}" is not a directory`);
    } catch (dirError) {
      return cannotRead(
        dirError instanceof Deno.errors.NotFound
          ? `its directory "${dir}" does not exist`
          : messageOf(dirError),
      );
    }
    return { state: "never", detail: "no stamp has been written" };
  }
  // Anything but a regular file (a FIFO, a device, a directory) is refused by the reader, named.
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, { maxBytes: STAMP_LIMIT_BYTES });
  } catch (error) {
    if (error instanceof RangeError) {
      return {
        state: "error",
        problem: "garbage",
        reason: `it is larger than ${STAMP_LIMIT_BYTES} bytes; a stamp is one short line`,
      };
    }
    if (error instanceof Deno.errors.NotFound) {
      return { state: "never", detail: "no stamp has been written" };
    }
    return cannotRead(messageOf(error));
  }
  let stamp: Stamp;
  try {
    stamp = parseStamp(bytes);
  } catch (error) {
    if (!(error instanceof StampGarbageError)) throw error;
    return {
      state: "error",
      problem: "garbage",
      reason: error.reason,
      ...(error.excerpt !== undefined ? { excerpt: error.excerpt } : {}),
    };
  }
  const now = options.now ?? Date.now();
  const ageMs = now - stamp.timeMs;
  if (ageMs < -FUTURE_TOLERANCE_MS) {
    return {
      state: "error",
      problem: "garbage",
      reason: `its time ${stamp.time} is ${
        Math.round(-ageMs / 1000)
      }s ahead of this machine's clock (${
        new Date(now).toISOString()
      }): the clock went back, or the stamp was not written here; its age cannot be known`,
    };
  }
  return { state: "stamped", stamp, ageMs: Math.max(0, ageMs) };
}

/**
 * The line a watcher writes as its own stamp, so that it can itself be watched:
 * `<time> watched: <summary>`, one line (controls escaped, tabs as spaces), newline-terminated.
 *
 * @param time the watcher run's time, ISO 8601 UTC (`Date.prototype.toISOString`).
 * @param summary what it found, e.g. `http://a:8080/ is up: stamp 4m old (max-age 45m)`.
 */
export function watchedStampLine(time: string, summary: string): string {
  return `${time} watched: ${printable(summary.replaceAll("\t", " ")).trim() || "-"}\n`;
}

const IsoTime = z.iso.datetime({ offset: false, precision: 3 });

/**
 * The JSON `stamp serve` answers with (version 1), one strict schema per state:
 *
 * - HTTP 200 `{"version": 1, "state": "stamped", "stamp": "<line>", "stampedAt": ISO,
 *   "ageSeconds": N, "servedAt": ISO}`: `ageSeconds` (non-negative, millisecond precision) is
 *   `servedAt` minus the stamp's own time, measured on the serving machine;
 * - HTTP 200 `{"version": 1, "state": "never", "servedAt": ISO}`: no stamp has been written;
 * - HTTP 500 `{"version": 1, "state": "error", "problem": "cannot-read" | "garbage",
 *   "reason": "...", "servedAt": ISO}`: the stamp could not be read, or holds garbage.
 *
 * The HTTP status says whether the server could read a stamp, not whether it is fresh: judging
 * its age is the watcher's work.
 */
export const ServedStamp = z.discriminatedUnion("state", [
  z.strictObject({
    version: z.literal(1),
    state: z.literal("stamped"),
    stamp: z.string().min(1),
    stampedAt: z.iso.datetime({ offset: false }),
    ageSeconds: z.number().finite().nonnegative(),
    servedAt: IsoTime,
  }),
  z.strictObject({
    version: z.literal(1),
    state: z.literal("never"),
    servedAt: IsoTime,
  }),
  z.strictObject({
    version: z.literal(1),
    state: z.literal("error"),
    problem: z.enum(STAMP_PROBLEMS),
    reason: z.string().min(1),
    servedAt: IsoTime,
  }),
]);
/** An answer of `stamp serve`. */
export type ServedStamp = z.infer<typeof ServedStamp>;

/**
 * The answer `stamp serve` gives for a reading: the JSON body and its HTTP status (200 for
 * `stamped` and `never`, 500 for `error`). A pure function of its inputs.
 *
 * @param servedAt the serving machine's time of the answer, milliseconds since the epoch.
 */
export function servedStamp(
  reading: StampReading,
  servedAt: number,
): { status: 200 | 500; body: ServedStamp } {
  const at = new Date(servedAt).toISOString();
  switch (reading.state) {
    case "stamped":
      return {
        status: 200,
        body: {
          version: 1,
          state: "stamped",
          stamp: reading.stamp.line,
          stampedAt: reading.stamp.time,
          ageSeconds: Math.round(reading.ageMs) / 1000,
          servedAt: at,
        },
      };
    case "never":
      return { status: 200, body: { version: 1, state: "never", servedAt: at } };
    case "error":
      return {
        status: 500,
        body: {
          version: 1,
          state: "error",
          problem: reading.problem,
          reason: reading.problem === "garbage"
            ? `the stamp holds garbage: ${reading.reason}`
            : `cannot read the stamp: ${reading.reason}`,
          servedAt: at,
        },
      };
  }
}
