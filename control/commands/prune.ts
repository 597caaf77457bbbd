/**
 * `mesh-control prune`: delete old reports, except each node's latest.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { durationArgument } from "../../lib/duration.ts";
import {
  connect,
  type Connections,
  type ControlContext,
  databaseOption,
  refuse,
} from "./context.ts";

/** Defines `prune` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  const { out } = ctx;
  const { database } = connect(ctx);
  parent.command(entry.name)
    .description(entry.summary)
    .addOption(
      new Option("--keep <duration>", "keep reports this recent (>= 1h; e.g. 14d)")
        .makeOptionMandatory()
        .argParser(
          durationArgument("--keep", { unit: "d", minMs: 3600_000, min: "1h", refuse }),
        ),
    )
    .option("--dry-run", "count what would be deleted, delete nothing")
    .addOption(databaseOption())
    .action(async (opts: Connections & { keep: number; dryRun?: boolean }) => {
      const sql = await database(opts);
      const { pruneReports } = await import("../retention.ts");
      const pruned = await pruneReports(sql, opts.keep, { dryRun: opts.dryRun });
      out(
        `${opts.dryRun ? "would delete" : "deleted"} ${pruned.deleted} report${
          pruned.deleted === 1 ? "" : "s"
        } received before ${pruned.before} (each node's latest is kept); ${pruned.kept} ${
          opts.dryRun ? "would be " : ""
        }left\n`,
      );
    });
}
