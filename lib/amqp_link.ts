/**
 * The host's link to the broker (AMQP 0-9-1) without Deno's Node compatibility layer: the
 * protocol of `@cloudamqp/amqp-client` (TypeScript, no dependencies) over `Deno.connect` and
 * `Deno.connectTls`. amqplib, which mesh-control and mesh-builder keep (`lib/amqp.ts`), loads
 * Node's streams, buffers, `net` and `tls` (~15 MiB resident); this module loads the protocol
 * alone (~4 MiB), which is what keeps a node's long-running link small.
 *
 * It does for the link what `lib/amqp.ts` does for the other programs, with the same messages:
 * the first member of a cluster that answers, tried from a given one round the list (one
 * failover loop, `lib/amqp_base.ts`); a confirm channel; publishes persistent and mandatory,
 * done when the broker confirms them; errors naming the broker (password redacted) and the
 * broker's refusals said as amqplib says them (`Connection closed: 320 (CONNECTION-FORCED) with
 * message "..."`), so that what the link prints did not change with the client.
 *
 * @module
 */

import { AMQPBaseClient } from "@cloudamqp/amqp-client/amqp-base-client";
import { AMQPChannel } from "@cloudamqp/amqp-client/amqp-channel";
import type { AMQPMessage } from "@cloudamqp/amqp-client/amqp-message";
import { AMQPView } from "@cloudamqp/amqp-client/amqp-view";
import { AmqpError, brokerMessage, openFirstMember } from "./amqp_base.ts";
import { messageOf } from "./atomic.ts";
import { redactUrl } from "./url.ts";

/** A delivered message: its body, to be acknowledged with {@linkcode LinkSession.ack}. */
export interface Delivery {
  content: Uint8Array;
  /** @internal the client's message, for the acknowledgement. */
  readonly message: AMQPMessage;
}

/** One message to publish (as `Outgoing` of `lib/amqp.ts`, with the properties the link sets). */
export interface LinkOutgoing {
  exchange: string;
  routingKey: string;
  body: Uint8Array;
  /** The message's type property (the link's reports: `report`). */
  type?: string;
}

/** Options for {@linkcode openLinkBroker}. */
export interface LinkOpenOptions {
  /** Seconds to wait for each member's connection, handshake included (default 5). */
  timeoutSeconds?: number;
  /** Heartbeat in seconds (default 15), so a vanished broker is noticed. */
  heartbeat?: number;
  /** The member to try first (an index into the URLs, default 0); the others follow round. */
  startAt?: number;
}

/**
 * Why a connection closed: `code` is the broker's AMQP reply code (a number: 320 when forced)
 * when the broker closed it on purpose, a system error code or nothing when the socket was lost.
 */
export interface CloseError extends Error {
  code?: number | string;
}

/** An open connection and one confirm channel on it: what the link uses of the broker. */
export interface LinkSession {
  /** The member this session is connected to (one of the URLs given, password included). */
  url: string;
  /** Its position in the list given to {@linkcode openLinkBroker} (0 for a single URL). */
  member: number;
  /**
   * Asserts that `queue` exists (a passive declare).
   *
   * @throws {AmqpError} when it does not (`Operation failed: QueueDeclare; 404 (NOT-FOUND)
   *   with message "NOT_FOUND - no queue ..."`) or cannot be used; the channel is then closed.
   */
  checkQueue(queue: string): Promise<void>;
  /** At most `count` unacknowledged deliveries at once. @throws {AmqpError} as `checkQueue`. */
  prefetch(count: number): Promise<void>;
  /**
   * Consumes `queue` with acknowledgements: `onDelivery` gets each message, and null when the
   * broker cancels the consumer (the queue was deleted).
   *
   * @throws {AmqpError} as `checkQueue`.
   */
  consume(queue: string, onDelivery: (message: Delivery | null) => void): Promise<void>;
  /** Acknowledges a delivery. @throws {AmqpError} when the channel is closed. */
  ack(message: Delivery): void;
  /**
   * Publishes every message persistently and mandatory (content type `application/json`), then
   * waits for the broker's confirms.
   *
   * @throws {AmqpError} when the broker nacks any, returns any as unroutable (naming the routing
   *   keys), or closes the channel (a refused permission: 403 ACCESS_REFUSED).
   */
  publishConfirmed(messages: LinkOutgoing[]): Promise<void>;
  /**
   * Calls `listener` once when the connection closes: with why when it was lost or the broker
   * closed it, with nothing when {@linkcode close} closed it (as amqplib's `close` event).
   */
  onClose(listener: (error?: CloseError) => void): void;
  /** Closes the channel and the connection; never throws. */
  close(): Promise<void>;
}

