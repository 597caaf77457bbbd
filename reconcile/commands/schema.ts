/**
 * `mesh-reconcile schema`: print the registry's JSON Schema.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { registryJsonSchema } from "../registry_schema.ts";
import type { ReconcileContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** Runs `schema` (declared in the command table, reconcile/main.ts). */
export const action: CommandAction<ReconcileContext> = (ctx) => {
  ctx.out(jsonText(registryJsonSchema(), 2) + "\n");
  return Promise.resolve();
};
