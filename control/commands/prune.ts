/**
 * `mesh-control prune`: delete old reports, except each node's latest.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { connect, type Connections, type ControlContext } from "./context.ts";

/** What `prune`'s options parse to (control/options.ts PRUNE_OPTIONS). */
type PruneOptions = Connections & { keep: number; dryRun?: boolean };

/** Runs `prune` (its options: control/options.ts). */
export const action: CommandAction<ControlContext, PruneOptions> = async (ctx, _args, opts) => {
  const { out } = ctx;
  const { database } = connect(ctx);
  const sql = await database(opts);
  const { pruneReports } = await import("../retention.ts");
  const pruned = await pruneReports(sql, opts.keep, { dryRun: opts.dryRun });
  out(
    `${opts.dryRun ? "would delete" : "deleted"} ${pruned.deleted} report${
      pruned.deleted === 1 ? "" : "s"
    } received before ${pruned.before} (each node's latest is kept); ${pruned.kept} ${
      opts.dryRun ? "would be " : ""
    }left\n`,
  );
};
