/**
 * What `mesh-reconcile`'s commands share: their output and exit code, the refusal they throw,
 * and the checks several of them make. Loaded with the command that runs (reconcile/main.ts
 * dispatches), never for the program's own help.
 *
 * @module
 */

import { resolve } from "../../lib/path.ts";
import { writeAll } from "../../lib/write.ts";
import { UsageError } from "../options.ts";

export { durationOption, IN_CHECKOUT_HELP, UsageError } from "../options.ts";

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

/**
 * Refuses output paths that are the same file as another path given (the registry, say).
 *
 * @throws {UsageError} naming both.
 */
export async function assertDistinct(paths: Record<string, string | undefined>): Promise<void> {
  const seen = new Map<string, string>();
  for (const [flag, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    const real = await Deno.realPath(path).catch(() => resolve(path));
    const other = seen.get(real);
    if (other !== undefined) throw new UsageError(`${flag} "${path}" is the same file as ${other}`);
    seen.set(real, `${flag} "${path}"`);
  }
}
