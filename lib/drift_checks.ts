/**
 * The words of a drift summary, without its schema (./drift.ts re-exports them): what
 * mesh-control's board reads on every status, kept free of zod so that reading needs no schema
 * unless a stored summary fails the precompiled check (control/drift.ts).
 *
 * @module
 */

/** The checks a finding can come from (mesh-reconcile's `Check`). */
export const CHECKS = [
  "container",
  "leftover",
  "port",
  "address",
  "redirect",
  "certificate",
  "route",
  "repo",
  "timer",
  "boot",
  "backup",
] as const;

/** The anti-join directions (mesh-reconcile's `Direction`). */
export const DIRECTIONS = ["missing", "rogue"] as const;

/** The statuses of a run that produced a result. */
export const RUN_STATUSES = ["clean", "drift", "unobservable"] as const;
