/**
 * The alpine system. Directories and files are the same everywhere; the service, package,
 * container and action appliers are not built yet (see README), so this host refuses them.
 *
 * @module
 */

import { directoryApplier, fileApplier } from "../host/resources/fs.ts";
import type { System } from "./mod.ts";

const IDS = ["alpine"];

/** The alpine system (os-release `ID`: alpine). */
export const alpine: System = {
  name: "alpine",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: { directory: directoryApplier, file: fileApplier },
  refuses: {},
};
