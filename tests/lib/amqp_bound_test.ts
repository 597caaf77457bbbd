/**
 * The body bound of lib/amqp.ts (`openBroker`'s `maxBodyBytes`, held in lib/amqp_transport.ts)
 * against the real broker: a body larger than the bound is refused
 * from its content header (delivered empty, with its size and the digest of the bytes that
 * passed), one at the bound is delivered whole, and the channel stays in step for the next
 * message. Bodies of several frames (the broker's frame is 128 KiB) and of none.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { Buffer } from "node:buffer";
import { openBroker, refusedBody } from "../../lib/amqp.ts";
import { declarationDigest } from "../../lib/declaration_base.ts";
import { BROKER_URL } from "../control/support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** Bytes that differ frame to frame, so that a frame skipped or repeated changes the digest. */
function bodyOf(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed + (i >> 17)) & 0xff;
  return bytes;
}

Deno.test(
  "openBroker maxBodyBytes: over the bound refused from its header, at the bound whole",
  opts,
  async () => {
    const MAX = 300_000; // between two and three of the broker's 128 KiB frames
    const session = await openBroker(BROKER_URL, { maxBodyBytes: MAX });
    const queue = `mesh.test.bound-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const { channel } = session;
      await channel.assertQueue(queue, { durable: false, autoDelete: false });
      const bodies = [
        bodyOf(MAX + 1, 1), // one byte over: refused
        bodyOf(MAX, 2), // at the bound: whole
        bodyOf(5_000_000, 3), // many frames: refused
        bodyOf(0, 4), // no body frame at all
        bodyOf(10, 5), // one small frame after a refused one
      ];
      for (const body of bodies) {
        channel.sendToQueue(queue, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      }
      await channel.waitForConfirms();
      const got: { content: Uint8Array; refused: ReturnType<typeof refusedBody> }[] = [];
      const done = Promise.withResolvers<void>();
      await channel.consume(queue, (m) => {
        if (m === null) return;
        got.push({ content: new Uint8Array(m.content), refused: refusedBody(m) });
        channel.ack(m);
        if (got.length === bodies.length) done.resolve();
      });
      const timer = setTimeout(() => done.reject(new Error("not every message came")), 20_000);
      await done.promise;
      clearTimeout(timer);
      for (const [i, body] of bodies.entries()) {
        const { content, refused } = got[i]!;
        if (body.length > MAX) {
          assertEquals(content.length, 0, `message ${i}: the refused body was kept`);
          assertEquals(refused, {
            bytes: body.length,
            max: MAX,
            digest: await declarationDigest(body),
          }, `message ${i}`);
        } else {
          assertEquals(refused, undefined, `message ${i}`);
          assert(
            content.length === body.length && content.every((b, k) => b === body[k]),
            `message ${i}: the body is not the one sent`,
          );
        }
      }
    } finally {
      await session.channel.deleteQueue(queue).catch(() => {});
      await session.close();
    }
  },
);
