/**
 * The watcher's words: its verdicts, why a source is unreachable, and the exit code of each.
 *
 * @module
 */

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
export const WATCH_PROBLEMS = ["cannot-read", "bad-answer", "garbage", "untrusted"] as const;
/**
 * - `cannot-read`: the file could not be read, the server could not be reached or did not answer
 *   in time, or the server says it cannot read its stamp;
 * - `bad-answer`: something answered, but not as `stamp serve` does (not JSON, another shape,
 *   another status, a redirect);
 * - `garbage`: the stamp itself holds garbage (read here, or as the server reports it);
 * - `untrusted`: the server's certificate is refused: issued by another CA than the mesh's,
 *   expired, not valid yet, or for another name (said which); nothing it sent is believed.
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
