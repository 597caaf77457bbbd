/**
 * The broker topology by queue type: classic queues (one broker) or quorum queues (replicated
 * over a RabbitMQ cluster's members, Raft-based), and moving an existing topology from one type
 * to the other without losing a waiting message.
 *
 * A queue's type cannot be changed in place (RabbitMQ refuses a redeclaration with another
 * `x-queue-type`: 406 PRECONDITION_FAILED), so {@linkcode convertTopology} moves each queue
 * through a temporary one: declare `<queue>.migrating` of the new type with the same bindings,
 * unbind the old queue, move its messages over (each republished under its original routing key
 * with a publisher confirm before it is acknowledged), delete the old queue, declare it again
 * with the new type and its bindings, unbind the temporary queue and move the messages back.
 * Accounts and permissions name the queue, not its type, so a node's account keeps working.
 * Every step is idempotent, so a conversion that stopped half-way is finished by running it again.
 *
 * Connections go through {@linkcode openBroker} (the members of a cluster, failed over); the
 * management HTTP API lists the queues and their types.
 *
 * @module
 */

import type { Channel, ChannelModel } from "amqplib";
import { messageOf } from "../lib/atomic.ts";
import { redactUrl } from "../lib/url.ts";
import { brokerMessage, closeAmqp, openBroker, publishConfirmed } from "../lib/amqp.ts";
import {
  BUILD_QUEUE,
  BUILD_REQUEST_KEY,
  declarationKey,
  EXCHANGE,
  NODE_NAME,
  NODE_QUEUE_ARGUMENTS,
  REPORT_BINDING,
  REPORTS_QUEUE,
} from "../lib/broker.ts";
import { BrokerError } from "./broker_admin.ts";
import { type HttpTrust, httpTrust, tlsRefusal } from "../lib/wire_trust.ts";

/** The queue types mesh declares: `classic` (one broker) or `quorum` (replicated). */
export const QUEUE_TYPES = ["classic", "quorum"] as const;
/** A queue type. */
export type QueueType = typeof QUEUE_TYPES[number];

/** The suffix of the temporary queue a conversion moves messages through. */
export const MIGRATING_SUFFIX = ".migrating";

/**
 * The arguments of a queue of `type`: a node queue keeps only the latest declaration
 * (`x-max-length` 1, `x-overflow` `drop-head`, which quorum queues support since RabbitMQ 3.8;
 * checked on 3.10.8 by the scale-out test), a shared queue has none besides its type.
 */
export function queueArguments(
  kind: "node" | "shared",
  type: QueueType,
): Record<string, string | number> {
  return {
    ...(kind === "node" ? NODE_QUEUE_ARGUMENTS : {}),
    "x-queue-type": type,
  };
}

/** The mesh queue called `name`, its kind and the one binding the contract gives it. */
export interface MeshQueue {
  name: string;
  kind: "node" | "shared";
  binding: string;
}

/** The queue `name` as the contract defines it, or undefined when mesh does not own it. */
export function meshQueue(name: string): MeshQueue | undefined {
  if (name === REPORTS_QUEUE) return { name, kind: "shared", binding: REPORT_BINDING };
  if (name === BUILD_QUEUE) return { name, kind: "shared", binding: BUILD_REQUEST_KEY };
  const node = /^mesh\.node\.(.+)$/.exec(name)?.[1];
  if (node !== undefined && NODE_NAME.test(node)) {
    return { name, kind: "node", binding: declarationKey(node) };
  }
  return undefined;
}

/**
 * Declares the durable topic exchange {@linkcode EXCHANGE} and the shared queues
 * {@linkcode REPORTS_QUEUE} and {@linkcode BUILD_QUEUE} of `type`, bound to it. Idempotent.
 *
 * @param urls the broker (several: a cluster's members; the first that answers is used).
 * @returns one line per thing in place, for the CLI to print.
 * @throws {BrokerError} when no member answers; when a queue exists with another type (naming
 *   both types and the command that converts); when the member refuses the type itself (a broker
 *   without quorum queues), naming the member and what it said.
 */
