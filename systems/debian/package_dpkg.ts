/**
 * `package` on Debian: dpkg's database is asked, apt installs.
 *
 * Present only (docs/design.md, "Declaration"): a package that is installed is left as it is (never
 * upgraded); one that is not is installed with `apt-get install -y --no-install-recommends`,
 * non-interactively; a package that leaves the declaration is `forgotten`, never uninstalled,
 * whoever installed it. `created` is still recorded truthfully (this host installed it), so
 * `mesh-host owned` can say so; it never licenses a removal.
 *
 * Observing is one `dpkg-query -W -f '${binary:Package}\t${Status}\n' NAME` per package, and
 * every state of dpkg(1) ("PACKAGE STATES", "PACKAGE FLAGS") is mapped by name:
 *
 * - `installed`: present. `triggers-pending` and `triggers-awaited` are present too: the
 *   package is unpacked and configured, only a trigger of it (or of another) has not run.
 * - `not-installed` (printed for a package dpkg knows from its available file), and exit 1 with
 *   "no packages found matching NAME": absent.
 * - `config-files`: absent (removed; only its configuration files remain).
 * - `half-installed`, `unpacked`, `half-configured`, and the `reinstreq` flag: absent AND
 *   broken (a dpkg run was interrupted). Installing it again is the repair apt makes (it
 *   unpacks or configures what is missing); it counts as `updated`, and its failure says which
 *   state the package was left in.
 * - Anything else (an unknown state or flag, another exit code, a signal): a failure naming
 *   what dpkg-query said, never a guess either way.
 *
 * Installing: apt reads a name it cannot find as a regular expression when it holds a `.`
 * (`apt-get install hell.` installs every package whose name matches, observed with apt 2.6.1),
 * so the exact name is looked up first with `apt-cache pkgnames NAME` (a prefix listing, never a
 * pattern). When apt's lists do not have it, `apt-get update` runs once per apply and the lookup
 * is retried once; still missing, the resource fails with "Unable to locate package NAME". After
 * a successful install dpkg is asked again: a name apt resolved to something else (a virtual
 * package) fails instead of being reported as created on every apply.
 *
 * The plan ({@linkcode DpkgPlan}) asks dpkg and apt's lists as they are (`apt-cache pkgnames`),
 * never refreshing them: a name the lists lack is planned as `apt-get update`, then the install
 * (or the failure above). A dry run stops there: it says `created` for such a package, naming
 * it unknown in its detail (apt's lists may be stale, and refreshing them would change the
 * machine), and runs neither apt-get update nor apt-get install.
 *
 * Every command runs with `LC_ALL=C`: the messages read here are apt's and dpkg's untranslated
 * ones.
 *
 * @module
 */

import type { z } from "zod";
import { messageOf } from "../../lib/atomic.ts";
import { CommandError, formatArgv, run } from "../../lib/command.ts";
import { type Applier, type ApplyContext, type Plan, ResourceError } from "../../host/applier.ts";
import type { Package } from "../../resources/package/schema.ts";

type PackageResource = z.output<typeof Package>;

/** What dpkg says about one package. */
export interface DpkgObservation {
  present: boolean;
  /** Left half-way by an interrupted dpkg run (only when not present). */
  broken: boolean;
  /** What dpkg-query said, and what that means. */
  reason: string;
}

/** The environment of every command: untranslated messages, and apt never asks anything. */
const ENV = { LC_ALL: "C", DEBIAN_FRONTEND: "noninteractive" };
/** Waits for dpkg's lock (held by another apt, e.g. unattended-upgrades) instead of failing. */
const LOCK_WAIT = ["-o", "DPkg::Lock::Timeout=300"];
/** How long one apt-get may run. */
const APT_TIMEOUT_MS = 30 * 60_000;
/** The per-apply cache key: `apt-get update` has run in this apply. */
const UPDATED = "package-dpkg:apt-get update ran";

