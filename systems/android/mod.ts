/**
 * Android, the partial host. It implements the shapes that need only a filesystem and a way to
 * run something (directory, file, action) and refuses service, package and container by name,
 * before anything is applied: there is no init to ask, no package manager to query and no
 * container runtime on an ordinary Android device.
 *
 * @module
 */

import { actionApplier } from "../../host/resources/action.ts";
import { directoryApplier, fileApplier } from "../../host/resources/fs.ts";
import { refusedAppliers } from "../../host/applier.ts";
import type { System } from "../../host/system.ts";

/** What Android refuses, and why. */
const REFUSES = {
  service: "Android has no service manager a host can drive (init needs root)",
  package: "Android has no package manager a host can drive",
  container: "Android has no container runtime",
};

/** Android (no /etc/os-release; recognised by /system/build.prop). */
export const android: System = {
  name: "android",
  matches: (release, probe) => release === undefined && probe.androidBuildProp,
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    action: actionApplier,
    // Refused before anything is applied (`refuses`); these only make reaching them loud.
    ...refusedAppliers("android", REFUSES),
  },
  refuses: REFUSES,
};
