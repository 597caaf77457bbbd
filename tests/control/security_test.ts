/**
 * Node accounts against the REAL broker (RabbitMQ on 127.0.0.1, docs/design.md "Broker"): a node's
 * account reads only its own queue and publishes only its own reports.
 *
 * Every refused publish is checked with publisher confirms. An unconfirmed publish returns at once
 * and the broker's refusal arrives later as a channel close, so a test without confirms "passes"
 * whatever the permissions are (docs/design.md, rule 9 and the
 * negative-assertion rule: "a negative assertion made against an asynchronous call is not one"). Each refusal must carry 403
 * ACCESS_REFUSED, and a positive control shows the same account doing the allowed thing, so a
 * refusal cannot come from something unrelated (a wrong URL, a missing exchange).
 *
 * Each test runs in its own vhost (named with a "/" in it, so the `%2F` encoding is exercised),
 * set up with {@linkcode setupTopology} and deleted afterwards with the test's accounts.
 *
 * @module
 */

import { connect } from "amqplib";
import type { Channel, ChannelModel, ConfirmChannel, Options } from "amqplib";
import { Buffer } from "node:buffer";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import {
  BUILD_QUEUE,
  BUILD_REQUEST_KEY,
  buildReplyKey,
  declarationKey,
  EXCHANGE,
  nodeQueue,
  reportKey,
  REPORTS_QUEUE,
} from "../../lib/broker.ts";
import { closeAmqp } from "../../lib/amqp.ts";
import {
  type BrokerEndpoints,
  BrokerError,
  createBuilderAccount,
  createNodeAccount,
  deleteBuilderAccount,
  deleteNodeAccount,
  type NodeAccount,
  rotateNodePassword,
  RotationIncomplete,
  setupTopology,
} from "../../control/broker_admin.ts";

const AMQP_BASE = Deno.env.get("MESH_TEST_AMQP") ?? "amqp://guest:guest@127.0.0.1:5672";
const API_BASE = Deno.env.get("MESH_TEST_API") ?? "http://guest:guest@127.0.0.1:15672";
const API = new URL(API_BASE);
const API_ORIGIN = API.origin;
const API_AUTH = `Basic ${
  btoa(`${decodeURIComponent(API.username)}:${decodeURIComponent(API.password)}`)
}`;

/** amqplib leaves heartbeat timers and sockets behind closed connections. */
const OPTIONS = { sanitizeResources: false, sanitizeOps: false };