export async function setupQueues(
  urls: string | readonly string[],
  type: QueueType,
): Promise<string[]> {
  const action = "Cannot set up the broker topology";
  return await withConnection(urls, action, async (conn, member) => {
    await declare(
      conn,
      member,
      action,
      `declare exchange "${EXCHANGE}"`,
      (ch) => ch.assertExchange(EXCHANGE, "topic", { durable: true }),
    );
    const made = [`exchange ${EXCHANGE} (topic, durable) on ${redactUrl(member)}`];
    for (const name of [REPORTS_QUEUE, BUILD_QUEUE]) {
      const queue = meshQueue(name)!;
      await declareTyped(conn, member, action, queue, type);
      await declare(
        conn,
        member,
        action,
        `bind queue "${name}" to "${EXCHANGE}" with "${queue.binding}"`,
        (ch) => ch.bindQueue(name, EXCHANGE, queue.binding),
      );
      made.push(`queue ${name} (${type}, durable), bound to ${EXCHANGE} with ${queue.binding}`);
    }
    return made;
  });
}

/**
 * The type of the existing queue `name` as the broker reports it over AMQP (a passive check,
 * then a redeclaration with `x-queue-type: quorum`, which changes nothing when it is one and is
 * refused when it is not), or undefined when there is no such queue. Used to give a new node's
 * queue the type of the topology it joins.
 *
 * @throws {BrokerError} when no member answers.
 */
export async function existingQueueType(
  urls: string | readonly string[],
  name: string,
): Promise<QueueType | undefined> {
  const action = `Cannot read the type of queue "${name}"`;
  return await withConnection(urls, action, async (conn) => {
    const probe = await conn.createChannel();
    probe.on("error", () => {});
    try {
      await probe.checkQueue(name);
    } catch {
      return undefined;
    } finally {
      await closeAmqp(probe);
    }
    const queue = meshQueue(name);
    const ch = await conn.createChannel();
    ch.on("error", () => {});
    try {
      await ch.assertQueue(name, {
        durable: true,
        arguments: queueArguments(queue?.kind ?? "shared", "quorum"),
      });
      return "quorum";
    } catch {
      return "classic";
    } finally {
      await closeAmqp(ch);
    }
  });
}

/** One queue's conversion. */
export interface Converted {
  queue: string;
  /** The type it had (`absent` when only a temporary queue was left by a stopped conversion). */
  from: QueueType | "absent";
  to: QueueType;
  /**
   * Messages that waited and are now in the converted queue (each moved into the temporary queue
   * and back, confirmed before acknowledged each time).
   */
  moved: number;
}

/** Options for {@linkcode convertTopology}. */
export interface ConvertOptions {
  /** Each queue as it is done (the CLI prints it). */
  onQueue?: (converted: Converted) => void;
  /** Time limit of each HTTP request, in ms (default 10 s). */
  timeoutMs?: number;
}

/**
 * Converts every mesh queue on the vhost (the shared queues and every node queue) that is not of
 * `type` to `type`, moving its waiting messages (see the module's description). Queues already
 * of `type` are left alone; a temporary queue left by a conversion that stopped is emptied back.
 *
 * @param endpoints.amqp the broker (several: a cluster's members), with an administrative account.
 * @param endpoints.api the management HTTP API (lists the queues and their types).
 * @returns every queue converted (empty when all were of `type` already).
 * @throws {BrokerError} naming the queue and the step that failed; the messages are then in the
 *   original queue or the temporary one (run the command again to finish).
 */
export async function convertTopology(
  endpoints: { amqp: string | readonly string[]; api: string },
  type: QueueType,
  options: ConvertOptions = {},
): Promise<Converted[]> {
  const action = `Cannot convert the broker topology to ${type} queues`;
  const listed = await listQueues(endpoints, action, options.timeoutMs);
  const vhost = vhostOf(endpoints.amqp);
  const types = new Map<string, string>();
  for (const q of listed) if (q.vhost === vhost) types.set(q.name, q.type);
  const names = new Set<string>();
  for (const name of types.keys()) {
    const base = name.endsWith(MIGRATING_SUFFIX) ? name.slice(0, -MIGRATING_SUFFIX.length) : name;
    if (meshQueue(base) !== undefined) names.add(base);
  }
  const done: Converted[] = [];
  await withConnection(endpoints.amqp, action, async (conn, member) => {
    for (const name of [...names].sort()) {
      const queue = meshQueue(name)!;
      const temp = `${name}${MIGRATING_SUFFIX}`;
      const current = types.get(name);
      if (current === type && !types.has(temp)) continue;
      const from: Converted["from"] = current === undefined
        ? "absent"
        : current === "quorum"
        ? "quorum"
        : "classic";
      let moved = 0;
      const step = <T>(what: string, fn: (ch: Channel) => Promise<T>) =>
        declare(conn, member, action, `${what}`, fn);
      if (current !== undefined && current !== type) {
        // Into the temporary queue: bound first, so nothing published meanwhile is unroutable.
        await declareTyped(conn, member, action, { ...queue, name: temp }, type);
        await step(
          `bind "${temp}" with "${queue.binding}"`,
          (ch) => ch.bindQueue(temp, EXCHANGE, queue.binding),
        );
        await step(`unbind "${name}"`, (ch) => ch.unbindQueue(name, EXCHANGE, queue.binding));
        await move(conn, member, action, name);
        await deleteEmptied(conn, member, action, name);
      }
      await declareTyped(conn, member, action, queue, type);
      await step(
        `bind "${name}" with "${queue.binding}"`,
        (ch) => ch.bindQueue(name, EXCHANGE, queue.binding),
      );
      if (types.has(temp) || (current !== undefined && current !== type)) {
        await step(`unbind "${temp}"`, (ch) => ch.unbindQueue(temp, EXCHANGE, queue.binding));
        moved += await move(conn, member, action, temp);
        await deleteEmptied(conn, member, action, temp);
      }
      const converted = { queue: name, from, to: type, moved };
      done.push(converted);
      options.onQueue?.(converted);
    }
  });
  return done;
}

