/**
 * The remote watcher: one look at a stamp (a file, or a `stamp serve` over HTTP), judged against
 * `--max-age` and `--grace`, remembered in a state file, told to a webhook once per transition.
 * DESIGN.md rule 11: silence is the alarm, so the watcher alerts when the stamp grows old and
 * refreshes a stamp of its own so that it can be watched in turn.
 *
 * Observing ({@linkcode observeSource}), judging ({@linkcode judge}) and remembering
 * ({@linkcode advance}) are pure of effects apart from reading; {@linkcode watch} acts (writes the
 * state, notifies, writes its own stamp) and returns what happened. Nothing here prints.
 *
 * @module
 */

import { hostname } from "node:os";
import { resolve } from "node:path";
import { z } from "zod";
import { assertWritablePath, messageOf, readFileLimited, writeFileAtomic } from "../lib/atomic.ts";
import { formatDuration } from "../lib/duration.ts";
import { printable } from "../lib/printable.ts";
import { redactUrl } from "../lib/url.ts";
import { parseStamp, readStamp, ServedStamp, type Stamp, watchedStampLine } from "./stamp.ts";

/** The watcher's verdicts, each with its own exit code ({@linkcode WATCH_EXIT}). */
export const WATCH_STATES = ["up", "new", "late", "down", "unreachable"] as const;
/**
 * - `up`: the stamp's age is at most max-age;
 * - `new`: never stamped (no stamp yet; absence is not health, and not "down" either);
 * - `late`: older than max-age, not older than max-age + grace;
 * - `down`: older than max-age + grace;
 * - `unreachable`: no age could be known (see {@linkcode WatchProblem}).
 */
export type WatchState = typeof WATCH_STATES[number];

/** Why a source is `unreachable`. */
export const WATCH_PROBLEMS = ["cannot-read", "bad-answer", "garbage"] as const;
/**
 * - `cannot-read`: the file could not be read, the server could not be reached or did not answer
 *   in time, or the server says it cannot read its stamp;
 * - `bad-answer`: something answered, but not as `stamp serve` does (not JSON, another shape,
 *   another status, a redirect);
 * - `garbage`: the stamp itself holds garbage (read here, or as the server reports it).
 */
export type WatchProblem = typeof WATCH_PROBLEMS[number];

/** Exit code of `watch` per state. 1 is never used, so a crash is not read as a verdict. */
export const WATCH_EXIT: Readonly<Record<WatchState, number>> = {
  up: 0,
  new: 3,
  late: 4,
  down: 5,
  unreachable: 6,
};
/** Exit code of `watch` when it could not work: bad input, an unreadable or unwritable state. */
export const WATCH_EXIT_CANNOT_WORK = 2;

/** Notifications kept while the webhook fails; beyond this the oldest are dropped (and counted). */
export const MAX_OWED = 100;
/** The largest answer read from a `stamp serve` or a webhook, in bytes. */
export const ANSWER_LIMIT_BYTES = 65_536;
/** The largest state file read, in bytes. */
export const STATE_LIMIT_BYTES = 1 << 20;

/** Bad input to the watcher: a source or option it cannot use. */
export class WatchInputError extends Error {
  override name = "WatchInputError";
}

/** What is watched: a stamp file, or the URL of a `stamp serve`. */
export type Source =
  | { kind: "file"; path: string }
  | { kind: "url"; url: URL };

/**
 * Reads a SOURCE argument: `http://` or `https://` is a `stamp serve` URL, another scheme is
 * refused, anything else is a file path (made absolute).
 *
 * @throws {WatchInputError} for an empty source, another URL scheme, or a URL that does not parse.
 */
export function parseSource(text: string): Source {
  if (text.trim() === "") throw new WatchInputError("Cannot watch SOURCE: it is empty");
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: "file", path: resolve(text) };
  if (scheme !== "http" && scheme !== "https") {
    throw new WatchInputError(
      `Cannot watch "${redactUrl(text)}": only http(s) URLs and file paths are sources`,
    );
  }
  try {
    return { kind: "url", url: new URL(text) };
  } catch (error) {
    throw new WatchInputError(`Cannot watch "${redactUrl(text)}": ${messageOf(error)}`);
  }
}

/** The source as it is written in output, the state file and notifications (no password). */
export function sourceName(source: Source): string {
  return source.kind === "file" ? source.path : redactUrl(source.url.href);
}

