/**
 * Waiting without outliving a stop: run until SIGTERM or SIGINT, sleep unless aborted. Apart from
 * lib/cli.ts (which re-exports them) so that a long-running loop (the host's link) does not load
 * commander for them.
 *
 * @module
 */

/** Options for {@linkcode untilSignalled}. */
export interface UntilSignalledOptions {
  /**
   * How long `fn` may take to end after the signal, in milliseconds, before the process exits
   * anyway (exit code 0, "stopped"): a stop must never wait on what `fn` is doing (a build, a
   * read that waits). Default {@linkcode STOP_GRACE_MS}.
   */
  graceMs?: number;
  /** Called just before that exit (to say so on stderr). */
  onLate?: () => void;
}

/**
 * How long a long-running program may take to end after SIGTERM or SIGINT, in milliseconds: it
 * ends within 2 s of the signal whatever it is doing (docs/design.md, "Hostile inputs").
 */
export const STOP_GRACE_MS = 1500;

/**
 * Runs `fn` with a signal that SIGTERM or SIGINT aborts (a service stopped, a person's ^C), and
 * removes the listeners afterwards. When `fn` has not ended {@linkcode STOP_GRACE_MS} (or
 * `options.graceMs`) after the signal, the process exits with code 0 there and then.
 */
export async function untilSignalled<T>(
  fn: (signal: AbortSignal) => Promise<T>,
  options: UntilSignalledOptions = {},
): Promise<T> {
  const stop = new AbortController();
  let late: ReturnType<typeof setTimeout> | undefined;
  const onSignal = () => {
    stop.abort();
    late ??= setTimeout(() => {
      options.onLate?.();
      Deno.exit(0);
    }, options.graceMs ?? STOP_GRACE_MS);
  };
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    return await fn(stop.signal);
  } finally {
    clearTimeout(late);
    Deno.removeSignalListener("SIGTERM", onSignal);
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

/** Resolves after `ms` milliseconds, or at once when `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
