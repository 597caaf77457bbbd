/**
 * `mesh-reconcile port`: `next`: the port table.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { PORT_COMMANDS } from "../options.ts";
import { messageOf } from "../../lib/atomic.ts";
import { loadRegistry } from "../registry_load.ts";
import { type ReconcileContext, UsageError } from "./context.ts";

/**
 * The action of `port`'s subcommand, by name (declared in reconcile/options.ts), given what its
 * options there parse to.
 */
export const actions: GroupActions<ReconcileContext, typeof PORT_COMMANDS> = {
  next: async (ctx, _args, opts) => {
    const { nextPort, parsePortRange } = await import("../ports.ts");
    let range;
    try {
      range = parsePortRange(opts.range);
    } catch (error) {
      throw new UsageError(messageOf(error));
    }
    const found = await nextPort(await loadRegistry(opts.registry), { range });
    const failed = found.sources.filter((s) => s.state === "failed");
    const span = `${range.first}-${range.last}`;
    if (failed.length > 0) {
      throw new UsageError(
        `Cannot tell which ports of ${span} are free: could not observe ${
          failed.map((s) => `${s.account ? `${s.source}@${s.account}` : s.source} (${s.detail})`)
            .join(", ")
        }`,
      );
    }
    if (found.port === undefined) {
      throw new UsageError(
        `No free port in ${span}: ${found.claimed.length} claimed by entries, ${found.used.length} in use`,
      );
    }
    ctx.out(`${found.port}\n`);
  },
};
