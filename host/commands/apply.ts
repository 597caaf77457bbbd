/**
 * `mesh-host apply <file>`: converge this machine to a declaration file as one source.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { readRegularFile } from "../../lib/regular_file.ts";
import { resolve } from "../../lib/path.ts";
import { applyBytes } from "../apply.ts";
import { MAX_DECLARATION_BYTES } from "../../lib/declaration_base.ts";
import { originOfFile, sourceNameProblem } from "../sources.ts";
import { VERSION } from "../version.ts";
import { finish, type HostContext, migration, Refused } from "./context.ts";

/** What `apply`'s options parse to. */
interface ApplyOptions {
  source: string;
  takeFrom?: string;
  dryRun?: boolean;
  json?: boolean;
  stateDir: string;
  declarations: string;
}

/**
 * Runs `apply` (its arguments and options are declared in the command table, host/cli.ts): a
 * plain invocation runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, ApplyOptions> = async (ctx, [file], opts) => {
  const bad = sourceNameProblem(opts.source);
  if (bad !== undefined) throw new Refused(`--source: ${bad}`);
  if (opts.takeFrom !== undefined) {
    const badFrom = sourceNameProblem(opts.takeFrom);
    if (badFrom !== undefined) throw new Refused(`--take-from: ${badFrom}`);
    if (opts.takeFrom === opts.source) {
      throw new Refused(`--take-from names the source applied ("${opts.source}")`);
    }
  }
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(file!, { maxBytes: MAX_DECLARATION_BYTES });
  } catch (error) {
    throw new Refused(`Cannot read declaration "${file}": ${messageOf(error)}`);
  }
  const path = resolve(file!);
  const result = await applyBytes(bytes, {
    system: ctx.build.system,
    stateDir: opts.stateDir,
    dryRun: opts.dryRun,
    version: VERSION,
    trusted: true,
    source: opts.source,
    origin: originOfFile(path, opts.source, opts.declarations),
    file: path,
    migration: migration(ctx, opts.stateDir, opts.declarations),
    blockingLock: true, // one command, nothing else to do while another host holds the lock
    ...(opts.takeFrom !== undefined ? { takeFrom: opts.takeFrom } : {}),
  });
  await finish(ctx, [result], { json: opts.json, stateDir: opts.stateDir });
};