/**
 * Moves every ready message of `queue` (which is unbound) back through {@linkcode EXCHANGE}
 * under its original routing key: the one queue bound with that key receives it. Each message
 * is published with a confirm before it is acknowledged, so a failure leaves it where it was.
 */
async function move(
  conn: ChannelModel,
  member: string,
  action: string,
  queue: string,
): Promise<number> {
  const reader = await conn.createChannel();
  reader.on("error", () => {});
  const writer = await conn.createConfirmChannel();
  writer.on("error", () => {});
  let moved = 0;
  try {
    for (;;) {
      const message = await reader.get(queue, { noAck: false });
      if (message === false) break;
      try {
        await publishConfirmed(writer, [{
          exchange: EXCHANGE,
          routingKey: message.fields.routingKey,
          body: message.content,
          options: { ...message.properties, persistent: true, mandatory: true } as never,
        }]);
      } catch (error) {
        reader.nack(message, false, true);
        throw new BrokerError(
          `${action}: could not move a message of "${queue}" (routing key "${message.fields.routingKey}") on ${
            redactUrl(member)
          }: ${messageOf(error)}; it stays in "${queue}"`,
          { cause: error },
        );
      }
      reader.ack(message);
      moved++;
    }
  } catch (error) {
    if (error instanceof BrokerError) throw error;
    throw new BrokerError(
      `${action}: could not read "${queue}" on ${redactUrl(member)}: ${brokerMessage(error)}`,
      { cause: error },
    );
  } finally {
    await reader.close().catch(() => {});
    await writer.close().catch(() => {});
  }
  return moved;
}

/**
 * Deletes `queue` after checking that it holds no ready message (quorum queues do not take
 * `if-empty` on delete; the queue is unbound by then, so nothing arrives between the two).
 */
async function deleteEmptied(
  conn: ChannelModel,
  member: string,
  action: string,
  queue: string,
): Promise<void> {
  const { messageCount } = await declare(
    conn,
    member,
    action,
    `check "${queue}"`,
    (ch) => ch.checkQueue(queue),
  );
  if (messageCount > 0) {
    throw new BrokerError(
      `${action}: "${queue}" still holds ${messageCount} messages after they were moved on ${
        redactUrl(member)
      } (something published to it directly); it was not deleted: run the command again`,
    );
  }
  await declare(conn, member, action, `delete "${queue}"`, (ch) => ch.deleteQueue(queue));
}

