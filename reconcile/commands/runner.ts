/**
 * Runs one `mesh-reconcile` command: the side of the command line that reconcile/main.ts loads
 * only when a command runs (the program's help and `--version` never load it). A plain
 * invocation of a command the table declares as data runs without commander (lib/cli_table.ts
 * parseCommand); anything else (misuse, a command group) through commander (lib/cli.ts, loaded
 * then), which says what is wrong as it always has.
 *
 * @module
 */

import {
  type CommandEntry,
  exitCodeOfError,
  parseCommand,
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
  const parsed = entry?.options ? parseCommand(entry, args) : undefined;
  if (entry && parsed) {
    try {
      const { action } = await entry.load();
      await action!(ctx, parsed.args, parsed.options);
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
