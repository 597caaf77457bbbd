/**
 * The inventory's reads and writes: nodes, modules, assignments, rendering a node's declaration
 * from its modules, and the one read of every node's state (current declaration and last report)
 * that status, board and `push --behind` all classify.
 *
 * @module
 */

import { nodeNameProblem } from "../lib/broker.ts";
import {
  type Declaration,
  declarationDigest,
  DeclarationError,
  parse,
  type Resource,
} from "../host/declaration.ts";
import { DatabaseError, describe, type Queryable, type Sql } from "./db.ts";
import { NODE_KINDS, type NodeKind } from "./state.ts";

/** The systems a node can be enrolled as (one host build each). */
export const SYSTEMS = ["arch", "alpine", "android", "debian"] as const;
/** A system a node can be enrolled as. */
export type SystemName = typeof SYSTEMS[number];

/** A module name: letters, digits, `.`, `_`, `-`; at most 100 characters. */
export const MODULE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Input the control plane refuses (exit 2): a bad name, an unknown node, a module that does not parse. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InputError";
  }
}

/** One row of `nodes`. */
export interface NodeRow {
  name: string;
  system: SystemName;
  kind: NodeKind;
  enrolled_at: Date;
}

/**
 * Records a node (inside the caller's transaction, so a broker failure rolls it back), of kind
 * `server` unless told otherwise. A node of that name removed before is enrolled anew (its
 * removal record is dropped).
 *
 * @throws {InputError} for a bad name, system or kind, or a node already enrolled.
 */
export async function insertNode(
  sql: Queryable,
  name: string,
  system: string,
  options: { kind?: string } = {},
): Promise<void> {
  const bad = nodeNameProblem(name);
  if (bad !== undefined) throw new InputError(`Cannot enroll node: ${bad}`);
  if (!(SYSTEMS as readonly string[]).includes(system)) {
    throw new InputError(
      `Cannot enroll node "${name}": system "${system}" is not one of ${SYSTEMS.join(", ")}`,
    );
  }
  const kind = options.kind ?? "server";
  if (!isNodeKind(kind)) {
    throw new InputError(
      `Cannot enroll node "${name}": kind "${kind}" is not one of ${NODE_KINDS.join(", ")}`,
    );
  }
  const rows = await sql`
    insert into nodes (name, system, kind) values (${name}, ${system}, ${kind})
    on conflict (name) do nothing returning name`;
  if (rows.length === 0) throw new InputError(`Cannot enroll node "${name}": already enrolled`);
  await sql`delete from removals where what = 'node' and name = ${name}`;
}

/** Whether `kind` is a {@linkcode NodeKind}. */
export function isNodeKind(kind: string): kind is NodeKind {
  return (NODE_KINDS as readonly string[]).includes(kind);
}

/**
 * Sets a node's kind (`node kind NAME server|episodic`).
 *
 * @returns the kind it had before (equal to `kind` when nothing changed).
 * @throws {InputError} for a kind that is not one, or a node not enrolled (nothing written).
 */
export async function setNodeKind(sql: Sql, node: string, kind: string): Promise<NodeKind> {
  if (!isNodeKind(kind)) {
    throw new InputError(
      `Cannot set the kind of node "${node}": "${kind}" is not one of ${NODE_KINDS.join(", ")}`,
    );
  }
  return await sql.begin(async (tx) => {
    const row = await requireNode(tx, node, { lock: true });
    if (row.kind !== kind) await tx`update nodes set kind = ${kind} where name = ${node}`;
    return row.kind;
  });
}

/** What `module add` did. */
export interface ModuleChange {
  name: string;
  version: number;
  digest: string;
  resources: number;
  change: "created" | "updated" | "unchanged";
}

/**
 * Adds or updates a module from a declaration fragment (JSON, declaration version 1), origin
 * "handed-over". The fragment is parsed as the link will parse it (actions refused), so a module
 * that a node would refuse is refused here, with every problem.
 *
 * @throws {InputError} for a bad name or a fragment that does not parse (nothing written).
 */