function unique(): string {
  return `t${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
}

async function api(method: string, path: string, body?: unknown): Promise<number> {
  const response = await fetch(`${API_ORIGIN}${path}`, {
    method,
    headers: { authorization: API_AUTH, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.body?.cancel();
  return response.status;
}

/** What a test gets: the vhost's endpoints, an admin channel, and ways to make nodes and links. */
interface World {
  endpoints: BrokerEndpoints;
  vhost: string;
  /** The administrative account's confirm channel on the test's vhost. */
  admin: ConfirmChannel;
  /** Creates a node account (deleted when the test ends). */
  node(suffix: string): Promise<NodeAccount>;
  /** Connects with `url` (closed when the test ends). */
  open(url: string): Promise<ChannelModel>;
}

/** Runs `fn` in a fresh vhost with the topology set up; deletes accounts and vhost afterwards. */
async function withWorld(fn: (world: World) => Promise<void>): Promise<void> {
  const vhost = `mesh-test/${unique()}`;
  const vpath = encodeURIComponent(vhost);
  const endpoints = { amqp: `${AMQP_BASE}/${vpath}`, api: API_BASE };
  const connections: ChannelModel[] = [];
  const nodes: string[] = [];
  assertEquals(await api("PUT", `/api/vhosts/${vpath}`, {}), 201);
  try {
    const adminUser = decodeURIComponent(API.username);
    const granted = await api(
      "PUT",
      `/api/permissions/${vpath}/${encodeURIComponent(adminUser)}`,
      { configure: ".*", write: ".*", read: ".*" },
    );
    assert(granted === 201 || granted === 204, `granting the admin the test vhost: ${granted}`);
    await setupTopology(endpoints);
    const open = async (url: string) => {
      const conn = await connect(url);
      conn.on("error", () => {});
      connections.push(conn);
      return conn;
    };
    const admin = await (await open(endpoints.amqp)).createConfirmChannel();
    admin.on("error", () => {});
    await fn({
      endpoints,
      vhost,
      admin,
      node: async (suffix) => {
        const name = `${unique()}-${suffix}`;
        nodes.push(name);
        return await createNodeAccount(endpoints, name);
      },
      open,
    });
  } finally {
    // The broker may be closing a connection itself (its user was deleted just before): a plain
    // close() crossing that close never settles (tests/lib/amqp_close_test.ts).
    for (const conn of connections) await closeAmqp(conn);
    for (const name of nodes) await deleteNodeAccount(endpoints, name).catch(() => {});
    await api("DELETE", `/api/vhosts/${vpath}`);
  }
}

/** A channel with an 'error' listener (amqplib throws an 'error' event nobody listens to). */
async function channel(conn: ChannelModel): Promise<Channel> {
  const ch = await conn.createChannel();
  ch.on("error", () => {});
  return ch;
}

async function confirmChannel(conn: ChannelModel): Promise<ConfirmChannel> {
  const ch = await conn.createConfirmChannel();
  ch.on("error", () => {});
  return ch;
}

/**
 * Publishes and waits for the broker's confirm. Resolves when the broker acknowledged the message;
 * rejects with the broker's channel close (which carries the reply code, e.g. 403) when it refused
 * it, or with the nack.
 */
function publishConfirmed(
  ch: ConfirmChannel,
  exchange: string,
  key: string,
  body: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let closedBy: Error | undefined;
    const onError = (error: Error) => closedBy = error;
    ch.once("error", onError);
    const options: Options.Publish = { persistent: true };
    try {
      ch.publish(exchange, key, Buffer.from(body), options, (err) => {
        ch.off("error", onError);
        if (err) reject(closedBy ?? err);
        else resolve();
      });
    } catch (error) {
      ch.off("error", onError);
      reject(error);
    }
  });
}

/** Asserts `op` is refused with 403 ACCESS_REFUSED; returns the broker's words. */
async function assertRefused(op: Promise<unknown>, what: string): Promise<string> {
  let error: unknown;
  try {
    await op;
  } catch (e) {
    error = e;
  }
  assert(error !== undefined, `${what}: expected 403 ACCESS_REFUSED, but the broker accepted it`);
  const { code, message } = error as { code?: unknown; message?: string };
  assertEquals(code, 403, `${what}: expected reply code 403, got ${code}: ${message}`);
  assertStringIncludes(String(message), "ACCESS_REFUSED");
  return String(message);
}

/** Waits for one message on `queue` consumed by `ch`, or fails after `ms`. */
function consumeOne(ch: Channel, queue: string, ms = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message on ${queue} in ${ms} ms`)), ms);
    ch.consume(queue, (msg) => {
      if (msg === null) return;
      clearTimeout(timer);
      ch.ack(msg);
      resolve(msg.content.toString());
    }).catch((error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

Deno.test("setupTopology is idempotent and names what exists", OPTIONS, async () => {
  await withWorld(async ({ endpoints, admin }) => {
    const again = await setupTopology(endpoints);
    assertEquals(again, await setupTopology(endpoints));
    assert(again.some((line) => line.startsWith(`exchange ${EXCHANGE} `)), again.join("\n"));
    assert(again.some((line) => line.startsWith(`queue ${REPORTS_QUEUE} `)), again.join("\n"));
    await admin.checkExchange(EXCHANGE);
    await admin.checkQueue(REPORTS_QUEUE);
  });
});

Deno.test(
  "a node account consumes its own declarations and publishes its own report (positive control)",
  OPTIONS,
  async () => {
    await withWorld(async ({ admin, node, open }) => {
      const a = await node("a");
      const conn = await open(a.url);
      const received = consumeOne(await channel(conn), nodeQueue(a.account));
      await publishConfirmed(admin, EXCHANGE, declarationKey(a.account), "declaration for a");
      assertEquals(await received, "declaration for a");

      await publishConfirmed(await confirmChannel(conn), EXCHANGE, reportKey(a.account), "a ok");
      const report = await admin.get(REPORTS_QUEUE, { noAck: true });
      assert(report, "the confirmed report is not in the reports queue");
      assertEquals(report.content.toString(), "a ok");
      assertEquals(report.fields.routingKey, reportKey(a.account));
    });
  },
);

Deno.test("a node account cannot consume another node's queue", OPTIONS, async () => {
  await withWorld(async ({ admin, node, open }) => {
    const a = await node("a");
    const b = await node("b");
    await publishConfirmed(admin, EXCHANGE, declarationKey(b.account), "declaration for b");
    const ch = await channel(await open(a.url));
    await assertRefused(ch.consume(nodeQueue(b.account), () => {}), "consume B's queue");
    const other = await channel(await open(a.url));
    await assertRefused(other.get(nodeQueue(b.account)), "get from B's queue");
    assertEquals((await admin.checkQueue(nodeQueue(b.account))).messageCount, 1);
  });
});

Deno.test("a node account cannot publish another node's report", OPTIONS, async () => {
  await withWorld(async ({ admin, node, open }) => {
    const a = await node("a");
    const b = await node("b");
    const ch = await confirmChannel(await open(a.url));
    await assertRefused(
      publishConfirmed(ch, EXCHANGE, reportKey(b.account), "forged report of b"),
      "publish under B's report key",
    );
    assertEquals((await admin.checkQueue(REPORTS_QUEUE)).messageCount, 0);
  });
});

Deno.test(
  "a node account cannot publish to the default exchange into another node's queue",
  OPTIONS,
  async () => {
    await withWorld(async ({ admin, node, open }) => {
      const a = await node("a");
      const b = await node("b");
      const ch = await confirmChannel(await open(a.url));
      await assertRefused(
        publishConfirmed(ch, "", nodeQueue(b.account), "forged declaration for b"),
        "publish to the default exchange with B's queue as key",
      );
      assertEquals((await admin.checkQueue(nodeQueue(b.account))).messageCount, 0);
    });
  },
);

Deno.test("a node account cannot publish another node's declaration", OPTIONS, async () => {
  await withWorld(async ({ admin, node, open }) => {
    const a = await node("a");
    const b = await node("b");
    const ch = await confirmChannel(await open(a.url));
    await assertRefused(
      publishConfirmed(ch, EXCHANGE, declarationKey(b.account), "forged declaration for b"),
      "publish under B's declaration key",
    );
    assertEquals((await admin.checkQueue(nodeQueue(b.account))).messageCount, 0);
  });
});

Deno.test(
  "a node account cannot declare, bind or delete (configure refused)",
  OPTIONS,
  async () => {
    await withWorld(async ({ admin, node, open }) => {
      const a = await node("a");
      const b = await node("b");
      const conn = await open(a.url);
      const own = nodeQueue(a.account);
      // Each refusal closes its channel, so each attempt gets a fresh one.
      await assertRefused(
        (await channel(conn)).assertQueue(own, { durable: true }),
        "re-declare its own queue",
      );
      await assertRefused((await channel(conn)).assertQueue(""), "declare a server-named queue");
      await assertRefused(
        (await channel(conn)).assertQueue(`${own}.extra`, { durable: true }),
        "declare a queue",
      );
      await assertRefused(
        (await channel(conn)).bindQueue(own, EXCHANGE, declarationKey(b.account)),
        "bind its own queue to B's declarations",
      );
      await assertRefused((await channel(conn)).deleteQueue(own), "delete its own queue");
      await assertRefused(
        (await channel(conn)).assertExchange(`${EXCHANGE}.extra`, "topic"),
        "declare an exchange",
      );
      // Its queue still has exactly the binding it was given.
      await publishConfirmed(admin, EXCHANGE, declarationKey(b.account), "for b only");
      assertEquals((await admin.checkQueue(own)).messageCount, 0);
    });
  },
);

Deno.test(
  "a node account can check its own queue passively (checkQueue needs no configure)",
  OPTIONS,
  async () => {
    await withWorld(async ({ admin, node, open }) => {
      const a = await node("a");
      await publishConfirmed(admin, EXCHANGE, declarationKey(a.account), "for a");
      const ch = await channel(await open(a.url));
      const checked = await ch.checkQueue(nodeQueue(a.account));
      assertEquals(checked.messageCount, 1);
      await ch.checkExchange(EXCHANGE);
    });
  },
);

Deno.test(
  "createNodeAccount refuses an existing account and leaves its password working",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints }) => {
      const error = await createNodeAccount(endpoints, "guest").then(
        () => undefined,
        (e) => e,
      );
      assert(error instanceof BrokerError, `expected BrokerError, got ${error}`);
      assertStringIncludes(error.message, 'Cannot create broker account "guest"');
      assertStringIncludes(error.message, "already exists");
      assert(!error.message.includes(":guest@"), error.message);
      const conn = await connect(endpoints.amqp);
      await conn.close();

      const again = await createNodeAccount(endpoints, `${unique()}-x`);
      try {
        const twice = await createNodeAccount(endpoints, again.account).then(
          () => undefined,
          (e) => e,
        );
        assert(twice instanceof BrokerError, `expected BrokerError, got ${twice}`);
        const conn = await connect(again.url);
        await conn.close();
      } finally {
        await deleteNodeAccount(endpoints, again.account);
      }
    });
  },
);

