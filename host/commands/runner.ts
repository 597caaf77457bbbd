/**
 * Runs one `mesh-host` command: the side of the command line that host/cli.ts loads only when a
 * command runs (the program's help and `--version` never load it). A plain invocation of a
 * command the table declares as data (every mesh-host command) runs without commander
 * (lib/cli_table.ts plainInvocation); anything else through commander (lib/cli.ts, loaded then).
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
import { confirmSystem, WrongSystemError } from "../system.ts";
import { BundleError, EmptyBundleError, NoBundleError } from "../bundle.ts";
import { DeclarationError } from "../../lib/declaration_base.ts";
import { executableIdentity } from "../identity.ts";
import { StoreError } from "../store.ts";
import { EXIT_CANNOT_RUN, EXIT_REFUSED } from "../exit.ts";
import type { HostBuild } from "../system.ts";
import { type HostContext, hostContext, Refused } from "./context.ts";

/**
 * Runs `args` with `entry` (every command when not given) of `table` and returns the exit code: the
 * machine's system is confirmed before any command's action.
 */
export async function runHost(
  table: ProgramTable<HostContext>,
  args: string[],
  build: HostBuild,
  entry: CommandEntry<HostContext> | undefined,
  start: ReturnType<typeof executableIdentity>,
): Promise<number> {
  const system = "load" in build.system ? await build.system.load() : build.system;
  const ctx = hostContext({ ...build, system }, start);
  const onError = (error: unknown) => {
    ctx.err(`mesh-host: ${messageOf(error)}\n`);
    if (error instanceof StoreError) return EXIT_CANNOT_RUN;
    if (
      error instanceof Refused || error instanceof WrongSystemError ||
      error instanceof DeclarationError ||
      error instanceof NoBundleError || error instanceof EmptyBundleError ||
      error instanceof BundleError
    ) return EXIT_REFUSED;
    return EXIT_CANNOT_RUN;
  };
  const plain = await plainInvocation(entry, args);
  if (plain !== undefined) {
    // What commander would run: the system confirmed (its preAction hook), then the action.
    try {
      await confirmSystem(system, { osRelease: build.osRelease });
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
    usageCode: EXIT_REFUSED,
    configure: (program) =>
      program.hook("preAction", async () => {
        await confirmSystem(system, { osRelease: build.osRelease });
      }),
    onError,
  });
}
