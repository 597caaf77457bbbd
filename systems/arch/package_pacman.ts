/**
 * `package` on Arch: pacman's local database is asked, `pacman -S` installs.
 *
 * Present only (docs/design.md, "Declaration"): an installed package is left as it is (never
 * upgraded, and `--needed` keeps pacman from reinstalling one); a missing one is installed with
 * `pacman -S --noconfirm --needed NAME`; a package that leaves the declaration is `forgotten`,
 * never removed. `created` is recorded truthfully (this host installed it) and never licenses a
 * removal.
 *
 * Observing is one `pacman -Q NAME`, read by what it says (pacman 6.0.2, observed):
 *
 * - exit 0, "NAME VERSION" on stdout: present.
 * - exit 0, "OTHER VERSION": absent. pacman -Q answers for a name with the installed package
 *   that PROVIDES it, so an exit code of 0 alone would call a virtual name installed. Installing
 *   it would have pacman say "there is nothing to do", so the plan refuses it naming the provider
 *   (declare the package by its own name); the read-back after an install still checks the name.
 * - non-zero, "error: package 'NAME' was not found" on stderr: absent.
 * - anything else (e.g. "failed to initialize alpm library ... database is incorrect version",
 *   exit 255): a failure naming it. A non-zero exit is not absence by itself.
 *
 * Installing: `pacman -S NAME` installs every member of a GROUP of that name when no package has
 * it, so `pacman -Sg NAME` is asked first and a name that is only a group fails before anything
 * is installed. pacman's own message reaches the problem text when it fails ("error: target not
 * found: NAME", "error: no usable package repositories configured."). The sync databases are
 * never refreshed here (`pacman -Sy` alone is the partial upgrade Arch does not support). After
 * installing, pacman is asked again.
 *
 * The plan ({@linkcode PacmanPlan}) asks the read-only questions (pacman -Q; -Sg, refusing a
 * group; -Si, refusing a name no repository has: "error: package 'NAME' was not found"), so a
 * dry run refuses what the apply refuses; a dry run stops at the plan and installs nothing.
 *
 * Commands run with `LC_ALL=C`: the messages read here are pacman's untranslated ones.
 *
 * @module
 */

import type { z } from "zod";
import { messageOf } from "../../lib/atomic.ts";
import { CommandError, run } from "../../lib/command.ts";
import { type Applier, type Plan, ResourceError } from "../../host/applier.ts";
import type { Package } from "../../resources/package/schema.ts";

type PackageResource = z.output<typeof Package>;

/** What pacman says about one package. */
export interface PacmanObservation {
  present: boolean;
  /** The installed version, when present. */
  version?: string;
  /** What pacman said, and what that means. */
  reason: string;
  /** The installed package pacman -Q answered with instead: it provides the name. */
  provider?: string;
}

const ENV = { LC_ALL: "C" };
const PACMAN_TIMEOUT_MS = 30 * 60_000;

/**
 * Asks pacman's local database about `name`.
 *
 * @throws {ResourceError} when pacman fails or says something this host does not know.
 */
export async function queryPacman(name: string): Promise<PacmanObservation> {
  const argv = ["pacman", "-Q", name];
  const out = await run(argv, { allowFailure: true, env: ENV });
  const line = out.stdout.trim().split("\n")[0]?.trim() ?? "";
  if (out.code === 0) {
    const m = /^(\S+) (\S+)$/.exec(line);
    if (m === null) {
      throw new ResourceError(
        `Cannot read pacman's database for package "${name}": pacman -Q printed "${out.stdout.trim()}", not "name version"`,
      );
    }
    if (m[1] === name) {
      return { present: true, version: m[2]!, reason: `pacman -Q says "${line}": installed` };
    }
    return {
      present: false,
      provider: m[1]!,
      reason: `pacman -Q says "${line}": ${m[1]} provides ${name}, and no package named ${name} ` +
        `is installed`,
    };
  }
  const notFound = `error: package '${name}' was not found`;
  if (out.code !== null && out.stderr.includes(notFound)) {
    return { present: false, reason: `pacman -Q says "${notFound}": not installed` };
  }
  throw new ResourceError(
    `Cannot read pacman's database for package "${name}": ${new CommandError(argv, out).message}`,
  );
}

