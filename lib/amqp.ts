/**
 * Connecting to the broker (AMQP 0-9-1, amqplib) with errors that name the broker (password
 * redacted), and publishing with publisher confirms: a publish is done when the broker says so,
 * and a refusal or an unroutable message is an error of that publish, not a channel close found
 * later. Loaded only by the commands that talk to the broker.
 *
 * Several URLs are the members of one RabbitMQ cluster: every program (the host's link, the
 * control plane, the builder) connects through {@linkcode openBroker}, which takes the first
 * member that answers, and reconnects through it again (starting after the member it lost) when
 * its connection goes. This is the one failover implementation of the project.
 *
 * @module
 */

import { type ChannelModel, type ConfirmChannel, connect, type Options } from "amqplib";
import { Buffer } from "node:buffer";
import { createHash, type Hash } from "node:crypto";
import { messageOf } from "./atomic.ts";
import { redactUrl } from "./url.ts";
import { BrokerUrlError, brokerUrls } from "./broker_urls.ts";

export { brokerUrls, collectBrokerUrls, withCredential } from "./broker_urls.ts";

/** The broker cannot be reached, refused us, or refused or could not route a publish. */
export class AmqpError extends Error {
  /** True when the broker accepted the publish but no queue was bound for it (returned). */
  readonly unroutable: boolean;
  /** The routing keys returned as unroutable. */
  readonly returnedKeys: string[];
  constructor(
    message: string,
    options?: ErrorOptions & { unroutable?: boolean; returnedKeys?: string[] },
  ) {
    super(message, options);
    this.name = "AmqpError";
    this.unroutable = options?.unroutable ?? false;
    this.returnedKeys = options?.returnedKeys ?? [];
  }
}

/** An open connection and one confirm channel on it. */
export interface BrokerSession {
  connection: ChannelModel;
  channel: ConfirmChannel;
  /** The member this session is connected to (one of the URLs given, password included). */
  url: string;
  /** Its position in the list given to {@linkcode openBroker} (0 for a single URL). */
  member: number;
  /** Closes the channel and the connection; never throws. */
  close(): Promise<void>;
}

/** Options for {@linkcode openBroker}. */
export interface OpenOptions {
  /** Seconds to wait for each member's connection (default 5). */
  timeoutSeconds?: number;
  /** Heartbeat in seconds (default 15), so a vanished broker is noticed. */
  heartbeat?: number;
  /**
   * The member to try first (an index into the URLs, default 0); the others follow in order,
   * wrapping round. A program that lost its member passes the next one, so it does not knock
   * on the door that just closed.
   */
  startAt?: number;
}

/**
 * Opens a connection and a confirm channel to the first of `urls` that answers
 * (`amqp://user:pass@host:port/vhost`; several are the members of one cluster, tried from
 * `options.startAt` round the list). A single URL behaves as before.
 *
 * @throws {AmqpError} naming every member tried and why each failed (passwords redacted), when
 *   none answers or every one refuses the credential.
 */
export async function openBroker(
  urls: string | readonly string[],
  options: OpenOptions = {},
): Promise<BrokerSession> {
  let list: string[];
  try {
    list = brokerUrls(urls);
  } catch (error) {
    if (error instanceof BrokerUrlError) throw new AmqpError(error.message);
    throw error;
  }
  const start = ((options.startAt ?? 0) % list.length + list.length) % list.length;
  const failures: string[] = [];
  for (let k = 0; k < list.length; k++) {
    const member = (start + k) % list.length;
    try {
      return await openOne(list[member]!, member, options);
    } catch (error) {
      if (list.length === 1) throw error;
      failures.push(messageOf(error));
    }
  }
  throw new AmqpError(
    `Cannot connect to any of the ${list.length} brokers: ${failures.join("; ")}`,
  );
}

