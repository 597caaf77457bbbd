/**
 * `mesh-control migrate`: create the inventory database if missing and apply pending migrations.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { connect, type Connections, type ControlContext, need } from "./context.ts";

/** Runs `migrate` (its options: control/options.ts). */
export const action: CommandAction<ControlContext, Connections> = async (ctx, _args, opts) => {
  const { out, err } = ctx;
  const { database } = connect(ctx);
  const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
  const { createDatabaseIfMissing, migrate } = await import("../db.ts");
  const created = await createDatabaseIfMissing(url);
  const sql = await database(opts, false);
  const applied = await migrate(sql);
  const { installShipped } = await import("../shipped.ts");
  const shipped = await installShipped(sql);
  if (created) out(`created database ${new URL(url).pathname.slice(1)}\n`);
  out(
    applied.length === 0
      ? "inventory is current: no migration pending\n"
      : `applied ${applied.length} migration${applied.length === 1 ? "" : "s"}: ${
        applied.join(", ")
      }\n`,
  );
  for (const m of shipped) {
    if ("skipped" in m) err(`mesh-control: shipped module ${m.name}: ${m.skipped}\n`);
    else if (m.change !== "unchanged") {
      out(`shipped module ${m.name} version ${m.version} (${m.change})\n`);
    }
  }
};
