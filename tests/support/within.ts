/**
 * A bounded wait for tests: a test whose subject can hang (a broker that never closes a
 * connection, batches in flight waiting on each other) fails with what did not happen instead
 * of holding the suite until CI's own limit.
 *
 * @module
 */

/**
 * Waits for `p`, failing after `ms` milliseconds.
 *
 * @throws {Error} "`what` did not happen within `ms` ms" when `p` has not settled by then (`p`
 *   itself is not cancelled); `p`'s own rejection otherwise.
 */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * How long a test lets a long-running program take to end after SIGTERM. The design promises
 * 2 s (lib/wait.ts: a grace of `STOP_GRACE_MS`, 1.5 s, then the process exits whatever it was
 * doing); a test holding it to 2 s fails on a loaded machine, where starting a timer's callback
 * and a process's exit can take longer. What such a test must tell apart from a stop takes far
 * longer than this bound (a wait on a lock or a FIFO that never ends, an action of a minute).
 */
export const STOP_BOUND_MS = 10_000;
