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
