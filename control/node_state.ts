/**
 * What `status`, `board`, `push --behind` and the catalogue read of the inventory: every node's
 * state with its verdicts, judged by the database in the statement that reads it. The rules of
 * ./state.ts (the declaration verdict, the silence rule) and of ./drift.ts (the drift verdict, the
 * dead-man rule) are written once, here, as SQL; their words and what each verdict means stay in
 * those modules. So `status` receives only the nodes it lists and the counts, and no verdict is
 * computed twice or in two languages.
 *
 * Kept apart from ./inventory.ts (which re-exports it) so that reading imports no schema: neither
 * zod nor the declaration parser is loaded by `status` (docs/mesh-control.md, "Current state").
 *
 * @module
 */

import { DatabaseError, type Sql } from "./db.ts";
import { NODES_PER_ROW } from "./read_rows.ts";
import type { NodeKind, SystemName } from "./node_kind.ts";
import { DEFAULT_INTERVAL_MS } from "../lib/link_interval.ts";
import {
  type DeclarationVerdict,
  DEFAULT_GRACE_MS,
  SILENCE_INTERVALS,
  type Verdict,
  VERDICT_WORDS,
  VERDICTS,
} from "./state.ts";
import {
  DRIFT_VERDICTS,
  DRIFT_WORDS,
  type DriftVerdict,
  isDriftAlarm,
  NOT_KEPT_PROBLEM,
  STALE_AFTER_INTERVALS,
} from "./drift.ts";

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
   * (docs/design.md, "Hostile inputs", rule 7), as ingest recorded it; absent for an `undeclared`
   * report.
   */
  pushed?: boolean;
  /** The reconcile interval the report stated, in ms (absent from older hosts). */
  intervalMs?: number;
  /** The node's clock. */
  reportedAt: Date;
  /** Ours. */
  receivedAt: Date;
}

/**
 * One node as the inventory knows it: what it was last told, what it last said, and what that
 * says about its current declaration (its declaration verdict, ./state.ts).
 */
export interface NodeState {
  name: string;
  system: SystemName;
  kind: NodeKind;
  enrolledAt: Date;
  modules: string[];
  declaration?: CurrentDeclaration;
  report?: LastReport;
  /** What its reports say about its current declaration (`push --behind` acts on this alone). */
  said: DeclarationVerdict;
  /** Resources of its current declaration known applied (0 when nothing is known). */
  applied: number;
  /** Resources of its current declaration (0 when none was pushed). */
  total: number;
  /**
   * Why its last report is an unknown claim (`said` is `unknown-claim`): the generation and
   * digest it claims and what was pushed to it (docs/design.md, "Hostile inputs", rule 7).
   */
  claim?: string;
}

/** What one read of the fleet counts: the status and board heads share it. */
export interface FleetCounts {
  /** Nodes enrolled (of `names`, when given). */
  nodes: number;
  /** The grace of the silence rule, in ms: allowed quiet = 2 intervals + this. */
  graceMs: number;
  /** Nodes per verdict (every verdict present, 0 when none). */
  counts: Record<Verdict, number>;
  /** Nodes per drift verdict (every drift verdict present, 0 when none). */
  driftCounts: Record<DriftVerdict, number>;
}

/** One read of the fleet, judged on the inventory database's clock. */
export interface Fleet extends FleetCounts {
  /** Now, by the inventory database's clock (the one that stamped each report's receipt). */
  now: Date;
  /**
   * The nodes read (every node, or with `listedOnly` those `status` lists), each a board machine
   * (./report.ts `BoardMachine`) as compact JSON text, ordered by verdict ({@linkcode VERDICTS}'
   * order), then drift verdict ({@linkcode DRIFT_VERDICTS}'), then name. The text is the
   * database's JSON: characters a terminal would act on are not yet escaped (lib/printable.ts
   * `jsonSafe` does that where it is written).
   */
  machines: string[];
}

/** Options of {@linkcode readFleet}. */
export interface FleetOptions {
  /** Judge at this instant instead of the database's clock (tests). */
  now?: Date;
  /** Added to the silence allowance, in ms (default {@linkcode DEFAULT_GRACE_MS}). */
  graceMs?: number;
  /**
   * Only the nodes `status` lists come back (every node is still judged and counted): those not
   * doing what they were told, away, or with a drift alarm.
   */
  listedOnly?: boolean;
  /** Only these nodes are read, judged and counted. */
  names?: readonly string[];
  /** Nodes one row carries (default {@linkcode NODES_PER_ROW}; tests cross the rows' boundaries). */
  nodesPerRow?: number;
}

