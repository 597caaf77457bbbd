/**
 * The control plane's broker administration (docs/design.md, "Broker"): the topology every program
 * relies on, and one broker account per node that can read only that node's queue and publish
 * only that node's reports.
 *
 * Two ways in: AMQP 0-9-1 (amqplib) for exchanges, queues and bindings, and RabbitMQ's management
 * HTTP API for users and permissions. The AMQP client is loaded only by the functions that use it,
 * so a program that imports this module for {@linkcode BrokerError} or {@linkcode queueDepth} does
 * not pay for it.
 *
 * Every failure is a {@linkcode BrokerError} whose message names the action and the URL, with any
 * password replaced by `***`; no password is ever part of a message.
 *
 * @module
 */

import { redactUrl } from "../lib/url.ts";
import { messageOf } from "../lib/atomic.ts";
import { type HttpTrust, httpTrust, tlsRefusal } from "../lib/wire_trust.ts";
import type { Channel, ChannelModel } from "amqplib";
import {
  BUILD_QUEUE,
  BUILD_REPLY_PREFIX,
  BUILD_REQUEST_KEY,
  builderAccount,
  declarationKey,
  EXCHANGE,
  NODE_QUEUE_ARGUMENTS,
  nodeNameProblem,
  nodeQueue,
  REPORT_BINDING,
  reportKey,
  REPORTS_QUEUE,
} from "../lib/broker.ts";

/** How long one broker operation (an AMQP connect, one HTTP request) may take by default, in ms. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** How many random bytes a node's password is made of (before base64url). */
export const PASSWORD_BYTES = 32;

/**
 * Where the broker is, with the administrative credential.
 *
 * - `amqp`: `amqp://user:pass@host:port/vhost` (or `amqps:`); the vhost is the URL-decoded path,
 *   `/` when the path is empty (`/%2F` also means `/`).
 * - `api`: the management HTTP API base URL, `http://user:pass@host:15672` (a path prefix is
 *   kept, for an API behind a reverse proxy). The credential is sent as a Basic Authorization
 *   header, never inside the URL handed to `fetch`.
 */
export interface BrokerEndpoints {
  /** The AMQP URL, with the administrative credential. */
  amqp: string;
  /** The management HTTP API base URL, with the administrative credential. */
  api: string;
}

/** Options shared by every function of this module. */
export interface BrokerOptions {
  /** Time limit of each AMQP connect and each HTTP request, in ms ({@linkcode DEFAULT_TIMEOUT_MS}). */
  timeoutMs?: number;
  /**
   * How long closing an account's connections asks the management API again until it lists
   * none, in ms (10,000 when not given): the API's list trails the broker by a moment.
   */
  settleMs?: number;
}

/** A node's broker account, as {@linkcode createNodeAccount} made it. */
export interface NodeAccount {
  /** The broker user name (the node name). */
  account: string;
  /** The generated password: {@linkcode PASSWORD_BYTES} random bytes, base64url. */
  password: string;
  /** The AMQP URL the node connects with: the broker's host, port and vhost, this account. */
  url: string;
}

/**
 * A broker operation that failed: the broker could not be reached (AMQP or HTTP), refused the
 * credential, or answered something unexpected. The message names the action and the URL (with
 * any password replaced by `***`), and the HTTP status and the API's `reason` when there are.
 */
export class BrokerError extends Error {
  /** The HTTP status the management API answered with, when it answered. */
  readonly status: number | undefined;
  /** The AMQP reply code the broker closed with (e.g. 403 ACCESS_REFUSED), when it did. */
  readonly code: number | undefined;

  /**
   * Makes the error of a failed broker operation.
   *
   * @param message the whole message (sentence case, naming the action).
   * @param options the HTTP status, the AMQP reply code and the underlying error.
   */
  constructor(message: string, options: { status?: number; code?: number; cause?: unknown } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "BrokerError";
    this.status = options.status;
    this.code = options.code;
  }
}

/**
 * Escapes `text` so that it matches only itself inside a regular expression (RabbitMQ permissions
 * are regular expressions: `mesh.node.a` unescaped would also match `meshXnodeXa`).
 */
