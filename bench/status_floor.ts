/**
 * The floor of `mesh-control status` (and `board --json`) with its database client, run by
 * bench/control_bench.ts as a row of its own: a cold Deno process that loads postgres.js
 * (control/db.ts), connects as `status` does (no type query, the migrations check sent with the
 * read) and receives the fleet statement `status` sends as raw bytes, decoding and rendering
 * nothing; then closes as `status` does. What `status` adds to this is its own work on the rows.
 *
 * Run: `MESH_DATABASE_URL=URL deno run -A bench/status_floor.ts FLEET.sql`, the file one
 * statement (readFleet's, as the bench captures it). Prints nothing; exits 0 once everything
 * arrived.
 *
 * @module
 */

import { connectDatabaseWith } from "../control/db.ts";

const [fleetFile] = Deno.args;
if (fleetFile === undefined) {
  throw new Error("usage: status_floor.ts FLEET.sql (with MESH_DATABASE_URL set)");
}
const fleet = await Deno.readTextFile(fleetFile);
const [sql] = await connectDatabaseWith(
  Deno.env.get("MESH_DATABASE_URL") ?? "",
  { max: 2, fetchTypes: false },
  (sql) => sql.unsafe(fleet).raw(),
);
await sql.end({ timeout: 0 });
