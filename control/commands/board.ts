/**
 * `mesh-control board`: every node, what it was told and what it last said.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { type ControlContext, databaseOption } from "./context.ts";
import { boardAction, readOptions } from "./read.ts";

/** Defines `board` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  readOptions(
    parent.command(entry.name)
      .description(entry.summary)
      .option("--json", "print as JSON")
      .option(
        "--html <file>",
        "also write the board as one self-contained HTML page (atomically) to this file",
      )
      .addOption(databaseOption()),
  ).action(boardAction(ctx, "board"));
}