/**
 * Refuses a name that is a package group and no package: `pacman -S` would install the whole
 * group. Any other answer of `pacman -Sg` (no such group, no repositories) leaves the verdict to
 * `pacman -S` itself.
 */
async function refuseGroup(name: string): Promise<void> {
  const group = await run(["pacman", "-Sg", name], { allowFailure: true, env: ENV });
  const members = group.stdout.split("\n").map((l) => l.trim().split(/\s+/))
    .filter((w) => w[0] === name && w[1] !== undefined).map((w) => w[1]!);
  if (group.code !== 0 || members.length === 0) return;
  const info = await run(["pacman", "-Si", name], { allowFailure: true, env: ENV });
  if (info.code === 0) return; // a package has the name too, and pacman -S prefers the package
  throw new ResourceError(
    `Cannot install package "${name}": it is a package group (pacman -Sg: ${
      members.join(", ")
    }), not a package; pacman -S would install every member. Declare the packages instead`,
  );
}

/** What the pacman applier will do to one package, decided read-only (`-Q`, `-Sg`, `-Si`). */
export type PacmanPlan =
  & Plan
  & (
    | { kind: "nothing" }
    | { kind: "install"; package: string }
  );

/** The `package` applier for pacman (Arch). */
export const pacmanPackageApplier: Applier<PackageResource, PacmanObservation, PacmanPlan> = {
  observe(resource) {
    return queryPacman(resource.package);
  },
  async plan(resource, observed, context): Promise<PacmanPlan> {
    const name = resource.package;
    const known = context.store.find(resource.id, "package", name);
    if (observed.present) {
      return {
        kind: "nothing",
        steps: [],
        result: { change: "unchanged", created: known?.created ?? false },
      };
    }
    if (observed.provider !== undefined) {
      // pacman -S NAME would do nothing (its provider is installed), and NAME would never be.
      throw new ResourceError(
        `Cannot install package "${name}": ${observed.reason}; pacman -S ${name} would install ` +
          `nothing. Declare the package by its own name (${observed.provider})`,
      );
    }
    // A group is refused in a dry run as in the apply: both plan (pacman -Sg, read-only).
    await refuseGroup(name);
    const info = await run(["pacman", "-Si", name], { allowFailure: true, env: ENV });
    const notFound = `error: package '${name}' was not found`;
    if (info.code !== 0 && info.stderr.includes(notFound)) {
      // Unknown to every repository pacman knows: refused, in a dry run as in the apply.
      throw new ResourceError(
        `Cannot install package "${name}": unknown package, no repository pacman knows has ` +
          `it (pacman -Si says "${notFound}"); nothing was installed`,
      );
    }
    return {
      kind: "install",
      package: name,
      steps: [`pacman -S ${name}`],
      result: {
        change: "created",
        created: true,
        detail: info.code === 0
          ? `install package ${name} (pacman -S; ${observed.reason})`
          : `install package ${name}: pacman -Si cannot say whether a repository has it (${
            info.stderr.trim().split("\n")[0] ?? ""
          }); the apply would try pacman -S`,
      },
    };
  },
  async act(resource, plan, context) {
    const { detail: _, ...result } = plan.result;
    if (plan.kind === "nothing") return result;
    const name = plan.package;
    await context.store.intend({ id: resource.id, type: "package", subject: name });
    try {
      await run(["pacman", "-S", "--noconfirm", "--needed", name], {
        env: ENV,
        timeoutMs: PACMAN_TIMEOUT_MS,
      });
    } catch (error) {
      throw new ResourceError(`Cannot install package "${name}": ${messageOf(error)}`, {
        cause: error,
      });
    }
    const after = await queryPacman(name);
    if (!after.present) {
      throw new ResourceError(
        `pacman -S ${name} succeeded, but the package is still not installed under that name ` +
          `(${after.reason}); declare the package by its own name`,
      );
    }
    return result;
  },
  // No planRemoval: leaving the declaration, it is forgotten. Packages are never uninstalled
  // (docs/design.md, "Declaration"), not even ones this host installed.
};
