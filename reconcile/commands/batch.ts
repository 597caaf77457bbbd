/**
 * `mesh-reconcile batch`: `enable`, `disable`: switch a timer-driven job on or off and (un)register
 * it.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { BATCH_COMMANDS } from "../options.ts";
import { assertRegistryOutsideCode } from "../registry_place.ts";
import type { ReconcileContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** Prints what a batch step did and sets the exit code: 2 refused, 1 failed, else 0. */
async function batchDone(
  ctx: ReconcileContext,
  result: Promise<import("../batch.ts").BatchResult>,
  json: boolean | undefined,
): Promise<void> {
  const r = await result;
  if (json) ctx.out(jsonText(r, 2) + "\n");
  else {
    for (const step of r.steps) ctx.err(`ran: ${step}\n`);
    (r.outcome === "enabled" || r.outcome === "disabled" ? ctx.out : ctx.err)(
      `${r.outcome}: ${r.message}\n`,
    );
  }
  ctx.code = r.outcome === "refused" ? 2 : r.outcome === "failed" ? 1 : 0;
}

/**
 * The actions of `batch`'s subcommands, by name (declared in reconcile/options.ts), each given
 * what its options there parse to.
 */
export const actions: GroupActions<ReconcileContext, typeof BATCH_COMMANDS> = {
  enable: async (ctx, [name], opts) => {
    if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
    const { batchEnable } = await import("../batch.ts");
    await batchDone(ctx, batchEnable(name!, opts), opts.json);
  },
  disable: async (ctx, [name], opts) => {
    if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
    const { batchDisable } = await import("../batch.ts");
    await batchDone(ctx, batchDisable(name!, opts), opts.json);
  },
};
