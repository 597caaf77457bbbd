/**
 * The names a node is enrolled with: its system and its kind. Below ./inventory.ts,
 * ./node_state.ts and ./state.ts, which all use them (./inventory.ts and ./state.ts re-export
 * them); it imports only lib/system_names.ts, so naming them (`mesh-control`'s help) loads no
 * database client.
 *
 * @module
 */

/** The systems a node can be enrolled as (one host build each; lib/system_names.ts). */
export { SYSTEM_NAMES as SYSTEMS, type SystemName } from "../lib/system_names.ts";

/** What kind of machine a node is. */
export const NODE_KINDS = ["server", "episodic"] as const;
/**
 * - `server`: expected to report at every interval; silence is an alarm.
 * - `episodic`: a laptop, a phone: away for hours or days by design; away is no alarm.
 */
export type NodeKind = typeof NODE_KINDS[number];
