/**
 * Leaving the mesh: removing a node (its broker account, open connections and queue, and its
 * rows), rotating a node's credential, removing a module. Each is all or nothing (the database
 * work is one transaction that commits only after the broker did its part) and idempotent
 * (running it again after it stopped half-way finishes it; after it finished, changes nothing).
 *
 * What is kept: one row per removed node or module in `removals` (what it was, when it left);
 * the node's declarations, reports and assignments are deleted with it.
 *
 * @module
 */

import {
  type BrokerEndpoints,
  deleteNodeAccount,
  type NodeAccount,
  rotateNodePassword,
} from "./broker_admin.ts";
import type { Sql } from "./db.ts";
import { InputError, MODULE_NAME, removedAt, requireNode } from "./inventory.ts";

/** What `node remove` did. */
export type NodeRemoval =
  | {
    outcome: "removed";
    node: string;
    removedAt: Date;
    /** Rows deleted with it. */
    rows: { declarations: number; reports: number; assignments: number };
    /** Whether its broker account still existed (false: an earlier run deleted it). */
    account: boolean;
    /** Open connections closed. */
    connections: number;
  }
  | {
    outcome: "already-removed";
    node: string;
    removedAt: Date;
    account: boolean;
    connections: number;
  };

/**
 * Removes `node`: in one transaction, its row and with it its assignments, declarations and
 * reports are deleted and a `removals` row records what it was; inside that transaction its
 * broker account is deleted, its open connections closed and its queue deleted, and only then
 * the transaction commits (a broker failure leaves the inventory as it was). A node removed
 * before is said to be so, and the broker is asked again (finishing a removal that stopped
 * between the broker and the commit).
 *
 * @throws {InputError} when no node of that name is enrolled or was ever removed (nothing done).
 * @throws {BrokerError} when the broker refuses a step (the inventory is unchanged).
 */
export async function removeNode(
  sql: Sql,
  endpoints: BrokerEndpoints,
  node: string,
): Promise<NodeRemoval> {
  const reason = `mesh-control: node ${node} was removed from the mesh`;
  return await sql.begin(async (tx) => {
    let row;
    try {
      row = await requireNode(tx, node, { lock: true });
    } catch (error) {
      const when = await removedAt(tx, "node", node);
      if (!(error instanceof InputError) || when === undefined) {
        if (error instanceof InputError) {
          throw new InputError(`Cannot remove node "${node}": ${error.message}`);
        }
        throw error;
      }
      const broker = await deleteNodeAccount(endpoints, node, { reason });
      return { outcome: "already-removed" as const, node, removedAt: when, ...broker };
    }
    const [counts] = await tx<
      { declarations: number; reports: number; assignments: number; last_heard: Date | null }[]
    >`
      select
        (select count(*)::int from declarations where node = ${node}) as declarations,
        (select count(*)::int from reports where node = ${node}) as reports,
        (select count(*)::int from assignments where node = ${node}) as assignments,
        (select max(received_at) from reports where node = ${node}) as last_heard`;
    const c = counts!;
    const detail = {
      system: row.system,
      kind: row.kind,
      enrolledAt: row.enrolled_at.toISOString(),
      ...(c.last_heard !== null ? { lastHeardAt: c.last_heard.toISOString() } : {}),
      declarations: c.declarations,
      reports: c.reports,
      assignments: c.assignments,
    };
    const [removal] = await tx<{ removed_at: Date }[]>`
      insert into removals (what, name, detail) values ('node', ${node}, ${tx.json(detail)})
      on conflict (what, name) do update set removed_at = now(), detail = excluded.detail
      returning removed_at`;
    await tx`delete from nodes where name = ${node}`;
    const broker = await deleteNodeAccount(endpoints, node, { reason });
    return {
      outcome: "removed" as const,
      node,
      removedAt: removal!.removed_at,
      rows: { declarations: c.declarations, reports: c.reports, assignments: c.assignments },
      ...broker,
    };
  });
}

/**
 * Rotates `node`'s broker credential: a new password, and every connection open with the old
 * one closed ({@linkcode rotateNodePassword}). The inventory holds no credential, so nothing is
 * written there; the node must be enrolled.
 *
 * @returns the new credential (to be shown once) and how many connections were closed.
 * @throws {InputError} when no node of that name is enrolled (nothing done).
 * @throws {BrokerError} when the broker refuses ({@linkcode RotationIncomplete} when the password
 *   changed and open connections could not all be closed).
 */
export async function rotateNode(
  sql: Sql,
  endpoints: BrokerEndpoints,
  node: string,
): Promise<NodeAccount & { connections: number }> {
  try {
    await requireNode(sql, node);
  } catch (error) {
    if (error instanceof InputError) {
      throw new InputError(`Cannot rotate the credential of node "${node}": ${error.message}`);
    }
    throw error;
  }
  return await rotateNodePassword(endpoints, node);
}

/** What `module remove` did. */
export type ModuleRemoval =
  | { outcome: "removed"; module: string; version: number; removedAt: Date }
  | { outcome: "already-removed"; module: string; removedAt: Date };

/**
 * Removes a module from the catalogue, refused while any node is assigned it (naming them all)
 * and for a module shipped with the control plane (`migrate` would install it again). Its build
 * history (`builds`) is kept; a `removals` row records what it was.
 *
 * @throws {InputError} when the module does not exist and was never removed, is assigned, or is
 *   shipped (nothing written).
 */
export async function removeModule(sql: Sql, module: string): Promise<ModuleRemoval> {
  const action = `Cannot remove module ${JSON.stringify(module)}`;
  if (!MODULE_NAME.test(module)) {
    throw new InputError(`${action}: not a module name`);
  }
  return await sql.begin(async (tx) => {
    const [row] = await tx<
      { version: number; digest: string; origin: string; source: string | null }[]
    >`select version, digest, origin, source from modules where name = ${module} for update`;
    if (row === undefined) {
      const when = await removedAt(tx, "module", module);
      if (when === undefined) throw new InputError(`${action}: no such module`);
      return { outcome: "already-removed" as const, module, removedAt: when };
    }
    if (row.origin === "shipped") {
      throw new InputError(
        `${action}: it is shipped with the control plane (migrate installs it again); unassign it instead`,
      );
    }
    const assigned = await tx<{ node: string }[]>`
      select node from assignments where module = ${module} order by node for share`;
    if (assigned.length > 0) {
      throw new InputError(
        `${action}: ${assigned.length} node${
          assigned.length === 1 ? " is" : "s are"
        } assigned it (${assigned.map((a) => a.node).join(", ")}); unassign it from ${
          assigned.length === 1 ? "it" : "them"
        } first`,
      );
    }
    const detail = {
      version: row.version,
      digest: row.digest,
      origin: row.origin,
      ...(row.source !== null ? { source: row.source } : {}),
    };
    const [removal] = await tx<{ removed_at: Date }[]>`
      insert into removals (what, name, detail) values ('module', ${module}, ${tx.json(detail)})
      on conflict (what, name) do update set removed_at = now(), detail = excluded.detail
      returning removed_at`;
    await tx`delete from modules where name = ${module}`;
    return {
      outcome: "removed" as const,
      module,
      version: row.version,
      removedAt: removal!.removed_at,
    };
  });
}
