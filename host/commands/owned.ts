/**
 * `mesh-host owned`: list the footprint, what this host applied for which source.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { ownedText } from "../render.ts";
import { Store } from "../store.ts";
import { type HostContext, migration } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** What `owned`'s options parse to (host/options.ts OWNED_OPTIONS). */
interface OwnedOptions {
  json?: boolean;
  stateDir: string;
  declarations: string;
}

/**
 * Runs `owned` (its options are declared in the command table, host/cli.ts): a plain invocation
 * runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, OwnedOptions> = async (ctx, _args, opts) => {
  const store = await Store.load(opts.stateDir, {
    readOnly: true,
    migration: migration(ctx, opts.stateDir, opts.declarations),
  });
  store.close();
  ctx.out(
    opts.json ? jsonText(store.entries(), 2) + "\n" : ownedText(store.entries(), store.path),
  );
};
