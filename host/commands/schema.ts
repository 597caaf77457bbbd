/**
 * `mesh-host schema`: print the declaration's JSON Schema.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { declarationJsonSchema } from "../../lib/declaration.ts";
import type { HostContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** Runs `schema` (declared in the command table, host/cli.ts): prints the JSON Schema. */
export const action: CommandAction<HostContext> = (ctx) => {
  ctx.out(jsonText(declarationJsonSchema(), 2) + "\n");
  return Promise.resolve();
};
