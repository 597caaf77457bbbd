/**
 * `mesh-reconcile stamp serve` as a test runs it: a subprocess, as an operator or a unit runs it,
 * returned once it accepts connections, with a way to stop it and read how it ended. Shared by
 * tests/reconcile/watch_test.ts and tests/reconcile/stamp_tls_test.ts.
 *
 * @module
 */

import { freePort, ROOT } from "./mod.ts";

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
  /** `--listen`; default `127.0.0.1:` and a free port. It is connected to on 127.0.0.1. */
  listen?: string;
  /** More arguments (`--cert`, `--key`, `--allow-plain-http`, ...). */
  args?: string[];
  /** Environment variables added to the test's own. */
  env?: Record<string, string>;
}

/**
 * Starts `stamp serve --listen LISTEN --stamp STAMP ARGS` and returns once 127.0.0.1:PORT
 * accepts a connection (within 15 s).
 *
 * @throws {Error} `stamp serve did not start: STDERR` when it never listens (it is killed).
 */
export async function startStampServe(
  stamp: string,
  options: StampServeOptions = {},
): Promise<StampServe> {
  const listen = options.listen ?? `127.0.0.1:${freePort()}`;
  const port = Number(listen.slice(listen.lastIndexOf(":") + 1));
  const args = options.args ?? [];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}reconcile/main.ts`, "stamp", "serve"]
      .concat(["--listen", listen, "--stamp", stamp, ...args]),
    ...(options.env !== undefined ? { env: options.env } : {}),
    cwd: ROOT,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stopped: Promise<StampServeEnd> | undefined;
  const serve: StampServe = {
    url: `${args.includes("--cert") ? "https" : "http"}://127.0.0.1:${port}/`,
    port,
    child,
    stop(signal: Deno.Signal = "SIGTERM") {
      if (stopped) return stopped;
      try {
        child.kill(signal);
      } catch { /* already gone */ }
      stopped = child.output().then((o) => ({
        code: o.code,
        signal: o.signal,
        stderr: new TextDecoder().decode(o.stderr),
      }));
      return stopped;
    },
  };
  for (let i = 0; i < 300; i++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return serve;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  const end = await serve.stop("SIGKILL");
  throw new Error(`stamp serve did not start: ${end.stderr}`);
}
