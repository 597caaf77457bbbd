/**
 * The version of this host build: the one mesh version (lib/version.ts); `known-good` records
 * it after a clean apply and reports carry it.
 *
 * @module
 */

export { VERSION } from "../lib/version.ts";
