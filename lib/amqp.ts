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

import {
  type Channel,
  type ChannelModel,
  type ConfirmChannel,
  connect,
  type Options,
} from "amqplib";
import { Buffer } from "node:buffer";
import net from "node:net";
import tls from "node:tls";
import { type AmqpSocket, amqpTransport, type RefusedBody, takeRefusal } from "./amqp_transport.ts";
import { messageOf } from "./atomic.ts";
import { redactUrl } from "./url.ts";
import { BrokerUrlError, brokerUrls } from "./broker_urls.ts";
import {
  PlainRefusedError,
  refusePlain,
  tlsRefusal,
  type TrustAnchor,
  trustAnchorFor,
  TrustFileError,
} from "./wire_trust.ts";

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

/** How long {@linkcode closeAmqp} waits at most, in milliseconds, for a close to finish. */
export const CLOSE_WAIT_MS = 10_000;

/**
 * Closes an amqplib connection or channel and resolves once it is closed, whichever side closed
 * it; it never rejects (a connection or channel that is already closed is closed).
 *
 * amqplib's own `close()` (2.3.1, lib/connection.js and lib/channel.js, `toClosing`) settles only
 * when the broker's close-ok is read. When the broker closes at the same moment (a deleted user's
 * connections, a close asked through the management API, a broker stopping), the two closes
 * cross: the broker answers ours with close-ok, then answers our close-ok to its own close with a
 * TCP reset, having let go of the socket, and the reset overtakes the unread close-ok (Linux drops
 * unread data on a reset; seen with tcpdump). amqplib moves to closed on the socket error,
 * emitting `close`, and never settles the promise it returned: a caller awaiting it waits for
 * ever, or, when nothing else keeps the process alive, the process ends with the await pending.
 * The same holds for any end of the connection while our close is on its way. So this waits for
 * the first of: that promise, the `close` event, or `options.timeoutMs` milliseconds (default
 * {@linkcode CLOSE_WAIT_MS}: a broker that answers nothing at all, whose connection the heartbeat
 * then closes).
 */
export function closeAmqp(
  target: ChannelModel | Channel,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    const done = () => {
      clearTimeout(timer);
      target.off("close", done);
      resolve();
    };
    target.once("close", done);
    timer = setTimeout(done, options.timeoutMs ?? CLOSE_WAIT_MS);
    let closing: Promise<void>;
    try {
      closing = target.close();
    } catch {
      closing = Promise.resolve();
    }
    closing.then(done, done);
  });
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
    connection = await connectAmqp(parsed, { ...options, heartbeat: options.heartbeat ?? 15 });
  } catch (error) {
    if (error instanceof TrustFileError || error instanceof PlainRefusedError) throw error;
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
    await closeAmqp(connection);
    throw new AmqpError(`Cannot open a channel on "${redactUrl(url)}": ${brokerMessage(error)}`);
  }
  channel.on("error", () => {});
  return {
    connection,
    channel,
    url,
    member,
    close: async () => {
      await closeAmqp(channel);
      await closeAmqp(connection);
    },
  };
}

/**
 * Connects to the broker `url` (amqp:// or amqps://) with amqplib's own `connect` over
 * {@linkcode amqpTransport}, keeping the project's rule for the wire (lib/wire_trust.ts): amqps://
 * verifies the broker's certificate against the CA of the URL's `cacertfile=PATH` (the RabbitMQ
 * URI spec's name; taken off the URL before amqplib sees it), else `MESH_CA_FILE`, else
 * /etc/mesh/ca.crt when it exists, else the system's roots, and for the URL's host; amqp:// to a
 * host that is not loopback is refused unless `MESH_ALLOW_PLAIN=1`. For a caller that manages
 * its own channels (control/broker_admin.ts); the programs' sessions go through
 * {@linkcode openBroker}.
 *
 * @throws {TrustFileError} when the CA file is missing, unreadable, too open or not a certificate.
 * @throws {PlainRefusedError} for clear text to another machine, not allowed.
 * @throws {Error} amqplib's or node's wording of a failed connection (as `openBroker`'s cause),
 *   or, for a refused certificate, what was wrong with it ({@linkcode tlsRefusal}).
 */
export async function connectAmqp(
  url: URL,
  options: Pick<OpenOptions, "timeoutSeconds" | "maxBodyBytes" | "heartbeat"> = {},
): Promise<ChannelModel> {
  const target = new URL(url.href);
  const caFile = target.searchParams.get("cacertfile") ?? undefined;
  target.searchParams.delete("cacertfile");
  if (options.heartbeat !== undefined) {
    target.searchParams.set("heartbeat", String(options.heartbeat));
  }
  const host = target.hostname.replace(/^\[|\]$/g, "");
  let anchor: TrustAnchor | undefined;
  if (target.protocol === "amqps:") anchor = await trustAnchorFor(caFile);
  else refusePlain(host, `broker "${redactUrl(url.href)}"`, "use amqps:// (port 5671)");
  return await connectThrough(target, options, anchor);
}