Deno.test(
  "deleteNodeAccount refuses to delete an account that is not a node's",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints }) => {
      const error = await deleteNodeAccount(endpoints, "guest").then(() => undefined, (e) => e);
      assert(error instanceof BrokerError, `expected BrokerError, got ${error}`);
      assertStringIncludes(error.message, "not a node account");
      assertEquals(await api("GET", "/api/users/guest"), 200);
    });
  },
);

Deno.test(
  "createNodeAccount refuses a bad node name before creating anything",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints }) => {
      const base = unique();
      for (const name of [`${base}.a`, `${base}*`, `${base}#`, `${base}-A`, `${base}-`, ""]) {
        const error = await createNodeAccount(endpoints, name).then(() => undefined, (e) => e);
        assert(error instanceof BrokerError, `${JSON.stringify(name)}: got ${error}`);
        assertStringIncludes(error.message, `Cannot create broker account ${JSON.stringify(name)}`);
        assertStringIncludes(error.message, "lowercase letters");
        if (name) assertEquals(await api("GET", `/api/users/${encodeURIComponent(name)}`), 404);
      }
    });
  },
);

Deno.test("a wrong password is refused at connect", OPTIONS, async () => {
  await withWorld(async ({ node }) => {
    const a = await node("a");
    const wrong = new URL(a.url);
    wrong.password = "not-the-password";
    const error = await connect(wrong.href).then(async (conn) => {
      await conn.close();
      return undefined;
    }, (e) => e as Error);
    assert(error, "connecting with a wrong password succeeded");
    assertStringIncludes(error.message, "403");
    assertStringIncludes(error.message, "ACCESS_REFUSED");

    // Through the module: a BrokerError naming the URL, with the password hidden.
    const secret = "s3cret-wrong-password";
    const wrongAdmin = new URL(AMQP_BASE);
    wrongAdmin.password = secret;
    const refused = await setupTopology({ amqp: wrongAdmin.href, api: API_BASE }).then(
      () => undefined,
      (e) => e,
    );
    assert(refused instanceof BrokerError, `expected BrokerError, got ${refused}`);
    assertEquals(refused.code, 403);
    assertStringIncludes(refused.message, "refused the credential");
    assertStringIncludes(refused.message, ":***@");
    assert(!refused.message.includes(secret), refused.message);
  });
});

