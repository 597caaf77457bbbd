/**
 * What `mesh-host`'s commands share: the build they run in, their output and exit code, the
 * options several of them take, and how a run's results are printed. Loaded with the command
 * that runs (host/cli.ts dispatches), never for the program's own help.
 *
 * @module
 */

import { writeAll } from "../../lib/atomic.ts";
import { type ApplyResult, recordKnownGood } from "../apply.ts";
import { type FileIdentity } from "../identity.ts";
import { applyText } from "../render.ts";
import { bundleSource, migrationFor, readLocalDeclarations } from "../sources.ts";
import type { Migration } from "../store.ts";
import { VERSION } from "../version.ts";
import { EXIT_APPLIED, EXIT_FAILED, EXIT_PENDING, EXIT_REFUSED } from "../exit.ts";
import type { LoadedBuild } from "../system.ts";
import { jsonText } from "../../lib/printable.ts";

export { Refused } from "../options.ts";

/** What every `mesh-host` command is given. */
export interface HostContext {
  /** The build this host is (its system, its carried bundle). */
  build: LoadedBuild;
  /** Writes to stdout. */
  out: (text: string) => void;
  /** Writes to stderr. */
  err: (text: string) => void;
  /** The exit code the command leaves (0 unless it sets one). */
  code: number;
  /** The executable's identity at start: a host notices its binary being replaced. */
  start: FileIdentity;
}

/** A new context for `build`, writing to the process's stdout and stderr. */
export function hostContext(build: LoadedBuild, start: FileIdentity): HostContext {
  return {
    build,
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    code: 0,
    start,
  };
}

/** How a store of format 1 gives its records a source (see host/sources.ts). */
export function migration(
  ctx: HostContext,
  dir: string,
  declarations: string,
): () => Promise<Migration> {
  return async () => {
    const { input } = await bundleSource(ctx.build.bundle, ctx.build.system.name);
    return await migrationFor(dir, {
      ...(input?.declaration ? { bundle: input.declaration } : {}),
      locals: await readLocalDeclarations(declarations),
    });
  };
}

/**
 * Prints one run's results (one per source; `--json`: `apply`'s one result as one object, as
 * always; `reconcile`'s as one JSON object per line and source) and sets the exit code: 1 when
 * one failed, else 2 when one was refused, else 4 when a dry run found changes pending, else 0.
 * Known-good after a clean run only.
 */
export async function finish(
  ctx: HostContext,
  results: ApplyResult[],
  options: {
    json?: boolean;
    stateDir: string;
    lines?: boolean;
    /** The file each source's declaration was read from, named when it is refused. */
    files?: ReadonlyMap<string, string>;
  },
): Promise<void> {
  const clean = results.every((r) => r.outcome === "applied");
  if (clean && results.length > 0 && !results[0]!.dryRun) {
    await recordKnownGood(options.stateDir, VERSION);
  }
  if (options.json) {
    ctx.out(
      results.length === 1 && !options.lines
        ? jsonText(results[0], 2) + "\n"
        : results.map((r) => jsonText(r) + "\n").join(""),
    );
  } else {
    ctx.out(results.map((r) => applyText(r, { file: options.files?.get(r.source) })).join(""));
  }
  ctx.code = exitCodeOf(results);
}

/**
 * The exit code of a run's results: 1 when one failed, else 2 when one was refused, else 4 when
 * a dry run found changes pending, else 0.
 */
export function exitCodeOf(results: readonly ApplyResult[]): number {
  const pending = results.some((r) => r.dryRun && r.changes.some((c) => c.change !== "unchanged"));
  return results.some((r) => r.outcome === "failed")
    ? EXIT_FAILED
    : results.some((r) => r.outcome === "refused")
    ? EXIT_REFUSED
    : pending
    ? EXIT_PENDING
    : EXIT_APPLIED;
}