/** What one look at a source saw, before any judgement. */
export type Observation =
  | {
    seen: "stamped";
    /** The stamp line. */
    stamp: string;
    /** The stamp's own time (ISO). */
    stampedAt: string;
    /** Its age in milliseconds. */
    ageMs: number;
    /** Whose clock measured the age: the serving machine's, or this one's (a file). */
    ageFrom: "server" | "this machine";
  }
  | { seen: "never"; detail: string }
  | { seen: "unreachable"; problem: WatchProblem; detail: string };

/** Options for {@linkcode observeSource}. */
export interface ObserveOptions {
  /** Time limit for the whole request and answer, milliseconds. */
  timeoutMs: number;
  /** This machine's clock (used for a file source only), ms since the epoch; default now. */
  now?: () => number;
}

/**
 * Looks at a source once. A file is read and its age measured against this machine's clock; a
 * URL is fetched (GET, redirects not followed, within `timeoutMs`) and its `ageSeconds` taken
 * as served: the serving machine measured it, so this machine's clock does not enter.
 * Failures are observations (`unreachable` with its problem), never thrown.
 */
export async function observeSource(
  source: Source,
  options: ObserveOptions,
): Promise<Observation> {
  const now = options.now ?? Date.now;
  if (source.kind === "file") {
    const reading = await readStamp(source.path, { now: now() });
    switch (reading.state) {
      case "stamped":
        return {
          seen: "stamped",
          stamp: reading.stamp.line,
          stampedAt: reading.stamp.time,
          ageMs: reading.ageMs,
          ageFrom: "this machine",
        };
      case "never":
        return { seen: "never", detail: `no stamp at "${source.path}"` };
      case "error":
        return {
          seen: "unreachable",
          problem: reading.problem,
          detail: reading.problem === "garbage"
            ? `stamp "${source.path}" holds garbage: ${reading.reason}${
              reading.excerpt !== undefined ? `: ${reading.excerpt}` : ""
            }`
            : `Cannot read stamp "${source.path}": ${reading.reason}`,
        };
    }
  }
  return await fetchServed(source.url, options.timeoutMs);
}

/** Reads at most `limit` bytes of a response body; more is an error. */
async function bodyLimited(response: Response, limit: number): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new RangeError(`the answer is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

function isTimeout(error: unknown): boolean {
  return error instanceof DOMException &&
    (error.name === "TimeoutError" || error.name === "AbortError");
}

async function fetchServed(url: URL, timeoutMs: number): Promise<Observation> {
  const name = redactUrl(url.href);
  const signal = AbortSignal.timeout(timeoutMs);
  const cannot = (why: string): Observation => ({
    seen: "unreachable",
    problem: "cannot-read",
    detail: `Cannot fetch "${name}": ${why}`,
  });
  const bad = (why: string): Observation => ({
    seen: "unreachable",
    problem: "bad-answer",
    detail: `"${name}" is not a stamp serve answer: ${why}`,
  });
  let response: Response;
  let bytes: Uint8Array;
  try {
    response = await fetch(url, {
      signal,
      redirect: "manual",
      headers: { accept: "application/json" },
    });
    bytes = await bodyLimited(response, ANSWER_LIMIT_BYTES);
  } catch (error) {
    if (isTimeout(error) || signal.aborted) {
      return cannot(`no answer within ${formatDuration(timeoutMs)}`);
    }
    if (error instanceof RangeError) return bad(error.message);
    return cannot(messageOf(error));
  }
  if (response.status !== 200 && response.status !== 500) {
    const where = response.headers.get("location");
    return bad(`HTTP ${response.status}${where ? ` (to ${printable(where)}; not followed)` : ""}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return bad(`HTTP ${response.status} with a body that is not JSON`);
  }
  const parsed = ServedStamp.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) =>
      `${i.path.length ? i.path.join(".") : "(body)"}: ${i.message}`
    );
    return bad(printable(issues.join("; ")));
  }
  const served = parsed.data;
  const expected = served.state === "error" ? 500 : 200;
  if (response.status !== expected) {
    return bad(`state "${served.state}" came with HTTP ${response.status}, not ${expected}`);
  }
  switch (served.state) {
    case "never":
      return { seen: "never", detail: `"${name}" has no stamp` };
    case "error":
      return {
        seen: "unreachable",
        problem: served.problem,
        detail: `"${name}" says ${printable(served.reason)}`,
      };
    case "stamped": {
      let stamp: Stamp;
      try {
        stamp = parseStamp(served.stamp);
      } catch (error) {
        return bad(`its stamp line is not a stamp: ${messageOf(error)}`);
      }
      if (Date.parse(served.stampedAt) !== stamp.timeMs) {
        return bad(`stampedAt ${served.stampedAt} is not the time of its line (${stamp.time})`);
      }
      return {
        seen: "stamped",
        stamp: stamp.line,
        stampedAt: stamp.time,
        ageMs: served.ageSeconds * 1000,
        ageFrom: "server",
      };
    }
  }
}

