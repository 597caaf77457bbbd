/**
 * The generic appliers, one per resource type that is applied the same way on every system that
 * has it (resources/<type>/applier.ts): directories and files, loaded with the host; services,
 * containers and actions, each loaded when a declaration first names its type (a dynamic import
 * of a static specifier, so a bundled or compiled host still carries the module, and a file-only
 * apply loads none of them). A type with no generic applier here (`package`) is applied by each
 * system's own (systems/<system>/). A system takes what it has from this table
 * (systems/linux_appliers.ts, systems/android/mod.ts); tests/docs/resources_test.ts holds each
 * entry to its folder.
 *
 * @module
 */

import { type Applier, lazyApplier } from "../host/applier.ts";
import type { Resource } from "../lib/declaration.ts";
import { directoryApplier } from "./directory/applier.ts";
import { fileApplier } from "./file/applier.ts";

/** The generic applier of each type that has one, by type. */
export const GENERIC_APPLIERS = {
  directory: directoryApplier,
  file: fileApplier,
  service: lazyApplier(async () => (await import("./service/applier.ts")).serviceApplier),
  container: lazyApplier(async () => (await import("./container/applier.ts")).containerApplier),
  action: lazyApplier(async () => (await import("./action/applier.ts")).actionApplier),
} as const satisfies {
  [T in Resource["type"]]?: Applier<Extract<Resource, { type: T }>, unknown>;
};

/** The types that have a generic applier. */
export type GenericType = keyof typeof GENERIC_APPLIERS;
