/**
 * Arch. Packages through pacman; services through systemd (detected, as on every system,
 * from what runs); containers through docker or podman; actions.
 *
 * @module
 */

import { actionApplier } from "../host/resources/action.ts";
import { containerApplier } from "../host/resources/container.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import { pacmanPackageApplier } from "../host/resources/package_pacman.ts";
import { serviceApplier } from "../host/resources/service.ts";
import type { System } from "./mod.ts";

const IDS = ["arch", "archarm"];

/** The arch system (os-release `ID`: arch, archarm). */
export const arch: System = {
  name: "arch",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    service: serviceApplier,
    package: pacmanPackageApplier,
    container: containerApplier,
    action: actionApplier,
  },
  refuses: {},
};
