/**
 * The link's default reconcile interval and its bounds, and where it reads mesh-reconcile's
 * result by default, without the broker's or the result's schemas (./broker.ts and ./drift.ts
 * re-export them): mesh-control's silence rule needs the interval on every status, and the host's
 * command table (`mesh-host link`'s options) all of them, zod not.
 *
 * @module
 */

/** The link's default reconcile interval (`mesh-host link --every`), in ms: 15 minutes. */
export const DEFAULT_INTERVAL_MS = 15 * 60 * 1000;

/** The longest reconcile interval a report may state, in ms: 7 days. */
export const MAX_INTERVAL_MS = 7 * 24 * 60 * 60 * 1000;

/** Where the shipped reconcile units write their result (and the link reads it by default). */
export const DEFAULT_RESULT_PATH = "/var/lib/mesh/reconcile/result.json";