/** The limits a stamp's age is judged by, in milliseconds. */
export interface Thresholds {
  /** Older than this is `late`. */
  maxAgeMs: number;
  /** Older than `maxAgeMs + graceMs` is `down`; 0: there is no `late`. */
  graceMs: number;
}

/** The watcher's judgement of one observation. */
export interface Verdict {
  state: WatchState;
  /** Why it is `unreachable`; present only then. */
  problem?: WatchProblem;
  /** One sentence for people: the state's words and the numbers behind them. */
  detail: string;
  stampedAt?: string;
  ageMs?: number;
  ageFrom?: "server" | "this machine";
  stamp?: string;
}

const PROBLEM_WORDS: Record<WatchProblem, string> = {
  "cannot-read": "cannot read",
  "bad-answer": "bad answer",
  garbage: "garbage",
};

/** The state and problem in words, e.g. `up`, `unreachable (garbage)`. */
export function stateWords(state: WatchState, problem?: WatchProblem): string {
  return problem === undefined ? state : `${state} (${PROBLEM_WORDS[problem]})`;
}

/**
 * Judges an observation: `up` when the age is at most max-age, `late` when it is past max-age
 * and at most max-age + grace, `down` past that; `never` is `new`; `unreachable` stays so with
 * its problem. A pure function.
 */
export function judge(observation: Observation, thresholds: Thresholds): Verdict {
  if (observation.seen === "never") return { state: "new", detail: observation.detail };
  if (observation.seen === "unreachable") {
    return { state: "unreachable", problem: observation.problem, detail: observation.detail };
  }
  const { ageMs } = observation;
  const age = `stamp ${formatDuration(ageMs)} old (${observation.stampedAt}, age from ${
    observation.ageFrom === "server" ? "the server" : "this machine's clock"
  })`;
  const max = formatDuration(thresholds.maxAgeMs);
  const downAfter = thresholds.maxAgeMs + thresholds.graceMs;
  const base = {
    stampedAt: observation.stampedAt,
    ageMs,
    ageFrom: observation.ageFrom,
    stamp: observation.stamp,
  };
  if (ageMs <= thresholds.maxAgeMs) {
    return { state: "up", detail: `${age}, within max-age ${max}`, ...base };
  }
  if (ageMs <= downAfter) {
    return {
      state: "late",
      detail: `${age}, past max-age ${max}, within grace ${
        formatDuration(thresholds.graceMs)
      } (down after ${formatDuration(downAfter)})`,
      ...base,
    };
  }
  return {
    state: "down",
    detail: `${age}, past max-age ${max}${
      thresholds.graceMs > 0 ? ` and grace ${formatDuration(thresholds.graceMs)}` : ""
    }`,
    ...base,
  };
}

const IsoTime = z.iso.datetime({ offset: false });
const StateName = z.enum(WATCH_STATES);
const Problem = z.enum(WATCH_PROBLEMS);

/**
 * A notification (version 1) as it is kept while owed: one transition of one source. The
 * webhook receives it with `sentAt` added ({@linkcode WebhookBody}).
 *
 * `previous` is absent on a source's first run (there was no state before; the first verdict is
 * notified, so that a source already down when the watcher is installed is alerted, and so that
 * the notification channel is proven when it is set up).
 */
export const WatchNotification = z.strictObject({
  version: z.literal(1),
  event: z.literal("transition"),
  /** The source, with any password replaced by `***`. */
  source: z.string().min(1),
  state: StateName,
  problem: Problem.optional(),
  previous: StateName.optional(),
  previousProblem: Problem.optional(),
  /** When the watcher saw the new state. */
  at: IsoTime,
  detail: z.string(),
  stampedAt: IsoTime.optional(),
  ageSeconds: z.number().finite().nonnegative().optional(),
  maxAgeSeconds: z.number().finite().positive(),
  graceSeconds: z.number().finite().nonnegative(),
  /** The watching machine's host name. */
  watcher: z.string(),
});
/** A notification of one transition. */
export type WatchNotification = z.infer<typeof WatchNotification>;