export async function addModule(sql: Sql, name: string, body: string): Promise<ModuleChange> {
  if (!MODULE_NAME.test(name)) {
    throw new InputError(
      `Cannot add module ${
        JSON.stringify(name)
      }: a module name is letters, digits, ".", "_" and "-" (at most 100), starting with a letter or digit`,
    );
  }
  let declaration: Declaration;
  try {
    declaration = parse(body);
  } catch (error) {
    if (error instanceof DeclarationError) {
      throw new InputError(`Cannot add module "${name}": ${error.message}`);
    }
    throw error;
  }
  const digest = await declarationDigest(body);
  return await sql.begin(async (tx) => {
    const [row] = await tx<{ version: number; digest: string; origin: string }[]>`
      select version, digest, origin from modules where name = ${name} for update`;
    if (row !== undefined && row.origin !== "handed-over") {
      throw new InputError(
        `Cannot add module "${name}": a ${row.origin} module of that name exists (${
          row.origin === "shipped" ? "it comes with the control plane" : "module build updates it"
        }); give the fragment another name`,
      );
    }
    if (row?.digest === digest) {
      return {
        name,
        version: row.version,
        digest,
        resources: declaration.resources.length,
        change: "unchanged" as const,
      };
    }
    const version = (row?.version ?? 0) + 1;
    await tx`
      insert into modules (name, version, digest, body, origin)
      values (${name}, ${version}, ${digest}, ${body}, 'handed-over')
      on conflict (name) do update set version = excluded.version, digest = excluded.digest,
        body = excluded.body, origin = excluded.origin, updated_at = now()`;
    // A module removed before and added again is in the catalogue anew.
    await tx`delete from removals where what = 'module' and name = ${name}`;
    return {
      name,
      version,
      digest,
      resources: declaration.resources.length,
      change: row === undefined ? "created" as const : "updated" as const,
    };
  });
}

/**
 * Assigns `module` to `node` (after the modules it already runs).
 *
 * @returns false when it was already assigned.
 * @throws {InputError} when the node or the module is not known.
 */
export async function assignModule(sql: Sql, node: string, module: string): Promise<boolean> {
  return await sql.begin(async (tx) => {
    await requireNode(tx, node);
    const [m] = await tx`select 1 from modules where name = ${module}`;
    if (m === undefined) {
      throw new InputError(`Cannot assign module "${module}": no such module (module add first)`);
    }
    const rows = await tx`
      insert into assignments (node, module) values (${node}, ${module})
      on conflict do nothing returning node`;
    return rows.length > 0;
  });
}

/**
 * Removes `module` from `node`'s assignments.
 *
 * @returns false when it was not assigned.
 * @throws {InputError} when the node is not known.
 */
export async function unassignModule(sql: Sql, node: string, module: string): Promise<boolean> {
  return await sql.begin(async (tx) => {
    await requireNode(tx, node);
    const rows = await tx`
      delete from assignments where node = ${node} and module = ${module} returning node`;
    return rows.length > 0;
  });
}

/**
 * The node's row (locked for the caller's transaction with `lock`).
 *
 * @throws {InputError} when `node` is not enrolled (saying when, if it was removed).
 */
export async function requireNode(
  sql: Queryable,
  node: string,
  options: { lock?: boolean } = {},
): Promise<NodeRow> {
  const bad = nodeNameProblem(node);
  if (bad !== undefined) throw new InputError(bad);
  const [row] = await sql<NodeRow[]>`
    select name, system, kind, enrolled_at from nodes where name = ${node}
    ${options.lock ? sql`for update` : sql``}`;
  if (row === undefined) {
    const removed = await removedAt(sql, "node", node);
    throw new InputError(
      `No node "${node}" is enrolled${
        removed === undefined ? "" : ` (it was removed at ${removed.toISOString()})`
      }`,
    );
  }
  return row;
}

/** When the node or module `name` was removed, or undefined when it was not (or came back). */
export async function removedAt(
  sql: Queryable,
  what: "node" | "module",
  name: string,
): Promise<Date | undefined> {
  const [row] = await sql<{ removed_at: Date }[]>`
    select removed_at from removals where what = ${what} and name = ${name}`;
  return row?.removed_at;
}

