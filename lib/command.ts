/**
 * Running external commands, the one way mesh does it.
 *
 * A command that exits non-zero (or dies of a signal) is a {@linkcode CommandError} carrying the
 * argv, the exit code, the signal and the tail of its stderr, so the failure can be reported to
 * whoever asked without anybody re-running it by hand.
 *
 * @module
 */

/** How many bytes of stderr a {@linkcode CommandError} keeps (the tail; the head is dropped). */
export const STDERR_TAIL_BYTES = 2048;

/** The outcome of a finished command. `stdout` and `stderr` are decoded as UTF-8. */
export interface CommandOutput {
  /** The argv that ran, program first. */
  argv: string[];
  /** Exit code; `null` when the process died of a signal. */
  code: number | null;
  /** The signal that ended the process, or `null`. */
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Options for {@linkcode run}. */
export interface RunOptions {
  /** Extra environment variables (merged over the inherited environment). */
  env?: Record<string, string>;
  /** Working directory. */
  cwd?: string;
  /** Text written to the command's standard input. */
  stdin?: string;
  /** Kill the command after this many milliseconds (it then fails with signal SIGKILL). */
  timeoutMs?: number;
  /**
   * Treat a non-zero exit as a result rather than an error (the caller reads `code` itself).
   * Used where a tool reports state through its exit code, e.g. `systemctl is-enabled`.
   */
  allowFailure?: boolean;
  /** Sends the command SIGTERM when aborted (it then fails with that signal). */
  signal?: AbortSignal;
}

/**
 * A command that could not be started, exited non-zero or died of a signal.
 * The message names the argv and the cause and ends with the tail of stderr.
 *
 * @example What a failed `systemctl start` says
 * ```ts
 * import { CommandError } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const error = new CommandError(["systemctl", "start", "shop.service"], {
 *   code: 5,
 *   signal: null,
 *   stderr: "Failed to start shop.service: Unit shop.service not found.\n",
 * });
 * assert.equal(
 *   error.message,
 *   "Command systemctl start shop.service exited with code 5: " +
 *     "Failed to start shop.service: Unit shop.service not found.",
 * );
 * assert.equal(error.code, 5);
 * ```
 */
export class CommandError extends Error {
  /** The argv that ran, program first. */
  readonly argv: string[];
  /** Exit code, or `null` when it died of a signal or could not be started. */
  readonly code: number | null;
  /** The signal that ended it, or `null`. */
  readonly signal: string | null;
  /** The last {@linkcode STDERR_TAIL_BYTES} bytes of stderr, trimmed, a NUL character as `\0`. */
  readonly stderrTail: string;

