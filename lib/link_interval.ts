/**
 * The link's default reconcile interval, without the broker's schemas (./broker.ts re-exports
 * it): mesh-control's silence rule needs it on every status, zod not.
 *
 * @module
 */

/** The link's default reconcile interval (`mesh-host link --every`), in ms: 15 minutes. */
export const DEFAULT_INTERVAL_MS = 15 * 60 * 1000;
