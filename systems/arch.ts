/**
 * The arch system. Directories and files are the same everywhere; the service, package,
 * container and action appliers are not built yet (see README), so this host refuses them.
 *
 * @module
 */

import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["arch", "archarm"];

/** The arch system (os-release `ID`: arch, archarm). */
export const arch: System = {
  name: "arch",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: { directory: directoryApplier, file: fileApplier },
  refuses: {},
};
