/**
 * The verdict rules (control/node_state.ts, where the database judges the fleet) asked about
 * nodes given as values: each node is written into an inventory as ingest and push leave it (the
 * copies `current_declarations`, `last_reports` and `node_drift`), then the fleet is read and
 * judged at a given instant. What the rules tests ask, without a broker or a link.
 *
 * @module
 */

import type { Sql } from "../../control/db.ts";
import {
  type CurrentDeclaration,
  type LastReport,
  type NodeState,
  readFleet,
  readNodeStates,
} from "../../control/node_state.ts";
import { type Board, boardOf } from "../../control/report.ts";
import { ranAt } from "../../control/drift.ts";
import type { DriftSummary } from "../../lib/drift.ts";
import type { NodeKind } from "../../control/node_kind.ts";

/** A node as given: what it was last told, what it last said, its last drift summary. */
export interface GivenNode {
  name: string;
  kind?: NodeKind;
  system?: string;
  modules?: string[];
  declaration?: CurrentDeclaration;
  report?: LastReport;
  /** Its last summary as stored (`summary` may be anything: a row another version wrote). */
  drift?: { summary: DriftSummary | Record<string, unknown>; reportedAt: Date; receivedAt: Date };
}

/**
 * Replaces every node of the inventory at `sql` with `nodes`, written as ingest and push leave them.
 * A report's `pushed` is the inventory's own (its trigger reads `declarations`): `pushed: true` on
 * a report about an earlier generation records that generation as pushed. A drift summary's
 * `ran_at` columns are ingest's (control/drift.ts `ranAt`) for a summary it would read; none for
 * anything else.
 */
export async function writeNodes(sql: Sql, nodes: readonly GivenNode[]): Promise<void> {
  await sql`truncate nodes cascade`;
  let id = 0;
  for (const n of nodes) {
    await sql`insert into nodes (name, system, kind) values
      (${n.name}, ${n.system ?? "debian"}, ${n.kind ?? "server"})`;
    for (const [position, module] of (n.modules ?? []).entries()) {
      await sql`insert into modules (name, version, digest, body, origin) values
        (${module}, 1, ${`sha256:${"0".repeat(64)}`}, '{"version":1,"resources":[]}', 'handed-over')
        on conflict do nothing`;
      await sql`insert into assignments (node, module, position) values
        (${n.name}, ${module}, ${position})`;
    }
    // Pushed as push records it (`declarations`; the inventory's triggers keep the copy
    // `current_declarations` and whether each last report claims what was pushed): the current
    // declaration, and the earlier generation a report says was pushed.
    const d = n.declaration;
    const r = n.report;
    const pushed: CurrentDeclaration[] = [];
    if (r?.pushed === true && (d === undefined || r.generation < d.generation)) {
      pushed.push({
        generation: r.generation,
        digest: r.digest,
        total: r.total,
        pushedAt: r.reportedAt,
      });
    }
    if (d !== undefined) pushed.push(d);
    for (const p of pushed) {
      await sql`insert into declarations (node, generation, digest, body, total, pushed_at)
        values (${n.name}, ${p.generation}, ${p.digest}, '{}', ${p.total}, ${p.pushedAt})`;
    }
    if (r !== undefined) {
      await sql`insert into last_reports (node, report_id, generation, digest, outcome, applied,
          total, trigger, problems, interval_ms, reported_at, received_at, pushed)
        values (${n.name}, ${++id}, ${r.generation}, ${r.digest}, ${r.outcome}, ${r.applied},
          ${r.total}, ${r.trigger}, ${JSON.stringify(r.problems)}::text::jsonb, ${
        r.intervalMs ?? null
      },
          ${r.reportedAt}, ${r.receivedAt}, ${r.pushed ?? null})`;
    }
    const drift = n.drift;
    if (drift !== undefined) {
      let times: { ran_at_ms: number | null; ran_at: string | null } = {
        ran_at_ms: null,
        ran_at: null,
      };
      try {
        times = ranAt(drift.summary as DriftSummary);
      } catch { /* not a summary ingest would read: no time */ }
      await sql`insert into node_drift (node, summary, reported_at, received_at, ran_at_ms, ran_at)
        values (${n.name}, ${JSON.stringify(drift.summary)}::text::jsonb, ${drift.reportedAt},
          ${drift.receivedAt}, ${times.ran_at_ms}, ${times.ran_at})`;
    }
  }
}

/**
 * `nodes` judged at `now` (grace `graceMs`, default 1 minute): the whole board, and each node's
 * state with its declaration verdict.
 */
export async function judgeNodes(
  sql: Sql,
  nodes: readonly GivenNode[],
  options: { now: Date; graceMs?: number },
): Promise<{ board: Board; states: NodeState[] }> {
  await writeNodes(sql, nodes);
  const fleet = await readFleet(sql, { now: options.now, graceMs: options.graceMs ?? 60_000 });
  return { board: boardOf(fleet), states: await readNodeStates(sql) };
}
