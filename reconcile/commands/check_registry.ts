/**
 * `mesh-reconcile check-registry`: validate a registry file.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { loadRegistry } from "../registry.ts";
import { type ReconcileContext } from "./context.ts";

/** Defines `check-registry` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .argument("<file>", "the registry")
    .action(async (file: string) => {
      const registry = await loadRegistry(file);
      ctx.out(
        `${file}: valid, ${Object.keys(registry.services).length} entries, accounts ${
          registry.accounts.join(", ")
        }\n`,
      );
    });
}
