/**
 * `mesh-host apply <file>`: converge this machine to a declaration file as one source.
 *
 * @module
 */

import { resolve } from "../../lib/path.ts";
import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { messageOf, readRegularFileLimited } from "../../lib/atomic.ts";
import { applyBytes } from "../apply.ts";
import { MAX_DECLARATION_BYTES } from "../declaration.ts";
import { originOfFile, sourceNameProblem } from "../sources.ts";
import { VERSION } from "../version.ts";
import {
  declarationsDirOption,
  finish,
  type HostContext,
  migration,
  Refused,
  stateDirOption,
} from "./context.ts";

/** Defines `apply` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  parent.command(entry.name)
    .description(entry.summary)
    .argument("<file>", "the declaration (JSON, version 1)")
    .option("--source <name>", "the source it is applied as", "local")
    .option(
      "--take-from <source>",
      "move what that source holds and this file declares to --source, instead of refusing " +
        "(e.g. from local, applied by hand, to a file in the declarations directory)",
    )
    .option("--dry-run", "change nothing; show what would change (exit 4 when something would)")
    .option("--json", "print the result as JSON")
    .addOption(stateDirOption())
    .addOption(declarationsDirOption())
    .action(
      async (
        file: string,
        opts: {
          source: string;
          takeFrom?: string;
          dryRun?: boolean;
          json?: boolean;
          stateDir: string;
          declarations: string;
        },
      ) => {
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
          bytes = await readRegularFileLimited(file, MAX_DECLARATION_BYTES);
        } catch (error) {
          throw new Refused(`Cannot read declaration "${file}": ${messageOf(error)}`);
        }
        const path = resolve(file);
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
          ...(opts.takeFrom !== undefined ? { takeFrom: opts.takeFrom } : {}),
        });
        await finish(ctx, [result], { json: opts.json, stateDir: opts.stateDir });
      },
    );
}
