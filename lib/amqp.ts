/**
 * Connecting to the broker (AMQP 0-9-1, amqplib) with errors that name the broker (password
 * redacted), and publishing with publisher confirms: a publish is done when the broker says so,
 * and a refusal or an unroutable message is an error of that publish, not a channel close found
 * later. Loaded only by the commands that talk to the broker.
 *
 * Several URLs are the members of one RabbitMQ cluster: the control plane and the builder connect
 * through {@linkcode openBroker}, which takes the first member that answers, and reconnects
 * through it again (starting after the member it lost) when its connection goes. The host's link
 * does the same through `lib/amqp_link.ts` (the same protocol without amqplib and Deno's Node
 * layer, for its memory); both take the members through the one failover loop of the project,
 * `openFirstMember` of `lib/amqp_base.ts`.
 *
 * @module
 */

import { type ChannelModel, type ConfirmChannel, connect, type Options } from "amqplib";
import { Buffer } from "node:buffer";
import { redactUrl } from "./url.ts";
import { AmqpError, brokerMessage, openFirstMember } from "./amqp_base.ts";

export { AmqpError, brokerMessage } from "./amqp_base.ts";
export { brokerUrls, collectBrokerUrls, withCredential } from "./broker_urls.ts";

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
  return await openFirstMember(
    urls,
    options.startAt,
    (url, member) => openOne(url, member, options),
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
