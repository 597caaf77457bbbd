/**
 * lib/amqp.ts's `closeAmqp` against the real broker, when the connection ends while our close is
 * on its way.
 *
 * Field case (CI, 2026-12-07): tests/control/security_test.ts closed a builder's connection just
 * after deleting the builder's account. RabbitMQ closes a deleted user's connections itself, about
 * a millisecond after the API answers, so both closes were on the wire at once. Seen with tcpdump
 * here: the broker sent its close, got ours, answered it with close-ok, got our answer to its own
 * close after it had let go of the socket, and answered that with a TCP reset; the reset reached
 * the client before it read the close-ok (Linux drops unread data on a reset: `read ECONNRESET`).
 * amqplib 2.3.1 then moves to closed on the socket error and never settles the `close()` it
 * returned. With nothing else alive the test ended "Promise resolution is still pending but the
 * event loop has already resolved"; in a program, the await would wait for ever.
 *
 * The tests: the field case itself, repeated (it crossed about one time in two here with amqplib's
 * `close()`); the same end of the connection made on demand by a relay that keeps our close from
 * the broker and ends the client's side; `openBroker`'s session close over that relay (its channel
 * is closing when the connection ends); a broker that answers nothing, let go after `timeoutMs`;
 * and a connection or channel already closed.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { CLOSE_WAIT_MS, closeAmqp, connectAmqp, openBroker } from "../../lib/amqp.ts";
import { BROKER_API_URL } from "../control/support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const API = new URL(BROKER_API_URL);
const AUTH = `Basic ${btoa(`${API.username}:${API.password}`)}`;

/**
 * A TCP relay to the broker on 127.0.0.1:5672 for one connection. While `hold()` is on, what the
 * client sends is kept from the broker; `kept()` counts those bytes. `endClient()` ends the
 * client's side of the connection, as a broker that lets go of the socket does.
 */
function relay() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let held = false;
  let kept = 0;
  let upstream: Deno.TcpConn | undefined;
  let client: Deno.TcpConn | undefined;
  (async () => {
    client = await listener.accept();
    upstream = await Deno.connect({ hostname: "127.0.0.1", port: 5672 });
    const up = upstream;
    const down = client;
    (async () => {
      const buf = new Uint8Array(65536);
      try {
        for (let n = await up.read(buf); n !== null; n = await up.read(buf)) {
          await down.write(buf.slice(0, n));
        }
      } catch { /* either side closed */ }
    })();
    const buf = new Uint8Array(65536);
    try {
      for (let n = await down.read(buf); n !== null; n = await down.read(buf)) {
        if (held) kept += n;
        else await up.write(buf.slice(0, n));
      }
    } catch { /* either side closed */ }
  })();
  const close = (c: Deno.Conn | Deno.Listener | undefined) => {
    try {
      c?.close();
    } catch { /* already closed */ }
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    kept: () => kept,
    hold() {
      held = true;
    },
    endClient() {
      close(client);
    },
    close() {
      for (const c of [listener, client, upstream]) close(c);
    },
  };
}

async function api(method: string, path: string, body?: unknown): Promise<number> {
  const response = await fetch(`${API.origin}${path}`, {
    method,
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.body?.cancel();
  return response.status;
}

/** Waits until `check` holds, or fails naming `what` after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Whether `closing` settled within `ms` of `from` (`performance.now()`); the guard's timer is
 * cleared either way, so a test that fails leaves nothing behind.
 */
async function settledWithin(closing: Promise<void>, from: number, ms: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`still pending after ${ms} ms`), ms);
  });
  const outcome = await Promise.race([
    closing.then(() => `settled after ${Math.round(performance.now() - from)} ms`),
    guard,
  ]);
  clearTimeout(timer);
  return outcome;
}

