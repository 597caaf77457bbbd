/**
 * What `status` and `board` read of the inventory: every node's state and the database's clock.
 * Kept apart from ./inventory.ts (which re-exports it) so that reading imports no schema: neither
 * zod nor the declaration parser is loaded by `status` (docs/mesh-control.md, "Current state").
 *
 * @module
 */

import { DatabaseError, type Sql } from "./db.ts";
import { NODES_PER_ROW } from "./read_rows.ts";
import type { NodeKind, SystemName } from "./node_kind.ts";

/** The current declaration of a node: the last one pushed. */
export interface CurrentDeclaration {
  generation: number;
  digest: string;
  total: number;
  pushedAt: Date;
}

/** A node's last report. */
export interface LastReport {
  generation: number;
  digest: string;
  /** `undeclared`: the link holds no declaration from the control plane (it reports so). */
  outcome: "applied" | "refused" | "failed" | "undeclared";
  applied: number;
  total: number;
  trigger: "push" | "start" | "interval";
  problems: { id?: string; path?: string; message: string }[];
  /**
   * Whether the control plane pushed this report's generation, with this digest, to this node
   * (docs/design.md, "Hostile inputs", rule 7): {@linkcode readNodeStates} always says it for a
   * report about a declaration; absent for an `undeclared` one. A report not about its node's
   * current declaration and not said pushed is an unknown claim (./state.ts).
   */
  pushed?: boolean;
  /** The reconcile interval the report stated, in ms (absent from older hosts). */
  intervalMs?: number;
  /** The node's clock. */
  reportedAt: Date;
  /** Ours. */
  receivedAt: Date;
}

/** One node as the inventory knows it: what it was last told and what it last said. */
export interface NodeState {
  name: string;
  system: SystemName;
  kind: NodeKind;
  enrolledAt: Date;
  modules: string[];
  declaration?: CurrentDeclaration;
  report?: LastReport;
}

/**
 * The fields of a node's line, in order, tab-separated; an absent value is empty. Every one but the
 * last is a name, word, digest or number the schema's CHECKs keep free of tabs, newlines and spaces
 * (node and module names, systems, kinds, outcomes, triggers, `sha256:` digests; `r_pushed` is
 * `p` when the last report's generation and digest were pushed to the node, `u` when not, empty
 * for no report or an `undeclared` one), and `modules` is
 * the assigned modules in order, separated by spaces. The last, `problems`, is the last report's
 * problems as jsonb's text (empty when there are none): JSON text escapes every control character
 * in a string, so it holds no raw tab or newline either.
 */
const STATE_FIELDS = [
  "name",
  "system",
  "kind",
  "enrolled_ms",
  "modules",
  "d_generation",
  "d_digest",
  "d_total",
  "d_pushed_ms",
  "r_generation",
  "r_digest",
  "r_outcome",
  "r_applied",
  "r_total",
  "r_trigger",
  "r_interval_ms",
  "r_reported_ms",
  "r_received_ms",
  "r_pushed",
  "problems",
] as const;

/**
 * Reads every node's state (or only `names`) in one query: the current declaration and the last
 * report from the copies the inventory keeps current as they are written
 * (`current_declarations`, `last_reports`, migration 0006_node_state), the modules grouped from
 * `assignments`; for the whole fleet one ordered scan of each, whatever the number of reports.
 * The states come ordered by name.
 *
 * Each node is one line of text ({@linkcode STATE_FIELDS}, tab-separated; times as epoch
 * milliseconds), and each row carries the lines of up to `nodesPerRow` nodes in name order,
 * newline-separated (default {@linkcode NODES_PER_ROW}; tests pass fewer to cross the rows'
 * boundaries). Decoding 10,000 rows of 19 typed columns (each a copied buffer, a string and a
 * parse, times as text parsed into Dates) was a quarter of `status`'s CPU; one string split
 * natively is a fraction of it. `new Date(ms)` is the same instant as the driver's Date, truncated
 * to the millisecond as it is; the problems are parsed with `JSON.parse`, as the driver parses
 * jsonb.
 *
 * @throws {DatabaseError} when a line does not have {@linkcode STATE_FIELDS}' fields.
 */