/**
 * Opens a connection and a confirm channel to the first of `urls` that answers
 * (`amqp://user:pass@host:port/vhost` or `amqps://...`; several are the members of one cluster,
 * tried from `options.startAt` round the list).
 *
 * @throws {AmqpError} naming every member tried and why each failed (passwords redacted), when
 *   none answers or every one refuses the credential.
 */
export function openLinkBroker(
  urls: string | readonly string[],
  options: LinkOpenOptions = {},
): Promise<LinkSession> {
  return openFirstMember(urls, options.startAt, (url, member) => openOne(url, member, options));
}

async function openOne(
  url: string,
  member: number,
  options: LinkOpenOptions,
): Promise<LinkSession> {
  let client: DenoClient;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "amqp:" && parsed.protocol !== "amqps:") {
      throw new Error(`expected an amqp:// or amqps:// URL, not ${parsed.protocol}`);
    }
    client = new DenoClient(parsed, options.heartbeat ?? 15);
    await client.open((options.timeoutSeconds ?? 5) * 1000);
  } catch (error) {
    throw new AmqpError(`Cannot connect to broker "${redactUrl(url)}": ${brokerMessage(error)}`, {
      cause: error,
    });
  }
  let channel: AMQPChannel;
  try {
    channel = await client.channel();
    await channel.confirmSelect();
  } catch (error) {
    await client.shut();
    throw new AmqpError(
      `Cannot open a channel on "${redactUrl(url)}": ${
        brokerMessage(channelError(error, "ChannelOpen"))
      }`,
    );
  }
  return new Session(client, channel, url, member);
}

class Session implements LinkSession {
  #client: DenoClient;
  #channel: AMQPChannel;
  /** Set while a publish waits: the channel's close, when the broker closes it. */
  #channelClosed: ((reason: string) => void) | undefined;
  /** Set while a publish waits: the routing keys the broker returned. */
  #returned: string[] | undefined;
  url: string;
  member: number;

  constructor(client: DenoClient, channel: AMQPChannel, url: string, member: number) {
    this.#client = client;
    this.#channel = channel;
    this.url = url;
    this.member = member;
    channel.onerror = (reason) => this.#channelClosed?.(reason);
    channel.onReturn = (message) => {
      this.#returned?.push(message.routingKey);
    };
  }

  async checkQueue(queue: string): Promise<void> {
    await this.#rpc("QueueDeclare", () => this.#channel.queueDeclare(queue, { passive: true }));
  }

  async prefetch(count: number): Promise<void> {
    await this.#rpc("BasicQos", () => this.#channel.basicQos(count));
  }

