/**
 * lib/amqp_link.ts (the link's client, without Deno's Node layer) against lib/amqp.ts (amqplib,
 * which it replaced in the link), on the real RabbitMQ: every message the link can print from
 * the broker is the same from both (a refused port, a refused credential, every member down, a
 * missing queue, a connection the broker forces closed, an unroutable publish), and a confirmed
 * publish is consumed, acknowledged and gone.
 */

import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { messageOf } from "../../lib/atomic.ts";
import { AmqpError, openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { type Delivery, openLinkBroker } from "../../lib/amqp_link.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const API = "http://127.0.0.1:15672/api";
const headers = {
  authorization: `Basic ${btoa("guest:guest")}`,
  "content-type": "application/json",
};

async function api(method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${API}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}`);
}

/** The message each client's open refuses with. */
async function refusals(urls: string | string[]): Promise<[string, string]> {
  const old = await openBroker(urls, { timeoutSeconds: 2 }).then(
    async (s) => {
      await s.close();
      return "opened";
    },
    (e) => messageOf(e),
  );
  const now = await openLinkBroker(urls, { timeoutSeconds: 2 }).then(
    async (s) => {
      await s.close();
      return "opened";
    },
    (e) => messageOf(e),
  );
  return [old, now];
}

Deno.test("the link's client refuses as amqplib did, word for word", opts, async (t) => {
  await t.step("a port nobody listens on", async () => {
    const [old, now] = await refusals("amqp://someone:secret@127.0.0.1:1/");
    assertEquals(now, old);
    assert(now.includes("ECONNREFUSED"), now);
  });
  await t.step("every member down", async () => {
    const [old, now] = await refusals([
      "amqp://someone:secret@127.0.0.1:1/",
      "amqp://someone:secret@127.0.0.1:2/%2F",
    ]);
    assertEquals(now, old);
  });
  await t.step("a refused credential", async () => {
    const [old, now] = await refusals("amqp://guest:wrong-password@127.0.0.1:5672/");
    assertEquals(now, old);
    assert(now.includes("ACCESS_REFUSED"), now);
    assert(!now.includes("wrong-password"), "a password was printed");
  });
  await t.step("a vhost that does not exist", async () => {
    const [old, now] = await refusals("amqp://guest:guest@127.0.0.1:5672/no-such-vhost-here");
    assertEquals(now, old);
  });
  await t.step("a host that does not resolve", async () => {
    const [old, now] = await refusals("amqp://someone:secret@no-such-host.invalid:5672/");
    assertEquals(now, old);
  });
  await t.step("amqps:// to a port that does not speak TLS", async () => {
    const [old, now] = await refusals("amqps://someone:secret@127.0.0.1:5672/");
    assertEquals(now, old);
  });
  await t.step("a URL that is not an AMQP URL", async () => {
    const [old, now] = await refusals("http://guest:guest@127.0.0.1:5672/");
    assertEquals(now, old);
  });
});

Deno.test(
  "the link's client: a missing queue and an unroutable publish said as amqplib said them",
  opts,
  async () => {
    const old = await openBroker("amqp://guest:guest@127.0.0.1:5672/");
    const now = await openLinkBroker("amqp://guest:guest@127.0.0.1:5672/");
    try {
      const queue = `mesh.test.absent-${crypto.randomUUID().slice(0, 8)}`;
      const oldMissing = await old.channel.checkQueue(queue).then(() => "exists", messageOf);
      const nowMissing = await now.checkQueue(queue).then(() => "exists", messageOf);
      assertEquals(nowMissing, oldMissing);
      assert(nowMissing.startsWith("Operation failed: QueueDeclare; 404 (NOT-FOUND)"), nowMissing);
    } finally {
      await old.close();
      await now.close();
    }
    const old2 = await openBroker("amqp://guest:guest@127.0.0.1:5672/");
    const now2 = await openLinkBroker("amqp://guest:guest@127.0.0.1:5672/");
    try {
      const message = {
        exchange: "amq.topic",
        routingKey: `nobody.${crypto.randomUUID().slice(0, 8)}`,
        body: new TextEncoder().encode("{}"),
      };
      const oldError = await assertRejects(
        () => publishConfirmed(old2.channel, [message]),
        AmqpError,
      );
      const nowError = await assertRejects(() => now2.publishConfirmed([message]), AmqpError);
      assertEquals(nowError.message, oldError.message);
      assertEquals(nowError.unroutable, true);
      assertEquals(nowError.returnedKeys, oldError.returnedKeys);
    } finally {
      await old2.close();
      await now2.close();
    }
  },
);

Deno.test("the link's client: a confirmed publish is consumed and acknowledged", opts, async () => {
  const vhost = `meshtest-link-${crypto.randomUUID().slice(0, 8)}`;
  await api("PUT", `/vhosts/${vhost}`, {});
  try {
    await api("PUT", `/permissions/${vhost}/guest`, { configure: ".*", write: ".*", read: ".*" });
    const url = `amqp://guest:guest@127.0.0.1:5672/${vhost}`;
    const admin = await openBroker(url);
    await admin.channel.assertQueue("q", { durable: true });
    await admin.channel.bindQueue("q", "amq.topic", "k");
    const session = await openLinkBroker(url);
    try {
      await session.checkQueue("q");
      await session.prefetch(1);
      const body = new TextEncoder().encode(JSON.stringify({ big: "x".repeat(300_000) }));
      await session.publishConfirmed([{ exchange: "amq.topic", routingKey: "k", body }]);
      const got = Promise.withResolvers<Delivery | null>();
      await session.consume("q", got.resolve);
      const delivery = (await got.promise)!;
      assertEquals(delivery.content, body);
      session.ack(delivery);
      await session.close();
      const left = await admin.channel.checkQueue("q");
      assertEquals(left.messageCount, 0, "the acknowledged message is gone");
    } finally {
      await session.close();
      await admin.close();
    }
  } finally {
    await api("DELETE", `/vhosts/${vhost}`);
  }
});

Deno.test(
  "the link's client: a connection the broker forces closed says why, as amqplib did",
  opts,
  async () => {
    const user = `meshtest-forced-${crypto.randomUUID().slice(0, 8)}`;
    await api("PUT", `/users/${user}`, { password: "secret-x", tags: "" });
    await api("PUT", `/permissions/%2F/${user}`, { configure: "", write: "", read: "" });
    const url = `amqp://${user}:secret-x@127.0.0.1:5672/`;
    const old = await openBroker(url);
    const now = await openLinkBroker(url);
    const oldClosed = new Promise<unknown>((resolve) => old.connection.once("close", resolve));
    const nowClosed = new Promise<unknown>((resolve) => now.onClose(resolve));
    try {
      await api("DELETE", `/users/${user}`);
      const [oldError, nowError] = await Promise.all([oldClosed, nowClosed]);
      assertEquals(messageOf(nowError), messageOf(oldError));
      assert(messageOf(nowError).includes("CONNECTION_FORCED"), messageOf(nowError));
      // What the link reads to say "closed the connection" rather than "went away".
      assertEquals((nowError as { code?: unknown }).code, 320);
      assertEquals((oldError as { code?: unknown }).code, 320);
    } finally {
      await old.close();
      await now.close();
      await fetch(`${API}/users/${user}`, { method: "DELETE", headers }).then((r) =>
        r.body?.cancel()
      );
    }
  },
);
