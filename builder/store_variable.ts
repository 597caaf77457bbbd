/**
 * The variable a builder run by hand reads its artifact store from, in a module of its own so
 * that the builder's help names it without loading the build.
 *
 * @module
 */

/** The variable a builder run by hand reads its artifact store from (a binding wins). */
export const STORE_VARIABLE = "MESH_ARTIFACT_STORE";