/** Declares `queue` durable with the arguments of `type`, explaining a refusal of the type. */
async function declareTyped(
  conn: ChannelModel,
  member: string,
  action: string,
  queue: MeshQueue,
  type: QueueType,
): Promise<void> {
  const ch = await conn.createChannel();
  // A broker may end the channel (or the connection) instead of answering the declaration: what
  // it said then arrives as an error event, not as the rejection.
  let said: unknown;
  ch.on("error", (error: unknown) => said ??= error);
  conn.on("error", (error: unknown) => said ??= error);
  try {
    await ch.assertQueue(queue.name, {
      durable: true,
      arguments: queueArguments(queue.kind, type),
    });
  } catch (error) {
    await new Promise((r) => setTimeout(r, 50));
    const text = said !== undefined && /no reply will be forthcoming|closed/i.test(messageOf(error))
      ? `${brokerMessage(error)} (${brokerMessage(said)})`
      : brokerMessage(error);
    const shown = redactUrl(member);
    // RabbitMQ 3.10 says "received 'quorum' but current is 'classic'" (or "... the value
    // 'quorum' of type 'longstr'", or "current is none" for an untyped classic queue).
    const inequivalent =
      /inequivalent arg 'x-queue-type'.*?current is (?:none|(?:the value )?'(\w+)')/.exec(text);
    if (inequivalent) {
      const existing = inequivalent[1] ?? "classic";
      throw new BrokerError(
        `${action}: queue "${queue.name}" exists on ${shown} as a ${existing} queue, and a queue's type cannot be changed in place; run mesh-control broker convert --queue-type ${type} (moves its messages), or set up with --queue-type ${existing}`,
        { code: 406, cause: error },
      );
    }
    if (/x-queue-type|queue type|feature flag|quorum/i.test(text)) {
      throw new BrokerError(
        `${action}: the broker at ${shown} refused a ${type} queue "${queue.name}": ${text}`,
        { code: 406, cause: error },
      );
    }
    throw new BrokerError(
      `${action}: could not declare queue "${queue.name}" on ${shown}: ${text}`,
      { cause: error },
    );
  } finally {
    await closeAmqp(ch);
  }
}

/** Runs one operation on a fresh channel (a refused operation closes its channel). */
async function declare<T>(
  conn: ChannelModel,
  member: string,
  action: string,
  what: string,
  fn: (ch: Channel) => Promise<T>,
): Promise<T> {
  const ch = await conn.createChannel();
  ch.on("error", () => {});
  try {
    return await fn(ch);
  } catch (error) {
    throw new BrokerError(
      `${action}: could not ${what} on ${redactUrl(member)}: ${brokerMessage(error)}`,
      { cause: error },
    );
  } finally {
    await closeAmqp(ch);
  }
}

async function withConnection<T>(
  urls: string | readonly string[],
  action: string,
  fn: (conn: ChannelModel, member: string) => Promise<T>,
): Promise<T> {
  let session;
  try {
    session = await openBroker(urls, { timeoutSeconds: 10 });
  } catch (error) {
    throw new BrokerError(`${action}: ${messageOf(error)}`, { cause: error });
  }
  try {
    return await fn(session.connection, session.url);
  } finally {
    await session.close();
  }
}

function vhostOf(urls: string | readonly string[]): string {
  const first = (typeof urls === "string" ? urls.split(",")[0]! : urls[0]!).trim();
  const path = new URL(first).pathname.replace(/^\//, "");
  return path === "" ? "/" : decodeURIComponent(path);
}

/** A queue as the management API lists it. */
interface ListedQueue {
  name: string;
  vhost: string;
  type: string;
}

async function listQueues(
  endpoints: { amqp: string | readonly string[]; api: string },
  action: string,
  timeoutMs = 10_000,
): Promise<ListedQueue[]> {
  let u: URL;
  try {
    u = new URL(endpoints.api);
  } catch {
    throw new BrokerError(
      `${action}: the management API URL ${redactUrl(endpoints.api)} is not a URL`,
    );
  }
  const vhost = vhostOf(endpoints.amqp);
  const auth = btoa(
    String.fromCharCode(
      ...new TextEncoder().encode(
        `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`,
      ),
    ),
  );
  const base = `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
  const path = `/api/queues/${encodeURIComponent(vhost)}?columns=name,vhost,type`;
  const shown = `${redactUrl(endpoints.api).replace(/\/+$/, "")}${path}`;
  let trust: HttpTrust;
  try {
    trust = await httpTrust(u, `the management API ${redactUrl(endpoints.api)}`);
  } catch (error) {
    throw new BrokerError(`${action}: ${messageOf(error)}`, { cause: error });
  }
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      client: trust.client,
      headers: { authorization: `Basic ${auth}`, accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    trust.client?.close();
    throw new BrokerError(
      `${action}: could not reach the management API (GET ${shown}): ${
        tlsRefusal(error, trust) ?? messageOf(error)
      }`,
    );
  }
  const text = await response.text().finally(() => trust.client?.close());
  if (response.status !== 200) {
    throw new BrokerError(`${action}: GET ${shown} answered ${response.status}`, {
      status: response.status,
    });
  }
  const body = JSON.parse(text) as unknown;
  if (!Array.isArray(body)) {
    throw new BrokerError(`${action}: GET ${shown} did not answer a list of queues`);
  }
  return body.filter((q): q is ListedQueue =>
    typeof q?.name === "string" && typeof q?.vhost === "string"
  ).map((q) => ({ name: q.name, vhost: q.vhost, type: String(q.type ?? "classic") }));
}
