/**
 * What one watcher run found and did: what {@linkcode ../watch.ts}'s `watch` returns and what
 * `./render.ts` renders.
 *
 * @module
 */

import type { Thresholds, Verdict } from "./verdict.ts";
import type { WatchNotification } from "./state.ts";
import type { WatchProblem, WatchState } from "./words.ts";

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