/** The webhook's JSON body: a {@linkcode WatchNotification} and when this attempt was sent. */
export const WebhookBody = WatchNotification.extend({ sentAt: IsoTime });
/** The webhook's JSON body. */
export type WebhookBody = z.infer<typeof WebhookBody>;

/**
 * The watcher's state file (version 1, JSON), written atomically after each run:
 * the last state of the source (`since`: when it began; `checkedAt`: the last run), and the
 * notifications owed because the webhook failed, oldest first (`dropped`: owed ones discarded
 * beyond {@linkcode MAX_OWED}). A file that exists and does not read as this stops the watcher.
 */
export const WatchStateFile = z.strictObject({
  version: z.literal(1),
  source: z.string().min(1),
  state: StateName,
  problem: Problem.optional(),
  since: IsoTime,
  checkedAt: IsoTime,
  detail: z.string(),
  owed: z.array(WatchNotification).max(MAX_OWED),
  dropped: z.number().int().nonnegative(),
}).refine((s) => (s.state === "unreachable") === (s.problem !== undefined), {
  message: "problem is given exactly when state is unreachable",
  path: ["problem"],
});
/** The watcher's state file. */
export type WatchStateFile = z.infer<typeof WatchStateFile>;

/**
 * Reads the state file. Absent (in a directory that exists) is a first run: `undefined`.
 *
 * @throws {Error} `Cannot read watch state "<path>": ...` when it exists and cannot be read, is
 *   not JSON, or does not match {@linkcode WatchStateFile} (every problem listed): an unreadable
 *   state is never taken for a first run (DESIGN.md rule 7).
 */
export async function loadWatchState(path: string): Promise<WatchStateFile | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readFileLimited(path, STATE_LIMIT_BYTES);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot read watch state "${path}": ${messageOf(error)}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new Error(`Cannot read watch state "${path}": not JSON (${messageOf(error)})`);
  }
  const parsed = WatchStateFile.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `Cannot read watch state "${path}": ${
        parsed.error.issues.map((i) => `${i.path.join(".") || "(file)"}: ${i.message}`).join(
          "; ",
        )
      }`,
    );
  }
  return parsed.data;
}

/** What {@linkcode advance} decides for one run. */
export interface Advance {
  /** The new state to keep (owed notifications included, not yet delivered). */
  record: WatchStateFile;
  /** Whether the state (or the problem of `unreachable`) changed, or this is the first run. */
  transition: boolean;
  /** The state before this run; absent on the first run. */
  previous?: { state: WatchState; problem?: WatchProblem; since: string };
  /** The notification this run adds to the owed ones (only with a notify URL). */
  event?: WatchNotification;
  /** Owed notifications dropped by this run (over {@linkcode MAX_OWED}, or no notify URL). */
  droppedNow: number;
}

/** Context of {@linkcode advance}. */
export interface AdvanceContext {
  /** {@linkcode sourceName} of the source. */
  source: string;
  /** This run's time (ISO). */
  at: string;
  thresholds: Thresholds;
  /** The watching machine's name. */
  watcher: string;
  /** Whether notifications are asked for (`--notify`). */
  notify: boolean;
}

/**
 * Remembers: compares the verdict with the kept state and decides the new state, whether this is
 * a transition, and the notification it owes. A pure function.
 *
 * A transition is a change of state, or of the problem of an `unreachable` source (a server that
 * is down and a stamp holding garbage call for different remedies), or a first run. Without a
 * notify URL no notification is owed, and any left from earlier runs are dropped (and counted).
 */
