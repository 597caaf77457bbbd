/**
 * `mesh-control status`: the nodes not doing what they were told, and drift that is an alarm.
 * Its options are declared in control/options.ts (`STATUS_OPTIONS`).
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import type { ControlContext } from "./context.ts";
import { boardAction, type ReadOptions } from "./read.ts";

/** Runs `status` with its parsed options (keyed as lib/cli_table.ts `optionKey`). */
export const action: CommandAction<ControlContext, ReadOptions> = (ctx, _args, opts) =>
  boardAction(ctx, "status")(opts);