export async function readNodeStates(
  sql: Sql,
  names?: string[],
  nodesPerRow: number = NODES_PER_ROW,
): Promise<NodeState[]> {
  const only = names === undefined ? sql`` : sql`where n.name = any(${names})`;
  const rows = await sql<{ s: string }[]>`
    select string_agg(s, E'\n' order by name) as s from (
      select n.name, (row_number() over (order by n.name) - 1) / ${nodesPerRow}::int as chunk,
        n.name || E'\t' || n.system || E'\t' || n.kind || E'\t' ||
        (extract(epoch from n.enrolled_at) * 1000)::float8 || E'\t' ||
        coalesce(a.modules, '') || E'\t' ||
        coalesce(d.generation::text, '') || E'\t' || coalesce(d.digest, '') || E'\t' ||
        coalesce(d.total::text, '') || E'\t' ||
        coalesce(((extract(epoch from d.pushed_at) * 1000)::float8)::text, '') || E'\t' ||
        coalesce(r.generation::text, '') || E'\t' || coalesce(r.digest, '') || E'\t' ||
        coalesce(r.outcome, '') || E'\t' || coalesce(r.applied::text, '') || E'\t' ||
        coalesce(r.total::text, '') || E'\t' || coalesce(r.trigger, '') || E'\t' ||
        coalesce(r.interval_ms::text, '') || E'\t' ||
        coalesce(((extract(epoch from r.reported_at) * 1000)::float8)::text, '') || E'\t' ||
        coalesce(((extract(epoch from r.received_at) * 1000)::float8)::text, '') || E'\t' ||
        case r.pushed when true then 'p' when false then 'u' else '' end || E'\t' ||
        coalesce(nullif(r.problems, '[]'::jsonb)::text, '') as s
      from nodes n
      left join current_declarations d on d.node = n.name
      left join last_reports r on r.node = n.name
      left join (
        select a.node, string_agg(a.module, ' ' order by a.position) as modules from assignments a
        ${names === undefined ? sql`` : sql`where a.node = any(${names})`}
        group by a.node) a on a.node = n.name
      ${only}) x
    group by chunk order by chunk`;
  const states: NodeState[] = [];
  for (const row of rows) {
    for (const line of row.s.split("\n")) states.push(stateOf(line));
  }
  return states;
}

/** One node's line ({@linkcode STATE_FIELDS}) as its state. */
function stateOf(line: string): NodeState {
  const f = line.split("\t");
  if (f.length !== STATE_FIELDS.length) {
    throw new DatabaseError(
      `Cannot read the node states: a node's line has ${f.length} fields, not ${STATE_FIELDS.length}`,
    );
  }
  const modules = f[4]!;
  const state: NodeState = {
    name: f[0]!,
    system: f[1] as SystemName,
    kind: f[2] as NodeKind,
    enrolledAt: new Date(Number(f[3])),
    modules: modules === "" ? [] : modules.split(" "),
  };
  if (f[5] !== "") {
    state.declaration = {
      generation: Number(f[5]),
      digest: f[6]!,
      total: Number(f[7]),
      pushedAt: new Date(Number(f[8])),
    };
  }
  if (f[9] !== "") {
    const problems = f[19]!;
    state.report = {
      generation: Number(f[9]),
      digest: f[10]!,
      outcome: f[11] as LastReport["outcome"],
      applied: Number(f[12]),
      total: Number(f[13]),
      trigger: f[14] as LastReport["trigger"],
      problems: problems === "" ? [] : JSON.parse(problems),
      reportedAt: new Date(Number(f[16])),
      receivedAt: new Date(Number(f[17])),
    };
    if (f[15] !== "") state.report.intervalMs = Number(f[15]);
    if (f[18] !== "") state.report.pushed = f[18] === "p";
  }
  return state;
}

/**
 * Now by the inventory database's clock: the clock that stamped every report's receipt
 * (`reports.received_at`), so silence is judged on one clock, never the node's nor this
 * process's.
 */
export async function readClock(sql: Sql): Promise<Date> {
  const [row] = await sql<{ now: Date }[]>`select clock_timestamp() as now`;
  return row!.now;
}