  async consume(queue: string, onDelivery: (message: Delivery | null) => void): Promise<void> {
    const consumer = await this.#rpc(
      "BasicConsume",
      () =>
        this.#channel.basicConsume(queue, { noAck: false }, (message) => {
          onDelivery({ content: message.body ?? new Uint8Array(0), message });
        }),
    );
    consumer.wait().catch((error: unknown) => {
      // The broker cancelled the consumer (its queue was deleted): amqplib's null delivery.
      if (messageOf(error) === "Consumer cancelled by the server") onDelivery(null);
    });
  }

  ack(delivery: Delivery): void {
    if (this.#channel.closed) throw new AmqpError("Channel closed");
    this.#channel.basicAck(delivery.message.deliveryTag).catch(() => {});
  }

  async publishConfirmed(messages: LinkOutgoing[]): Promise<void> {
    const returned: string[] = [];
    let closed: string | undefined;
    this.#returned = returned;
    this.#channelClosed = (reason) => closed ??= reason;
    try {
      const pending = messages.map((m) =>
        this.#channel.basicPublish(m.exchange, m.routingKey, m.body, {
          deliveryMode: 2,
          contentType: "application/json",
          ...(m.type !== undefined ? { type: m.type } : {}),
        }, true)
      );
      const settled = await Promise.allSettled(pending);
      const failed = settled.filter((s) => s.status === "rejected");
      if (closed !== undefined) {
        throw new AmqpError(
          `The broker refused the publish: ${
            brokerMessage(amqplibClose("Channel closed by server", closed))
          }`,
        );
      }
      if (failed.length > 0) {
        throw new AmqpError(
          `The broker did not confirm ${failed.length} of ${messages.length} messages: ${
            brokerMessage(nackError((failed[0] as PromiseRejectedResult).reason))
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
      this.#returned = undefined;
      this.#channelClosed = undefined;
    }
  }

  onClose(listener: (error?: CloseError) => void): void {
    this.#client.closeListener = listener;
  }

  async close(): Promise<void> {
    if (!this.#channel.closed) {
      await withTimeout(this.#channel.close(), 2000).catch(() => {});
    }
    await this.#client.shut();
  }

  /** Runs one channel method; the broker's refusal said as amqplib says it. */
  async #rpc<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw new AmqpError(messageOf(channelError(error, method)));
    }
  }
}

/**
 * amqplib's words for the AMQP reply codes (its `Connection closed: 320 (CONNECTION-FORCED) with
 * message "..."`).
 */
const REPLY_NAMES: Record<number, string> = {
  200: "REPLY-SUCCESS",
  311: "CONTENT-TOO-LARGE",
  312: "NO-ROUTE",
  313: "NO-CONSUMERS",
  320: "CONNECTION-FORCED",
  402: "INVALID-PATH",
  403: "ACCESS-REFUSED",
  404: "NOT-FOUND",
  405: "RESOURCE-LOCKED",
  406: "PRECONDITION-FAILED",
  501: "FRAME-ERROR",
  502: "SYNTAX-ERROR",
  503: "COMMAND-INVALID",
  504: "CHANNEL-ERROR",
  505: "UNEXPECTED-FRAME",
  506: "RESOURCE-ERROR",
  530: "NOT-ALLOWED",
  540: "NOT-IMPLEMENTED",
  541: "INTERNAL-ERROR",
};

/** amqp-client's close reason (`...closed: TEXT (CODE)`) as its reply code and text. */
function closeReason(reason: string): { code: number; text: string } | undefined {
  const match = /closed: (.*) \((\d+)\)$/s.exec(reason);
  return match ? { code: Number(match[2]), text: match[1]! } : undefined;
}

/** `prefix: 320 (CONNECTION-FORCED) with message "TEXT"`, with the reply code as `code`. */
function amqplibClose(prefix: string, reason: string): CloseError {
  const close = closeReason(reason);
  if (close === undefined) return new Error(reason);
  const error: CloseError = new Error(
    `${prefix}: ${close.code} (${
      REPLY_NAMES[close.code] ?? "UNKNOWN"
    }) with message "${close.text}"`,
  );
  error.code = close.code;
  return error;
}

/** A channel method's failure as amqplib says it (`Operation failed: QueueDeclare; 404 ...`). */
function channelError(error: unknown, method: string): Error {
  const text = messageOf(error);
  const close = closeReason(text);
  if (close === undefined) return error instanceof Error ? error : new Error(text);
  return new Error(
    `Operation failed: ${method}; ${close.code} (${
      REPLY_NAMES[close.code] ?? "UNKNOWN"
    }) with message "${close.text}"`,
  );
}

/** A publish the broker did not confirm, as amqplib says it. */
function nackError(error: unknown): Error {
  const text = messageOf(error);
  if (text === "Message rejected") return new Error("message nacked");
  return amqplibClose("Channel closed by server", text);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A system error as Node (and so amqplib) says it: `connect ECONNREFUSED 127.0.0.1:1`. */
function systemError(
  error: unknown,
  action: string,
  address: string,
  host = "",
): CloseError {
  const codes: [new (...args: never[]) => Error, string][] = [
    [Deno.errors.ConnectionRefused, "ECONNREFUSED"],
    [Deno.errors.ConnectionReset, "ECONNRESET"],
    [Deno.errors.TimedOut, "ETIMEDOUT"],
    [Deno.errors.BrokenPipe, "EPIPE"],
    [Deno.errors.AddrNotAvailable, "EADDRNOTAVAIL"],
    [Deno.errors.NotConnected, "ENOTCONN"],
  ];
  const text = error instanceof Error ? error.message : "";
  // As Node's resolver and TLS (Deno's node:tls, which amqplib used) say them.
  if (text.startsWith("failed to lookup address information")) {
    const said: CloseError = new Error(
      `getaddrinfo ${/temporary failure/i.test(text) ? "EAI_AGAIN" : "ENOTFOUND"} ${host}`,
    );
    said.code = /temporary failure/i.test(text) ? "EAI_AGAIN" : "ENOTFOUND";
    return said;
  }
  if (text === "received corrupt message of type InvalidContentType") {
    return new Error(`${text} (SSL routines:ssl3_get_record:wrong version number)`);
  }
  for (const [type, code] of codes) {
    if (error instanceof type) {
      const said: CloseError = new Error(`${action} ${code}${address ? ` ${address}` : ""}`);
      said.code = code;
      return said;
    }
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** amqp-client's protocol over a Deno socket (TCP, or TLS for `amqps://`). */
class DenoClient extends AMQPBaseClient {
  #host: string;
  #port: number;
  #tls: boolean;
  #conn: Deno.Conn | undefined;
  /** Bytes of a frame split across reads. */
  #partial: Uint8Array | undefined;
  /** Sends in order, one write at a time. */
  #writing: Promise<void> = Promise.resolve();
  #lastRead = 0;
  #watch: ReturnType<typeof setInterval> | undefined;
  #ended = false;
  /** Called once when the connection closes (with nothing when by `shut`). */
  closeListener: ((error?: CloseError) => void) | undefined;

  constructor(url: URL, heartbeat: number) {
    super(
      decodeURIComponent(url.pathname.slice(1)) || "/",
      decodeURIComponent(url.username) || "guest",
      decodeURIComponent(url.password) || "guest",
      undefined,
      `Deno ${Deno.version.deno} ${Deno.build.os} ${Deno.build.arch}`,
      undefined,
      heartbeat,
    );
    this.#tls = url.protocol === "amqps:";
    this.#host = url.hostname.replace(/^\[(.*)\]$/, "$1") || "localhost";
    this.#port = Number(url.port) || (this.#tls ? 5671 : 5672);
    this.onerror = () => {};
    this.ondisconnect = (error) =>
      this.#end(error && amqplibClose("Connection closed", error.message));
  }

  override connect(): Promise<AMQPBaseClient> {
    return this.open(5000).then(() => this);
  }

  /** Connects and completes the handshake within `timeoutMs`. */
  async open(timeoutMs: number): Promise<void> {
    this.channels = [new AMQPChannel(this, 0)];
    const address = `${this.#host}:${this.#port}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.#shutSocket();
        reject(systemError(new Deno.errors.TimedOut(), "connect", ""));
      }, timeoutMs);
    });
    try {
      const connecting = this.#tls
        ? Deno.connectTls({ hostname: this.#host, port: this.#port })
        : Deno.connect({ hostname: this.#host, port: this.#port });
      connecting.catch(() => {});
      try {
        this.#conn = await Promise.race([connecting, timedOut]);
      } catch (error) {
        throw systemError(error, "connect", address, this.#host);
      }
      const handshake = new Promise<void>((resolve, reject) => {
        this.connectPromise = [() => resolve(), (error) => reject(error)];
      });
      handshake.catch(() => {});
      this.#lastRead = performance.now();
      this.#read(this.#conn);
      await this.send(new Uint8Array([65, 77, 81, 80, 0, 0, 9, 1]));
      try {
        await Promise.race([handshake, timedOut]);
      } catch (error) {
        // A refusal during the handshake, as amqplib says it: a credential is refused at the
        // start, a vhost (530 NOT_ALLOWED) at the open, where amqplib names the frame only.
        const reason = messageOf(error);
        const close = closeReason(reason);
        if (close?.code === 530) {
          throw new Error("Expected ConnectionOpenOk; got <ConnectionClose channel:0>");
        }
        throw close ? amqplibClose("Handshake terminated by server", reason) : error;
      }
    } catch (error) {
      this.closeListener = undefined;
      this.#shutSocket();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (this.heartbeat > 0) {
      // No byte from the broker for two heartbeats: it is gone (amqplib's "Heartbeat timeout").
      const every = this.heartbeat * 1000;
      this.#watch = setInterval(() => {
        if (performance.now() - this.#lastRead > 2 * every) {
          this.#end(new Error("Heartbeat timeout"));
        }
      }, every);
    }
  }

  /** Reads frames until the socket closes. */
  async #read(conn: Deno.Conn): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    let error: CloseError | undefined;
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        this.#lastRead = performance.now();
        this.#frames(buffer.subarray(0, n));
      }
      error = this.#ended ? undefined : new Error("Unexpected close");
    } catch (e) {
      error = this.#ended ? undefined : systemError(e, "read", "");
    }
    if (this.connectPromise) {
      const [, reject] = this.connectPromise;
      delete this.connectPromise;
      reject(error ?? new Error("Socket closed abruptly during opening handshake"));
    }
    this.#end(error);
  }

  /** Parses every whole frame in what was read, keeping the rest for the next read. */
  #frames(chunk: Uint8Array): void {
    let bytes = chunk;
    if (this.#partial !== undefined) {
      bytes = new Uint8Array(this.#partial.length + chunk.length);
      bytes.set(this.#partial);
      bytes.set(chunk, this.#partial.length);
      this.#partial = undefined;
    }
    let at = 0;
    while (bytes.length - at >= 7) {
      const view = new DataView(bytes.buffer, bytes.byteOffset + at);
      const size = view.getUint32(3) + 8;
      if (bytes.length - at < size) break;
      this.parseFrames(new AMQPView(bytes.buffer, bytes.byteOffset + at, size));
      at += size;
    }
    // The read buffer is reused: what is left is copied.
    if (at < bytes.length) this.#partial = bytes.slice(at);
  }

  override send(bytes: Uint8Array): Promise<void> {
    const conn = this.#conn;
    if (conn === undefined) return Promise.reject(new Error("Socket not connected"));
    // The publish buffer goes back to its pool when this settles: written whole first.
    const write = this.#writing.then(async () => {
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    });
    this.#writing = write.catch(() => {});
    return write.catch((error) => {
      throw systemError(error, "write", "");
    });
  }

  protected override closeSocket(): void {
    this.closed = true;
    this.#shutSocket();
  }

  /** Closes the connection politely (the broker's close-ok awaited up to 2 s), then the socket. */
  async shut(): Promise<void> {
    const listener = this.closeListener;
    this.closeListener = undefined;
    if (!this.closed) await withTimeout(this.close(), 2000).catch(() => {});
    this.#ended = true;
    this.closed = true;
    this.#shutSocket();
    listener?.();
  }

  #shutSocket(): void {
    clearInterval(this.#watch);
    this.#watch = undefined;
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn !== undefined) {
      this.#ended = true;
      // What was already sent goes first (the close-ok answering the broker's close).
      const writes = this.#writing;
      const timer = setTimeout(() => closeConn(conn), 1000);
      writes.finally(() => {
        clearTimeout(timer);
        closeConn(conn);
      });
    }
  }

  /** The connection is over: every channel closed, the listener told once. */
  #end(error?: CloseError): void {
    this.#ended = true;
    const closedError = error ?? new Error("Socket closed");
    if (!this.closed) {
      this.closed = true;
      this.channels.forEach((ch) => ch?.setClosed(closedError));
      this.channels = [new AMQPChannel(this, 0)];
    }
    this.#shutSocket();
    const listener = this.closeListener;
    this.closeListener = undefined;
    listener?.(error);
  }
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}
