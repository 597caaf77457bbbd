/**
 * Where a registry may live: in a state directory outside any code checkout. The first incident
 * behind the registry was one kept in a checkout and overwritten by a deployment from it; so a
 * registry inside a git work tree, or inside the `--repo` checkout, is refused unless the
 * operator names {@linkcode IN_CHECKOUT_FLAG}.
 *
 * @module
 */

import { basename, dirname, resolve } from "../lib/path.ts";

import { IN_CHECKOUT_FLAG } from "./options.ts";

export { IN_CHECKOUT_FLAG };

/** A registry placed where a deployment can overwrite it. */
export class RegistryPlaceError extends Error {
  override name = "RegistryPlaceError";
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest. */
async function realOrResolved(path: string): Promise<string> {
  const absolute = resolve(path);
  try {
    return await Deno.realPath(absolute);
  } catch {
    const parent = dirname(absolute);
    if (parent === absolute) return absolute;
    return `${await realOrResolved(parent)}/${basename(absolute)}`;
  }
}

/**
 * The top of the git work tree holding `dir` (the nearest ancestor with a `.git` directory, or a
 * `.git` file as a linked worktree or a submodule has), or undefined. Read from the file system,
 * not from git: no subprocess, and a broken checkout is still a checkout.
 */
export async function workTreeOf(dir: string): Promise<string | undefined> {
  for (let d = dir;;) {
    const git = await Deno.lstat(`${d === "/" ? "" : d}/.git`).catch(() => undefined);
    if (git && (git.isDirectory || git.isFile)) return d;
    const parent = dirname(d);
    if (parent === d) return undefined;
    d = parent;
  }
}

/**
 * Refuses a registry at `registry` (which may not exist yet, for `init --output`) inside a git
 * work tree or inside `options.repo`, following symlinks (a link from a state directory into a
 * checkout is the checkout).
 *
 * @throws {RegistryPlaceError} naming the registry, the checkout, why it matters and
 *   {@linkcode IN_CHECKOUT_FLAG}.
 */
export async function assertRegistryOutsideCode(
  registry: string,
  options: { repo?: string } = {},
): Promise<void> {
  const real = await realOrResolved(registry);
  const where = real === resolve(registry) ? "" : ` (it resolves to "${real}")`;
  const advice = `: a deployment from there can overwrite or revert it. Keep the registry in a ` +
    `state directory outside any checkout (e.g. /var/lib/mesh/reconcile/registry.yaml), or name ` +
    `${IN_CHECKOUT_FLAG} to keep it there on purpose`;
  if (options.repo !== undefined) {
    const repo = await Deno.realPath(options.repo).catch(() => undefined);
    if (repo !== undefined && (real === repo || real.startsWith(`${repo}/`))) {
      throw new RegistryPlaceError(
        `Registry "${registry}"${where} is inside --repo "${options.repo}"${advice}`,
      );
    }
  }
  const top = await workTreeOf(dirname(real));
  if (top !== undefined) {
    throw new RegistryPlaceError(
      `Registry "${registry}"${where} is inside the git work tree "${top}"${advice}`,
    );
  }
}
