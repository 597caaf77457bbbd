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

import { type ChannelModel, type ConfirmChannel, type Options } from "amqplib";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import process from "node:process";
import { unescape } from "node:querystring";
import { format } from "node:util";
import { amqpTransport, type RefusedBody, takeRefusal } from "./amqp_transport.ts";
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
  /**
   * Message bodies larger than this many bytes are refused from their content header, never
   * read into memory: the message comes with an empty `content` and {@linkcode refusedBody}
   * says what was refused (default: none refused).
   */
  maxBodyBytes?: number;
}

/**
 * amqplib 2.3.1's own connection machinery (lib/connection.js, lib/channel_model.js,
 * lib/credentials.js), which its `connect` builds over a `node:net` socket. Its package exports
 * no subpath, so they are required relative to its entry point.
 */
const amqplibRequire = createRequire(createRequire(import.meta.url).resolve("amqplib"));
const { Connection } = amqplibRequire("./lib/connection.js") as {
  Connection: new (stream: unknown) => AmqplibConnection;
};
const { ChannelModel: ChannelModelClass } = amqplibRequire("./lib/channel_model.js") as {
  ChannelModel: new (connection: AmqplibConnection) => ChannelModel;
};
const { version: AMQPLIB_VERSION } = amqplibRequire("./package.json") as { version: string };
const credentials = amqplibRequire("./lib/credentials.js") as {
  plain(user: string, password: string): { mechanism: string; response(): Buffer };
};

interface AmqplibConnection {
  open(fields: object, callback: (error: Error | null) => void): void;
}

/**
 * Connects as amqplib 2.3.1's `connect` (lib/connect.js) does, with the same open fields (the
 * credential from the URL, the vhost, the query's locale, channelMax, frameMax and maxFrameSize,
 * the heartbeat, amqplib's client properties), but over {@linkcode amqpTransport} on a
 * `Deno.Conn` (TLS for amqps://, verified against the host name as amqplib's does) instead of
 * `node:net`: a refused body is never copied (bench/README.md, "Refusing costs nothing").
 *
 * @throws {Error} with node's wording for a refused connection or unknown host
 *   (`connect ECONNREFUSED host:port`, `getaddrinfo ENOTFOUND host`), `connect ETIMEDOUT` after
 *   `timeoutSeconds`, or amqplib's for a refused handshake.
 */
async function connectThrough(url: URL, options: OpenOptions): Promise<ChannelModel> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = parseInt(url.port, 10) || (url.protocol === "amqp:" ? 5672 : 5671);
  const query = url.searchParams;
  const vhost = url.pathname ? url.pathname.slice(1) : "";
  const intOr = (name: string, fallback: number) => {
    const value = query.get(name);
    return value === null ? fallback : parseInt(value, 10);
  };
  const maxFrameSize = query.get("maxFrameSize");
  // As lib/connect.js credentialsFromUrl: guest unless the URL names a user or a password.
  let user = "guest";
  let password = "guest";
  if (url.username !== "" || url.password !== "") {
    user = url.username ? unescape(url.username) : "";
    password = url.password ? unescape(url.password) : "";
  }
  const credential = credentials.plain(user, password);
  const fields = {
    clientProperties: {
      product: "amqplib",
      version: AMQPLIB_VERSION,
      platform: format("Node.JS %s", process.version),
      information: "https://amqp-node.github.io/amqplib/",
      capabilities: {
        publisher_confirms: true,
        exchange_exchange_bindings: true,
        "basic.nack": true,
        consumer_cancel_notify: true,
        "connection.blocked": true,
        authentication_failure_close: true,
      },
    },
    mechanism: credential.mechanism,
    response: credential.response(),
    locale: query.get("locale") || "en_US",
    channelMax: intOr("channelMax", 0),
    frameMax: intOr("frameMax", 131072),
    heartbeat: options.heartbeat ?? 15,
    maxFrameSize: maxFrameSize === null
      ? undefined
      : /^\d+$/.test(maxFrameSize)
      ? Number(maxFrameSize)
      : NaN,
    virtualHost: vhost ? unescape(vhost) : "/",
    capabilities: "",
    insist: 0,
  };
  const timeoutMs = (options.timeoutSeconds ?? 5) * 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error("connect ETIMEDOUT"));
    }, timeoutMs);
  });
  let stream: ReturnType<typeof amqpTransport> | undefined;
  try {
    const dialing = dial(url.protocol, host, port);
    // A connection made after the timeout is closed as it comes.
    timedOut.catch(() => dialing.then((late) => late.close(), () => {}));
    const conn = await Promise.race([dialing, timedOut]);
    stream = amqpTransport(conn, { maxBodyBytes: options.maxBodyBytes });
    const connection = new Connection(stream);
    await Promise.race([
      new Promise<void>((resolve, reject) =>
        connection.open(fields, (error) => error === null ? resolve() : reject(error))
      ),
      timedOut,
    ]);
    return new ChannelModelClass(connection);
  } catch (error) {
    // The broker does not close the socket after a refused handshake (a wrong password).
    stream?.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP (amqp:) or TLS (amqps:) connection to `host`, with node's wording of why not. */
async function dial(
  protocol: string,
  host: string,
  port: number,
): Promise<Deno.Conn> {
  try {
    const conn = protocol === "amqps:"
      ? await Deno.connectTls({ hostname: host, port })
      : await Deno.connect({ hostname: host, port });
    return conn;
  } catch (error) {
    if (error instanceof Deno.errors.ConnectionRefused) {
      throw new Error(`connect ECONNREFUSED ${host}:${port}`, { cause: error });
    }
    if (error instanceof Error && /failed to lookup address/i.test(error.message)) {
      throw new Error(`getaddrinfo ENOTFOUND ${host}`, { cause: error });
    }
    throw error;
  }
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
    connection = await connectThrough(parsed, options);
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

export type { RefusedBody } from "./amqp_transport.ts";

/**
 * The body refused for `message` (its announced size, the bound and the digest of its bytes),
 * or undefined when its `content` is its body. A session opened with `maxBodyBytes` refuses a
 * larger body from its content header, in the transport under amqplib (lib/amqp_transport.ts):
 * its bytes are hashed and let go as they arrive, never joined, and amqplib delivers the message
 * with an empty `content`; the consumer acknowledges it as any other, so the broker drops it.
 * Told once: a second call for the same message says undefined.
 */
export function refusedBody(
  message: { fields: { deliveryTag: number; consumerTag?: string } },
): RefusedBody | undefined {
  return takeRefusal(message.fields.consumerTag ?? "", message.fields.deliveryTag);
}

/** The readable part of an amqplib error. */
export function brokerMessage(error: unknown): string {
  const text = messageOf(error);
  const refused = /ACCESS_REFUSED - ([^"]+)/.exec(text);
  if (refused) return `ACCESS_REFUSED: ${refused[1]!.trim()}`;
  return text;
}
