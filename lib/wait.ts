/**
 * Waiting without outliving a stop: run until SIGTERM or SIGINT, sleep unless aborted. Apart from
 * lib/cli.ts (which re-exports them) so that a long-running loop (the host's link) does not load
 * commander for them.
 *
 * @module
 */

/**
 * Runs `fn` with a signal that SIGTERM or SIGINT aborts (a service stopped, a person's ^C), and
 * removes the listeners afterwards.
 */
export async function untilSignalled<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    return await fn(stop.signal);
  } finally {
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
