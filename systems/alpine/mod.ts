/**
 * Alpine. Packages through apk (absence is empty output, never read from the exit code);
 * services through OpenRC (detected, as on every system, from what runs); containers through
 * docker or podman; actions.
 *
 * @module
 */

import { linuxAppliers } from "../linux_appliers.ts";
import type { System } from "../../host/system.ts";

const IDS = ["alpine"];

/** The alpine system (os-release `ID`: alpine). */
export const alpine: System = {
  name: "alpine",
  matches: (release) => release !== undefined && IDS.includes(release.ID ?? ""),
  appliers: linuxAppliers(async () => (await import("./package_apk.ts")).apkPackageApplier),
  refuses: {},
};