/** A SQL string literal of a constant of this program (its words hold no quote). */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** `column`'s value as the word of `words` it names, as SQL. */
const wordsSql = (column: string, words: Record<string, string>) =>
  `case ${column} ${
    Object.entries(words).map(([v, w]) => `when ${literal(v)} then ${literal(w)}`).join(" ")
  } end`;

/** A time as ISO 8601 in UTC to the millisecond (as `Date.prototype.toISOString` writes it). */
const isoSql = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A time as epoch milliseconds, as a Date holds it. */
const msSql = (column: string) => `floor(extract(epoch from ${column}) * 1000)::bigint`;

/** The drift verdicts that are alarms (./drift.ts `isDriftAlarm`), as a SQL list. */
const DRIFT_ALARMS_SQL = DRIFT_VERDICTS.filter(isDriftAlarm).map(literal).join(", ");

/**
 * Each node with its verdicts (`v`), judged at `c.now_ms`: the one place the rules are written.
 *
 * - the declaration verdict (`said`, ./state.ts `DeclarationVerdict`): a report is judged against
 *   what was pushed to that node; one claiming a generation, or a digest at that generation,
 *   never pushed to it is an `unknown-claim`, whatever outcome it claims (`claim` says why); a
 *   report about an earlier generation pushed to it leaves the current one `outstanding`;
 * - the silence rule: a node is heard for {@linkcode SILENCE_INTERVALS} intervals of its last
 *   report's (or the link's default) plus the grace after the database received that report;
 *   beyond it a `server` is `silent` whatever it said, an `episodic` node `away` unless it said
 *   refused, failed or an unknown claim;
 * - the drift verdict (./drift.ts): the summary's own status, or `stale` when the result is older
 *   than {@linkcode STALE_AFTER_INTERVALS} of its intervals (the time since the report arrived on
 *   our clock plus the result's age on the node's when it reported), or `unreadable` when the
 *   stored summary is not one this program reads (`drift_kept` false).
 *
 * Every time is compared in whole milliseconds, as a Date holds it.
 */
