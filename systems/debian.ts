/**
 * Debian. Directories and files are the same everywhere; packages through dpkg and apt;
 * services through whichever manager runs (systemd, or OpenRC on a Debian booted with it),
 * detected once; containers through docker or podman, detected once; actions.
 *
 * @module
 */

import { actionApplier } from "../host/resources/action.ts";
import { containerApplier } from "../host/resources/container.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import { dpkgPackageApplier } from "../host/resources/package_dpkg.ts";
import { serviceApplier } from "../host/resources/service.ts";
import type { System } from "./mod.ts";

const IDS = ["debian"];

/** The debian system (os-release `ID`: debian). */
export const debian: System = {
  name: "debian",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    service: serviceApplier,
    package: dpkgPackageApplier,
    container: containerApplier,
    action: actionApplier,
  },
  refuses: {},
};
