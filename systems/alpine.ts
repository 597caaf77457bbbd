/**
 * Alpine. Packages through apk (absence is empty output, never read from the exit code);
 * services through OpenRC (detected, as on every system, from what runs); containers through
 * docker or podman; actions.
 *
 * @module
 */

import { actionApplier } from "../host/resources/action.ts";
import { containerApplier } from "../host/resources/container.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import { apkPackageApplier } from "../host/resources/package_apk.ts";
import { serviceApplier } from "../host/resources/service.ts";
import type { System } from "./mod.ts";

const IDS = ["alpine"];

/** The alpine system (os-release `ID`: alpine). */
export const alpine: System = {
  name: "alpine",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    service: serviceApplier,
    package: apkPackageApplier,
    container: containerApplier,
    action: actionApplier,
  },
  refuses: {},
};
