/**
 * How a bench runs a command: lib/command.ts's `run` (so a failure is its CommandError, naming
 * the argv, the exit code or signal and the tail of stderr), from the repository root, timed by
 * the bench's monotonic clock, and stopped with the bench: a command in flight is sent SIGTERM
 * when `signal` aborts (the bench's Ctrl-C), and none starts after, except cleanup's.
 *
 * @module
 */

import { type CommandOutput, run } from "../lib/command.ts";

/** The repository root, where every bench command runs. */
const ROOT = new URL("../", import.meta.url).pathname;

/** A command's output with its wall time; it exited (one killed by a signal is an error). */
export interface Timed extends Omit<CommandOutput, "code"> {
  /** The exit code. */
  code: number;
  /** Wall time of the spawn, in ms (`performance.now()` around it). */
  ms: number;
}

/** Options for {@linkcode exec}. */
export interface ExecOptions {
  /** Extra environment variables (merged over the bench's). */
  env?: Record<string, string>;
  /** A non-zero exit is a result, not an error. */
  allowFailure?: boolean;
  /** The bench's interrupt: refuses to start, and stops what runs, once aborted. */
  signal?: AbortSignal;
  /** Part of the cleanup: runs and finishes even after `signal` aborted. */
  cleanup?: boolean;
}

/**
 * Runs `argv` (program first) from the repository root and times it.
 *
 * @throws {CommandError} when it cannot start, exits non-zero (unless `allowFailure`) or dies of
 *   a signal (SIGTERM when `signal` aborted it).
 * @throws the abort reason of `signal` when it aborted before or during the run (not for
 *   `cleanup`).
 */
export async function exec(argv: string[], options: ExecOptions = {}): Promise<Timed> {
  const signal = options.cleanup ? undefined : options.signal;
  signal?.throwIfAborted();
  const started = performance.now();
  let out: CommandOutput;
  try {
    out = await run(argv, {
      cwd: ROOT,
      ...(options.env !== undefined ? { env: options.env } : {}),
      ...(options.allowFailure ? { allowFailure: true } : {}),
      ...(signal !== undefined ? { signal } : {}),
    });
  } catch (error) {
    signal?.throwIfAborted(); // stopped by the bench's interrupt: that is the error
    throw error;
  }
  const ms = performance.now() - started;
  signal?.throwIfAborted();
  // run throws for a command that died of a signal, so one that returns has an exit code.
  return { ...out, code: out.code ?? -1, ms };
}
