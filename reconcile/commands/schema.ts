/**
 * `mesh-reconcile schema`: print the registry's JSON Schema.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { registryJsonSchema } from "../registry.ts";
import { type ReconcileContext } from "./context.ts";

/** Defines `schema` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .action(() => {
      ctx.out(JSON.stringify(registryJsonSchema(), null, 2) + "\n");
    });
}
