/**
 * `mesh-control node`: nodes and their modules: `enroll`, `assign`, `unassign`, `kind`, `remove`,
 * `rotate`.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { NODE_COMMANDS } from "../options.ts";
import { connect, type ControlContext, Refused } from "./context.ts";
import type { Queryable } from "../db.ts";

/**
 * The actions of `node`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof NODE_COMMANDS> = {
  enroll: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out, err } = ctx;
    const { database, endpoints } = connect(ctx);
    // The node verifies every declaration with the control plane's public key: read before
    // anything is made, so that a key that cannot be used refuses the enrollment (exit 2).
    const keyText = await controlKeyText(opts.signingKey);
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
    const action = `Cannot enroll node "${name}"`;
    const given = await givenPublic(opts, action);
    const ends = await endpoints(opts);
    const sql = await database(opts);
    const address = await nodeAddress(sql, ends, opts, given, action, err);
    const { insertNode } = await import("../inventory.ts");
    const { createNodeAccount, deleteNodeAccount } = await import("../broker_admin.ts");
    const { recordPublicBroker, nodeUrl } = await import("../public_broker.ts");
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
        if (address.record) await recordPublicBroker(tx, address.members);
        account = await createNodeAccount(ends, name, { queueType });
      });
    } catch (error) {
      // The database rolled back; an account made before the commit failed is removed.
      if (account !== undefined) await deleteNodeAccount(ends, name).catch(() => {});
      throw error;
    }
    // The node's URL: its own account at the address nodes reach (one URL per member of a
    // cluster, comma-separated, as mesh-host link --broker and MESH_BROKER_URL take them).
    const url = nodeUrl(address.members, account!.account, account!.password, address.nodeCa);
    out(
      `enrolled ${name} (${opts.system}, ${
        opts.episodic ? "episodic" : "server"
      }); its broker URL, shown this once and kept nowhere else:\n${url}\n${address.said}`,
    );
    await handOverCa(address, opts, out);
    out(keyText);
  },
  assign: async (ctx, args, opts) => {
    const [name, module] = args as [string, string];
    const { out } = ctx;
    const { database } = connect(ctx);
    const sql = await database(opts);
    const { assignModule } = await import("../inventory.ts");
    const added = await assignModule(sql, name, module);
    out(
      added ? `assigned ${module} to ${name}\n` : `${module} was already assigned to ${name}\n`,
    );
  },
  unassign: async (ctx, args, opts) => {
    const [name, module] = args as [string, string];
    const { out } = ctx;
    const { database } = connect(ctx);
    const sql = await database(opts);
    const { unassignModule } = await import("../inventory.ts");
    const removed = await unassignModule(sql, name, module);
    if (!removed) throw new Refused(`Module "${module}" is not assigned to "${name}"`);
    out(`unassigned ${module} from ${name}\n`);
  },
  kind: async (ctx, args, opts) => {
    const [name, kind] = args as [string, string];
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
  remove: async (ctx, args, opts) => {
    const [name] = args as [string];
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
  rotate: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out, err } = ctx;
    const { database, endpoints } = connect(ctx);
    const action = `Cannot rotate the credential of node "${name}"`;
    const given = await givenPublic(opts, action);
    const ends = await endpoints(opts);
    const sql = await database(opts);
    // A node that is not enrolled is said as such before its address is judged.
    const { requireNode, InputError } = await import("../inventory.ts");
    try {
      await requireNode(sql, name);
    } catch (error) {
      if (error instanceof InputError) throw new Refused(`${action}: ${error.message}`);
      throw error;
    }
    const address = await nodeAddress(sql, ends, opts, given, action, err);
    const { rotateNode } = await import("../leave.ts");
    const { RotationIncomplete } = await import("../broker_admin.ts");
    const { recordPublicBroker, nodeUrl } = await import("../public_broker.ts");
    let incomplete: InstanceType<typeof RotationIncomplete> | undefined;
    // The address is recorded in a transaction around the rotation (which itself runs on the
    // pool, not in it): a broker that refuses the rotation rolls the address back; a rotation
    // that changed the password commits the address its new URL is printed with (should that
    // commit fail after the broker changed the password, the URL is printed and the address is
    // not kept).
    const r = await sql.begin(async (tx) => {
      if (address.record) await recordPublicBroker(tx, address.members);
      try {
        return await rotateNode(sql, ends, name);
      } catch (error) {
        if (!(error instanceof RotationIncomplete)) throw error;
        incomplete = error;
        return undefined;
      }
    });
    if (incomplete !== undefined) {
      // The new credential is the only one that works now: shown, or it would be lost.
      const url = nodeUrl(
        address.members,
        incomplete.account.account,
        incomplete.account.password,
        address.nodeCa,
      );
      out(`the new broker URL of ${name}, shown this once:\n${url}\n${address.said}`);
      await handOverCa(address, opts, out);
      throw incomplete;
    }
    const url = nodeUrl(address.members, r!.account, r!.password, address.nodeCa);
    out(
      `rotated the credential of ${name}: the old one is refused, ${
        r!.connections
      } open connection${
        r!.connections === 1 ? "" : "s"
      } closed; its new broker URL, shown this once and kept nowhere else:\n${url}\n${address.said}`,
    );
    await handOverCa(address, opts, out);
  },
};

/**
 * Hands the node the mesh's CA certificate its broker URL names (when the mesh has one): written
 * to `--ca-out FILE` (0644) and said, or printed after the URL, with where the node keeps it.
 */