export function advance(
  kept: WatchStateFile | undefined,
  verdict: Verdict,
  context: AdvanceContext,
): Advance {
  const transition = kept === undefined || kept.state !== verdict.state ||
    kept.problem !== verdict.problem;
  let owed = context.notify ? [...(kept?.owed ?? [])] : [];
  let droppedNow = context.notify ? 0 : kept?.owed.length ?? 0;
  let event: WatchNotification | undefined;
  if (transition && context.notify) {
    event = {
      version: 1,
      event: "transition",
      source: context.source,
      state: verdict.state,
      ...(verdict.problem !== undefined ? { problem: verdict.problem } : {}),
      ...(kept !== undefined ? { previous: kept.state } : {}),
      ...(kept?.problem !== undefined ? { previousProblem: kept.problem } : {}),
      at: context.at,
      detail: verdict.detail,
      ...(verdict.stampedAt !== undefined ? { stampedAt: verdict.stampedAt } : {}),
      ...(verdict.ageMs !== undefined ? { ageSeconds: Math.round(verdict.ageMs) / 1000 } : {}),
      maxAgeSeconds: context.thresholds.maxAgeMs / 1000,
      graceSeconds: context.thresholds.graceMs / 1000,
      watcher: context.watcher,
    };
    owed.push(event);
  }
  if (owed.length > MAX_OWED) {
    droppedNow += owed.length - MAX_OWED;
    owed = owed.slice(owed.length - MAX_OWED);
  }
  const record: WatchStateFile = {
    version: 1,
    source: context.source,
    state: verdict.state,
    ...(verdict.problem !== undefined ? { problem: verdict.problem } : {}),
    since: transition || kept === undefined ? context.at : kept.since,
    checkedAt: context.at,
    detail: verdict.detail,
    owed,
    dropped: (kept?.dropped ?? 0) + droppedNow,
  };
  return {
    record,
    transition,
    ...(kept !== undefined
      ? {
        previous: {
          state: kept.state,
          ...(kept.problem !== undefined ? { problem: kept.problem } : {}),
          since: kept.since,
        },
      }
      : {}),
    ...(event !== undefined ? { event } : {}),
    droppedNow,
  };
}

/** The outcome of delivering owed notifications. */
export interface Delivery {
  /** Delivered this run, oldest first. */
  delivered: WatchNotification[];
  /** Still owed (the first one failed), oldest first. */
  owed: WatchNotification[];
  /** Why the first still owed one failed. */
  error?: string;
}

/**
 * POSTs each owed notification, oldest first, as a {@linkcode WebhookBody} (JSON), stopping at the
 * first failure so the order is kept. A delivery is an answer 2xx within `timeoutMs`; another
 * status (redirects are not followed), a timeout or a connection failure is a failure.
 */
export async function deliver(
  owed: WatchNotification[],
  url: URL,
  options: { timeoutMs: number; now?: () => number },
): Promise<Delivery> {
  const now = options.now ?? Date.now;
  const name = redactUrl(url.href);
  const delivered: WatchNotification[] = [];
  for (let i = 0; i < owed.length; i++) {
    const notification = owed[i]!;
    const body: WebhookBody = { ...notification, sentAt: new Date(now()).toISOString() };
    const signal = AbortSignal.timeout(options.timeoutMs);
    let error: string | undefined;
    try {
      const response = await fetch(url, {
        method: "POST",
        signal,
        redirect: "manual",
        headers: { "content-type": "application/json", "user-agent": "mesh-reconcile-watch" },
        body: JSON.stringify(body),
      });
      await bodyLimited(response, ANSWER_LIMIT_BYTES).catch(() => undefined);
      if (response.status < 200 || response.status > 299) {
        error = `HTTP ${response.status} ${printable(response.statusText)}`.trim();
      }
    } catch (cause) {
      error = isTimeout(cause) || signal.aborted
        ? `no answer within ${formatDuration(options.timeoutMs)}`
        : messageOf(cause);
    }
    if (error !== undefined) {
      return {
        delivered,
        owed: owed.slice(i),
        error: `Cannot notify "${name}": ${error}`,
      };
    }
    delivered.push(notification);
  }
  return { delivered, owed: [] };
}

/** Options for {@linkcode watch}. */
export interface WatchOptions extends Thresholds {
  /** Time limit for the source's request and for each notification, milliseconds. */
  timeoutMs: number;
  /** The state file (`--state`); without it there are no transitions and no notifications. */
  statePath?: string;
  /** The webhook (`--notify`); needs `statePath`. */
  notifyUrl?: string;
  /** The watcher's own stamp (`--stamp`). */
  stampPath?: string;
  /** This machine's clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
  /** This machine's name in notifications; default the host name. */
  watcher?: string;
}

