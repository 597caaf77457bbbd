/**
 * `mesh-control node`: nodes and their modules: `enroll`, `assign`, `unassign`, `kind`, `remove`,
 * `rotate`.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { connect, type Connections, type ControlContext, Refused } from "./context.ts";

/** The actions of `node`'s subcommands, by name (declared in control/options.ts). */
export const actions: Readonly<Record<string, CommandAction<ControlContext>>> = {
  enroll: async (ctx, args, options) => {
    const [name] = args as [string];
    const opts = options as unknown as Connections & { system: string; episodic?: boolean };
    const { out } = ctx;
    const { database, endpoints } = connect(ctx);
    const { nodeNameProblem } = await import("../../lib/broker.ts");
    const bad = nodeNameProblem(name);
    if (bad !== undefined) throw new Refused(`Cannot enroll node: ${bad}`);
    // The arguments are judged before any connection is asked for.
    const { SYSTEMS } = await import("../inventory.ts");
    if (!(SYSTEMS as readonly string[]).includes(opts.system)) {
      throw new Refused(
        `Cannot enroll node "${name}": system "${opts.system}" is not one of ${SYSTEMS.join(", ")}`,
      );
    }
    const ends = await endpoints(opts);
    const sql = await database(opts);
    const { insertNode } = await import("../inventory.ts");
    const { createNodeAccount, deleteNodeAccount } = await import("../broker_admin.ts");
    // The node's queue takes the type of the topology it joins (that of mesh.reports).
    const { existingQueueType } = await import("../topology.ts");
    const { REPORTS_QUEUE } = await import("../../lib/broker.ts");
    const queueType = await existingQueueType(ends.amqp, REPORTS_QUEUE) ?? "classic";
    let account: { url: string; account: string; password: string } | undefined;
    try {
      await sql.begin(async (tx) => {
        await insertNode(tx, name, opts.system, {
          kind: opts.episodic ? "episodic" : "server",
        });
        account = await createNodeAccount(ends, name, { queueType });
      });
    } catch (error) {
      // The database rolled back; an account made before the commit failed is removed.
      if (account !== undefined) await deleteNodeAccount(ends, name).catch(() => {});
      throw error;
    }
    // With several members, the node gets each one's URL with its account (comma-separated,
    // as mesh-host link --broker and MESH_BROKER_URL take them).
    const { withCredential } = await import("../../lib/broker_urls.ts");
    const url = ends.members.length === 1
      ? account!.url
      : ends.members.map((m) => withCredential(m, account!.account, account!.password)).join(
        ",",
      );
    out(
      `enrolled ${name} (${opts.system}, ${
        opts.episodic ? "episodic" : "server"
      }); its broker URL, shown this once and kept nowhere else:\n${url}\n`,
    );
  },
  assign: async (ctx, args, options) => {
    const [name, module] = args as [string, string];
    const opts = options as Connections;
    const { out } = ctx;
    const { database } = connect(ctx);
    const sql = await database(opts);
    const { assignModule } = await import("../inventory.ts");
    const added = await assignModule(sql, name, module);
    out(
      added ? `assigned ${module} to ${name}\n` : `${module} was already assigned to ${name}\n`,
    );
  },
  unassign: async (ctx, args, options) => {
    const [name, module] = args as [string, string];
    const opts = options as Connections;
    const { out } = ctx;
    const { database } = connect(ctx);
    const sql = await database(opts);
    const { unassignModule } = await import("../inventory.ts");
    const removed = await unassignModule(sql, name, module);
    if (!removed) throw new Refused(`Module "${module}" is not assigned to "${name}"`);
    out(`unassigned ${module} from ${name}\n`);
  },
  kind: async (ctx, args, options) => {
    const [name, kind] = args as [string, string];
    const opts = options as Connections;
    const { out } = ctx;
    const { database } = connect(ctx);
    const { NODE_KINDS } = await import("../state.ts");
    if (!(NODE_KINDS as readonly string[]).includes(kind)) {
      throw new Refused(
        `Cannot set the kind of node "${name}": "${kind}" is not one of ${NODE_KINDS.join(", ")}`,
      );
    }
    const sql = await database(opts);
    const { setNodeKind } = await import("../inventory.ts");
    const before = await setNodeKind(sql, name, kind);
    out(
      before === kind ? `${name} is already ${kind}\n` : `${name} is now ${kind} (was ${before})\n`,
    );
  },
  remove: async (ctx, args, options) => {
    const [name] = args as [string];
    const opts = options as Connections;
    const { out } = ctx;
    const { database, endpoints } = connect(ctx);
    const ends = await endpoints(opts);
    const sql = await database(opts);
    const { removeNode } = await import("../leave.ts");
    const r = await removeNode(sql, ends, name);
    const broker = `${
      r.account ? "broker account deleted" : "no broker account left"
    }, ${r.connections} open connection${r.connections === 1 ? "" : "s"} closed, queue deleted`;
    switch (r.outcome) {
      case "removed":
        out(
          `removed ${r.node}: ${broker}; ${r.rows.declarations} declarations, ${r.rows.reports} reports and ${r.rows.assignments} assignments deleted; removal recorded at ${r.removedAt.toISOString()}\n`,
        );
        break;
      case "already-removed":
        out(
          `${r.node} was already removed at ${r.removedAt.toISOString()}; broker checked again: ${broker}\n`,
        );
        break;
    }
  },
  rotate: async (ctx, args, options) => {
    const [name] = args as [string];
    const opts = options as Connections;
    const { out } = ctx;
    const { database, endpoints } = connect(ctx);
    const ends = await endpoints(opts);
    const sql = await database(opts);
    const { rotateNode } = await import("../leave.ts");
    const { RotationIncomplete } = await import("../broker_admin.ts");
    try {
      const r = await rotateNode(sql, ends, name);
      // With several members, each one's URL with the new credential (as enroll prints them).
      const { withCredential } = await import("../../lib/broker_urls.ts");
      const url = ends.members.length === 1
        ? r.url
        : ends.members.map((m) => withCredential(m, r.account, r.password)).join(",");
      out(
        `rotated the credential of ${name}: the old one is refused, ${r.connections} open connection${
          r.connections === 1 ? "" : "s"
        } closed; its new broker URL, shown this once and kept nowhere else:\n${url}\n`,
      );
    } catch (error) {
      if (error instanceof RotationIncomplete) {
        // The new credential is the only one that works now: shown, or it would be lost.
        out(`the new broker URL of ${name}, shown this once:\n${error.account.url}\n`);
      }
      throw error;
    }
  },
};
