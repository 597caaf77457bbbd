/**
 * The inventory's reads and writes: nodes, modules, assignments, rendering a node's declaration
 * from its modules, and the one read of every node's state (current declaration and last report)
 * that status, board and `push --behind` all classify.
 *
 * @module
 */

import {
  declarationMessageBytes,
  MAX_DECLARATION_MESSAGE_BYTES,
  nodeNameProblem,
} from "../lib/broker.ts";
import {
  type Declaration,
  declarationDigest,
  DeclarationError,
  parse,
  type Resource,
} from "../lib/declaration.ts";
import { DatabaseError, describe, type Queryable, type Sql } from "./db.ts";
import { type ModuleFile, parseModule } from "./module_file.ts";
import { BINDING_MODE, bindingPath, bindingText } from "../lib/binding.ts";
import { NODE_KINDS, type NodeKind, type SystemName, SYSTEMS } from "./node_kind.ts";

export { type SystemName, SYSTEMS } from "./node_kind.ts";

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
    declaration = parseModule(body).declaration;
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
 * A node whose modules require provisions is given one binding file resource per provision
 * (lib/binding.ts), from the one module of the catalogue providing it.
 *
 * @throws {InputError} when two modules of a node declare the same id, or the result does not
 *   parse, naming the node, the modules and every problem; or a provision required has no
 *   provider, two, or a provider with no address (naming the node, the provision and the module
 *   requiring it).
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
  const parsedModules = new Map<string, ModuleFile>();
  // Providers are looked for only when a module assigned requires something: a module's body
  // names its provisions, and only bodies that mention "provides" are read for them.
  let providers: Map<string, Provider[]> | undefined;
  const providersOnce = async () => providers ??= await readProviders(sql);
  // Nodes running the same modules render the same declaration: once per distinct list.
  const renderings = new Map<string, Omit<Rendered, "node">>();
  const out: Rendered[] = [];
  for (const node of nodes) {
    const modules = byNode.get(node) ?? [];
    const key = modules.join("\0");
    let rendering = renderings.get(key);
    if (rendering === undefined) {
      rendering = await renderFrom(node, modules, bodies, { parsedModules, providersOnce });
      renderings.set(key, rendering);
    }
    out.push({ node, ...rendering });
  }
  return out;
}

/** A module of the catalogue offering a provision, with its address when it gives one. */
interface Provider {
  module: string;
  address?: string;
}

/**
 * Every provision offered in the catalogue, by name, with the modules offering it. A body that
 * no longer reads is passed over here (rendering a node that runs it says why).
 */
async function readProviders(sql: Sql): Promise<Map<string, Provider[]>> {
  const rows = await sql<{ name: string; body: string }[]>`
    select name, body from modules where strpos(body, '"provides"') > 0 order by name`;
  const out = new Map<string, Provider[]>();
  for (const row of rows) {
    let file: ModuleFile;
    try {
      file = parseModule(row.body);
    } catch {
      continue;
    }
    for (const p of file.provides) {
      const list = out.get(p.name) ?? [];
      list.push({ module: row.name, ...(p.address === undefined ? {} : { address: p.address }) });
      out.set(p.name, list);
    }
  }
  return out;
}

/**
 * The binding file resources of a node whose modules require provisions: one per provision
 * required (in the order first required), each from the one module of the catalogue providing it.
 *
 * @throws {InputError} naming the provision, the module requiring it and the node when no module
 *   provides it, more than one does, or its provider gives no address. Never a fallback.
 */
function bindingResources(
  node: string,
  required: { module: string; name: string }[],
  providers: Map<string, Provider[]>,
): Resource[] {
  const out: Resource[] = [];
  const seen = new Set<string>();
  for (const { module, name } of required) {
    if (seen.has(name)) continue;
    seen.add(name);
    const cannot = (why: string) =>
      new InputError(
        `Cannot bind node "${node}": module "${module}" requires provision "${name}", ${why}`,
      );
    const found = providers.get(name) ?? [];
    if (found.length === 0) throw cannot("and no module in the catalogue provides it");
    if (found.length > 1) {
      throw cannot(
        `and modules ${
          found.map((p) => `"${p.module}"`).join(" and ")
        } both provide it (one provider is allowed)`,
      );
    }
    const provider = found[0]!;
    if (provider.address === undefined) {
      throw cannot(`and module "${provider.module}", which provides it, gives it no address`);
    }
    out.push({
      id: `mesh-binding.${name}`,
      type: "file",
      path: bindingPath(name),
      mode: BINDING_MODE,
      content: bindingText({ name, address: provider.address, module: provider.module }),
    });
  }
  return out;
}

async function renderFrom(
  node: string,
  modules: string[],
  bodies: Map<string, { name: string; version: number; body: string }>,
  cache: {
    parsedModules: Map<string, ModuleFile>;
    providersOnce: () => Promise<Map<string, Provider[]>>;
  },
): Promise<Omit<Rendered, "node">> {
  const { parsedModules } = cache;
  const resources: Resource[] = [];
  const from = new Map<string, string>();
  const required: { module: string; name: string }[] = [];
  for (const name of modules) {
    let declaration = parsedModules.get(name);
    if (declaration === undefined) {
      try {
        declaration = parseModule(bodies.get(name)!.body);
      } catch (error) {
        throw new InputError(
          `Cannot render node "${node}": module "${name}" does not parse: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
      parsedModules.set(name, declaration);
    }
    for (const r of declaration.declaration.resources) {
      const other = from.get(r.id);
      if (other !== undefined) {
        throw new InputError(
          `Cannot render node "${node}": resource id "${r.id}" is declared by module "${other}" and by module "${name}"`,
        );
      }
      from.set(r.id, name);
      resources.push(r);
    }
    for (const want of declaration.requires) required.push({ module: name, name: want });
  }
  if (required.length > 0) {
    for (const r of bindingResources(node, required, await cache.providersOnce())) {
      const other = from.get(r.id);
      if (other !== undefined) {
        throw new InputError(
          `Cannot render node "${node}": resource id "${r.id}" is declared by module "${other}" and by the binding of the same name`,
        );
      }
      from.set(r.id, "binding");
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
  // A node's link refuses a larger message from its header (lib/amqp_transport.ts, under `openBroker`): said
  // here, before anything is pushed, rather than refused there.
  const bytes = declarationMessageBytes(node, text);
  if (bytes > MAX_DECLARATION_MESSAGE_BYTES) {
    throw new InputError(
      `Cannot render node "${node}" from modules ${
        modules.map((m) => `"${m}"`).join(", ")
      }: its declaration message would be ${bytes} bytes, more than the ${MAX_DECLARATION_MESSAGE_BYTES} a node's link takes`,
    );
  }
  return {
    text,
    digest: await declarationDigest(text),
    total: resources.length,
    modules: modules.map((m) => ({ name: m, version: bodies.get(m)!.version })),
  };
}

export {
  type CurrentDeclaration,
  type LastReport,
  type NodeState,
  readNodeStates,
} from "./node_state.ts";

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
