/**
 * What the watcher remembers between runs (its state file, version 1) and the notifications it
 * owes, and {@linkcode advance}, which decides both from a verdict: a pure function.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage } from "../../lib/text_bounds.ts";
import { z } from "zod";
import { messageOf } from "../../lib/atomic.ts";
import { readRegularFile } from "../../lib/regular_file.ts";
import type { Thresholds, Verdict } from "./verdict.ts";
import { WATCH_PROBLEMS, WATCH_STATES, type WatchProblem, type WatchState } from "./words.ts";

/** Notifications kept while the webhook fails; beyond this the oldest are dropped (and counted). */
export const MAX_OWED = 100;
/** The largest state file read, in bytes. */
export const STATE_LIMIT_BYTES = 1 << 20;

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
 *   state is never taken for a first run (docs/design.md rule 7).
 */
export async function loadWatchState(path: string): Promise<WatchStateFile | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, { maxBytes: STATE_LIMIT_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot read watch state "${path}": ${messageOf(error)}`, { cause: error });
  }
  let json: unknown;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`Cannot read watch state "${path}": not JSON (${messageOf(error)})`);
  }
  const deep = jsonTooDeep(text);
  if (deep !== undefined) {
    throw new Error(`Cannot read watch state "${path}": ${jsonTooDeepMessage(deep)}`);
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
