/**
 * The byte stream amqplib talks AMQP 0-9-1 over: a `node:stream` Duplex over a `Deno.Conn`
 * that reads into one reused buffer and hands amqplib whole frames, except the bodies it
 * refuses. A content header frame announcing a body larger than the bound is held; the body's
 * frames are hashed (sha256) straight from the read buffer and dropped, never copied; when the
 * announced size has passed, the header goes on with its body size rewritten to 0, so amqplib
 * delivers the message with an empty `content`, and {@linkcode takeRefusal} tells what was
 * refused. A 100 MB body so costs the process no memory: read through `node:net` (what
 * amqplib's own `connect` uses) the same bytes left Deno some 110 MiB resident after GC
 * (2026-12-05; docs/design.md, "Refusing costs nothing").
 *
 * Frames (AMQP 0-9-1, section 4.2.3): type (1 byte: 1 method, 2 content header, 3 body, 8
 * heartbeat), channel (uint16), payload size (uint32), the payload, frame-end 0xCE. The server's
 * first bytes after the client's protocol header are frames, unless it refuses the protocol (it
 * then answers with its own header, "AMQP" and four bytes): anything that does not read as a
 * frame is handed on unchanged from there on, for amqplib to say what is wrong.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { Duplex } from "node:stream";
import { createHash, type Hash } from "node:crypto";

/** A message body refused from its content header, before it arrived. */
export interface RefusedBody {
  /** The body's size as its content header announced it, in bytes. */
  bytes: number;
  /** The bound it exceeded, in bytes. */
  max: number;
  /** `sha256:<hex>` of the body's bytes, hashed as its frames passed and were let go. */
  digest: string;
}

const FRAME_METHOD = 1;
const FRAME_HEADER = 2;
const FRAME_BODY = 3;
const FRAME_HEARTBEAT = 8;
const FRAME_END = 0xce;
/** Class `basic` and its methods that precede a message's content (deliver, get-ok, return). */
const BASIC = 60;
const BASIC_DELIVER = 60;
const BASIC_GET_OK = 71;
const BASIC_RETURN = 50;
/** The read buffer's size, in bytes: also the most a frame in passing is copied in one go. */
const READ_BYTES = 1 << 16;
/**
 * The largest frame handed on, in bytes of payload: far above the frame size any broker and
 * amqplib agree (amqplib asks 131,072; RabbitMQ allows at most 1 MiB less its overhead), and far
 * below what a frame header can claim (4 GiB), which would be allocated before it is read.
 */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Refusals told to no one (a consumer that never asks) are let go past this many. */
const MAX_RECORDED = 1024;

/**
 * Refusals by `${consumerTag}\0${deliveryTag}` (the consumer tag empty for basic.get and
 * returns), in the order they were made. The broker makes each consumer tag it chooses unique
 * (`amq.ctag-` and random); a client naming its own tags on two connections could collide.
 */
const refusals = new Map<string, RefusedBody>();

function refusalKey(consumerTag: string, deliveryTag: bigint | number): string {
  return `${consumerTag}\0${deliveryTag}`;
}

/**
 * The refusal recorded for the message of `consumerTag` (empty for basic.get) and
 * `deliveryTag`, removed as it is told; undefined when its body was not refused.
 */
export function takeRefusal(
  consumerTag: string,
  deliveryTag: bigint | number,
): RefusedBody | undefined {
  const key = refusalKey(consumerTag, deliveryTag);
  const refused = refusals.get(key);
  if (refused !== undefined) refusals.delete(key);
  return refused;
}

/** Options for {@linkcode amqpTransport}. */
export interface TransportOptions {
  /** Bodies larger than this many bytes are refused from their header (default: none refused). */
  maxBodyBytes?: number;
}

/** A refused body in passing, on one channel. */
interface Held {
  /** The content header frame, whole (type to frame-end), to go on with size 0. */
  header: Buffer;
  key: string;
  bytes: number;
  hash: Hash;
  /** Body bytes still to come. */
  remaining: number;
}

/**
 * A Duplex over the connection `connecting` gives, for amqplib's `Connection` (lib/connection.js),
 * refusing bodies larger than `options.maxBodyBytes` as the module says. It stands for the socket
 * amqplib's `connect` makes with `node:net` or `node:tls`: it emits `connect` once connected and
 * has the socket methods amqplib calls (`setTimeout`, an idle timeout as node's; `setNoDelay` and
 * `setKeepAlive`, which change nothing). Writes go to the connection as they are; a failed
 * connect or read destroys the stream with its error; a frame of a refused body that breaks
 * AMQP's order (a frame of another kind on its channel, more bytes than announced, a wrong
 * frame-end) destroys the stream with an error that says so.
 */
