/**
 * Runs one `mesh-control` command through commander: the side of the command line that
 * control/main.ts loads only when a command runs (the program's help and `--version` never load
 * it). The command's connections are closed when it ends, however it ends.
 *
 * @module
 */

import type { CommandEntry, ProgramTable } from "../../lib/cli_table.ts";
import { runTable } from "../../lib/cli.ts";
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
  try {
    return await runTable(table, entry, args, {
      out: ctx.out,
      err: ctx.err,
      context: ctx,
      code: () => ctx.code,
      usageCode: 2,
      redact: redactSecrets,
      onError: (error) => {
        ctx.err(`mesh-control: ${redactSecrets(messageOf(error))}\n`);
        return 2;
      },
    });
  } finally {
    for (const cleanup of ctx.cleanups.reverse()) await cleanup().catch(() => {});
  }
}
