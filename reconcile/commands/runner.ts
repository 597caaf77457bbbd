/**
 * Runs one `mesh-reconcile` command: the side of the command line that reconcile/main.ts loads
 * only when a command runs (the program's help and `--version` never load it). A plain
 * invocation of a command or subcommand (every one is declared as data) runs without commander
 * (lib/cli_table.ts plainInvocation); anything else (misuse, help) through commander
 * (lib/cli.ts, loaded then), built from the same declarations, which says what is wrong.
 *
 * @module
 */

import {
  type CommandEntry,
  exitCodeOfError,
  plainInvocation,
  type ProgramTable,
} from "../../lib/cli_table.ts";
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
  const onError = (error: unknown) => {
    ctx.err(`mesh-reconcile: ${messageOf(error)}\n`);
    return REFUSED;
  };
  const plain = await plainInvocation(entry, args);
  if (plain !== undefined) {
    try {
      await plain.action(ctx, plain.args, plain.options);
      return ctx.code;
    } catch (error) {
      return exitCodeOfError(table.name, error, args, { err: ctx.err, onError });
    }
  }
  const { runTable } = await import("../../lib/cli.ts");
  return await runTable(table, entry, args, {
    out: ctx.out,
    err: ctx.err,
    context: ctx,
    code: () => ctx.code,
    usageCode: REFUSED,
    onError,
  });
}
