/**
 * The names of bindings (lib/binding.ts) with no schema attached, so that a program's help can
 * name them without loading zod.
 *
 * @module
 */

/** Where binding files are written on a node. */
export const BINDINGS_DIR = "/etc/mesh/bindings";
/** The variable that moves {@linkcode BINDINGS_DIR} for a program reading its bindings (tests). */
export const BINDINGS_DIR_VARIABLE = "MESH_BINDINGS_DIR";
/** The provision a builder that is a module requires: where it publishes images. */
export const ARTIFACT_STORE = "artifact-store";
