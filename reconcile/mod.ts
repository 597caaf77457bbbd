/**
 * mesh-reconcile as a library: registry, observers, comparison, rendering.
 *
 * @module
 */

export * from "./registry.ts";
export * from "./registry_load.ts";
export * from "./compare.ts";
export * from "./run.ts";
export * from "./report.ts";
export * from "./adopt.ts";
export * from "./observe/mod.ts";
export * from "./compare_timers.ts";
export * from "./compare_boot.ts";
export * from "./registry_edit.ts";
export * from "./batch.ts";
