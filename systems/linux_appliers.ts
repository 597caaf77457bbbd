/**
 * The appliers every full Linux system (debian, arch, alpine) has: every generic applier
 * (resources/appliers.ts: directories and files, loaded with the host; services, containers and
 * actions, each loaded when a declaration first names its type), and the system's own package
 * applier.
 *
 * @module
 */

import { type Applier, type Appliers, lazyApplier } from "../host/applier.ts";
import type { Resource } from "../lib/declaration.ts";
import { GENERIC_APPLIERS } from "../resources/appliers.ts";

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
  return { ...GENERIC_APPLIERS, package: lazyApplier(loadPackages) };
}