/** What one watcher run found and did. */
export interface WatchResult {
  /** {@linkcode sourceName} of the source. */
  source: string;
  /** This run's time (ISO). */
  checkedAt: string;
  verdict: Verdict;
  /** The exit code for the verdict ({@linkcode WATCH_EXIT}). */
  exitCode: number;
  thresholds: Thresholds;
  /** With a state file: what was kept before, and whether this run is a transition. */
  memory?: {
    path: string;
    transition: boolean;
    previous?: { state: WatchState; problem?: WatchProblem; since: string };
    since: string;
  };
  /** With a notify URL: what was sent and what is still owed. */
  notify?: {
    url: string;
    delivered: WatchNotification[];
    owed: WatchNotification[];
    error?: string;
  };
  /** Owed notifications dropped by this run (over the cap, or no notify URL). */
  dropped: number;
  /**
   * The watcher's own stamp: `refreshed`, or `withheld` while a notification is owed (a watcher
   * whose alerts do not get through is not working, and goes silent to its own watcher).
   */
  ownStamp?: { path: string; state: "refreshed" | "withheld"; detail: string };
}

/**
 * One watcher run: reads the kept state, observes the source, judges it, keeps the new state
 * (atomically, owed notification included, before sending it), delivers what is owed, keeps the
 * state again, and refreshes its own stamp unless a notification is still owed.
 *
 * @throws {WatchInputError} for a bad source, `notifyUrl` without `statePath`, a notify URL that is
 *   not http(s), or a state file kept for another source.
 * @throws {Error} `Cannot read watch state ...` / `Cannot write "<path>": ...` when the state file
 *   cannot be read or written, or the own stamp cannot be written: the run did not complete.
 */
export async function watch(sourceText: string, options: WatchOptions): Promise<WatchResult> {
  const source = parseSource(sourceText);
  const name = sourceName(source);
  let notifyUrl: URL | undefined;
  if (options.notifyUrl !== undefined) {
    if (options.statePath === undefined) {
      throw new WatchInputError(
        "--notify needs --state: transitions are known only from the state kept between runs",
      );
    }
    try {
      notifyUrl = new URL(options.notifyUrl);
    } catch (error) {
      throw new WatchInputError(
        `Cannot notify "${redactUrl(options.notifyUrl)}": ${messageOf(error)}`,
      );
    }
    if (notifyUrl.protocol !== "http:" && notifyUrl.protocol !== "https:") {
      throw new WatchInputError(
        `Cannot notify "${redactUrl(options.notifyUrl)}": only http(s) URLs are webhooks`,
      );
    }
  }
  // Unusable output paths are refused before anything is looked at.
  if (options.statePath !== undefined) await assertWritablePath(options.statePath);
  if (options.stampPath !== undefined) await assertWritablePath(options.stampPath);
  const kept = options.statePath === undefined
    ? undefined
    : await loadWatchState(options.statePath);
  if (kept !== undefined && kept.source !== name) {
    throw new WatchInputError(
      `Cannot use watch state "${options.statePath}": it is kept for "${kept.source}", not "${name}"`,
    );
  }
  const now = options.now ?? Date.now;
  const checkedAt = new Date(now()).toISOString();
  const observation = await observeSource(source, { timeoutMs: options.timeoutMs, now });
  const thresholds = { maxAgeMs: options.maxAgeMs, graceMs: options.graceMs };
  const verdict = judge(observation, thresholds);
  const result: WatchResult = {
    source: name,
    checkedAt,
    verdict,
    exitCode: WATCH_EXIT[verdict.state],
    thresholds,
    dropped: 0,
  };
  let owed: WatchNotification[] = [];
  if (options.statePath !== undefined) {
    const step = advance(kept, verdict, {
      source: name,
      at: checkedAt,
      thresholds,
      watcher: options.watcher ?? hostname(),
      notify: notifyUrl !== undefined,
    });
    result.dropped = step.droppedNow;
    result.memory = {
      path: options.statePath,
      transition: step.transition,
      ...(step.previous !== undefined ? { previous: step.previous } : {}),
      since: step.record.since,
    };
    // Kept before sending: a watcher killed mid-delivery sends again (at least once), never not.
    await writeFileAtomic(options.statePath, JSON.stringify(step.record, null, 2) + "\n");
    owed = step.record.owed;
    if (notifyUrl !== undefined) {
      const delivery = owed.length === 0
        ? { delivered: [], owed: [] }
        : await deliver(owed, notifyUrl, { timeoutMs: options.timeoutMs, now });
      result.notify = {
        url: redactUrl(notifyUrl.href),
        delivered: delivery.delivered,
        owed: delivery.owed,
        ...("error" in delivery && delivery.error !== undefined ? { error: delivery.error } : {}),
      };
      if (delivery.delivered.length > 0) {
        await writeFileAtomic(
          options.statePath,
          JSON.stringify({ ...step.record, owed: delivery.owed }, null, 2) + "\n",
        );
      }
      owed = delivery.owed;
    }
  }
  if (options.stampPath !== undefined) {
    if (owed.length > 0) {
      result.ownStamp = {
        path: options.stampPath,
        state: "withheld",
        detail: `${owed.length} notification${
          owed.length === 1 ? " is" : "s are"
        } owed: this watcher's alerts are not getting through`,
      };
    } else {
      const line = watchedStampLine(
        checkedAt,
        `${name} is ${stateWords(verdict.state, verdict.problem)}`,
      );
      await writeFileAtomic(options.stampPath, line);
      result.ownStamp = { path: options.stampPath, state: "refreshed", detail: line.trimEnd() };
    }
  }
  return result;
}