async function handOverCa(
  address: { ca?: { path: string; certs: string[] }; nodeCa?: string },
  opts: AddressOptions,
  out: (text: string) => void,
): Promise<void> {
  if (address.ca === undefined || address.nodeCa === undefined) return;
  const pem = address.ca.certs.join("");
  const where = `put it at ${address.nodeCa} on the node (mode 0644): its broker URL names it`;
  if (opts.caOut !== undefined) {
    const { writeFileAtomic } = await import("../../lib/atomic.ts");
    await writeFileAtomic(opts.caOut, pem, { mode: 0o644 });
    out(`wrote the mesh's CA certificate (from ${address.ca.path}) to ${opts.caOut}; ${where}\n`);
    return;
  }
  out(`the mesh's CA certificate (from ${address.ca.path}); ${where}:\n${pem}`);
}

/** The options of `node enroll` and `node rotate` that choose the address a node is given. */
interface AddressOptions {
  /** `--public-broker` (or MESH_PUBLIC_BROKER_URL): the broker address nodes reach. */
  publicBroker?: string[];
  /** `--node-is-local`: the node is this machine (a loopback address may be printed). */
  nodeIsLocal?: boolean;
  /** `--ca-out FILE`: write the mesh's CA certificate there instead of printing it. */
  caOut?: string;
}

/** The address a node is given ({@linkcode nodeAddress}). */
interface NodeAddress {
  /** The members, without credential (amqps:// when the mesh has a CA). */
  members: string[];
  /** Whether to keep them as the public broker address. */
  record: boolean;
  /** What to say about it (empty, or a line). */
  said: string;
  /** The mesh's CA (control's MESH_CA_FILE or /etc/mesh/ca.crt), when it has one. */
  ca?: { path: string; certs: string[] };
  /** Where the node keeps the CA certificate (its URL's `cacertfile`), when the mesh has one. */
  nodeCa?: string;
}

/**
 * The public broker address given (`--public-broker` or MESH_PUBLIC_BROKER_URL), each member
 * checked to be an address only; undefined when none was given. Judged before any connection.
 *
 * @throws {Refused} naming what is wrong with it.
 */
async function givenPublic(opts: AddressOptions, action: string): Promise<string[] | undefined> {
  if (opts.publicBroker === undefined || opts.publicBroker.length === 0) return undefined;
  const { publicBrokerUrls, PublicBrokerError } = await import("../public_broker.ts");
  try {
    return publicBrokerUrls(opts.publicBroker);
  } catch (error) {
    if (error instanceof PublicBrokerError) {
      throw new Refused(`${action}: ${error.message}; nothing was recorded`);
    }
    throw error;
  }
}

/**
 * The address a node is given: the public broker given, else the one kept, else the
 * administrative `--broker`'s (as before there was a public address). Refused when it is a
 * loopback address and the node is not said to be this machine, when its vhost is not the one the
 * node's account is made on, or when a member does not resolve or answer; all before anything is
 * recorded.
 *
 * @returns the members (without credential), whether to keep them (given and not the kept
 *   ones), and what to say about it (empty, or a line).
 * @throws {Refused} saying why and what to pass (exit 2, nothing recorded).
 */