function fleetSql(sql: Sql, options: FleetOptions) {
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const names = options.names;
  // Written as text and split in SQL: no query of this read sends an array (the driver would make
  // a round trip for the array types first; `status` connects with `fetchTypes: false`).
  const only = names === undefined
    ? sql``
    : sql`where n.name = any(string_to_array(${names.join("\n")}, E'\n'))`;
  const now = options.now === undefined
    ? sql`clock_timestamp()`
    : sql`${options.now.toISOString()}::timestamptz`;
  return sql`
    c as materialized (select ${sql.unsafe(msSql("x"))} as now_ms from (select ${now} as x) t),
    v as (
      select n.name, n.system, n.kind, n.enrolled_at, a.modules, a.modules_json,
        d.generation as d_generation, d.digest as d_digest, d.total as d_total,
        d.pushed_at as d_pushed_at, r.generation as r_generation, r.digest as r_digest,
        r.outcome as r_outcome, r.applied as r_applied, r.total as r_total, r.trigger as r_trigger,
        r.interval_ms as r_interval_ms, r.reported_at as r_reported_at,
        r.received_at as r_received_at, r.pushed as r_pushed, r.problems, nd.summary,
        nd.ran_at as drift_ran_at, k.said,
        case when k.said in ('ok', 'failed') then r.applied else 0 end as applied,
        coalesce(d.total, 0) as total, p.interval_ms, p.allowed_ms,
        p.quiet_ms > p.allowed_ms as overdue,
        case when r.node is null or p.quiet_ms <= p.allowed_ms then k.said
          when n.kind = 'server' then 'silent'
          when k.said in ('refused', 'failed', 'unknown-claim') then k.said
          else 'away' end as verdict,
        case when k.said = 'unknown-claim' then
          'its last report claims generation ' || r.generation || ' with digest ' || r.digest ||
          case when d.node is null then ', and nothing was ever pushed to it'
            when r.generation > d.generation then
              ', and the last generation pushed to it is ' || d.generation
            else ', which was never pushed to it (its generation ' || d.generation ||
              ' has digest ' || d.digest || ')' end
        end as claim,
        case when nd.node is null then 'not-checked'
          when not x.kept or nd.summary->>'status' = 'unreadable' then 'unreadable'
          when x.age_ms > ${STALE_AFTER_INTERVALS}::bigint * 1000 *
            (nd.summary->>'intervalSeconds')::bigint then 'stale'
          else nd.summary->>'status' end as drift,
        nd.node is not null as drift_stored, x.age_ms as drift_age_ms, x.kept as drift_kept
      from nodes n cross join c
      left join current_declarations d on d.node = n.name
      left join last_reports r on r.node = n.name
      left join node_drift nd on nd.node = n.name
      left join (
        select a.node, string_agg(a.module, ' ' order by a.position) as modules,
          '[' || string_agg(to_json(a.module)::text, ',' order by a.position) || ']' as modules_json
        from assignments a group by a.node) a on a.node = n.name
      cross join lateral (select case
        when r.node is null then 'never-spoke'
        -- The link says it holds no declaration: never pushed one, or one pushed has not reached it.
        when r.outcome = 'undeclared' then
          case when d.node is null then 'not-pushed' else 'outstanding' end
        -- A link's refusal of a message sent to it: generation 0, which no declaration has.
        when r.outcome = 'refused' and r.generation = 0 then 'refused'
        -- A claim of what was never pushed to it (neither its current declaration nor, as ingest
        -- recorded, an earlier generation with the digest pushed then).
        when d.node is null or not ((r.generation = d.generation and r.digest = d.digest)
          or r.pushed is true) then 'unknown-claim'
        when r.generation <> d.generation or r.digest <> d.digest then 'outstanding'
        when r.outcome = 'applied' then 'ok'
        else r.outcome end as said offset 0) k
      cross join lateral (select
        coalesce(r.interval_ms, ${DEFAULT_INTERVAL_MS}) as interval_ms,
        ${SILENCE_INTERVALS} * coalesce(r.interval_ms, ${DEFAULT_INTERVAL_MS})::bigint +
          ${graceMs}::bigint as allowed_ms,
        greatest(0, c.now_ms - ${sql.unsafe(msSql("r.received_at"))}) as quiet_ms offset 0) p
      cross join lateral (select
        -- What this program reads of a stored summary: its status, and for a run's verdict the
        -- instant it observed (ingest stored it) and its interval as a whole number of seconds.
        coalesce(nd.summary->>'status' = 'unreadable' or (
          nd.summary->>'status' in ('clean', 'drift', 'unobservable') and nd.ran_at_ms is not null
          and nd.ran_at is not null and jsonb_typeof(nd.summary->'intervalSeconds') = 'number'
          and nd.summary->>'intervalSeconds' ~ '^[1-9][0-9]{0,11}$'), false) as kept,
        greatest(0, c.now_ms - ${sql.unsafe(msSql("nd.received_at"))}) +
          greatest(0, ${sql.unsafe(msSql("nd.reported_at"))} - nd.ran_at_ms) as age_ms offset 0) x
      ${only})`;
}

/**
 * A node of `v` as a board machine (./report.ts `BoardMachine`) in compact JSON, its fields in
 * that interface's order; an absent field is left out, never null. Each value is written by
 * `to_json` or is a number, a boolean or a word of this program, so no stored text can end a
 * string early; jsonb's text of a stored value is JSON as it is.
 */
