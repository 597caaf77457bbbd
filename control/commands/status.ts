/**
 * `mesh-control status`: the nodes not doing what they were told, and drift that is an alarm.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { type ControlContext, databaseOption } from "./context.ts";
import { boardAction, readOptions } from "./read.ts";

/** Defines `status` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  readOptions(
    parent.command(entry.name)
      .description(entry.summary)
      .option("--json", "print as JSON")
      .addOption(databaseOption()),
  ).action(boardAction(ctx, "status"));
}
