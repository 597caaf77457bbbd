/**
 * `mesh-reconcile check-registry`: validate a registry file.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { loadRegistry } from "../registry_load.ts";
import type { ReconcileContext } from "./context.ts";

/**
 * Runs `check-registry` (its argument is declared in the command table, reconcile/main.ts): a
 * plain invocation runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<ReconcileContext> = async (ctx, [file]) => {
  const registry = await loadRegistry(file!);
  ctx.out(
    `${file}: valid, ${Object.keys(registry.services).length} entries, accounts ${
      registry.accounts.join(", ")
    }\n`,
  );
};
