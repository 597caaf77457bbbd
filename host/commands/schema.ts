/**
 * `mesh-host schema`: print the declaration's JSON Schema.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { declarationJsonSchema } from "../declaration.ts";
import type { HostContext } from "./context.ts";

/** Defines `schema` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  parent.command(entry.name)
    .description(entry.summary)
    .action(() => ctx.out(JSON.stringify(declarationJsonSchema(), null, 2) + "\n"));
}
