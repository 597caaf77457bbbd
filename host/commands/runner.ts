/**
 * Runs one `mesh-host` command through commander: the side of the command line that host/cli.ts
 * loads only when a command runs (the program's help and `--version` never load it).
 *
 * @module
 */

import type { CommandEntry, ProgramTable } from "../../lib/cli_table.ts";
import { runTable } from "../../lib/cli.ts";
import { messageOf } from "../../lib/atomic.ts";
import { confirmSystem, WrongSystemError } from "../../systems/mod.ts";
import { BundleError, EmptyBundleError, NoBundleError } from "../bundle.ts";
import { DeclarationError } from "../declaration.ts";
import { executableIdentity } from "../identity.ts";
import { StoreError } from "../store.ts";
import { EXIT_CANNOT_RUN, EXIT_REFUSED, type HostBuild } from "../cli.ts";
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
    onError: (error) => {
      ctx.err(`mesh-host: ${messageOf(error)}\n`);
      if (error instanceof StoreError) return EXIT_CANNOT_RUN;
      if (
        error instanceof Refused || error instanceof WrongSystemError ||
        error instanceof DeclarationError ||
        error instanceof NoBundleError || error instanceof EmptyBundleError ||
        error instanceof BundleError
      ) return EXIT_REFUSED;
      return EXIT_CANNOT_RUN;
    },
  });
}
