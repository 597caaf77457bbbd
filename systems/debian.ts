/**
 * Debian. Directories and files are the same everywhere; packages through dpkg and apt;
 * services through whichever manager runs (systemd, or OpenRC on a Debian booted with it),
 * detected once; containers through docker or podman, detected once; actions.
 *
 * @module
 */

import { lazyApplier } from "../host/applier.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["debian"];

/** The debian system (os-release `ID`: debian). */
export const debian: System = {
  name: "debian",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    // Loaded when a declaration first names the type (a file-only apply loads none of them).
    service: lazyApplier(async () => (await import("../host/resources/service.ts")).serviceApplier),
    package: lazyApplier(async () =>
      (await import("../host/resources/package_dpkg.ts")).dpkgPackageApplier
    ),
    container: lazyApplier(async () =>
      (await import("../host/resources/container.ts")).containerApplier
    ),
    action: lazyApplier(async () => (await import("../host/resources/action.ts")).actionApplier),
  },
  refuses: {},
};
