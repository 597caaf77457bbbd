/**
 * lib/amqp_transport.ts on frames written here, read in pieces of every size: a refused body's
 * frames are dropped and its header goes on with size 0 once the body has passed, frames of other
 * channels in the middle pass unchanged, the refusal is told once for its delivery, a broken
 * order is an error that says so, and bytes that are not frames go on as they are.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { Buffer } from "node:buffer";
import { amqpTransport, takeRefusal } from "../../lib/amqp_transport.ts";
import { declarationDigest } from "../../lib/declaration_base.ts";

/** A connection that reads `bytes` in pieces of `piece` bytes, and swallows writes. */
function fakeConn(bytes: Uint8Array, piece: number): Deno.Conn {
  let at = 0;
  return {
    read: (p: Uint8Array) => {
      if (at >= bytes.length) return Promise.resolve(null);
      const n = Math.min(piece, p.length, bytes.length - at);
      p.set(bytes.subarray(at, at + n));
      at += n;
      return Promise.resolve(n);
    },
    write: (p: Uint8Array) => Promise.resolve(p.length),
    close: () => {},
    closeWrite: () => Promise.resolve(),
  } as unknown as Deno.Conn;
}

function frame(type: number, channel: number, payload: Uint8Array): Uint8Array {
  const f = Buffer.alloc(7 + payload.length + 1);
  f[0] = type;
  f.writeUInt16BE(channel, 1);
  f.writeUInt32BE(payload.length, 3);
  f.set(payload, 7);
  f[f.length - 1] = 0xce;
  return f;
}

function shortstr(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

/** basic.deliver: consumer tag, delivery tag, redelivered, exchange, routing key. */
function deliver(channel: number, consumerTag: string, deliveryTag: bigint): Uint8Array {
  const tag = Buffer.alloc(8);
  tag.writeBigUInt64BE(deliveryTag);
  return frame(
    1,
    channel,
    Buffer.concat([
      Buffer.from([0, 60, 0, 60]),
      shortstr(consumerTag),
      tag,
      Buffer.from([0]),
      shortstr("mesh"),
      shortstr("key"),
    ]),
  );
}

/** A content header of class basic announcing `size` bytes, no properties. */
function header(channel: number, size: number): Uint8Array {
  const p = Buffer.alloc(14);
  p.writeUInt16BE(60, 0);
  p.writeBigUInt64BE(BigInt(size), 4);
  return frame(2, channel, p);
}

function bodyOf(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + seed) & 0xff;
  return bytes;
}

/** Everything the transport hands on from `bytes`, or the error it ends with. */
async function through(
  bytes: Uint8Array,
  piece: number,
  maxBodyBytes: number,
): Promise<{ out: Uint8Array; error?: Error }> {
  const stream = amqpTransport(Promise.resolve(fakeConn(bytes, piece)), { maxBodyBytes });
  const chunks: Uint8Array[] = [];
  return await new Promise((resolve) => {
    stream.on("data", (c: Buffer) => chunks.push(new Uint8Array(c)));
    stream.on("end", () => resolve({ out: new Uint8Array(Buffer.concat(chunks)) }));
    stream.on("error", (error) => resolve({ out: new Uint8Array(Buffer.concat(chunks)), error }));
  });
}

Deno.test("amqpTransport: a refused body is dropped, other channels pass in the middle", async () => {
  const MAX = 100;
  const big = bodyOf(250, 1);
  const small = bodyOf(40, 2);
  const after = bodyOf(MAX, 3);
  const input = Buffer.concat([
    deliver(1, "ctag-a", 7n),
    header(1, big.length),
    frame(3, 1, big.subarray(0, 100)),
    // Another channel's message in the middle of the refused body.
    deliver(2, "ctag-b", 1n),
    header(2, small.length),
    frame(3, 2, small),
    frame(8, 0, new Uint8Array(0)),
    frame(3, 1, big.subarray(100, 200)),
    frame(3, 1, big.subarray(200)),
    // At the bound: whole.
    deliver(1, "ctag-a", 8n),
    header(1, after.length),
    frame(3, 1, after),
  ]);
  const expected = Buffer.concat([
    deliver(1, "ctag-a", 7n),
    deliver(2, "ctag-b", 1n),
    header(2, small.length),
    frame(3, 2, small),
    frame(8, 0, new Uint8Array(0)),
    header(1, 0),
    deliver(1, "ctag-a", 8n),
    header(1, after.length),
    frame(3, 1, after),
  ]);
  for (const piece of [1, 3, 7, 8, 50, 1 << 20]) {
    const { out, error } = await through(input, piece, MAX);
    assertEquals(error, undefined, `pieces of ${piece}`);
    assertEquals(out, new Uint8Array(expected), `pieces of ${piece}`);
    assertEquals(takeRefusal("ctag-a", 7), {
      bytes: big.length,
      max: MAX,
      digest: await declarationDigest(big),
    }, `pieces of ${piece}`);
    assertEquals(takeRefusal("ctag-a", 7), undefined, "told once");
    assertEquals(takeRefusal("ctag-a", 8), undefined);
    assertEquals(takeRefusal("ctag-b", 1), undefined);
  }
});

Deno.test("amqpTransport: a refused body whose order breaks, or a frame past the bound, ends the stream saying so", async () => {
  const cases: [Uint8Array, RegExp][] = [
    [
      Buffer.concat([
        deliver(1, "ctag-c", 1n),
        header(1, 200),
        frame(3, 1, bodyOf(100, 1)),
        deliver(1, "ctag-c", 2n),
      ]),
      /a frame of type 1 on channel 1 in the middle of a refused body/,
    ],
    [
      Buffer.concat([deliver(1, "ctag-c", 3n), header(1, 200), frame(3, 1, bodyOf(300, 1))]),
      /a body frame of 300 bytes on channel 1 is more than the 200 its header announced/,
    ],
    [
      (() => {
        const f = frame(3, 1, bodyOf(200, 1));
        f[f.length - 1] = 0;
        return Buffer.concat([deliver(1, "ctag-c", 4n), header(1, 200), f]);
      })(),
      /a body frame does not end with 0xCE/,
    ],
    [
      // A frame header claiming more than any frame may be: refused before anything is allocated.
      (() => {
        const h = new Uint8Array(8);
        h.set([1, 0, 1, 0xff, 0xff, 0xff, 0xf0]);
        return h;
      })(),
      /a frame of 4294967280 bytes on channel 1 is larger than the 4194304 a frame may be/,
    ],
  ];
  for (const [input, message] of cases) {
    for (const piece of [1, 1 << 20]) {
      const { error } = await through(input, piece, 100);
      assert(error !== undefined && message.test(error.message), `${error?.message}`);
    }
  }
});

Deno.test("amqpTransport: bytes that are not frames go on unchanged", async () => {
  // A broker refusing the protocol answers with its own protocol header.
  const input = new TextEncoder().encode("AMQP\x00\x00\x09\x01");
  for (const piece of [1, 3, 100]) {
    const { out, error } = await through(input, piece, 100);
    assertEquals(error, undefined);
    assertEquals(out, input);
  }
});
