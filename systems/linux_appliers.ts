/**
 * The appliers every full Linux system (debian, arch, alpine) shares: directories and files,
 * loaded with the host; services, containers and actions, each loaded when a declaration first
 * names its type (a file-only apply loads none of them). The package applier is each system's own.
 *
 * @module
 */

import { type Applier, type Appliers, lazyApplier } from "../host/applier.ts";
import type { Resource } from "../lib/declaration.ts";
import { directoryApplier, fileApplier } from "../host/resources/fs.ts";

/** A package resource, as a package applier takes it. */
type PackageResource = Extract<Resource, { type: "package" }>;

/**
 * The appliers of a full Linux system whose packages `loadPackages` applies (called when a
 * declaration first names a package; a dynamic import of a static specifier, so a bundled or
 * compiled host still carries the module).
 *
 * @param loadPackages loads the system's package applier (dpkg, pacman, apk).
 * @returns one applier per resource type.
 */
export function linuxAppliers(
  loadPackages: () => Promise<Applier<PackageResource, unknown>>,
): Appliers {
  return {
    directory: directoryApplier,
    file: fileApplier,
    service: lazyApplier(async () => (await import("../host/resources/service.ts")).serviceApplier),
    package: lazyApplier(loadPackages),
    container: lazyApplier(async () =>
      (await import("../host/resources/container.ts")).containerApplier
    ),
    action: lazyApplier(async () => (await import("../host/resources/action.ts")).actionApplier),
  };
}