/** A node's declaration rendered from its modules. */
export interface Rendered {
  node: string;
  /** The declaration's JSON text (what is published and what the node digests). */
  text: string;
  digest: string;
  total: number;
  /** The modules it was rendered from, in order, with their versions. */
  modules: { name: string; version: number }[];
}

/**
 * Renders the declarations of `nodes` from their assigned modules, in assignment order, and
 * parses each as the node will (actions refused).
 *
 * @returns one rendering per node, in the order asked.
 * @throws {InputError} when two modules of a node declare the same id, or the result does not
 *   parse, naming the node, the modules and every problem.
 */
export async function renderDeclarations(sql: Sql, nodes: string[]): Promise<Rendered[]> {
  // Which modules each node runs, then each module's body once (a fleet shares a few modules).
  const rows = await sql<{ node: string; module: string }[]>`
    select a.node, a.module from assignments a
    where a.node = any(${nodes})
    order by a.node, a.position`;
  const byNode = new Map<string, string[]>();
  for (const row of rows) {
    const list = byNode.get(row.node) ?? [];
    list.push(row.module);
    byNode.set(row.node, list);
  }
  const names = [...new Set(rows.map((r) => r.module))];
  const bodies = new Map(
    (await sql<{ name: string; version: number; body: string }[]>`
      select name, version, body from modules where name = any(${names})`).map((m) => [m.name, m]),
  );
  const parsedModules = new Map<string, Declaration>();
  // Nodes running the same modules render the same declaration: once per distinct list.
  const renderings = new Map<string, Omit<Rendered, "node">>();
  const out: Rendered[] = [];
  for (const node of nodes) {
    const modules = byNode.get(node) ?? [];
    const key = modules.join("\0");
    let rendering = renderings.get(key);
    if (rendering === undefined) {
      rendering = await renderFrom(node, modules, bodies, parsedModules);
      renderings.set(key, rendering);
    }
    out.push({ node, ...rendering });
  }
  return out;
}

