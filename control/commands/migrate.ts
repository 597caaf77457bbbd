/**
 * `mesh-control migrate`: create the inventory database if missing and apply pending migrations.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { connect, type Connections, type ControlContext, databaseOption, need } from "./context.ts";

/** Defines `migrate` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  const { out, err } = ctx;
  const { database } = connect(ctx);
  parent.command(entry.name)
    .description(entry.summary)
    .addOption(databaseOption())
    .action(async (opts: Connections) => {
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
    });
}