/**
 * Connects with amqplib's own `connect` (2.3.1, lib/connect.js: its open fields, credential,
 * vhost, heartbeat, timeout and errors), but over {@linkcode amqpTransport} on a `Deno.Conn`
 * (TCP_NODELAY, then `Deno.startTls` for amqps://, verified against the host name, as
 * amqplib's `tls.connect` with `servername` is) instead of a `node:net` socket: a refused body is never copied
 * (docs/design.md, "Refusing costs nothing"). amqplib takes no socket of its own and exports no
 * subpath (lib/connection.js cannot be imported, nor required once the program is bundled), so
 * `net.connect` and `tls.connect` are replaced for the synchronous call of `connect`, in which
 * amqplib calls one of them, and put back before it returns; an amqplib that dialed otherwise is
 * an error here, not a silent `node:net`.
 *
 * @throws {Error} amqplib's (`connect ETIMEDOUT` after `timeoutSeconds`, a refused handshake),
 *   or node's wording for a refused connection or an unknown host (`connect ECONNREFUSED
 *   host:port`, `getaddrinfo ENOTFOUND host`).
 */
async function connectThrough(
  url: URL,
  options: Pick<OpenOptions, "timeoutSeconds" | "maxBodyBytes">,
  anchor: TrustAnchor | undefined,
): Promise<ChannelModel> {
  let dialed = false;
  const dialer = (tlsWanted: boolean) =>
  (
    sockopts: { host: string; port: number },
    onConnect: () => void,
  ): AmqpSocket => {
    dialed = true;
    const socket = amqpTransport(dial(tlsWanted, sockopts.host, sockopts.port, anchor), {
      maxBodyBytes: options.maxBodyBytes,
    });
    socket.once("connect", onConnect);
    return socket;
  };
  const putBack = [replaceConnect(net, dialer(false)), replaceConnect(tls, dialer(true))];
  let pending: Promise<ChannelModel>;
  try {
    pending = connect(url.href, { timeout: (options.timeoutSeconds ?? 5) * 1000 });
  } finally {
    for (const back of putBack) back();
  }
  if (!dialed) {
    pending.then((c) => closeAmqp(c), () => {});
    throw new Error("amqplib did not dial through the transport (not amqplib 2.3.1's connect?)");
  }
  return await pending;
}

/**
 * Replaces `module.connect` (node:net's or node:tls's, which amqplib dials through) with
 * `dialer`, whatever its signature: amqplib calls it as its own. Returns what puts the original
 * back.
 */
function replaceConnect(module: { connect: unknown }, dialer: unknown): () => void {
  const saved = module.connect;
  module.connect = dialer;
  return () => {
    module.connect = saved;
  };
}

/**
 * A TCP or TLS connection to `host` (TLS verified against `anchor`, else the system's roots, and
 * for `host`, the handshake done here so that a refused certificate is this call's error), with
 * node's wording of why not, or the sentence saying what was wrong with the certificate.
 */
async function dial(
  tlsWanted: boolean,
  host: string,
  port: number,
  anchor: TrustAnchor | undefined,
): Promise<Deno.Conn> {
  try {
    // TCP_NODELAY before the handshake: with Nagle's algorithm on, each TLS handshake (and
    // AMQP's request/answer frames) stalls on a delayed ACK, ~40 ms each on loopback
    // (probed 2026-12-06). A Deno.TlsConn has no setNoDelay, so TLS is started on the
    // TCP connection instead of through Deno.connectTls.
    const tcp = await Deno.connect({ hostname: host, port });
    tcp.setNoDelay(true);
    if (!tlsWanted) return tcp;
    let conn: Deno.TlsConn;
    try {
      conn = await Deno.startTls(tcp, { hostname: host, caCerts: anchor?.certs });
    } catch (error) {
      try {
        tcp.close();
      } catch {
        // Already closed.
      }
      throw error;
    }
    try {
      await conn.handshake();
    } catch (error) {
      try {
        conn.close();
      } catch {
        // Already closed by the failed handshake.
      }
      throw error;
    }
    return conn;
  } catch (error) {
    const refused = tlsRefusal(error, { host, caFile: anchor?.path });
    if (refused !== undefined) throw new Error(refused, { cause: error });
    if (error instanceof Deno.errors.ConnectionRefused) {
      throw new Error(`connect ECONNREFUSED ${host}:${port}`);
    }
    if (error instanceof Error && /failed to lookup address/i.test(error.message)) {
      throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    }
    throw error;
  }
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
