/**
 * Judging one look at a stamp against `--max-age` and `--grace`: a pure function.
 *
 * @module
 */

import { formatDuration } from "../../lib/duration.ts";
import type { Observation } from "./source.ts";
import type { WatchProblem, WatchState } from "./words.ts";

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
  untrusted: "untrusted",
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