Deno.test("a node queue keeps only the latest declaration", OPTIONS, async () => {
  await withWorld(async ({ admin, node, open }) => {
    const a = await node("a");
    for (const n of [1, 2, 3]) {
      await publishConfirmed(admin, EXCHANGE, declarationKey(a.account), `declaration ${n}`);
    }
    assertEquals((await admin.checkQueue(nodeQueue(a.account))).messageCount, 1);
    const ch = await channel(await open(a.url));
    const message = await ch.get(nodeQueue(a.account), { noAck: true });
    assert(message, "the node's queue is empty");
    assertEquals(message.content.toString(), "declaration 3");
  });
});

Deno.test(
  "a builder account takes build requests and answers on the mesh exchange (positive control)",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints, admin, open }) => {
      const name = unique();
      const builder = await createBuilderAccount(endpoints, name);
      try {
        assertEquals(builder.account, `builder.${name}`);
        await admin.assertQueue("reply-probe", { durable: false, exclusive: true });
        await admin.bindQueue("reply-probe", EXCHANGE, buildReplyKey("probe"));
        await publishConfirmed(admin, EXCHANGE, BUILD_REQUEST_KEY, "request");
        const conn = await open(builder.url);
        assertEquals(await consumeOne(await channel(conn), BUILD_QUEUE), "request");
        await publishConfirmed(
          await confirmChannel(conn),
          EXCHANGE,
          buildReplyKey("probe"),
          "answer",
        );
        assertEquals(await consumeOne(admin, "reply-probe"), "answer");
      } finally {
        await deleteBuilderAccount(endpoints, name);
      }
    });
  },
);

