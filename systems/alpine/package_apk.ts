/**
 * `package` on Alpine: `apk info -e` asks the installed database, `apk add` installs.
 *
 * Present only (docs/design.md, "Declaration"): an installed package is left as it is (never
 * upgraded); a missing one is installed with `apk add NAME` (which also puts it in
 * /etc/apk/world); a package that leaves the declaration is `forgotten`, never deleted.
 * `created` is recorded truthfully (this host installed it) and never licenses a removal.
 *
 * Observing is one `apk info -e NAME`, read by what it PRINTS, never by how it exits: for each
 * installed package it prints that package's name, and for one that is not installed it prints
 * NOTHING (apk-info(8): "For each installed package, print it's name"). Its exit status does not
 * say presence. The apk that design rule 2 describes (docs/design.md) exits 0 either way, so reading the
 * exit code the way pacman's is read reports every package installed. apk-info(8) of apk-tools
 * today says the status is the number of given packages not installed, which agrees with the
 * output only while apk reads the argument: one it cannot parse as a dependency is skipped
 * silently, printing nothing and exiting 0 (src/app_info.c, `info_exists`). So:
 *
 * - stdout "NAME": present.
 * - stdout names another package: absent (`apk info -e` answers for a name with the installed
 *   package that provides it, and prints the provider's name).
 * - stdout and stderr empty, exit 0 or 1: absent.
 * - anything else (an "ERROR: ..." on stderr, another exit code, a signal): a failure naming it.
 *
 * Installing: `apk add NAME`, stdin closed. apk prints "ERROR: unable to select packages:" on
 * stderr but the lines naming the package ("  NAME (no such package):", "required by: ...") on
 * STDOUT (apk-tools src/commit.c: `apk_error` writes to stderr, the details are `printf`), so a
 * failure's message carries both, or it would not name what failed. After installing, apk is
 * asked again.
 *
 * The plan ({@linkcode ApkPlan}) asks `apk info -e` only: an absent package is planned as
 * `apk add` without checking that a repository has it. A dry run stops at the plan.
 *
 * @module
 */

import type { z } from "zod";
import { CommandError, run } from "../../lib/command.ts";
import { type Applier, type Plan, ResourceError } from "../../host/applier.ts";
import type { Package } from "../../resources/package/schema.ts";

type PackageResource = z.output<typeof Package>;

/** What apk says about one package. */
export interface ApkObservation {
  present: boolean;
  /** What apk printed, and what that means. */
  reason: string;
}

const ENV = { LC_ALL: "C" };
const APK_TIMEOUT_MS = 30 * 60_000;

/**
 * Asks apk's installed database about `name`, by what `apk info -e` prints.
 *
 * @throws {ResourceError} when apk fails or says something this host does not know.
 */
export async function queryApk(name: string): Promise<ApkObservation> {
  const argv = ["apk", "info", "-e", name];
  const out = await run(argv, { allowFailure: true, env: ENV });
  const printed = out.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const quiet = out.stderr.trim() === "";
  if (out.signal === null && quiet && printed.length === 1) {
    if (printed[0] === name) {
      return { present: true, reason: `apk info -e printed "${name}": installed` };
    }
    return {
      present: false,
      reason: `apk info -e printed "${printed[0]}": ${
        printed[0]
      } provides ${name}, and no package named ${name} is installed`,
    };
  }
  if (printed.length === 0 && quiet && (out.code === 0 || out.code === 1)) {
    return {
      present: false,
      reason: `apk info -e printed nothing (exit ${out.code}): not installed`,
    };
  }
  throw new ResourceError(
    `Cannot read apk's database for package "${name}": ${
      new CommandError(argv, { ...out, stderr: `${out.stderr.trimEnd()}\n${out.stdout}` }).message
    }`,
  );
}

/** What the apk applier will do to one package, decided from `apk info -e` (read-only). */
export type ApkPlan =
  & Plan
  & (
    | { kind: "nothing" }
    | { kind: "install"; package: string }
  );

/** The `package` applier for apk (Alpine). */
export const apkPackageApplier: Applier<PackageResource, ApkObservation, ApkPlan> = {
  observe(resource) {
    return queryApk(resource.package);
  },
  plan(resource, observed, context): Promise<ApkPlan> {
    const name = resource.package;
    const known = context.store.find(resource.id, "package", name);
    if (observed.present) {
      return Promise.resolve({
        kind: "nothing",
        steps: [],
        result: { change: "unchanged", created: known?.created ?? false },
      });
    }
    return Promise.resolve({
      kind: "install",
      package: name,
      steps: [`apk add ${name}`],
      result: {
        change: "created",
        created: true,
        // apk's repository indexes are not asked: whether one has it is known when apk adds it.
        detail: `install package ${name} (apk add; ${observed.reason}; whether a repository ` +
          `has it is not checked before)`,
      },
    });
  },
  async act(resource, plan, context) {
    const { detail: _, ...result } = plan.result;
    if (plan.kind === "nothing") return result;
    const name = plan.package;
    await context.store.intend({ id: resource.id, type: "package", subject: name });
    const argv = ["apk", "add", name];
    const out = await run(argv, { allowFailure: true, env: ENV, timeoutMs: APK_TIMEOUT_MS });
    if (out.code !== 0 || out.signal !== null) {
      // The package's name is in the details apk prints on stdout, after its stderr ERROR line.
      throw new ResourceError(
        `Cannot install package "${name}": ${
          new CommandError(argv, { ...out, stderr: `${out.stderr.trimEnd()}\n${out.stdout}` })
            .message
        }`,
      );
    }
    const after = await queryApk(name);
    if (!after.present) {
      throw new ResourceError(
        `apk add ${name} succeeded, but the package is still not installed under that name ` +
          `(${after.reason}); declare the package by its own name`,
      );
    }
    return result;
  },
  // No planRemoval: leaving the declaration, it is forgotten. Packages are never uninstalled
  // (docs/design.md, "Declaration"), not even ones this host installed.
};
