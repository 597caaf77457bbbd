/**
 * Runs one `mesh-control` command: the side of the command line that control/main.ts loads only
 * when a command runs (the program's help and `--version` never load it). A plain invocation of
 * a command or subcommand the table declares as data (every one of mesh-control's) runs without
 * commander (lib/cli_table.ts parseCommand, parseSubcommand); anything else through commander
 * (lib/cli.ts, loaded then), built from the same declarations, so misuse is said as before. The
 * command's connections are closed when it ends, however it ends.
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
import { type ControlContext, controlContext, redactSecrets } from "./context.ts";

/**
 * Runs `args` with `entry` (every command when not given) of `table` (control/main.ts's, passed
 * in: the main module is still being evaluated when this runs) and returns the exit code.
 */
export async function runControl(
  table: ProgramTable<ControlContext>,
  args: string[],
  entry: CommandEntry<ControlContext> | undefined,
): Promise<number> {
  const ctx = controlContext();
  const onError = (error: unknown) => {
    ctx.err(`mesh-control: ${redactSecrets(messageOf(error))}\n`);
    return 2;
  };
  try {
    const plain = await plainInvocation(entry, args);
    if (plain !== undefined) {
      try {
        await plain.action(ctx, plain.args, plain.options);
        return ctx.code;
      } catch (error) {
        return exitCodeOfError(table.name, error, args, {
          err: ctx.err,
          onError,
          redact: redactSecrets,
        });
      }
    }
    const { runTable } = await import("../../lib/cli.ts");
    return await runTable(table, entry, args, {
      out: ctx.out,
      err: ctx.err,
      context: ctx,
      code: () => ctx.code,
      usageCode: 2,
      redact: redactSecrets,
      onError,
    });
  } finally {
    for (const cleanup of ctx.cleanups.reverse()) await cleanup().catch(() => {});
  }
}
