/**
 * What `mesh-reconcile`'s commands share: their output and exit code, the refusal they throw,
 * and the checks several of them make. Loaded with the command that runs (reconcile/main.ts
 * dispatches), never for the program's own help.
 *
 * @module
 */

import { messageOf } from "../../lib/atomic.ts";
import { writeAll } from "../../lib/write.ts";
import { type DurationUnit, parseDuration } from "../../lib/duration.ts";

/** Bad input, refused before anything is written (exit 2). */
export class UsageError extends Error {}

/** What every `mesh-reconcile` command is given. */
export interface ReconcileContext {
  /** Writes to stdout. */
  out: (text: string) => void;
  /** Writes to stderr. */
  err: (text: string) => void;
  /** The exit code the command leaves (0 unless it sets one). */
  code: number;
}

/** A new context writing to the process's stdout and stderr. */
export function reconcileContext(): ReconcileContext {
  return {
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    code: 0,
  };
}

/** The help of `--registry-in-checkout`. */
export const IN_CHECKOUT_HELP =
  "accept a registry inside a git work tree or --repo (refused otherwise: a deployment can overwrite it)";

/**
 * Refuses output paths that are the same file as another path given (the registry, say).
 *
 * @throws {UsageError} naming both.
 */
export async function assertDistinct(paths: Record<string, string | undefined>): Promise<void> {
  const seen = new Map<string, string>();
  for (const [flag, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    const { resolve } = await import("node:path");
    const real = await Deno.realPath(path).catch(() => resolve(path));
    const other = seen.get(real);
    if (other !== undefined) throw new UsageError(`${flag} "${path}" is the same file as ${other}`);
    seen.set(real, `${flag} "${path}"`);
  }
}

/** A parser of a duration option (ms), bare numbers in `unit`; refused as a UsageError. */
export function durationOption(flag: string, unit: DurationUnit = "s"): (value: string) => number {
  return (value: string) => {
    try {
      return parseDuration(value, { unit });
    } catch (error) {
      throw new UsageError(`${flag}: ${messageOf(error)}`);
    }
  };
}