const MACHINE_JSON = `
  '{"name":' || to_json(name)::text || ',"system":' || to_json(system)::text ||
  ',"kind":' || to_json(kind)::text || ',"verdict":"' || verdict || '","words":"' ||
  ${wordsSql("verdict", VERDICT_WORDS)} || '","applied":' || applied || ',"total":' || total ||
  ',"modules":' || coalesce(modules_json, '[]') || ',"problems":' || coalesce((
    select '[' || string_agg('{' ||
      coalesce('"id":' || (e.p->'id')::text || ',', '') ||
      coalesce('"path":' || (e.p->'path')::text || ',', '') ||
      '"message":' || coalesce((e.p->'message')::text, '""') || '}', ',' order by e.o) || ']'
    from jsonb_array_elements(problems) with ordinality e(p, o)), '[]') ||
  ',"drift":{"verdict":"' || drift || '","words":"' || ${wordsSql("drift", DRIFT_WORDS)} ||
  '","findings":' || case when drift_kept and summary->>'status' <> 'unreadable' then coalesce((
      select sum((f->>'count')::numeric) from jsonb_array_elements(summary->'findings') f
      where jsonb_typeof(f->'count') = 'number'), 0) else 0 end ||
  ',"counts":' || case when drift_kept and summary->>'status' <> 'unreadable' then coalesce((
      select '[' || string_agg('{"check":' || coalesce((f.f->'check')::text, 'null') ||
        ',"direction":' || coalesce((f.f->'direction')::text, 'null') || ',"count":' ||
        coalesce((f.f->'count')::text, 'null') || '}', ',' order by f.o) || ']'
      from jsonb_array_elements(summary->'findings') with ordinality f(f, o)), '[]')
    else '[]' end ||
  case when not drift_stored then ''
    when not drift_kept then ',"path":"(inventory)","problem":' || to_json(${
  literal(NOT_KEPT_PROBLEM)
}::text)::text
    when summary->>'status' = 'unreadable' then
      ',"path":' || coalesce((summary->'path')::text, '""') ||
      ',"problem":' || coalesce((summary->'problem')::text, '""')
    else ',"last":"' || (summary->>'status') || '","ranAt":' || to_json(drift_ran_at)::text ||
      ',"ageSeconds":' || floor(drift_age_ms / 1000) ||
      ',"intervalSeconds":' || (summary->'intervalSeconds')::text ||
      ',"registry":' || coalesce((summary->'registry')::text, '""') ||
      case when summary->>'status' = 'unobservable' then
        ',"unobserved":' || coalesce((summary->'unobserved')::text, '[]') else '' end
  end || '}' ||
  coalesce(',"generation":' || d_generation || ',"digest":' || to_json(d_digest)::text, '') ||
  case when r_generation is null then '' else
    coalesce(',"pushedAt":"' || ${isoSql("d_pushed_at")} || '"', '') ||
    ',"reportedGeneration":' || r_generation || ',"lastReportAt":"' ||
    ${isoSql("r_received_at")} || '","trigger":' || to_json(r_trigger)::text ||
    ',"intervalMs":' || interval_ms || ',"intervalStated":' || (r_interval_ms is not null) ||
    ',"quietAllowedMs":' || allowed_ms || ',"overdue":' || overdue ||
    case when overdue then ',"said":"' || said || '"' else '' end ||
    coalesce(',"claim":' || to_json(claim)::text, '')
  end || '}'`;

/**
 * Reads and judges the fleet in one statement (the rules: {@linkcode fleetSql}): the nodes'
 * states from the copies the inventory keeps current as they are written (`current_declarations`,
 * `last_reports`, migration 0006_node_state; `node_drift`, 0004 and 0010), their modules from
 * `assignments`, the counts of every verdict, and each node read as the board machine the
 * database writes in JSON. One row a verdict, drift verdict and chunk of up to `nodesPerRow` nodes
 * in name order: a head line (the clock, the two verdicts, the chunk, the nodes it counts), then
 * the machines, one a line (JSON text holds no raw newline). The nodes are never decoded field by
 * field here: `board --json` writes the database's text as it is.
 *
 * @throws {DatabaseError} when a row's head is not one.
 */
export async function readFleet(sql: Sql, options: FleetOptions = {}): Promise<Fleet> {
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const nodesPerRow = options.nodesPerRow ?? NODES_PER_ROW;
  const listed = options.listedOnly
    ? sql.unsafe(`(verdict <> 'ok' or drift in (${DRIFT_ALARMS_SQL}))`)
    : sql`true`;
  const rows = await sql<{ s: string }[]>`
    with ${fleetSql(sql, options)}
    select (select now_ms from c) || E'\t' || verdict || E'\t' || drift || E'\t' || chunk ||
      E'\t' || count(*) || coalesce(E'\n' || string_agg(line, E'\n' order by name), '') as s
    from (
      -- The machines written before the rows are numbered (\`offset 0\` keeps the planner from
      -- moving them after): the sort then carries the listed nodes' text, not every node's
      -- columns, and a node not listed is never written (status: 0.75x the CPU, 2026-12-06).
      select verdict, drift, name, line,
        (row_number() over (partition by verdict, drift order by name) - 1) / ${nodesPerRow}::int
          as chunk
      from (select verdict, drift, name,
        case when ${listed} then ${sql.unsafe(MACHINE_JSON)} end as line from v offset 0) w) l
    group by verdict, drift, chunk`;
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
  const driftCounts = Object.fromEntries(DRIFT_VERDICTS.map((v) => [v, 0])) as Record<
    DriftVerdict,
    number
  >;
  const rank = new Map<string, number>(VERDICTS.map((v, i) => [v, i]));
  const driftRank = new Map<string, number>(DRIFT_VERDICTS.map((v, i) => [v, i]));
  const groups: { key: number; text: string; from: number }[] = [];
  let nowMs = Number.NaN;
  let nodes = 0;
  for (const row of rows) {
    if (typeof row.s !== "string") {
      throw new DatabaseError("Cannot read the fleet: a row of the fleet read is empty");
    }
    const end = row.s.indexOf("\n");
    const head = (end < 0 ? row.s : row.s.slice(0, end)).split("\t");
    const [clock, verdict, drift, chunk, n] = head;
    const r = rank.get(verdict!);
    const dr = driftRank.get(drift!);
    if (head.length !== 5 || r === undefined || dr === undefined) {
      throw new DatabaseError(`Cannot read the fleet: a row's head is not one: ${head.join(" ")}`);
    }
    nowMs = Number(clock);
    counts[verdict as Verdict] += Number(n);
    driftCounts[drift as DriftVerdict] += Number(n);
    nodes += Number(n);
    if (end >= 0) {
      groups.push({ key: (r * 100 + dr) * 1e6 + Number(chunk), text: row.s, from: end + 1 });
    }
  }
  groups.sort((a, b) => a.key - b.key);
  const machines: string[] = [];
  for (const g of groups) {
    for (const line of g.text.slice(g.from).split("\n")) machines.push(line);
  }
  if (Number.isNaN(nowMs)) {
    // No node: the clock alone, still the database's (or the one given).
    const [row] = await sql<{ s: string }[]>`with ${
      fleetSql(sql, options)
    } select now_ms::text as s from c`;
    nowMs = Number(row!.s);
  }
  return { now: new Date(nowMs), graceMs, nodes, counts, driftCounts, machines };
}

