/**
 * What a program loads before it runs anything, read from `deno info --json`: for the tests that
 * hold a command's start-up to the modules it uses.
 *
 * @module
 */

import { assert } from "./assert.ts";
import { ROOT } from "./mod.ts";

/** One module of `deno info --json`'s graph. */
export interface ModuleInfo {
  specifier: string;
  dependencies?: { specifier: string; code?: { specifier?: string }; isDynamic?: boolean }[];
}

/**
 * `deno info --json` of `entry` (a path below the repository root): its roots and every module
 * of its graph with its dependencies as written and as resolved.
 *
 * @throws {AssertionError} when `deno info` fails.
 */
export async function moduleInfo(
  entry: string,
): Promise<{ roots: string[]; modules: ModuleInfo[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `${ROOT}${entry}`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/**
 * The modules `entry` (a path below the repository root) loads before it runs anything: its
 * static imports, transitively, not the dynamic ones (those load when they run) nor type-only
 * ones (they have no code).
 *
 * @returns the module specifiers, `entry`'s own first.
 * @throws {AssertionError} when `deno info` fails.
 */
export async function loadedAtStart(entry: string): Promise<string[]> {
  const info = await moduleInfo(entry);
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const d of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (d.code?.specifier !== undefined && !d.isDynamic) visit(d.code.specifier);
    }
  };
  visit(info.roots[0]!);
  return [...seen];
}
