/**
 * The systems hosts are built for: the one list of their names, which the host's system contract
 * (host/system.ts), a bundle's `system` (host/bundle.ts) and the systems a node is enrolled as
 * (control/node_kind.ts, and the inventory's check constraint, control/migrations/) name. Each
 * system is a folder systems/<system>/ (its mod.ts and its entry point main.ts);
 * tests/docs/tables_test.ts holds docs/mesh-host.md's table to the systems.
 *
 * @module
 */

/** Every system a host exists for, in the order `host/main.ts` names them. */
export const SYSTEM_NAMES = ["arch", "alpine", "android", "debian"] as const;

/** A system hosts are built for. */
export type SystemName = typeof SYSTEM_NAMES[number];
