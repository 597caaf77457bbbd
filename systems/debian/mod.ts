/**
 * Debian. Directories and files are the same everywhere; packages through dpkg and apt;
 * services through whichever manager runs (systemd, or OpenRC on a Debian booted with it),
 * detected once; containers through docker or podman, detected once; actions.
 *
 * @module
 */

import { linuxAppliers } from "../linux_appliers.ts";
import type { System } from "../../host/system.ts";

const IDS = ["debian"];

/** The debian system (os-release `ID`: debian). */
export const debian: System = {
  name: "debian",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: linuxAppliers(async () => (await import("./package_dpkg.ts")).dpkgPackageApplier),
  refuses: {},
};