/** The JSON form of a watcher run (`watch --json`), as a plain object. */
export function watchJson(result: WatchResult): Record<string, unknown> {
  const v = result.verdict;
  return {
    source: result.source,
    state: v.state,
    ...(v.problem !== undefined ? { problem: v.problem } : {}),
    exitCode: result.exitCode,
    detail: v.detail,
    checkedAt: result.checkedAt,
    ...(v.stampedAt !== undefined ? { stampedAt: v.stampedAt } : {}),
    ...(v.ageMs !== undefined ? { ageSeconds: Math.round(v.ageMs) / 1000 } : {}),
    ...(v.ageFrom !== undefined ? { ageFrom: v.ageFrom } : {}),
    ...(v.stamp !== undefined ? { stamp: v.stamp } : {}),
    maxAgeSeconds: result.thresholds.maxAgeMs / 1000,
    graceSeconds: result.thresholds.graceMs / 1000,
    ...(result.memory !== undefined
      ? {
        memory: {
          path: result.memory.path,
          transition: result.memory.transition,
          since: result.memory.since,
          ...(result.memory.previous !== undefined ? { previous: result.memory.previous } : {}),
        },
      }
      : {}),
    ...(result.notify !== undefined
      ? {
        notify: {
          url: result.notify.url,
          delivered: result.notify.delivered.length,
          owed: result.notify.owed.length,
          ...(result.notify.error !== undefined ? { error: result.notify.error } : {}),
        },
      }
      : {}),
    dropped: result.dropped,
    ...(result.ownStamp !== undefined ? { ownStamp: result.ownStamp } : {}),
  };
}

/** The text form of a watcher run, for people; rendered from the same result as the JSON. */
export function watchText(result: WatchResult): string {
  const v = result.verdict;
  const lines = [
    `mesh-reconcile watch ${printable(result.source)}: ${stateWords(v.state, v.problem)}: ${
      printable(v.detail)
    }`,
  ];
  const m = result.memory;
  if (m !== undefined) {
    if (m.previous === undefined) lines.push(`  state: first run, kept in ${m.path}`);
    else if (m.transition) {
      lines.push(
        `  state: changed from ${
          stateWords(m.previous.state, m.previous.problem)
        } (since ${m.previous.since})`,
      );
    } else lines.push(`  state: unchanged since ${m.since}`);
  }
  const n = result.notify;
  if (n !== undefined) {
    for (const d of n.delivered) {
      lines.push(
        `  notified ${n.url}: ${
          d.previous === undefined ? "first run" : stateWords(d.previous, d.previousProblem)
        } -> ${stateWords(d.state, d.problem)} (at ${d.at})`,
      );
    }
    if (n.error !== undefined) {
      lines.push(
        `  notification failed: ${
          printable(n.error)
        }; ${n.owed.length} owed, retried on the next run`,
      );
    }
  }
  if (result.dropped > 0) {
    lines.push(
      `  dropped ${result.dropped} owed notification${result.dropped === 1 ? "" : "s"} (${
        n === undefined ? "no --notify given" : `more than ${MAX_OWED} owed`
      })`,
    );
  }
  const s = result.ownStamp;
  if (s !== undefined) {
    lines.push(
      s.state === "refreshed"
        ? `  own stamp refreshed: ${s.path}`
        : `  own stamp withheld: ${s.path}: ${s.detail}`,
    );
  }
  return lines.join("\n") + "\n";
}