export function amqpTransport(
  connecting: Promise<Deno.Conn>,
  options: TransportOptions = {},
): AmqpSocket {
  const max = options.maxBodyBytes ?? Infinity;
  const buf = new Uint8Array(READ_BYTES);
  /** The frame header being gathered (7 bytes), and how much of it is in. */
  const head = new Uint8Array(7);
  let headFill = 0;
  /** The frame being copied to hand on (header included), and how much of it is in. */
  let frame: Buffer | undefined;
  let frameFill = 0;
  /** The refused body whose frame is passing, and that frame's payload bytes still to come. */
  let hashing: Held | undefined;
  let hashLeft = 0;
  /** Past something that is not a frame: everything goes on unchanged. */
  let raw = false;
  const held = new Map<number, Held>();
  /** The consumer tag and delivery tag of the last deliver/get-ok/return per channel. */
  const lastTag = new Map<number, string>();
  let pumping = false;
  let closed = false;
  let conn: Deno.Conn | undefined;
  /** amqplib asked to read before the connection was made. */
  let readWanted = false;
  let idleMs = 0;
  let onIdle: (() => void) | undefined;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const touch = () => {
    clearTimeout(idleTimer);
    idleTimer = idleMs > 0 && onIdle !== undefined ? setTimeout(onIdle, idleMs) : undefined;
  };

  const fail = (message: string) => stream.destroy(new Error(message));

  /** A whole frame to hand on, looked at first. False when the stream was destroyed. */
  const complete = (f: Buffer): boolean => {
    const type = f[0]!;
    const channel = f.readUInt16BE(1);
    const size = f.readUInt32BE(3);
    if (held.has(channel)) {
      fail(
        `Cannot read the broker's frames: a frame of type ${type} on channel ${channel} in the middle of a refused body`,
      );
      return false;
    }
    if (type === FRAME_METHOD && size >= 4 && f.readUInt16BE(7) === BASIC) {
      const method = f.readUInt16BE(9);
      if (method === BASIC_DELIVER && size >= 5) {
        const tagLength = f[11]!;
        if (size >= 5 + tagLength + 8) {
          const consumerTag = f.toString("utf8", 12, 12 + tagLength);
          lastTag.set(channel, refusalKey(consumerTag, f.readBigUInt64BE(12 + tagLength)));
        }
      } else if (method === BASIC_GET_OK && size >= 12) {
        lastTag.set(channel, refusalKey("", f.readBigUInt64BE(11)));
      } else if (method === BASIC_RETURN) {
        lastTag.set(channel, "");
      }
    } else if (type === FRAME_HEADER && size >= 12) {
      const bodySize = f.readBigUInt64BE(11);
      if (bodySize > BigInt(Math.min(max, Number.MAX_SAFE_INTEGER))) {
        held.set(channel, {
          header: f,
          key: lastTag.get(channel) ?? "",
          bytes: Number(bodySize),
          hash: createHash("sha256"),
          remaining: Number(bodySize),
        });
        return true;
      }
    }
    return stream.push(f) || true;
  };

  /** Takes `n` read bytes from `buf`. False when the stream was destroyed. */
  const take = (n: number): boolean => {
    let i = 0;
    while (i < n) {
      if (raw) {
        stream.push(Buffer.from(buf.subarray(i, n)));
        return true;
      }
      if (hashing !== undefined) {
        const h = hashing;
        if (hashLeft > 0) {
          const k = Math.min(hashLeft, n - i);
          h.hash.update(buf.subarray(i, i + k));
          hashLeft -= k;
          i += k;
          continue;
        }
        if (buf[i] !== FRAME_END) {
          fail("Cannot read the broker's frames: a body frame does not end with 0xCE");
          return false;
        }
        i++;
        hashing = undefined;
        if (h.remaining === 0) {
          const channel = h.header.readUInt16BE(1);
          held.delete(channel);
          h.header.writeBigUInt64BE(0n, 11);
          refusals.set(h.key, {
            bytes: h.bytes,
            max,
            digest: `sha256:${h.hash.digest("hex")}`,
          });
          if (refusals.size > MAX_RECORDED) refusals.delete(refusals.keys().next().value!);
          stream.push(h.header);
        }
        continue;
      }
      if (frame !== undefined) {
        const k = Math.min(frame.length - frameFill, n - i);
        frame.set(buf.subarray(i, i + k), frameFill);
        frameFill += k;
        i += k;
        if (frameFill === frame.length) {
          const f = frame;
          frame = undefined;
          if (!complete(f)) return false;
        }
        continue;
      }
      // The frame header, 7 bytes.
      const k = Math.min(7 - headFill, n - i);
      head.set(buf.subarray(i, i + k), headFill);
      headFill += k;
      i += k;
      if (headFill < 7) continue;
      headFill = 0;
      const type = head[0]!;
      const channel = (head[1]! << 8) | head[2]!;
      const size = ((head[3]! << 24) >>> 0) + (head[4]! << 16) + (head[5]! << 8) + head[6]!;
      if (
        type !== FRAME_METHOD && type !== FRAME_HEADER && type !== FRAME_BODY &&
        type !== FRAME_HEARTBEAT
      ) {
        // Not a frame (a refused protocol header): amqplib reads the rest as it is.
        raw = true;
        stream.push(Buffer.from(head));
        continue;
      }
      const h = held.get(channel);
      if (type === FRAME_BODY && h !== undefined) {
        if (size > h.remaining) {
          fail(
            `Cannot read the broker's frames: a body frame of ${size} bytes on channel ${channel} is more than the ${h.remaining} its header announced`,
          );
          return false;
        }
        h.remaining -= size;
        hashing = h;
        hashLeft = size;
        continue;
      }
      if (size > MAX_FRAME_BYTES) {
        fail(
          `Cannot read the broker's frames: a frame of ${size} bytes on channel ${channel} is larger than the ${MAX_FRAME_BYTES} a frame may be`,
        );
        return false;
      }
      frame = Buffer.allocUnsafe(7 + size + 1);
      frame.set(head, 0);
      frameFill = 7;
    }
    return true;
  };

  const pump = async (conn: Deno.Conn) => {
    pumping = true;
    try {
      for (;;) {
        let n: number | null;
        try {
          n = await conn.read(buf);
          touch();
        } catch (error) {
          if (closed) return;
          throw error;
        }
        if (n === null) {
          stream.push(null);
          return;
        }
        if (!take(n)) return;
        if (stream.destroyed) return;
        // Backpressure: wait for amqplib to read before reading more.
        if (stream.readableLength >= stream.readableHighWaterMark) break;
      }
    } catch (error) {
      stream.destroy(error as Error);
    } finally {
      pumping = false;
    }
  };

  const stream = new Duplex({
    // The broker's end of the stream ends ours: the connection is then closed.
    allowHalfOpen: false,
    read() {
      if (conn === undefined) readWanted = true;
      else if (!pumping) pump(conn);
    },
    write(chunk: Buffer, _encoding, callback) {
      connecting.then((c) => writeAll(c, chunk)).then(() => callback(), (error) => callback(error));
    },
    final(callback) {
      if (conn === undefined) return callback();
      conn.closeWrite().then(() => callback(), () => callback());
    },
    destroy(error, callback) {
      closed = true;
      clearTimeout(idleTimer);
      try {
        conn?.close();
      } catch {
        // already closed
      }
      callback(error);
    },
  }) as AmqpSocket;
  stream.setTimeout = (ms: number, callback?: () => void) => {
    idleMs = ms;
    if (callback !== undefined) onIdle = callback;
    touch();
    return stream;
  };
  stream.setNoDelay = () => stream;
  stream.setKeepAlive = () => stream;
  connecting.then((c) => {
    if (closed) {
      c.close();
      return;
    }
    conn = c;
    touch();
    stream.emit("connect");
    if (readWanted && !pumping) pump(c);
  }, (error) => stream.destroy(error));
  return stream;
}

/** The Duplex {@linkcode amqpTransport} makes, with the socket methods amqplib's connect calls. */
export interface AmqpSocket extends Duplex {
  /** After `ms` without a read, calls `callback` (0: never), as node's `Socket#setTimeout`. */
  setTimeout(ms: number, callback?: () => void): this;
  setNoDelay(noDelay?: boolean): this;
  setKeepAlive(enable?: boolean, delay?: number): this;
}

async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  let written = 0;
  while (written < chunk.length) written += await conn.write(chunk.subarray(written));
}
