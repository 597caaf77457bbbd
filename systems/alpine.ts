/**
 * Alpine. Packages through apk (absence is empty output, never read from the exit code);
 * services through OpenRC (detected, as on every system, from what runs); containers through
 * docker or podman; actions.
 *
 * @module
 */

import { lazyApplier } from "../host/applier.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["alpine"];

/** The alpine system (os-release `ID`: alpine). */
export const alpine: System = {
  name: "alpine",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    // Loaded when a declaration first names the type (a file-only apply loads none of them).
    service: lazyApplier(async () => (await import("../host/resources/service.ts")).serviceApplier),
    package: lazyApplier(async () =>
      (await import("../host/resources/package_apk.ts")).apkPackageApplier
    ),
    container: lazyApplier(async () =>
      (await import("../host/resources/container.ts")).containerApplier
    ),
    action: lazyApplier(async () => (await import("../host/resources/action.ts")).actionApplier),
  },
  refuses: {},
};
