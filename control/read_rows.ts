/**
 * How the fleet reads of `status` and `board` (`readNodeStates` in ./node_state.ts, `readDrift` in
 * ./drift.ts) are cut into rows. Its own module so that either read can use it without loading the
 * other (./drift.ts is also loaded by the renderers, which load no database client).
 *
 * @module
 */

/**
 * Nodes one row of a fleet read carries at most: each node is one line of text, and a row the
 * lines of up to this many nodes, newline-separated. Each row the driver receives costs a message,
 * a buffer and a row object on top of its text (10,100 rows of one text were ~120 ms of a cold
 * `status`'s CPU, 1,000-node rows ~65 ms, measured 2026-12-02); past a few hundred nodes a
 * row, larger rows gain nothing more. A node's line carries its last report's problems, which a
 * report bounds (lib/report_rules.ts, `MAX_PROBLEMS_JSON_LENGTH`) so that a row of this many lines
 * stays within PostgreSQL's 1 GB value and V8's longest string (tests/lib/report_rules_test.ts):
 * raising one means checking the other.
 */
export const NODES_PER_ROW = 1000;
