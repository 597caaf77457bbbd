/**
 * Runs one `mesh-reconcile` command through commander: the side of the command line that
 * reconcile/main.ts loads only when a command runs (the program's help and `--version` never
 * load it).
 *
 * @module
 */

import type { CommandEntry, ProgramTable } from "../../lib/cli_table.ts";
import { runTable } from "../../lib/cli.ts";
import { messageOf } from "../../lib/atomic.ts";
import { type ReconcileContext, reconcileContext } from "./context.ts";

/** Exit code of a refusal or of what could not be observed (reconcile/main.ts EXIT_UNOBSERVABLE). */
const REFUSED = 2;

/**
 * Runs `args` with `entry` (every command when not given) of `table` (reconcile/main.ts's,
 * passed in: the main module is still being evaluated when this runs) and returns the exit code.
 */
export async function runReconcile(
  table: ProgramTable<ReconcileContext>,
  args: string[],
  entry: CommandEntry<ReconcileContext> | undefined,
): Promise<number> {
  const ctx = reconcileContext();
  return await runTable(table, entry, args, {
    out: ctx.out,
    err: ctx.err,
    context: ctx,
    code: () => ctx.code,
    usageCode: REFUSED,
    onError: (error) => {
      ctx.err(`mesh-reconcile: ${messageOf(error)}\n`);
      return REFUSED;
    },
  });
}
