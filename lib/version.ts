/**
 * The one version of mesh: every program's `--version` (mesh-host, mesh-control, mesh-builder,
 * mesh-reconcile) prints it, the host records it as `known-good` after a clean apply, and the
 * host's reports carry it (`hostVersion`). Released programs are built from one commit, so they
 * share it.
 *
 * @module
 */

/** The version of this build of mesh (semver). */
export const VERSION = "0.1.0";

/** The `--version` flag's description, the same in every program. */
export const VERSION_FLAG_HELP =
  "print the version (the one every mesh program, known-good and reports carry)";
