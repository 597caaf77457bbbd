/**
 * mesh: declarative machine management for a small fleet.
 *
 * The public types and entry points. Each program is its own module (`reconcile/main.ts`
 * compiles to `mesh-reconcile`); this module re-exports what other code may build on.
 *
 * @module
 */

export {
  type Entry,
  type EntryKind,
  formatProblem,
  parseRegistry,
  Registry,
  RegistryError,
  registryJsonSchema,
  type RegistryProblem,
} from "./reconcile/registry.ts";
export { loadRegistry } from "./reconcile/registry_load.ts";
export {
  type Check,
  compare,
  type Direction,
  type Finding,
  type Observation,
} from "./reconcile/compare.ts";
export {
  BOOT_VIEWS,
  type BootView,
  NO_BOOT_SOURCE,
  NO_PROXY,
  observe,
  reconcile,
  type ReconcileOptions,
  type ReconcileResult,
  type RunStatus,
} from "./reconcile/run.ts";
export {
  stampLine,
  summaryLine,
  toJson,
  toResultFile,
  toText,
  toTextfile,
} from "./reconcile/report.ts";
export {
  countFindings,
  DriftSummary,
  type FindingCount,
  MAX_RESULT_BYTES,
  RESULT_FILE_VERSION,
  ResultFile,
  summarise,
} from "./lib/drift.ts";
export { adoptRegistry } from "./reconcile/adopt.ts";
export {
  batchDisable,
  batchEnable,
  type BatchOutcome,
  type BatchResult,
} from "./reconcile/batch.ts";
export { addEntry, RegistryEditError, removeEntry } from "./reconcile/registry_edit.ts";
export type { ObservedTimer } from "./reconcile/observe/timers.ts";
export type { BootObservation } from "./reconcile/observe/boot.ts";
export type { SourceState, SourceStatus } from "./reconcile/observe/source.ts";
export type { ObservedContainer, PublishedPort } from "./reconcile/observe/containers.ts";
export type { Listener } from "./reconcile/observe/sockets.ts";
export type { AddressProbe, ServedAddress } from "./reconcile/observe/proxy.ts";
export { CommandError, type CommandOutput, run } from "./lib/command.ts";