/** dpkg's package states (dpkg(1), "PACKAGE STATES"), each mapped explicitly. */
const STATES: Record<string, { present: boolean; broken: boolean; means: string }> = {
  "installed": { present: true, broken: false, means: "installed" },
  "triggers-pending": {
    present: true,
    broken: false,
    means: "installed and configured; a trigger it was sent has not run yet",
  },
  "triggers-awaited": {
    present: true,
    broken: false,
    means: "installed and configured; it awaits a trigger of another package",
  },
  "not-installed": { present: false, broken: false, means: "not installed" },
  "config-files": {
    present: false,
    broken: false,
    means: "removed; only its configuration files remain",
  },
  "half-installed": {
    present: false,
    broken: true,
    means: "broken: its installation or removal was interrupted",
  },
  "unpacked": {
    present: false,
    broken: true,
    means: "broken: unpacked but never configured (an interrupted install)",
  },
  "half-configured": {
    present: false,
    broken: true,
    means: "broken: its configuration was interrupted",
  },
};
/** dpkg's selection states (dpkg(1), "PACKAGE SELECTION STATES"). */
const WANTS = new Set(["unknown", "install", "hold", "deinstall", "purge"]);

/**
 * Asks dpkg about `name`.
 *
 * @throws {ResourceError} when dpkg-query fails, or says something this host does not know.
 */
export async function queryDpkg(name: string): Promise<DpkgObservation> {
  const argv = ["dpkg-query", "-W", "-f", "${binary:Package}\\t${Status}\\n", name];
  const out = await run(argv, { allowFailure: true, env: ENV });
  const said = (text: string) => `dpkg-query says "${text.trim()}"`;
  if (
    out.code === 1 && out.stdout.trim() === "" &&
    out.stderr.includes(`no packages found matching ${name}`)
  ) {
    return {
      present: false,
      broken: false,
      reason: `${said(out.stderr)}: dpkg does not know it (not installed)`,
    };
  }
  const lines = out.stdout.split("\n").filter((l) => l.trim() !== "");
  if (out.code !== 0 || lines.length === 0) {
    throw new ResourceError(
      `Cannot read dpkg's status of package "${name}": ${
        out.code === 0
          ? `${formatArgv(argv)} printed nothing`
          : new CommandError(argv, { ...out, stderr: out.stderr || out.stdout }).message
      }`,
    );
  }
  // Several lines: one per architecture of a multi-arch package (libc6:amd64, libc6:i386).
  const seen = lines.map((line) => {
    const [instance = "", status = ""] = line.split("\t");
    const [want = "", flag = "", state = ""] = status.trim().split(/\s+/);
    const mapped = STATES[state];
    if (!WANTS.has(want) || (flag !== "ok" && flag !== "reinstreq") || mapped === undefined) {
      throw new ResourceError(
        `Cannot read dpkg's status of package "${name}": ${
          said(line)
        }, a status this host does not know`,
      );
    }
    if (flag === "reinstreq") {
      return {
        present: false,
        broken: true,
        text: `${said(`${instance} ${status}`)}: broken: dpkg requires it to be reinstalled`,
      };
    }
    return { ...mapped, text: `${said(`${instance} ${status}`)}: ${mapped.means}` };
  });
  const present = seen.find((s) => s.present);
  if (present) return { present: true, broken: false, reason: present.text };
  return {
    present: false,
    broken: seen.some((s) => s.broken),
    reason: seen.map((s) => s.text).join("; "),
  };
}

/** Whether apt's lists have a package of exactly `name` (a prefix listing, never a pattern). */
async function aptKnows(name: string): Promise<boolean> {
  const out = await run(["apt-cache", "pkgnames", name], { env: ENV });
  return out.stdout.split("\n").some((line) => line.trim() === name);
}

/**
 * Runs `apt-get update` unless it ran already in this apply.
 *
 * @returns what it said on stderr (warnings), or undefined when it had run already.
 */
async function updateOnce(name: string, context: ApplyContext): Promise<string | undefined> {
  if (context.cache.get(UPDATED) === true) return undefined;
  context.cache.set(UPDATED, true);
  try {
    const out = await run(["apt-get", "update", ...LOCK_WAIT], {
      env: ENV,
      timeoutMs: APT_TIMEOUT_MS,
    });
    return out.stderr.trim();
  } catch (error) {
    throw new ResourceError(
      `Cannot install package "${name}": apt's lists do not have it, and apt-get update failed: ${
        messageOf(error)
      }`,
      { cause: error },
    );
  }
}

