/**
 * `mesh-control board`: every node, what it was told and what it last said. Its options are
 * declared in control/options.ts (`BOARD_OPTIONS`).
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import type { ControlContext } from "./context.ts";
import { boardAction, type ReadOptions } from "./read.ts";

/** Runs `board` with its parsed options (keyed as lib/cli_table.ts `optionKey`). */
export const action: CommandAction<ControlContext, ReadOptions> = (ctx, _args, opts) =>
  boardAction(ctx, "board")(opts);