async function nodeAddress(
  sql: Queryable,
  ends: { amqp: string; members: string[] },
  opts: AddressOptions,
  given: string[] | undefined,
  action: string,
  err: (text: string) => void,
): Promise<NodeAddress> {
  const {
    addressOf,
    probeBroker,
    PublicBrokerError,
    readPublicBroker,
    tlsAddressOf,
    vhostOf,
  } = await import("../public_broker.ts");
  // A mesh with a CA (MESH_CA_FILE, or /etc/mesh/ca.crt here) gives its nodes amqps:// and the
  // CA certificate; one that cannot be read refuses the enrollment before anything is made.
  const { DEFAULT_CA_FILE, isLoopback, trustAnchorFor } = await import("../../lib/wire_trust.ts");
  const ca = await trustAnchorFor(undefined);
  const kept = await readPublicBroker(sql);
  const from = given !== undefined
    ? "given with --public-broker or MESH_PUBLIC_BROKER_URL"
    : kept !== undefined
    ? "the public broker address kept by an earlier enroll or rotate"
    : "--broker: no public broker address was ever given";
  const members = (given ?? kept ?? ends.members).map(addressOf)
    .map((m) => ca === undefined ? m : tlsAddressOf(m));
  const withCa = ca === undefined ? {} : { ca, nodeCa: DEFAULT_CA_FILE };
  const nothing = "; nothing was recorded";
  const accountVhost = vhostOf(ends.amqp);
  for (const m of members) {
    if (vhostOf(m) !== accountVhost) {
      throw new Refused(
        `${action}: the public broker ${m} (${from}) names vhost "${
          vhostOf(m)
        }", and the node's account is made on vhost "${accountVhost}" (--broker's); give the public address with the same vhost${nothing}`,
      );
    }
  }
  const loopback = members.filter((m) => isLoopback(new URL(m).hostname));
  if (loopback.length > 0 && !opts.nodeIsLocal) {
    throw new Refused(
      `${action}: its broker URL would name ${
        loopback.join(", ")
      } (${from}), a loopback address that a node on another machine cannot reach; pass --public-broker URL (or set MESH_PUBLIC_BROKER_URL) with the address nodes reach, or --node-is-local if the node is this machine${nothing}`,
    );
  }
  const probed = await Promise.all(members.map(async (m) => {
    try {
      return await probeBroker(m, undefined, ca);
    } catch (error) {
      if (error instanceof PublicBrokerError) {
        throw new Refused(`${action}: ${error.message} (${from})${nothing}`);
      }
      throw error;
    }
  }));
  for (const p of probed) {
    if (!opts.nodeIsLocal && isLoopback(p.remote) && !isLoopback(new URL(p.url).hostname)) {
      err(
        `mesh-control: note: ${p.url} resolves to ${p.remote} on this machine, a loopback address; a node on another machine must resolve it to an address it can reach\n`,
      );
    }
  }
  const same = kept !== undefined && kept.join(",") === members.join(",");
  if (given === undefined || same) return { members, record: false, said: "", ...withCa };
  return {
    ...withCa,
    members,
    record: true,
    said: kept === undefined
      ? `kept the broker address nodes reach: ${
        members.join(",")
      } (later enrollments use it unless given another)\n`
      : `replaced the broker address nodes reach: ${members.join(",")} (was ${kept.join(",")})\n`,
  };
}

/**
 * What `node enroll` says of the key the node verifies declarations with: the control plane's
 * public key (PEM) to write at /etc/mesh/control.pub on the node, or that there is none yet.
 *
 * @throws {KeyFileError} when the signing key exists and cannot be used.
 */
async function controlKeyText(path: string): Promise<string> {
  const { readSigningKey, publicKeyPem } = await import("../../lib/signing.ts");
  try {
    Deno.lstatSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return `no signing key yet ("${path}"): make it with mesh-control key init, then write its public key (mesh-control key show) at /etc/mesh/control.pub on the node\n`;
  }
  const key = await readSigningKey(path);
  return `the control plane's public key ${key.keyId}: write it at /etc/mesh/control.pub on the node (mode 0644), its link verifies every declaration with it:\n${
    publicKeyPem(key.spki)
  }`;
}