export function regexEscape(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

/**
 * The permissions of a node's account, as {@linkcode createNodeAccount} sets them: it configures
 * nothing, writes only to {@linkcode EXCHANGE} and only under its own report key, reads only its
 * own queue.
 */
export function nodePermissions(node: string): {
  configure: string;
  write: string;
  read: string;
  topicWrite: string;
  topicRead: string;
} {
  return {
    configure: "^$",
    write: `^${regexEscape(EXCHANGE)}$`,
    read: `^${regexEscape(nodeQueue(node))}$`,
    topicWrite: `^${regexEscape(reportKey(node))}$`,
    topicRead: "^$",
  };
}

/**
 * Makes sure the topology exists over AMQP: the durable topic exchange {@linkcode EXCHANGE}, the
 * durable queue {@linkcode REPORTS_QUEUE} bound with {@linkcode REPORT_BINDING}, the durable queue
 * {@linkcode BUILD_QUEUE} bound with {@linkcode BUILD_REQUEST_KEY}. Idempotent: running it again
 * changes nothing. The connection is closed at the end, also on failure.
 *
 * @returns one line per thing that exists, for a CLI to print, e.g. `exchange mesh (topic, durable)`.
 * @throws {BrokerError} when the broker cannot be reached, refuses the credential, or refuses a
 *   declaration (e.g. an existing `mesh` exchange of another type: 406 PRECONDITION_FAILED).
 */
export async function setupTopology(
  endpoints: BrokerEndpoints,
  options: BrokerOptions = {},
): Promise<string[]> {
  const action = "Cannot set up the broker topology";
  const target = parseAmqp(endpoints.amqp, action);
  return await withChannel(target, action, options, async (ch, step) => {
    await step(
      `declare exchange "${EXCHANGE}"`,
      () => ch.assertExchange(EXCHANGE, "topic", { durable: true }),
    );
    const made = [`exchange ${EXCHANGE} (topic, durable)`];
    const bindings: [string, string][] = [
      [REPORTS_QUEUE, REPORT_BINDING],
      [BUILD_QUEUE, BUILD_REQUEST_KEY],
    ];
    for (const [queue, key] of bindings) {
      await step(`declare queue "${queue}"`, () => ch.assertQueue(queue, { durable: true }));
      await step(
        `bind queue "${queue}" to "${EXCHANGE}" with "${key}"`,
        () => ch.bindQueue(queue, EXCHANGE, key),
      );
      made.push(`queue ${queue} (durable), bound to ${EXCHANGE} with ${key}`);
    }
    return made;
  });
}

/**
 * Asks the broker itself whether it works: an authenticated AMQP connection (a channel opened
 * with the given account), the management API answering `GET /api/overview` with that API's
 * credential, and with `topology` the exchange and shared queues that {@linkcode setupTopology}
 * declares (checked passively: nothing is created).
 *
 * @returns one line per thing that answered, e.g. `AMQP: authenticated as "mesh" at ...`.
 * @throws {BrokerError} naming the first thing that did not answer and why.
 */
export async function checkBroker(
  endpoints: BrokerEndpoints,
  options: BrokerOptions & { topology?: boolean } = {},
): Promise<string[]> {
  const action = "Cannot check the broker";
  const target = parseAmqp(endpoints.amqp, action);
  const lines = await withChannel(target, action, options, async (ch, step) => {
    const said = [`AMQP: authenticated as ${JSON.stringify(target.username)} at ${target.shown}`];
    if (options.topology) {
      await step(`find exchange "${EXCHANGE}"`, () => ch.checkExchange(EXCHANGE));
      said.push(`exchange ${EXCHANGE} exists`);
      for (const queue of [REPORTS_QUEUE, BUILD_QUEUE]) {
        await step(`find queue "${queue}"`, () => ch.checkQueue(queue));
        said.push(`queue ${queue} exists`);
      }
    }
    return said;
  });
  const api = parseApi(endpoints.api, action);
  const { body } = await request(api, "GET", "/api/overview", {
    action,
    expect: [200],
    options,
  });
  const version = body as { rabbitmq_version?: unknown; product_version?: unknown } | undefined;
  const named = typeof version?.product_version === "string"
    ? version.product_version
    : typeof version?.rabbitmq_version === "string"
    ? version.rabbitmq_version
    : "version not said";
  lines.push(`management API answering at ${api.show("/api/overview")} (${named})`);
  return lines;
}

/**
 * Creates the broker account of `node`: declares the node's queue ({@linkcode nodeQueue}, durable,
 * holding only the latest declaration) bound to {@linkcode EXCHANGE} with
 * {@linkcode declarationKey}, creates the user with a fresh random password and no tags, and sets
 * its permissions on the vhost ({@linkcode nodePermissions}). An existing user is never
 * overwritten (the name could be `guest` or an administrator's). When a step after the user was
 * created fails, the user is deleted again (best effort) before the error is thrown; the queue is
 * kept (it may already hold the node's declaration).
 *
 * @returns the account name, its password (shown once: the broker keeps only a hash) and the AMQP
 *   URL the node connects with.
 * @throws {BrokerError} when `node` is not a node name (before anything is done), when a user of
 *   that name exists, or when the broker cannot be reached or refuses a step.
 */
export async function createNodeAccount(
  endpoints: BrokerEndpoints,
  node: string,
  options: BrokerOptions & {
    /** The node queue's type, that of the topology it joins (default: classic, untyped). */
    queueType?: "classic" | "quorum";
  } = {},
): Promise<NodeAccount> {
  const action = `Cannot create broker account ${JSON.stringify(node)}`;
  const problem = nodeNameProblem(node);
  if (problem !== undefined) throw new BrokerError(`${action}: ${problem}`);
  const queue = nodeQueue(node);
  return await createAccount(endpoints, node, nodePermissions(node), {
    action,
    options,
    prepare: async (ch, step) => {
      await step(
        `declare queue "${queue}"`,
        () =>
          ch.assertQueue(queue, {
            durable: true,
            arguments: {
              ...NODE_QUEUE_ARGUMENTS,
              ...(options.queueType === "quorum" ? { "x-queue-type": "quorum" } : {}),
            },
          }),
      );
      await step(
        `bind queue "${queue}" to "${EXCHANGE}" with "${declarationKey(node)}"`,
        () => ch.bindQueue(queue, EXCHANGE, declarationKey(node)),
      );
    },
  });
}

/**
 * The permissions of a builder's account ({@linkcode builderAccount}): it configures nothing,
 * reads only the shared build queue, writes only to {@linkcode EXCHANGE} and there only under
 * build reply keys. It cannot read a node's queue, and cannot publish to the default exchange
 * (where permission is per exchange, not per queue, so it could reach any node's queue).
 */
export function builderPermissions(): AccountPermissions {
  return {
    configure: "^$",
    write: `^${regexEscape(EXCHANGE)}$`,
    read: `^${regexEscape(BUILD_QUEUE)}$`,
    topicWrite: `^${regexEscape(BUILD_REPLY_PREFIX)}[a-z0-9-]+$`,
    topicRead: "^$",
  };
}

/**
 * Creates the broker account of the builder `name` ({@linkcode builderAccount}: `builder.<name>`)
 * with {@linkcode builderPermissions}. Not a node account: a build machine is not a node.
 *
 * @returns the account, its password (shown once) and the AMQP URL the builder connects with.
 * @throws {BrokerError} when `name` is not a DNS label, the account exists, or the broker cannot
 *   be reached or refuses a step.
 */
export async function createBuilderAccount(
  endpoints: BrokerEndpoints,
  name: string,
  options: BrokerOptions = {},
): Promise<NodeAccount> {
  const account = builderAccount(name);
  const action = `Cannot create broker account ${JSON.stringify(account)}`;
  const problem = nodeNameProblem(name);
  if (problem !== undefined) {
    throw new BrokerError(`${action}: ${problem.replace(/^node name/, "builder name")}`);
  }
  return await createAccount(endpoints, account, builderPermissions(), { action, options });
}

/**
 * Deletes the builder `name`'s account (already gone is not an error).
 *
 * @throws {BrokerError} when the broker cannot be reached or refuses.
 */
export async function deleteBuilderAccount(
  endpoints: BrokerEndpoints,
  name: string,
  options: BrokerOptions = {},
): Promise<void> {
  const account = builderAccount(name);
  const action = `Cannot delete broker account ${JSON.stringify(account)}`;
  if (nodeNameProblem(name) !== undefined) throw new BrokerError(`${action}: not a builder name`);
  const api = parseApi(endpoints.api, action);
  await request(api, "DELETE", `/api/users/${encodeURIComponent(account)}`, {
    action,
    expect: [204, 404],
    options,
  });
}

/** The permissions an account gets: regular expressions, as RabbitMQ takes them. */
export interface AccountPermissions {
  configure: string;
  write: string;
  read: string;
  topicWrite: string;
  topicRead: string;
}

type Prepare = Parameters<typeof withChannel>[3];

/**
 * Creates a broker account with `permissions` on the vhost of `endpoints.amqp` (and topic
 * permissions on {@linkcode EXCHANGE}), after `prepare` declared what it needs over AMQP. Never
 * overwrites an existing user; deletes the user again when a step after its creation fails.
 */
async function createAccount(
  endpoints: BrokerEndpoints,
  account: string,
  permissions: AccountPermissions,
  { action, options, prepare }: { action: string; options: BrokerOptions; prepare?: Prepare },
): Promise<NodeAccount> {
  const amqpTarget = parseAmqp(endpoints.amqp, action);
  const api = parseApi(endpoints.api, action);
  const userPath = `/api/users/${encodeURIComponent(account)}`;

  const existing = await request(api, "GET", userPath, { action, expect: [200, 404], options });
  if (existing.status === 200) {
    throw new BrokerError(
      `${action}: a broker user of that name already exists at ${
        api.show(userPath)
      }; an existing account is never overwritten (it could be guest or an administrator)`,
      { status: 200 },
    );
  }

  const password = randomPassword();
  if (prepare !== undefined) await withChannel(amqpTarget, action, options, prepare);

  await request(api, "PUT", userPath, {
    action,
    expect: [201, 204],
    options,
    body: { password, tags: "" },
    secrets: [password],
  });
  try {
    const vhost = encodeURIComponent(amqpTarget.vhost);
    const name = encodeURIComponent(account);
    const p = permissions;
    await request(api, "PUT", `/api/permissions/${vhost}/${name}`, {
      action,
      expect: [201, 204],
      options,
      body: { configure: p.configure, write: p.write, read: p.read },
    });
    await request(api, "PUT", `/api/topic-permissions/${vhost}/${name}`, {
      action,
      expect: [201, 204],
      options,
      body: { exchange: EXCHANGE, write: p.topicWrite, read: p.topicRead },
    });
  } catch (error) {
    let rollback = "the user was deleted again";
    try {
      await request(api, "DELETE", userPath, { action, expect: [204, 404], options });
    } catch (deleteError) {
      rollback = `the user could not be deleted again, delete it by hand (${
        (deleteError as Error).message
      })`;
    }
    const message = error instanceof Error ? error.message : String(error);
    throw new BrokerError(`${message}; ${rollback}`, {
      status: error instanceof BrokerError ? error.status : undefined,
      cause: error,
    });
  }

  return { account, password, url: amqpTarget.urlFor(account, password) };
}

/**
 * Deletes the broker account of `node`, closes every connection open with it (through the
 * management API, with `reason` as the close's text), then deletes its queue (with whatever it
 * holds). A user, connection or queue that is already gone is not an error: running it again
 * finishes what a run that stopped half-way began. A user that does not look like a node account
 * (it has tags, e.g. `administrator`, or permissions other than {@linkcode nodePermissions}) is
 * refused and nothing is deleted, so this cannot remove `guest` or an administrator.
 *
 * @returns whether the account existed, and how many open connections were closed.
 * @throws {BrokerError} when `node` is not a node name, the user is not a node account, or the
 *   broker cannot be reached or refuses a step.
 */
export async function deleteNodeAccount(
  endpoints: BrokerEndpoints,
  node: string,
  options: BrokerOptions & { reason?: string } = {},
): Promise<{ account: boolean; connections: number }> {
  const action = `Cannot delete broker account ${JSON.stringify(node)}`;
  const problem = nodeNameProblem(node);
  if (problem !== undefined) throw new BrokerError(`${action}: ${problem}`);
  const amqpTarget = parseAmqp(endpoints.amqp, action);
  const api = parseApi(endpoints.api, action);
  const userPath = `/api/users/${encodeURIComponent(node)}`;

  const exists = await requireNodeAccount(api, amqpTarget, node, action, options);
  const open = await userConnections(api, node, { action, options });
  if (exists) await request(api, "DELETE", userPath, { action, expect: [204, 404], options });
  // The account is gone first, so nothing closed now can come back with it. (RabbitMQ closes a
  // deleted user's connections itself, "user ... is deleted"; they are closed here whatever the
  // broker does, and asked about until none is left.)
  const closed = await closeUserConnections(api, node, {
    action,
    options,
    reason: options.reason ?? `mesh-control: the broker account of node ${node} was deleted`,
  });
  const connections = new Set([...open, ...closed]).size;

  const queue = nodeQueue(node);
  await withChannel(amqpTarget, action, options, async (ch, step) => {
    await step(`delete queue "${queue}"`, () => ch.deleteQueue(queue));
  });
  return { account: exists, connections };
}

/**
 * Gives the node's broker account a new random password ({@linkcode PASSWORD_BYTES}), keeping
 * its permissions, and closes every connection open with it (RabbitMQ keeps an open connection
 * after a password change: without the close, the old credential would go on working on it).
 * The management API is asked for the account's connections before the password changes, so an
 * API that cannot list them refuses the rotation with nothing changed.
 *
 * @returns the new credential (shown once) and how many open connections were closed.
 * @throws {BrokerError} when `node` is not a node name, has no account (status 404), the account
 *   is not a node account, or the broker refuses a step. When closing fails after the password
 *   changed, the error says so and carries the new credential in `account` of
 *   {@linkcode RotationIncomplete} (the old one is refused for new connections already).
 */
export async function rotateNodePassword(
  endpoints: BrokerEndpoints,
  node: string,
  options: BrokerOptions & { reason?: string } = {},
): Promise<NodeAccount & { connections: number }> {
  const action = `Cannot rotate the credential of broker account ${JSON.stringify(node)}`;
  const problem = nodeNameProblem(node);
  if (problem !== undefined) throw new BrokerError(`${action}: ${problem}`);
  const amqpTarget = parseAmqp(endpoints.amqp, action);
  const api = parseApi(endpoints.api, action);
  const userPath = `/api/users/${encodeURIComponent(node)}`;
  if (!await requireNodeAccount(api, amqpTarget, node, action, options)) {
    throw new BrokerError(`${action}: there is no broker user of that name`, { status: 404 });
  }
  // Proves the API can list connections before anything changes.
  await userConnections(api, node, { action, options });
  const password = randomPassword();
  await request(api, "PUT", userPath, {
    action,
    expect: [201, 204],
    options,
    body: { password, tags: "" },
    secrets: [password],
  });
  const account = { account: node, password, url: amqpTarget.urlFor(node, password) };
  let connections: number;
  try {
    connections = (await closeUserConnections(api, node, {
      action,
      options,
      reason: options.reason ?? `mesh-control: the credential of node ${node} was rotated`,
    })).length;
  } catch (error) {
    throw new RotationIncomplete(
      `${
        (error as Error).message
      }; the password was changed (the old one is refused for new connections), but connections opened with the old one may still be open: rotate again`,
      account,
      error,
    );
  }
  return { ...account, connections };
}

/**
 * A rotation whose password change went through and whose closing of open connections did not:
 * the new credential is the only one that opens a connection now, so it is carried to be shown.
 */
export class RotationIncomplete extends BrokerError {
  /** The new credential (the only one that works now). */
  readonly account: NodeAccount;
  constructor(message: string, account: NodeAccount, cause: unknown) {
    super(message, { cause });
    this.name = "RotationIncomplete";
    this.account = account;
  }
}

/**
 * Revokes the builder `name`: deletes its account ({@linkcode builderAccount}) and closes its
 * open connections, so a build it had taken and not answered returns to the build queue for
 * another builder (a request is acknowledged only once answered). Connections left open by an
 * earlier revoke that stopped half-way are closed too.
 *
 * @returns whether the account existed, and how many connections were closed.
 * @throws {BrokerError} when `name` is not a builder name, the user of that name is not a
 *   builder account (it has tags or other permissions), or the broker refuses a step.
 */
export async function revokeBuilderAccount(
  endpoints: BrokerEndpoints,
  name: string,
  options: BrokerOptions = {},
): Promise<{ account: boolean; connections: number }> {
  const account = builderAccount(name);
  const action = `Cannot revoke broker account ${JSON.stringify(account)}`;
  const problem = nodeNameProblem(name);
  if (problem !== undefined) {
    throw new BrokerError(`${action}: ${problem.replace(/^node name/, "builder name")}`);
  }
  const amqpTarget = parseAmqp(endpoints.amqp, action);
  const api = parseApi(endpoints.api, action);
  const userPath = `/api/users/${encodeURIComponent(account)}`;
  const user = await request(api, "GET", userPath, { action, expect: [200, 404], options });
  const open = await userConnections(api, account, { action, options });
  if (user.status === 200) {
    await requireAccountShape(api, amqpTarget, account, builderPermissions(), user.body, {
      action,
      options,
      what: "a builder account",
    });
    await request(api, "DELETE", userPath, { action, expect: [204, 404], options });
  }
  const closed = await closeUserConnections(api, account, {
    action,
    options,
    reason: `mesh-control: builder ${name} was revoked`,
  });
  return { account: user.status === 200, connections: new Set([...open, ...closed]).size };
}

/**
 * Whether the node's user exists; refused when it exists and is not a node account (tags, or
 * permissions other than {@linkcode nodePermissions}), so that nothing here can touch `guest` or
 * an administrator.
 */
async function requireNodeAccount(
  api: ApiTarget,
  amqpTarget: AmqpTarget,
  node: string,
  action: string,
  options: BrokerOptions,
): Promise<boolean> {
  const userPath = `/api/users/${encodeURIComponent(node)}`;
  const user = await request(api, "GET", userPath, { action, expect: [200, 404], options });
  if (user.status !== 200) return false;
  await requireAccountShape(api, amqpTarget, node, nodePermissions(node), user.body, {
    action,
    options,
    what: "a node account",
  });
  return true;
}

async function requireAccountShape(
  api: ApiTarget,
  amqpTarget: AmqpTarget,
  account: string,
  expected: AccountPermissions,
  userBody: unknown,
  how: { action: string; options: BrokerOptions; what: string },
): Promise<void> {
  const { action, options } = how;
  const userPath = `/api/users/${encodeURIComponent(account)}`;
  const tags = (userBody as { tags?: unknown } | undefined)?.tags;
  const tagList = Array.isArray(tags) ? tags : typeof tags === "string" && tags ? [tags] : [];
  if (tagList.length > 0) {
    throw new BrokerError(
      `${action}: the user has tags (${tagList.join(", ")}), so it is not ${how.what}`,
    );
  }
  const perms = await request(api, "GET", `${userPath}/permissions`, {
    action,
    expect: [200],
    options,
  });
  const foreign = (Array.isArray(perms.body) ? perms.body : []).filter((p) =>
    p?.vhost !== amqpTarget.vhost || p?.configure !== expected.configure ||
    p?.write !== expected.write || p?.read !== expected.read
  );
  if (foreign.length > 0) {
    throw new BrokerError(
      `${action}: the user has permissions ${how.what} does not have (${
        foreign.map((p) => `vhost ${JSON.stringify(p?.vhost)}`).join(", ")
      }), so it is not ${how.what}`,
    );
  }
}

/**
 * How long {@linkcode closeUserConnections} waits for the API to stop listing closed ones, in ms,
 * unless {@linkcode BrokerOptions.settleMs} says otherwise.
 */
const CLOSE_SETTLE_MS = 10_000;

/** The names of the connections the management API lists for `user`. */
async function userConnections(
  api: ApiTarget,
  user: string,
  how: { action: string; options: BrokerOptions },
): Promise<string[]> {
  const answer = await request(
    api,
    "GET",
    `/api/connections/username/${encodeURIComponent(user)}`,
    { action: how.action, expect: [200], options: how.options },
  );
  if (!Array.isArray(answer.body)) {
    throw new BrokerError(
      `${how.action}: the management API's list of connections of ${
        JSON.stringify(user)
      } is not a list`,
    );
  }
  return answer.body.map((c) => (c as { name?: unknown })?.name).filter((n): n is string =>
    typeof n === "string"
  );
}

/**
 * Closes every connection the management API lists for `user` (`DELETE /api/connections/NAME`
 * with `X-Reason`, which the client receives in its CONNECTION_FORCED close), then asks again
 * until none is listed: the API's list trails the broker by a moment, both ways.
 *
 * A close the API answers with a server error (5xx) is not final: RabbitMQ answers 500 when the
 * connection's process ends while the API is asking it to close (seen in CI: a deleted user's
 * connection, which the broker closes itself, "user ... is deleted"). The list is asked again, and
 * a connection still listed is closed again, until `settleMs` ({@linkcode CLOSE_SETTLE_MS}).
 *
 * @returns the names of the connections asked to close here (each one gone when this returns,
 *   whether this close or the broker's own ended it).
 * @throws {BrokerError} when the API cannot be reached, refuses the credential or answers a close
 *   with anything but 204, 404 or a server error, or connections are still listed after
 *   `settleMs` (the message then names the last server error, if any).
 */
async function closeUserConnections(
  api: ApiTarget,
  user: string,
  how: { action: string; options: BrokerOptions; reason: string },
): Promise<string[]> {
  const closed = new Set<string>();
  const deadline = Date.now() + (how.options.settleMs ?? CLOSE_SETTLE_MS);
  let serverError: BrokerError | undefined;
  for (;;) {
    const open = await userConnections(api, user, how);
    if (open.length === 0) return [...closed];
    for (const name of open) {
      try {
        await request(api, "DELETE", `/api/connections/${encodeURIComponent(name)}`, {
          action: how.action,
          expect: [204, 404],
          options: how.options,
          headers: { "x-reason": how.reason },
        });
      } catch (error) {
        const status = error instanceof BrokerError ? error.status : undefined;
        if (status === undefined || status < 500) throw error;
        serverError = error as BrokerError;
      }
      closed.add(name);
    }
    if (Date.now() > deadline) {
      const last = serverError === undefined
        ? ""
        : `; the last close was answered: ${serverError.message.slice(how.action.length + 2)}`;
      throw new BrokerError(
        `${how.action}: ${open.length} connection${
          open.length === 1 ? " is" : "s are"
        } still open for ${JSON.stringify(user)} after closing them (${open.join(", ")})${last}`,
        serverError === undefined ? undefined : { cause: serverError },
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * How many messages are ready in `queue`, from the management API (`messages_ready` of
 * `GET /api/queues/VHOST/NAME`). The API's figures are statistics sampled every few seconds
 * (RabbitMQ's `collect_statistics_interval`, 5 s by default): fine for a board, too late for a
 * test that has just published (use an AMQP `checkQueue` there).
 *
 * @throws {BrokerError} when the API cannot be reached, refuses the credential, the queue does not
 *   exist (status 404), or the answer carries no count yet (a queue declared a moment ago).
 */
export async function queueDepth(
  endpoints: BrokerEndpoints,
  queue: string,
  options: BrokerOptions = {},
): Promise<number> {
  const action = `Cannot read the depth of queue ${JSON.stringify(queue)}`;
  const vhost = parseAmqp(endpoints.amqp, action).vhost;
  const api = parseApi(endpoints.api, action);
  const path = `/api/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`;
  const answer = await request(api, "GET", path, { action, expect: [200], options });
  const ready = (answer.body as { messages_ready?: unknown } | undefined)?.messages_ready;
  if (typeof ready !== "number" || !Number.isInteger(ready) || ready < 0) {
    throw new BrokerError(
      `${action}: ${
        api.show(path)
      } answered without a message count (the broker has not sampled the queue's statistics yet)`,
      { status: 200 },
    );
  }
  return ready;
}

// --- AMQP ------------------------------------------------------------------------------------

interface AmqpTarget {
  protocol: "amqp" | "amqps";
  hostname: string;
  /** `host[:port]` as written, IPv6 brackets kept. */
  host: string;
  port: number | undefined;
  username: string;
  password: string;
  vhost: string;
  /** The URL with its password replaced by `***`. */
  shown: string;
  /** The URL to connect to, as given (its `cacertfile=PATH` kept). */
  url: URL;
  /** The AMQP URL of the same broker and vhost with another account. */
  urlFor(account: string, password: string): string;
}

function parseAmqp(url: string, action: string): AmqpTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BrokerError(`${action}: the AMQP URL ${redactUrl(url)} is not a URL`);
  }
  const shown = redactUrl(url);
  if (u.protocol !== "amqp:" && u.protocol !== "amqps:") {
    throw new BrokerError(`${action}: the AMQP URL ${shown} is not amqp:// or amqps://`);
  }
  if (!u.hostname) throw new BrokerError(`${action}: the AMQP URL ${shown} names no host`);
  let username: string, password: string, vhost: string;
  try {
    username = decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
    const path = u.pathname.replace(/^\//, "");
    vhost = path === "" ? "/" : decodeURIComponent(path);
  } catch {
    throw new BrokerError(`${action}: the AMQP URL ${shown} has a malformed %-escape`);
  }
  const protocol = u.protocol === "amqps:" ? "amqps" : "amqp";
  const host = u.host;
  return {
    protocol,
    hostname: u.hostname.replace(/^\[|\]$/g, ""),
    host,
    port: u.port ? Number(u.port) : undefined,
    username,
    password,
    vhost,
    shown,
    url: u,
    urlFor: (account, pass) =>
      `${protocol}://${encodeURIComponent(account)}:${encodeURIComponent(pass)}@${host}/${
        encodeURIComponent(vhost)
      }`,
  };
}

/** Runs one step on a channel, turning its failure into a BrokerError naming the step. */
type Step = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/**
 * Connects, opens a channel, runs `fn`, and closes the connection whatever happened.
 */
async function withChannel<T>(
  target: AmqpTarget,
  action: string,
  options: BrokerOptions,
  fn: (ch: Channel, step: Step) => Promise<T>,
): Promise<T> {
  const { closeAmqp, connectAmqp } = await import("../lib/amqp.ts");
  const { TrustFileError, PlainRefusedError } = await import("../lib/wire_trust.ts");
  const secrets = [target.password];
  let conn: ChannelModel;
  try {
    // Through the programs' one way to the broker (lib/amqp.ts): amqps:// verified against the
    // mesh's CA, clear text only to this machine unless allowed.
    conn = await connectAmqp(target.url, {
      timeoutSeconds: (options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000,
    });
  } catch (error) {
    if (error instanceof TrustFileError || error instanceof PlainRefusedError) {
      throw new BrokerError(`${action}: ${error.message}`, { cause: error });
    }
    const text = scrub(messageWithCauses(error), secrets);
    // amqplib reports a refused login as "Handshake terminated by server: 403 (ACCESS-REFUSED)
    // ..." without a code, and a refused vhost only as an unexpected ConnectionClose.
    const code = (error as { code?: unknown }).code;
    const replyCode = typeof code === "number"
      ? code
      : Number(/terminated by server: (\d{3}) /.exec(text)?.[1]) || undefined;
    const what = replyCode === 403
      ? `the broker refused the credential of ${JSON.stringify(target.username)} at ${target.shown}`
      : /Expected ConnectionOpenOk; got <ConnectionClose/.test(text)
      ? `the broker refused to open vhost ${
        JSON.stringify(target.vhost)
      } at ${target.shown} (it does not exist or ${
        JSON.stringify(target.username)
      } has no permission on it)`
      : `could not connect to ${target.shown}`;
    throw new BrokerError(`${action}: ${what}: ${text}`, { code: replyCode, cause: error });
  }
  // An 'error' event nobody listens to would be thrown out of amqplib's frame handler; the
  // failure reaches us through the rejected operation instead.
  conn.on("error", () => {});
  try {
    let ch: Channel;
    try {
      ch = await conn.createChannel();
    } catch (error) {
      throw new BrokerError(
        `${action}: could not open a channel on ${target.shown}: ${
          scrub(messageWithCauses(error), secrets)
        }`,
        { cause: error },
      );
    }
    ch.on("error", () => {});
    const step: Step = async (what, op) => {
      try {
        return await op();
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw new BrokerError(
          `${action}: could not ${what} on ${target.shown}: ${
            scrub(messageWithCauses(error), secrets)
          }`,
          { code: typeof code === "number" ? code : undefined, cause: error },
        );
      }
    };
    return await fn(ch, step);
  } finally {
    // A connection the broker closed already (the failure being thrown) counts as closed.
    await closeAmqp(conn);
  }
}

// --- management HTTP API ---------------------------------------------------------------------

interface ApiTarget {
  /** Origin and path prefix, without credentials or a trailing slash. */
  base: string;
  authorization: string | undefined;
  /** `path` appended to the base URL as given, password replaced by `***`. */
  show(path: string): string;
  password: string;
  /**
   * What `fetch` is given (lib/wire_trust.ts's {@linkcode httpTrust}: https:// verified against
   * the mesh's CA, http:// only to this machine unless allowed); made once, on first use.
   */
  client(): Promise<HttpTrust>;
}

function parseApi(url: string, action: string): ApiTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BrokerError(`${action}: the management API URL ${redactUrl(url)} is not a URL`);
  }
  const shownBase = redactUrl(url).replace(/[?#].*$/, "").replace(/\/+$/, "");
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new BrokerError(
      `${action}: the management API URL ${shownBase} is not http:// or https://`,
    );
  }
  let username: string, password: string;
  try {
    username = decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
  } catch {
    throw new BrokerError(
      `${action}: the management API URL ${shownBase} has a malformed %-escape`,
    );
  }
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let made: Promise<HttpTrust> | undefined;
  const client = () => made ??= httpTrust(u, `the management API ${shownBase}`);
  return {
    client,
    base: `${u.origin}${u.pathname.replace(/\/+$/, "")}`,
    authorization: username || password
      ? `Basic ${btoa(String.fromCharCode(...bytes))}`
      : undefined,
    show: (path) => `${shownBase}${path}`,
    password,
  };
}

async function request(
  api: ApiTarget,
  method: "GET" | "PUT" | "DELETE",
  path: string,
  how: {
    action: string;
    expect: number[];
    options: BrokerOptions;
    body?: unknown;
    /** Texts never to repeat in a message, besides the API's own password. */
    secrets?: string[];
    /** Extra request headers (e.g. `X-Reason` when closing a connection). */
    headers?: Record<string, string>;
  },
): Promise<{ status: number; body: unknown }> {
  const secrets = [api.password, ...(how.secrets ?? [])];
  const shown = `${method} ${api.show(path)}`;
  const headers: Record<string, string> = { accept: "application/json" };
  if (api.authorization) headers.authorization = api.authorization;
  if (how.body !== undefined) headers["content-type"] = "application/json";
  Object.assign(headers, how.headers ?? {});
  let response: Response;
  let text: string;
  let trust: HttpTrust;
  try {
    trust = await api.client();
  } catch (error) {
    throw new BrokerError(`${how.action}: ${messageOf(error)}`, { cause: error });
  }
  try {
    response = await fetch(`${api.base}${path}`, {
      client: trust.client,
      method,
      headers,
      body: how.body === undefined ? undefined : JSON.stringify(how.body),
      signal: AbortSignal.timeout(how.options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    const limit = how.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const why = error instanceof DOMException && error.name === "TimeoutError"
      ? `no answer within ${limit} ms`
      : tlsRefusal(error, trust) ??
        scrub(messageWithCauses(error), secrets);
    throw new BrokerError(
      `${how.action}: could not reach the management API (${shown}): ${why}`,
      { cause: error },
    );
  }
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (how.expect.includes(response.status)) return { status: response.status, body };
  const reason = (body as { reason?: unknown } | undefined)?.reason;
  const said = typeof reason === "string" && reason
    ? `, reason: ${JSON.stringify(scrub(reason, secrets))}`
    : "";
  const status = `${response.status} ${response.statusText}`.trim();
  const what = response.status === 401
    ? `the management API refused the credential (${shown} answered ${status}${said})`
    : `${shown} answered ${status}${said}, expected ${how.expect.join(" or ")}`;
  throw new BrokerError(`${how.action}: ${what}`, { status: response.status });
}

// --- helpers ---------------------------------------------------------------------------------

function randomPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(PASSWORD_BYTES));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) {
      out = out.split(form).join("***");
    }
  }
  return out;
}

/** The message of `error` followed by those of its causes (fetch hides the reason in one). */
function messageWithCauses(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const text = current instanceof Error ? current.message : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(": ");
}
