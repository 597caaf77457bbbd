/**
 * `mesh-reconcile stamp serve` as a test runs it: a subprocess, as an operator or a unit runs it,
 * returned once it accepts connections, with a way to stop it and read how it ended. Shared by
 * tests/reconcile/watch_test.ts and tests/reconcile/stamp_tls_test.ts.
 *
 * @module
 */

import { ROOT } from "./mod.ts";

/** How a stamp serve ended: its exit code, the signal that ended it (if any), its stderr. */
export interface StampServeEnd {
  code: number;
  signal: string | null;
  stderr: string;
}

/** A running `mesh-reconcile stamp serve`. */
export interface StampServe {
  /** Where it answers from this machine: `http://127.0.0.1:PORT/` (`https://` with `--cert`). */
  url: string;
  /** The port it listens on. */
  port: number;
  /** The subprocess (for SIGSTOP and the like). */
  child: Deno.ChildProcess;
  /** Sends `signal` (default SIGTERM) once and returns how it ended; again, the same answer. */
  stop(signal?: Deno.Signal): Promise<StampServeEnd>;
}

/** Options for {@linkcode startStampServe}. */
export interface StampServeOptions {
  /** `--listen`; default `127.0.0.1:0` (a port the system gives). Connected to on 127.0.0.1. */
  listen?: string;
  /** More arguments (`--cert`, `--key`, `--allow-plain-http`, ...). */
  args?: string[];
  /** Environment variables added to the test's own. */
  env?: Record<string, string>;
}

/**
 * Starts `stamp serve --listen LISTEN --stamp STAMP ARGS` and returns once it says it serves
 * (within 30 s), on the port it says: by default it listens on port 0, the port the system gives
 * it, so that no other process (another test, another suite on a shared machine) can take a port
 * chosen beforehand, nor answer a probe of it in its place.
 *
 * @throws {Error} `stamp serve did not start: STDERR` when it never says it serves (it is killed).
 */
export async function startStampServe(
  stamp: string,
  options: StampServeOptions = {},
): Promise<StampServe> {
  const listen = options.listen ?? "127.0.0.1:0";
  const args = options.args ?? [];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}reconcile/main.ts`, "stamp", "serve"]
      .concat(["--listen", listen, "--stamp", stamp, ...args]),
    ...(options.env !== undefined ? { env: options.env } : {}),
    cwd: ROOT,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Its stderr, read as it comes: the line saying where it serves, then everything to its end.
  let said = "";
  const serving = Promise.withResolvers<number | undefined>();
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      said += chunk;
      const m = /serving stamp ".*" on https?:\/\/\S+:(\d+)\//.exec(said);
      if (m) serving.resolve(Number(m[1]));
    }
    serving.resolve(undefined);
  })();
  let stopped: Promise<StampServeEnd> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") => {
    if (stopped) return stopped;
    try {
      child.kill(signal);
    } catch { /* already gone */ }
    stopped = child.status.then(async (status) => {
      await reading;
      return { code: status.code, signal: status.signal, stderr: said };
    });
    return stopped;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const port = await Promise.race([
    serving.promise,
    new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), 30_000)),
  ]);
  clearTimeout(timer);
  if (port === undefined) {
    const end = await stop("SIGKILL");
    throw new Error(`stamp serve did not start: ${end.stderr}`);
  }
  return {
    url: `${args.includes("--cert") ? "https" : "http"}://127.0.0.1:${port}/`,
    port,
    child,
    stop,
  };
}
