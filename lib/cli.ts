/**
 * What every mesh command line does the same way: run a commander program and turn what happened
 * into an exit code, run until SIGTERM or SIGINT, and wait without outliving a stop.
 *
 * @module
 */

import { type Command, CommanderError } from "commander";

/** Options for {@linkcode runProgram}. */
export interface RunProgramOptions {
  /** Writes to stderr. */
  err: (text: string) => void;
  /** The exit code the action left (read after it ran). */
  code: () => number;
  /** Exit code of a usage error commander found (an unknown option, a missing argument). */
  usageCode: number;
  /** Prints `error` and returns its exit code. */
  onError: (error: unknown) => number;
  /** Run the default action with no arguments (its settings all come from the environment). */
  runWithoutArguments?: boolean;
}

/**
 * Parses `args` and runs the chosen action. No arguments at all is help on stderr and
 * `usageCode` (nothing asked is not something done); `--help` and `--version` are 0.
 */
export async function runProgram(
  program: Command,
  args: string[],
  options: RunProgramOptions,
): Promise<number> {
  try {
    if (args.length === 0 && !options.runWithoutArguments) {
      options.err(program.helpInformation());
      return options.usageCode;
    }
    await program.parseAsync(args, { from: "user" });
    return options.code();
  } catch (error) {
    if (error instanceof CommanderError) {
      return ["commander.helpDisplayed", "commander.version", "commander.help"].includes(error.code)
        ? 0
        : options.usageCode;
    }
    return options.onError(error);
  }
}

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