async function openOne(url: string, member: number, options: OpenOptions): Promise<BrokerSession> {
  let connection: ChannelModel;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "amqp:" && parsed.protocol !== "amqps:") {
      throw new Error(`expected an amqp:// or amqps:// URL, not ${parsed.protocol}`);
    }
    parsed.searchParams.set("heartbeat", String(options.heartbeat ?? 15));
    connection = await connect(parsed.href, { timeout: (options.timeoutSeconds ?? 5) * 1000 });
  } catch (error) {
    throw new AmqpError(`Cannot connect to broker "${redactUrl(url)}": ${brokerMessage(error)}`, {
      cause: error,
    });
  }
  // An error event with no listener would crash the process; the caller sees the close.
  connection.on("error", () => {});
  let channel: ConfirmChannel;
  try {
    channel = await connection.createConfirmChannel();
  } catch (error) {
    await connection.close().catch(() => {});
    throw new AmqpError(`Cannot open a channel on "${redactUrl(url)}": ${brokerMessage(error)}`);
  }
  channel.on("error", () => {});
  return {
    connection,
    channel,
    url,
    member,
    close: async () => {
      await channel.close().catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** One message to publish. */
export interface Outgoing {
  exchange: string;
  routingKey: string;
  body: Uint8Array;
  options?: Options.Publish;
}

/**
 * Publishes every message persistently and mandatory, then waits for the broker's confirms.
 *
 * @throws {AmqpError} when the broker nacks any, returns any as unroutable (naming the routing
 *   keys), or closes the channel (a refused permission: 403 ACCESS_REFUSED).
 */
export async function publishConfirmed(
  channel: ConfirmChannel,
  messages: Outgoing[],
): Promise<void> {
  const returned: string[] = [];
  const onReturn = (message: { fields: { routingKey: string } }) => {
    returned.push(message.fields.routingKey);
  };
  let closed: Error | undefined;
  const onError = (error: Error) => closed = error;
  channel.on("return", onReturn);
  channel.on("error", onError);
  try {
    const pending = messages.map((m) =>
      new Promise<void>((resolve, reject) => {
        channel.publish(
          m.exchange,
          m.routingKey,
          Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength),
          { persistent: true, mandatory: true, contentType: "application/json", ...m.options },
          (error: unknown) => error ? reject(error) : resolve(),
        );
      })
    );
    const settled = await Promise.allSettled(pending);
    const failed = settled.filter((s) => s.status === "rejected");
    if (closed !== undefined) {
      throw new AmqpError(`The broker refused the publish: ${brokerMessage(closed)}`);
    }
    if (failed.length > 0) {
      throw new AmqpError(
        `The broker did not confirm ${failed.length} of ${messages.length} messages: ${
          brokerMessage((failed[0] as PromiseRejectedResult).reason)
        }`,
      );
    }
    if (returned.length > 0) {
      throw new AmqpError(
        `The broker could not route ${returned.length} of ${messages.length} messages (no queue bound for ${
          [...new Set(returned)].slice(0, 5).map((k) => `"${k}"`).join(", ")
        }${returned.length > 5 ? ", ..." : ""})`,
        { unroutable: true, returnedKeys: [...new Set(returned)] },
      );
    }
  } finally {
    channel.off("return", onReturn);
    channel.off("error", onError);
  }
}

/** A message body {@linkcode boundBodies} refused from its header, before it arrived. */
export interface RefusedBody {
  /** The body's size as its content header announced it, in bytes. */
  bytes: number;
  /** The bound it exceeded, in bytes. */
  max: number;
  /** `sha256:<hex>` of the body's bytes, hashed as its frames passed and were let go. */
  digest: string;
}

/** The bodies refused by {@linkcode boundBodies}, by the properties object of their message. */
const refusedBodies = new WeakMap<object, RefusedBody>();

/** amqplib's content header frame's class (`basic`): its `size` is the body's length. */
const BASIC_PROPERTIES = 60;

/** A frame as amqplib's channel receives it (lib/frame.js, `decodeFrame`). */
interface Frame {
  /** The method or, for a content header, the class; undefined for a body frame. */
  id?: number;
  /** A content header's body size, in bytes. */
  size?: number;
  fields?: Record<string, unknown>;
  /** A body frame's bytes (a view of the socket's buffer). */
  content?: Uint8Array;
}

/**
 * Bounds the bodies a channel receives (deliveries, gets and returns) to `maxBytes`, before they
 * arrive. amqplib assembles a message's whole body from its frames into one Buffer before it
 * hands the message over, whatever its size: a 100 MB declaration took the link from 69 to 546
 * MiB resident, and V8 and malloc kept most of it (bench/README.md, "Refusing costs nothing").
 * AMQP announces a body's size in the content header frame that comes before the body: a header
 * announcing more than `maxBytes` is held back, the body's frames that follow are hashed and let
 * go as they arrive (never kept, never joined), and when the last has passed amqplib is handed
 * the header as one of an empty body: the message is delivered as usual with an empty `content`,
 * and {@linkcode refusedBody} says what was refused (its size and digest); the consumer
 * acknowledges it as any other, so the broker drops it. A channel that closes in the middle of
 * such a body delivers nothing, as amqplib does with any body: the broker delivers it again.
 * The body's bytes still pass through the socket (the broker sends them whatever the consumer
 * does); what they leave resident is measured in bench/README.md.
 *
 * This wraps the channel's `accept` (amqplib 2.3.1's channel.js, `BaseChannel#accept`, which takes
 * every frame of the channel: `Connection#mainAccept` calls it), the one place frames of one
 * channel pass in order; amqplib exposes no hook of its own. tests/lib/amqp_bound_test.ts holds it
 * to amqplib's behaviour: an upgrade that changes it fails there.
 */
export function boundBodies(channel: ConfirmChannel, maxBytes: number): void {
  const target = channel as unknown as { accept: (f: Frame) => unknown };
  const accept = target.accept;
  /** The refused body's header, held until the body has passed; its bytes still to come. */
  let held: { header: Frame; refused: RefusedBody; hash: Hash; remaining: number } | undefined;
  target.accept = function (this: unknown, f: Frame) {
    if (held !== undefined) {
      const h = held;
      if (f.id === undefined && f.content !== undefined && f.content.length <= h.remaining) {
        // A frame of the refused body: hashed, then let go.
        h.hash.update(f.content);
        h.remaining -= f.content.length;
        if (h.remaining > 0) return;
        h.refused.digest = `sha256:${h.hash.digest("hex")}`;
        held = undefined;
        return accept.call(this, h.header);
      }
      // More than announced, or another frame in the middle of a body: AMQP's order broken. The
      // header goes on, then the frame, and amqplib closes the channel saying why.
      held = undefined;
      accept.call(this, h.header);
    }
    if (f.id === BASIC_PROPERTIES && typeof f.size === "number" && f.size > maxBytes) {
      const properties = { ...f.fields };
      const refused = { bytes: f.size, max: maxBytes, digest: "" };
      refusedBodies.set(properties, refused);
      held = {
        header: { ...f, size: 0, fields: properties },
        refused,
        hash: createHash("sha256"),
        remaining: f.size,
      };
      return;
    }
    return accept.call(this, f);
  };
}

/**
 * The body {@linkcode boundBodies} refused for `message` (its announced size, the bound and the
 * digest of its bytes), or undefined when its `content` is its body.
 */
export function refusedBody(message: { properties: object }): RefusedBody | undefined {
  return refusedBodies.get(message.properties);
}

/** The readable part of an amqplib error. */
export function brokerMessage(error: unknown): string {
  const text = messageOf(error);
  const refused = /ACCESS_REFUSED - ([^"]+)/.exec(text);
  if (refused) return `ACCESS_REFUSED: ${refused[1]!.trim()}`;
  return text;
}
