/**
 * The floor of `mesh-control status` with its database client, run by bench/control_bench.ts as a
 * row of its own: a cold Deno process that loads postgres.js (control/db.ts), connects as
 * `status` does (two connections, no type query, the migrations check sent with the reads) and
 * receives both fleet statements and the clock as raw bytes, decoding, judging and rendering
 * nothing; then closes as `status` does. What `status` adds to this is its own work on the rows.
 *
 * Run: `MESH_DATABASE_URL=URL deno run -A bench/status_floor.ts STATES.sql DRIFT.sql`, each file
 * one statement (readNodeStates' and readDrift's, as the bench captures them). Prints nothing;
 * exits 0 once everything arrived.
 *
 * @module
 */

import { connectDatabaseWith } from "../control/db.ts";

const [statesFile, driftFile] = Deno.args;
if (statesFile === undefined || driftFile === undefined) {
  throw new Error("usage: status_floor.ts STATES.sql DRIFT.sql (with MESH_DATABASE_URL set)");
}
const [states, drift] = await Promise.all([
  Deno.readTextFile(statesFile),
  Deno.readTextFile(driftFile),
]);
const [sql] = await connectDatabaseWith(
  Deno.env.get("MESH_DATABASE_URL") ?? "",
  { max: 2, fetchTypes: false },
  (sql) =>
    Promise.all([
      sql.unsafe(states).raw(),
      sql.unsafe(drift).raw(),
      sql`select clock_timestamp()`.raw(),
    ]),
);
await sql.end({ timeout: 0 });
