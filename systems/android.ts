/**
 * Android, the partial host. It implements the shapes that need only a filesystem and a way to
 * run something (directory, file, action) and refuses service, package and container by name,
 * before anything is applied: there is no init to ask, no package manager to query and no
 * container runtime on an ordinary Android device.
 *
 * @module
 */

import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const NO_INIT = "Android has no service manager a host can drive (init needs root)";

/** Android (no /etc/os-release; recognised by /system/build.prop). */
export const android: System = {
  name: "android",
  matches: (release, probe) => release === undefined && probe.androidBuildProp,
  appliers: { directory: directoryApplier, file: fileApplier },
  refuses: {
    service: NO_INIT,
    package: "Android has no package manager a host can drive",
    container: "Android has no container runtime",
  },
};