/**
 * What the dpkg applier will do to one package, decided from dpkg's answer and apt's lists as
 * they are (read-only: a plan never refreshes them).
 */
export type DpkgPlan =
  & Plan
  & (
    | { kind: "nothing" }
    | {
      kind: "install";
      package: string;
      /** Left half-way by an interrupted dpkg run: installing it again repairs it. */
      repair: boolean;
      /**
       * apt's lists have no package of exactly that name now: `apt-get update` first (once per
       * apply), then the install, or a failure when the lists still lack it.
       */
      refresh: boolean;
      /** What dpkg said about it. */
      before: string;
    }
  );

/** The `package` applier for dpkg and apt (Debian and its derivatives). */
export const dpkgPackageApplier: Applier<PackageResource, DpkgObservation, DpkgPlan> = {
  observe(resource) {
    return queryDpkg(resource.package);
  },
  async plan(resource, observed, context): Promise<DpkgPlan> {
    const name = resource.package;
    const known = context.store.find(resource.id, "package", name);
    if (observed.present) {
      return {
        kind: "nothing",
        steps: [],
        result: { change: "unchanged", created: known?.created ?? false },
      };
    }
    // A broken package is repaired, not created: whoever began installing it, it was there.
    const result = observed.broken
      ? { change: "updated" as const, created: known?.created ?? false }
      : { change: "created" as const, created: true };
    // Read-only: the package lists as they are (apt-get update is a step of the plan).
    const knows = observed.broken || await aptKnows(name);
    return {
      kind: "install",
      package: name,
      repair: observed.broken,
      refresh: !knows,
      before: observed.reason,
      steps: [
        ...(knows ? [] : [`apt-get update (apt's lists have no package ${name})`]),
        `apt-get install ${name}`,
      ],
      result: {
        ...result,
        detail: observed.broken
          ? `repair package ${name} (${observed.reason})`
          : knows
          ? `install package ${name} (apt-get install; ${observed.reason})`
          : `install package ${name}: unknown package, apt's package lists have no package of ` +
            `exactly that name (apt-cache pkgnames); the apply would run apt-get update once ` +
            `and fail if it is still unknown`,
      },
    };
  },
  async act(resource, plan, context) {
    const { detail: _, ...result } = plan.result;
    if (plan.kind === "nothing") return result;
    const name = plan.package;
    if (!plan.repair) {
      await context.store.intend({ id: resource.id, type: "package", subject: name });
    }
    if (plan.refresh) {
      const warnings = await updateOnce(name, context);
      if (!(await aptKnows(name))) {
        throw new ResourceError(
          `Unable to locate package ${name}: apt's package lists have no package of exactly ` +
            `that name (apt-cache pkgnames ${name}, ${
              warnings === undefined
                ? "apt-get update already ran during this apply"
                : `after apt-get update${warnings ? `, which said: ${warnings}` : ""}`
            }); nothing was installed`,
        );
      }
    }
    const argv = ["apt-get", "install", "-y", "--no-install-recommends", ...LOCK_WAIT, name];
    try {
      await run(argv, { env: ENV, timeoutMs: APT_TIMEOUT_MS });
    } catch (error) {
      throw new ResourceError(
        `Cannot install package "${name}" (${plan.before}): ${messageOf(error)}`,
        { cause: error },
      );
    }
    const after = await queryDpkg(name);
    if (!after.present) {
      throw new ResourceError(
        `apt-get install ${name} succeeded, but the package is still not installed under that ` +
          `name (${after.reason}): a virtual package or another name apt resolved; declare the ` +
          `package that provides it`,
      );
    }
    return result;
  },
  // No planRemoval: leaving the declaration, it is forgotten. Packages are never uninstalled
  // (docs/design.md, "Declaration"): not even ones this host installed, and not in a dry run
  // either.
};
