/**
 * Arch. Packages through pacman; services through systemd (detected, as on every system,
 * from what runs); containers through docker or podman; actions.
 *
 * @module
 */

import { lazyApplier } from "../host/applier.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["arch", "archarm"];

/** The arch system (os-release `ID`: arch, archarm). */
export const arch: System = {
  name: "arch",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: {
    directory: directoryApplier,
    file: fileApplier,
    // Loaded when a declaration first names the type (a file-only apply loads none of them).
    service: lazyApplier(async () => (await import("../host/resources/service.ts")).serviceApplier),
    package: lazyApplier(async () =>
      (await import("../host/resources/package_pacman.ts")).pacmanPackageApplier
    ),
    container: lazyApplier(async () =>
      (await import("../host/resources/container.ts")).containerApplier
    ),
    action: lazyApplier(async () => (await import("../host/resources/action.ts")).actionApplier),
  },
  refuses: {},
};
