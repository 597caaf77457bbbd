/**
 * `mesh-host owned`: list the footprint, what this host applied for which source.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { optionOf } from "../../lib/cli.ts";
import { ownedText } from "../render.ts";
import { Store } from "../store.ts";
import {
  DECLARATIONS_DIR_OPTION,
  type HostContext,
  migration,
  STATE_DIR_OPTION,
} from "./context.ts";

/** Defines `owned` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  parent.command(entry.name)
    .description(entry.summary)
    .option("--json", "print as JSON")
    .addOption(optionOf(STATE_DIR_OPTION))
    .addOption(optionOf(DECLARATIONS_DIR_OPTION))
    .action(async (opts: { json?: boolean; stateDir: string; declarations: string }) => {
      const store = await Store.load(opts.stateDir, {
        readOnly: true,
        migration: migration(ctx, opts.stateDir, opts.declarations),
      });
      store.close();
      ctx.out(
        opts.json
          ? JSON.stringify(store.entries(), null, 2) + "\n"
          : ownedText(store.entries(), store.path),
      );
    });
}