Deno.test(
  "a builder account cannot consume a node's queue nor publish to the default exchange",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints, admin, node, open }) => {
      const name = unique();
      const builder = await createBuilderAccount(endpoints, name);
      try {
        const victim = await node("victim");
        const conn = await open(builder.url);
        await assertRefused(
          consumeOne(await channel(conn), nodeQueue(victim.account), 2000),
          "a builder consuming a node's queue",
        );
        await assertRefused(
          publishConfirmed(await confirmChannel(conn), "", nodeQueue(victim.account), "{}"),
          "a builder publishing to the default exchange",
        );
        await assertRefused(
          publishConfirmed(
            await confirmChannel(conn),
            EXCHANGE,
            declarationKey(victim.account),
            "{}",
          ),
          "a builder publishing a node's declaration",
        );
        await assertRefused(
          publishConfirmed(await confirmChannel(conn), EXCHANGE, reportKey(victim.account), "{}"),
          "a builder publishing a node's report",
        );
        assertEquals((await admin.checkQueue(nodeQueue(victim.account))).messageCount, 0);
      } finally {
        await deleteBuilderAccount(endpoints, name);
      }
    });
  },
);

/**
 * A proxy in front of the REAL management API that answers a close of a connection
 * (`DELETE /api/connections/NAME`) with 500 and an empty body, as RabbitMQ's API does when the
 * connection's process ends while it is being asked to close (a race that cannot be provoked on
 * demand: seen in CI when a deleted user's connection, which the broker closes itself, was closed
 * through the API at the same moment). `forward: "first"` forwards every request and replaces the
 * answer to the first close only (the close happened; its answer is the 500); `forward: "never"`
 * answers every close 500 without forwarding it (the connection stays open). Everything else goes
 * through unchanged.
 */
function faultyCloses(forward: "first" | "never") {
  let served = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const close = req.method === "DELETE" && url.pathname.startsWith("/api/connections/");
    if (close && forward === "never") {
      served++;
      return new Response(null, { status: 500 });
    }
    const answer = await fetch(`${API_ORIGIN}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
    });
    if (close && served === 0) {
      served++;
      await answer.body?.cancel();
      return new Response(null, { status: 500 });
    }
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  });
  const api = `http://${API.username}:${API.password}@127.0.0.1:${server.addr.port}`;
  return { api, served: () => served, close: () => server.shutdown() };
}

/** Waits until the management API lists a connection of `user` (its list trails the broker). */
async function listed(user: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const response = await fetch(
      `${API_ORIGIN}/api/connections/username/${encodeURIComponent(user)}`,
      { headers: { authorization: API_AUTH } },
    );
    const body = await response.json();
    if (Array.isArray(body) && body.length > 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the management API never listed a connection of ${user}`);
}

// The close that failed in CI was node remove's, after the user's deletion; there the broker
// closes the connection itself and the API often no longer lists it, so no close is asked and
// the 500 cannot be played on demand. A rotation asks for the close every time (RabbitMQ keeps a
// connection open across a password change), through the same code.
Deno.test(
  "closing a node's connections goes on when RabbitMQ answers a close with 500",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints, node, open }) => {
      const a = await node("raced");
      const conn = await open(a.url);
      const closed = new Promise((resolve) => conn.once("close", resolve));
      await listed(a.account);
      const proxy = faultyCloses("first");
      try {
        const rotated = await rotateNodePassword(
          { amqp: endpoints.amqp, api: proxy.api },
          a.account,
        );
        assertEquals(rotated.connections, 1);
        assertEquals(proxy.served(), 1, "the proxy answered one close with 500");
      } finally {
        await proxy.close();
      }
      await closed;
    });
  },
);

Deno.test(
  "a connection whose close is answered 500 and stays listed fails the rotation, naming the answer",
  OPTIONS,
  async () => {
    await withWorld(async ({ endpoints, node, open }) => {
      const a = await node("stuck");
      await open(a.url);
      await listed(a.account);
      const proxy = faultyCloses("never");
      let error: unknown;
      try {
        // A connection that stays listed is never settled: a shorter settle than the 10 s
        // default ends the same way, sooner (the closes are still asked again, every 250 ms).
        error = await rotateNodePassword({ amqp: endpoints.amqp, api: proxy.api }, a.account, {
          settleMs: 1_500,
        }).then(() => undefined, (e) => e);
      } finally {
        await proxy.close();
      }
      assert(error instanceof RotationIncomplete, `expected RotationIncomplete, got ${error}`);
      assertStringIncludes(error.message, "1 connection is still open");
      assertStringIncludes(error.message, "answered 500 Internal Server Error");
      assert(!error.message.includes(`:${API.password}@`), error.message);
      assert(proxy.served() > 2, `closes were asked again: ${proxy.served()}`);
      // Asked every 250 ms for 1.5 s, not for the default 10 s (about 40 asks): counted, not timed.
      assert(proxy.served() < 20, `closes were asked past the settle given: ${proxy.served()}`);
    });
  },
);
