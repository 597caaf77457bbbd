/**
 * Android, the partial host. It implements the shapes that need only a filesystem and a way to
 * run something (directory, file, action) and refuses service, package and container by name,
 * before anything is applied: there is no init to ask, no package manager to query and no
 * container runtime on an ordinary Android device. A type it neither lists nor refuses (one added
 * since) is refused as not built yet (host/apply.ts, `refusal`).
 *
 * @module
 */

import { GENERIC_APPLIERS } from "../../resources/appliers.ts";
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
    directory: GENERIC_APPLIERS.directory,
    file: GENERIC_APPLIERS.file,
    action: GENERIC_APPLIERS.action,
    // Refused before anything is applied (`refuses`); these only make reaching them loud.
    ...refusedAppliers("android", REFUSES),
  },
  refuses: REFUSES,
};
