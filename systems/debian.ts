/**
 * The debian system. Directories and files are the same everywhere; the service, package,
 * container and action appliers are not built yet (see README), so this host refuses them.
 *
 * @module
 */

import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["debian"];

/** The debian system (os-release `ID`: debian). */
export const debian: System = {
  name: "debian",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: { directory: directoryApplier, file: fileApplier },
  refuses: {},
};
