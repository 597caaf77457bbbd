/**
 * Arch. Packages through pacman; services through systemd (detected, as on every system,
 * from what runs); containers through docker or podman; actions.
 *
 * @module
 */

import { linuxAppliers } from "../linux_appliers.ts";
import type { System } from "../../host/system.ts";

const IDS = ["arch", "archarm"];

/** The arch system (os-release `ID`: arch, archarm). */
export const arch: System = {
  name: "arch",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: linuxAppliers(async () => (await import("./package_pacman.ts")).pacmanPackageApplier),
  refuses: {},
};