/**
 * The fields of a node's line in {@linkcode readNodeStates}, in order, tab-separated; an absent
 * value is empty. Every one but the last two is a name, word, digest or number the schema's CHECKs
 * keep free of tabs, newlines and spaces (`modules` is the assigned modules in order, separated by
 * spaces; `r_pushed` is `p` or `u`); `claim` is a sentence of this program's words with numbers
 * and digests; `problems` is jsonb's text (empty when there are none), and JSON text escapes every
 * control character in a string, so it holds no raw tab or newline either.
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
  "said",
  "applied",
  "total",
  "claim",
  "problems",
] as const;

/**
 * Every node's state and declaration verdict (or only `names`'), ordered by name: what
 * `push --behind` and the catalogue act on, judged by the rules of {@linkcode fleetSql}. Each node
 * is one line of text ({@linkcode STATE_FIELDS}), each row the lines of up to `nodesPerRow` nodes.
 *
 * @throws {DatabaseError} when a line does not have {@linkcode STATE_FIELDS}' fields.
 */
export async function readNodeStates(
  sql: Sql,
  names?: readonly string[],
  nodesPerRow: number = NODES_PER_ROW,
): Promise<NodeState[]> {
  const ms = (column: string) =>
    `coalesce(((extract(epoch from ${column}) * 1000)::float8)::text, '')`;
  const rows = await sql<{ s: string }[]>`
    with ${fleetSql(sql, names === undefined ? {} : { names })}
    select string_agg(s, E'\n' order by name) as s from (
      select name, (row_number() over (order by name) - 1) / ${nodesPerRow}::int as chunk,
        name || E'\t' || system || E'\t' || kind || E'\t' ||
        ${sql.unsafe(ms("enrolled_at"))} || E'\t' || coalesce(modules, '') || E'\t' ||
        coalesce(d_generation::text, '') || E'\t' || coalesce(d_digest, '') || E'\t' ||
        coalesce(d_total::text, '') || E'\t' || ${sql.unsafe(ms("d_pushed_at"))} || E'\t' ||
        coalesce(r_generation::text, '') || E'\t' || coalesce(r_digest, '') || E'\t' ||
        coalesce(r_outcome, '') || E'\t' || coalesce(r_applied::text, '') || E'\t' ||
        coalesce(r_total::text, '') || E'\t' || coalesce(r_trigger, '') || E'\t' ||
        coalesce(r_interval_ms::text, '') || E'\t' || ${sql.unsafe(ms("r_reported_at"))} ||
        E'\t' || ${sql.unsafe(ms("r_received_at"))} || E'\t' ||
        case r_pushed when true then 'p' when false then 'u' else '' end || E'\t' ||
        said || E'\t' || applied || E'\t' || total || E'\t' || coalesce(claim, '') || E'\t' ||
        coalesce(nullif(problems, '[]'::jsonb)::text, '') as s
      from v) x
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
    said: f[19] as DeclarationVerdict,
    applied: Number(f[20]),
    total: Number(f[21]),
  };
  if (f[22] !== "") state.claim = f[22];
  if (f[5] !== "") {
    state.declaration = {
      generation: Number(f[5]),
      digest: f[6]!,
      total: Number(f[7]),
      pushedAt: new Date(Number(f[8])),
    };
  }
  if (f[9] !== "") {
    const problems = f[23]!;
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