  constructor(
    argv: string[],
    detail: {
      code: number | null;
      signal: string | null;
      stderr: string;
      cause?: unknown;
      /** Set when the command was killed for running past this time limit (ms). */
      timeoutMs?: number;
    },
  ) {
    const tail = tailOf(detail.stderr);
    const how = detail.cause !== undefined
      ? `could not be started: ${
        detail.cause instanceof Error ? detail.cause.message : String(detail.cause)
      }`
      : detail.timeoutMs !== undefined
      ? `did not finish within its time limit of ${detail.timeoutMs} ms and was killed (${detail.signal})`
      : detail.signal !== null
      ? `was killed by ${detail.signal}`
      : `exited with code ${detail.code}`;
    super(
      `Command ${formatArgv(argv)} ${how}${tail ? `: ${tail}` : ""}`,
      detail.cause !== undefined ? { cause: detail.cause } : undefined,
    );
    this.name = "CommandError";
    this.argv = argv;
    this.code = detail.code;
    this.signal = detail.signal;
    this.stderrTail = tail;
  }
}

let spawned = 0;

/** How many subprocesses this process has spawned through {@linkcode run} so far. */
export function spawnCount(): number {
  return spawned;
}

/**
 * Runs `argv` to completion and returns its output.
 *
 * @param argv program and arguments; the program is looked up on `PATH`.
 * @throws {CommandError} when the program cannot be started, is killed (including by the
 *   timeout), or exits non-zero without `allowFailure`.
 *
 * @example A tool that reports state through its exit code
 * ```ts
 * import { CommandError, run } from "../mod.ts";
 *
 * // Runs systemctl on this machine: type-checked, not run here.
 * async function enabledAtBoot(unit: string): Promise<boolean> {
 *   try {
 *     const out = await run(["systemctl", "is-enabled", "--", unit], {
 *       timeoutMs: 10_000,
 *       allowFailure: true, // it exits 1 for "disabled": a result, not an error
 *     });
 *     return out.stdout.trim() === "enabled";
 *   } catch (error) {
 *     // Not started, killed by the time limit, or died of a signal.
 *     if (error instanceof CommandError) throw new Error(`Cannot ask systemd: ${error.message}`);
 *     throw error;
 *   }
 * }
 * ```
 */
export async function run(argv: string[], options: RunOptions = {}): Promise<CommandOutput> {
  const [program, ...args] = argv;
  if (program === undefined) throw new TypeError("Cannot run an empty command");
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args,
      env: options.env,
      cwd: options.cwd,
      stdin: options.stdin !== undefined ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    }).spawn();
  } catch (cause) {
    throw new CommandError(argv, { code: null, signal: null, stderr: "", cause });
  }
  spawned++;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  if (options.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      timedOut = true;
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
    }, options.timeoutMs);
  }
  try {
    if (options.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(options.stdin));
      await writer.close();
    }
    const out = await child.output();
    const result: CommandOutput = {
      argv,
      code: out.signal === null ? out.code : null,
      signal: out.signal,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
    if ((result.code !== 0 && !options.allowFailure) || result.signal !== null) {
      throw new CommandError(argv, {
        ...result,
        ...(timedOut ? { timeoutMs: options.timeoutMs } : {}),
      });
    }
    return result;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** Renders argv for a message, quoting each argument that needs it. */
export function formatArgv(argv: string[]): string {
  return argv.map((a) => /^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a)).join(" ");
}

/**
 * The end of a command's output as a message can carry it: at most {@linkcode STDERR_TAIL_BYTES}
 * bytes, trimmed, each NUL character written as the two characters `\0` (a message carrying a NUL
 * would be cut short by whatever reads it as a C string, a terminal or the journal, and cannot be
 * stored by PostgreSQL, a report's problem; `\0` says what the command wrote). Bytes that were not
 * UTF-8 are U+FFFD already (decoded without `fatal`), so the tail has no lone surrogate.
 *
 * When the output is longer, it is cut at the start of a line, never inside a word (a tail cut at a
 * byte count began one podman error with "rror:"), and says so first:
 * `[... N earlier bytes not shown] <the last whole lines>`. When the last line alone is longer
 * than the budget, its end is kept after the same marker, cut after a space when there is one.
 *
 * @param text a command's stdout or stderr, decoded.
 * @returns the tail, possibly empty.
 */
export function outputTail(text: string): string {
  const trimmed = text.trim();
  const bytes = new TextEncoder().encode(trimmed);
  if (bytes.length <= STDERR_TAIL_BYTES) return trimmed.replaceAll("\0", "\\0");
  // The budget leaves room for the marker; decoding a cut in a character's middle gives U+FFFD,
  // which the line or space cut below drops.
  let kept = new TextDecoder().decode(bytes.slice(bytes.length - (STDERR_TAIL_BYTES - 64)));
  const line = kept.indexOf("\n");
  if (line !== -1 && line < kept.length - 1) kept = kept.slice(line + 1);
  else {
    const space = kept.indexOf(" ");
    if (space !== -1 && space < kept.length - 1) kept = kept.slice(space + 1);
  }
  const dropped = bytes.length - new TextEncoder().encode(kept).length;
  return `[... ${dropped} earlier bytes not shown] ${kept.trim()}`.replaceAll("\0", "\\0");
}

function tailOf(stderr: string): string {
  return outputTail(stderr);
}
