/**
 * Report retention: what bounds the inventory's growth. Every node reports at each interval, so
 * `reports` grows by (nodes x reports per node per day) rows a day forever unless pruned.
 * {@linkcode pruneReports} deletes reports received before a cutoff, except each node's latest
 * report (which status, board and `push --behind` read: a node that went quiet keeps its last
 * word, and "never spoke" stays reserved for nodes that never did).
 *
 * @module
 */

import type { Sql } from "./db.ts";
import { asDatabaseError } from "./inventory.ts";

/** Rows deleted per transaction: short transactions, no long lock on a busy table. */
export const PRUNE_BATCH = 10_000;

/** What a prune did (or, dry, would do). */
export interface Pruned {
  /** Reports deleted (or that would be). */
  deleted: number;
  /** Reports left. */
  kept: number;
  /** The cutoff: reports received before it were candidates (ISO 8601). */
  before: string;
}

/**
 * Deletes every report received more than `keepMs` ago that is not its node's latest, in
 * batches of {@linkcode PRUNE_BATCH}, each its own transaction (a prune that stops half-way
 * has deleted whole batches only, and running it again goes on).
 *
 * @param options.dryRun count only, delete nothing.
 * @throws {DatabaseError} when the inventory refuses (the batch in progress rolls back).
 */
export async function pruneReports(
  sql: Sql,
  keepMs: number,
  options: { dryRun?: boolean; now?: Date } = {},
): Promise<Pruned> {
  const before = new Date((options.now ?? new Date()).getTime() - keepMs);
  try {
    if (options.dryRun) {
      const [row] = await sql<{ doomed: number; total: number }[]>`
        select count(*) filter (where r.received_at < ${before} and exists (
            select 1 from reports n where n.node = r.node and n.id > r.id))::int as doomed,
          count(*)::int as total
        from reports r`;
      return {
        deleted: row!.doomed,
        kept: row!.total - row!.doomed,
        before: before.toISOString(),
      };
    }
    let deleted = 0;
    for (;;) {
      const done = await sql.begin(async (tx) =>
        (await tx`
          delete from reports where id in (
            select r.id from reports r
            where r.received_at < ${before}
              and exists (select 1 from reports n where n.node = r.node and n.id > r.id)
            limit ${PRUNE_BATCH})`).count
      );
      deleted += done;
      if (done < PRUNE_BATCH) break;
    }
    const [left] = await sql<{ n: number }[]>`select count(*)::int as n from reports`;
    return { deleted, kept: left!.n, before: before.toISOString() };
  } catch (error) {
    throw asDatabaseError("Cannot prune reports", error);
  }
}