Deno.test(
  "closeAmqp: a close that crosses the broker's (its user deleted) settles, each of 12 times",
  opts,
  async () => {
    for (let round = 0; round < 12; round++) {
      const user = `mesh-test-close-${crypto.randomUUID().slice(0, 8)}`;
      const path = `/api/users/${encodeURIComponent(user)}`;
      assertEquals(await api("PUT", path, { password: "close-test", tags: "" }), 201);
      try {
        const perms = await api("PUT", `/api/permissions/%2F/${encodeURIComponent(user)}`, {
          configure: "",
          write: "",
          read: "",
        });
        assert(perms === 201 || perms === 204, `granting ${user} the vhost: ${perms}`);
        const conn = await connectAmqp(new URL(`amqp://${user}:close-test@127.0.0.1:5672/%2F`));
        conn.on("error", () => {});
        assertEquals(await api("DELETE", path), 204);
        // The broker's close arrives about a millisecond after the API answers: keep the client
        // from reading it until our own close has left.
        const spin = performance.now() + 1;
        while (performance.now() < spin) { /* the event loop does not run */ }
        const started = performance.now();
        const outcome = await settledWithin(
          closeAmqp(conn, { timeoutMs: 60_000 }),
          started,
          CLOSE_WAIT_MS / 2,
        );
        assert(outcome.startsWith("settled"), `round ${round}: the close is ${outcome}`);
      } finally {
        await api("DELETE", path);
      }
    }
  },
);

Deno.test(
  "closeAmqp: the connection ended while our close is on its way settles, by the end",
  opts,
  async () => {
    const relayed = relay();
    try {
      const conn = await connectAmqp(new URL(`amqp://guest:guest@127.0.0.1:${relayed.port}/%2F`));
      conn.on("error", () => {});
      relayed.hold();
      const started = performance.now();
      const closing = closeAmqp(conn, { timeoutMs: 60_000 });
      await until(() => relayed.kept() > 0, "our close did not leave the client");
      relayed.endClient();
      const outcome = await settledWithin(closing, started, CLOSE_WAIT_MS / 2);
      assert(outcome.startsWith("settled"), `the close is ${outcome}`);
    } finally {
      relayed.close();
    }
  },
);

Deno.test(
  "openBroker's session close (channel, then connection) settles when the connection ends under it",
  opts,
  async () => {
    const relayed = relay();
    try {
      const session = await openBroker(`amqp://guest:guest@127.0.0.1:${relayed.port}/%2F`);
      relayed.hold();
      const started = performance.now();
      const closing = session.close();
      await until(() => relayed.kept() > 0, "the channel's close did not leave the client");
      relayed.endClient();
      const outcome = await settledWithin(closing, started, CLOSE_WAIT_MS / 2);
      assert(outcome.startsWith("settled"), `the session's close is ${outcome}`);
    } finally {
      relayed.close();
    }
  },
);

Deno.test(
  "closeAmqp: a broker that answers nothing to our close is waited for timeoutMs, then let go",
  opts,
  async () => {
    const relayed = relay();
    try {
      const conn = await connectAmqp(new URL(`amqp://guest:guest@127.0.0.1:${relayed.port}/%2F`));
      conn.on("error", () => {});
      relayed.hold();
      const started = performance.now();
      const outcome = await settledWithin(closeAmqp(conn, { timeoutMs: 300 }), started, 5_000);
      assert(outcome.startsWith("settled"), `the close is ${outcome}`);
      const waited = performance.now() - started;
      assert(waited >= 290, `the close was let go after ${Math.round(waited)} ms, not 300`);
    } finally {
      relayed.close();
    }
  },
);

Deno.test("closeAmqp: an already closed connection or channel settles at once", opts, async () => {
  const conn = await connectAmqp(new URL("amqp://guest:guest@127.0.0.1:5672/%2F"));
  conn.on("error", () => {});
  const ch = await conn.createChannel();
  ch.on("error", () => {});
  await ch.close();
  await conn.close();
  const started = performance.now();
  await closeAmqp(ch, { timeoutMs: 60_000 });
  await closeAmqp(conn, { timeoutMs: 60_000 });
  assert(performance.now() - started < 1_000, "closing what is closed waited");
});