async function renderFrom(
  node: string,
  modules: string[],
  bodies: Map<string, { name: string; version: number; body: string }>,
  parsedModules: Map<string, Declaration>,
): Promise<Omit<Rendered, "node">> {
  const resources: Resource[] = [];
  const from = new Map<string, string>();
  for (const name of modules) {
    let declaration = parsedModules.get(name);
    if (declaration === undefined) {
      try {
        declaration = parse(bodies.get(name)!.body);
      } catch (error) {
        throw new InputError(
          `Cannot render node "${node}": module "${name}" does not parse: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
      parsedModules.set(name, declaration);
    }
    for (const r of declaration.resources) {
      const other = from.get(r.id);
      if (other !== undefined) {
        throw new InputError(
          `Cannot render node "${node}": resource id "${r.id}" is declared by module "${other}" and by module "${name}"`,
        );
      }
      from.set(r.id, name);
      resources.push(r);
    }
  }
  const text = JSON.stringify({ version: 1, resources });
  try {
    parse(text);
  } catch (error) {
    if (error instanceof DeclarationError) {
      throw new InputError(
        `Cannot render node "${node}" from modules ${
          modules.map((m) => `"${m}"`).join(", ")
        }: ${error.message}`,
      );
    }
    throw error;
  }
  return {
    text,
    digest: await declarationDigest(text),
    total: resources.length,
    modules: modules.map((m) => ({ name: m, version: bodies.get(m)!.version })),
  };
}

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
  outcome: "applied" | "refused" | "failed";
  applied: number;
  total: number;
  trigger: "push" | "start" | "interval";
  problems: { id?: string; path?: string; message: string }[];
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

interface StateRow {
  name: string;
  system: SystemName;
  kind: NodeKind;
  enrolled_ms: number;
  modules: string[];
  d_generation: number | null;
  d_digest: string | null;
  d_total: number | null;
  d_pushed_ms: number | null;
  r_generation: number | null;
  r_digest: string | null;
  r_outcome: LastReport["outcome"] | null;
  r_applied: number | null;
  r_total: number | null;
  r_trigger: LastReport["trigger"] | null;
  r_problems: LastReport["problems"] | null;
  r_interval_ms: number | null;
  r_reported_ms: number | null;
  r_received_ms: number | null;
}

/**
 * Reads every node's state (or only `names`) in one query: the current declaration and the last
 * report from the copies the inventory keeps current as they are written
 * (`current_declarations`, `last_reports`, migration 0006_node_state), the modules grouped from
 * `assignments`; for the whole fleet one ordered scan of each, whatever the number of reports.
 */
export async function readNodeStates(sql: Sql, names?: string[]): Promise<NodeState[]> {
  const only = names === undefined ? sql`` : sql`where n.name = any(${names})`;
  // Times as epoch milliseconds (float8, decoded as a number; a timestamptz is decoded as text
  // parsed into a Date): `new Date(ms)` is the same instant, truncated to the millisecond as the
  // driver's Date is.
  const rows = await sql<StateRow[]>`
    select n.name, n.system, n.kind,
      (extract(epoch from n.enrolled_at) * 1000)::float8 as enrolled_ms,
      coalesce(a.modules, '{}') as modules,
      d.generation as d_generation, d.digest as d_digest, d.total as d_total,
      (extract(epoch from d.pushed_at) * 1000)::float8 as d_pushed_ms,
      r.generation as r_generation, r.digest as r_digest, r.outcome as r_outcome,
      r.applied as r_applied, r.total as r_total, r.trigger as r_trigger,
      r.problems as r_problems, r.interval_ms as r_interval_ms,
      (extract(epoch from r.reported_at) * 1000)::float8 as r_reported_ms,
      (extract(epoch from r.received_at) * 1000)::float8 as r_received_ms
    from nodes n
    left join current_declarations d on d.node = n.name
    left join last_reports r on r.node = n.name
    left join (
      select a.node, array_agg(a.module order by a.position) as modules from assignments a
      ${names === undefined ? sql`` : sql`where a.node = any(${names})`}
      group by a.node) a on a.node = n.name
    ${only}
    order by n.name`;
  return rows.map((row) => {
    const state: NodeState = {
      name: row.name,
      system: row.system,
      kind: row.kind,
      enrolledAt: new Date(row.enrolled_ms),
      modules: row.modules,
    };
    if (row.d_generation !== null) {
      state.declaration = {
        generation: row.d_generation,
        digest: row.d_digest!,
        total: row.d_total!,
        pushedAt: new Date(row.d_pushed_ms!),
      };
    }
    if (row.r_generation !== null) {
      state.report = {
        generation: row.r_generation,
        digest: row.r_digest!,
        outcome: row.r_outcome!,
        applied: row.r_applied!,
        total: row.r_total!,
        trigger: row.r_trigger!,
        problems: row.r_problems!,
        reportedAt: new Date(row.r_reported_ms!),
        receivedAt: new Date(row.r_received_ms!),
      };
      if (row.r_interval_ms !== null) state.report.intervalMs = row.r_interval_ms;
    }
    return state;
  });
}

/**
 * For each named node, when its current run of identical reports (same outcome, declaration and
 * problems as its last report) began: "failing the same way since".
 */
export async function sameSince(sql: Sql, names: string[]): Promise<Map<string, Date>> {
  if (names.length === 0) return new Map();
  const rows = await sql<{ node: string; since: Date }[]>`
    select l.node, (
      select min(x.received_at) from reports x
      where x.node = l.node and x.id > coalesce((
        select max(y.id) from reports y
        where y.node = l.node and (y.outcome <> l.outcome or y.digest <> l.digest
          or y.problems <> l.problems)), 0)) as since
    from (
      select distinct on (node) node, outcome, digest, problems from reports
      where node = any(${names}) order by node, id desc) l`;
  return new Map(rows.map((r) => [r.node, r.since]));
}

/**
 * Wraps a database failure that is not already one of ours.
 */
export function asDatabaseError(what: string, error: unknown): Error {
  if (error instanceof InputError || error instanceof DatabaseError) return error;
  return new DatabaseError(`${what}: ${describe(error)}`);
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
