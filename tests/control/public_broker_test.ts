/**
 * The broker address nodes reach (`node enroll` and `node rotate` with `--public-broker`), against
 * the real PostgreSQL and RabbitMQ. The broker here listens on 127.0.0.1 only, so the public
 * address is this machine's own non-loopback address, forwarded byte for byte to the broker by
 * the test (as a load balancer or a port forward in front of a broker would be): a node URL that
 * names it opens a real AMQP connection with the node's own credential.
 *
 * @module
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { openBroker } from "../../lib/amqp.ts";
import { nodeQueue } from "../../lib/broker.ts";
import { controlCli, mustControl, type TestInventory, uniqueNode } from "./support.ts";
import { brokerApi, type TestVhost, withVhost } from "./vhost.ts";
import { freePort } from "../support/mod.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** This machine's first non-loopback IPv4 address. */
function machineAddress(): string {
  const found = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.")
  );
  assert(found, "this machine has no non-loopback IPv4 address to stand for a public one");
  return found.address;
}

/** A TCP forward from `hostname` (a port of its own) to the broker on 127.0.0.1:5672. */
interface Forward {
  port: number;
  close(): void;
}

function forward(hostname: string): Forward {
  const listener = Deno.listen({ hostname, port: 0 });
  const open = new Set<Deno.Conn>();
  (async () => {
    for await (const inbound of listener) {
      open.add(inbound);
      (async () => {
        let outbound: Deno.Conn | undefined;
        try {
          outbound = await Deno.connect({ hostname: "127.0.0.1", port: 5672 });
          open.add(outbound);
          await Promise.all([
            inbound.readable.pipeTo(outbound.writable).catch(() => {}),
            outbound.readable.pipeTo(inbound.writable).catch(() => {}),
          ]);
        } catch {
          /* a connection that ended */
        } finally {
          for (const c of [inbound, outbound]) {
            try {
              c?.close();
            } catch { /* closed */ }
            if (c) open.delete(c);
          }
        }
      })();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: () => {
      listener.close();
      for (const c of open) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

/** The node's URL in what `node enroll` or `node rotate` printed. */
function printedUrl(stdout: string): string {
  const url = stdout.split("\n").find((l) => /^amqps?:\/\//.test(l));
  assert(url, stdout);
  return url;
}

/** The kept public broker address, or undefined. */
async function kept(inv: TestInventory): Promise<string | undefined> {
  const [row] = await inv.sql<{ value: string }[]>`
    select value from settings where name = 'public_broker'`;
  return row?.value;
}

/**
 * Opens the node's URL and finds its queue: the printed credential works at that address. The
 * address is this machine's own non-loopback one, reached in clear text: allowed here by name
 * (`MESH_ALLOW_PLAIN=1`, lib/wire_trust.ts), as an operator would have to.
 */
async function works(url: string, node: string): Promise<void> {
  Deno.env.set("MESH_ALLOW_PLAIN", "1");
  try {
    const session = await openBroker(url);
    try {
      await session.channel.checkQueue(nodeQueue(node));
    } finally {
      await session.close();
    }
  } finally {
    Deno.env.delete("MESH_ALLOW_PLAIN");
  }
}

/** Runs `node enroll NODE --system debian` with `extra`, noting its broker user for cleanup. */
function enroll(vhost: TestVhost, node: string, extra: string[], env = vhost.env) {
  vhost.users.push(node);
  return controlCli(["node", "enroll", node, "--system", "debian", ...extra], env);
}

Deno.test(
  "enroll and rotate print the address nodes reach, kept for later enrollments",
  opts,
  async (t) => {
    const host = machineAddress();
    const first = forward(host);
    const second = forward(host);
    try {
      await withVhost(async (inv, vhost) => {
        const path = encodeURIComponent(vhost.name);
        const publicA = `amqp://${host}:${first.port}/${path}`;
        const publicB = `amqp://${host}:${second.port}/${path}`;
        const [a, b, c, d] = ["a", "b", "c", "d"].map((p) => uniqueNode(`pub${p}`));

        await t.step(
          "given, it is checked, kept and said; the node's URL works there",
          async () => {
            const out = await enroll(vhost, a!, ["--public-broker", publicA]);
            assertEquals(out.code, 0, out.stderr);
            const url = printedUrl(out.stdout);
            const u = new URL(url);
            assertEquals([u.protocol, u.host, u.pathname], [
              "amqp:",
              `${host}:${first.port}`,
              `/${path}`,
            ]);
            assertEquals(decodeURIComponent(u.username), a);
            assert(decodeURIComponent(u.password).length >= 40, "the node's own password");
            assertStringIncludes(out.stdout, `kept the broker address nodes reach: ${publicA}`);
            assertEquals(await kept(inv), publicA);
            await works(url, a!);
          },
        );

        await t.step(
          "the next enroll without it uses the kept one, and says nothing of it",
          async () => {
            const out = await enroll(vhost, b!, []);
            assertEquals(out.code, 0, out.stderr);
            const url = printedUrl(out.stdout);
            assertEquals(new URL(url).host, `${host}:${first.port}`);
            assert(!/kept the|replaced the/.test(out.stdout), out.stdout);
            await works(url, b!);
          },
        );

        await t.step(
          "MESH_PUBLIC_BROKER_URL gives another: it replaces the kept one, said",
          async () => {
            const out = await enroll(vhost, c!, [], {
              ...vhost.env,
              MESH_PUBLIC_BROKER_URL: publicB,
            });
            assertEquals(out.code, 0, out.stderr);
            assertEquals(new URL(printedUrl(out.stdout)).host, `${host}:${second.port}`);
            assertStringIncludes(
              out.stdout,
              `replaced the broker address nodes reach: ${publicB} (was ${publicA})`,
            );
            assertEquals(await kept(inv), publicB);
          },
        );

        await t.step("rotate prints the new credential at the kept address", async () => {
          const out = await mustControl(vhost.env, ["node", "rotate", a!]);
          const url = printedUrl(out.stdout);
          assertEquals(new URL(url).host, `${host}:${second.port}`);
          await works(url, a!);
        });

        await t.step("an amqps address gives an amqps URL", async () => {
          const tls = `amqps://${host}:${second.port}/${path}`;
          const out = await enroll(vhost, d!, ["--public-broker", tls]);
          assertEquals(out.code, 0, out.stderr);
          const url = printedUrl(out.stdout);
          assertMatch(url, new RegExp(`^amqps://${d}:[^@]+@${host}:${second.port}/${path}$`));
          assertEquals(await kept(inv), tls);
        });
      });
    } finally {
      first.close();
      second.close();
    }
  },
);

Deno.test(
  "a loopback address is refused for a node unless it is this machine: exit 2, nothing recorded",
  opts,
  async (t) => {
    await withVhost(async (inv, vhost) => {
      const path = encodeURIComponent(vhost.name);
      const node = uniqueNode("loop");
      const nothing = async () => {
        assertEquals((await inv.sql`select name from nodes`).length, 0);
        assertEquals(await kept(inv), undefined);
        assertEquals((await brokerApi("GET", `/api/users/${node}`)).status, 404);
      };
      await t.step("control's own --broker (127.0.0.1), no public address ever given", async () => {
        const out = await enroll(vhost, node, []);
        assertEquals(out.code, 2, out.stdout);
        assertEquals(out.stdout, "");
        assertMatch(
          out.stderr,
          /its broker URL would name amqp:\/\/127\.0\.0\.1:5672\/\S+ \(--broker: no public broker address was ever given\), a loopback address that a node on another machine cannot reach; pass --public-broker URL \(or set MESH_PUBLIC_BROKER_URL\) with the address nodes reach, or --node-is-local if the node is this machine; nothing was recorded/,
        );
        assert(!out.stderr.includes("guest:guest"), out.stderr);
        await nothing();
      });
      for (const address of [`amqp://localhost:5672/${path}`, `amqp://[::1]:5672/${path}`]) {
        await t.step(`given ${address}`, async () => {
          const out = await enroll(vhost, node, ["--public-broker", address]);
          assertEquals(out.code, 2, out.stdout);
          assertStringIncludes(out.stderr, "a loopback address that a node on another machine");
          await nothing();
        });
      }
      await t.step("--node-is-local: the loopback URL is printed, and works", async () => {
        const out = await enroll(vhost, node, ["--node-is-local"]);
        assertEquals(out.code, 0, out.stderr);
        const url = printedUrl(out.stdout);
        assertEquals(new URL(url).host, "127.0.0.1:5672");
        await works(url, node);
        assertEquals(await kept(inv), undefined, "the fallback to --broker is not kept");
      });
      await t.step("rotate refuses it too, and the credential stays", async () => {
        const before = printedUrl(
          (await mustControl(vhost.env, [
            "node",
            "rotate",
            node,
            "--node-is-local",
          ])).stdout,
        );
        const out = await controlCli(["node", "rotate", node], vhost.env);
        assertEquals(out.code, 2, out.stdout);
        assertEquals(out.stdout, "");
        assertStringIncludes(out.stderr, `Cannot rotate the credential of node "${node}"`);
        assertStringIncludes(out.stderr, "--node-is-local if the node is this machine");
        await works(before, node);
      });
    });
  },
);

Deno.test(
  "a public broker that does not resolve, refuses or is not a broker: exit 2, masked, nothing recorded",
  opts,
  async (t) => {
    const host = machineAddress();
    const fwd = forward(host);
    try {
      await withVhost(async (inv, vhost) => {
        const path = encodeURIComponent(vhost.name);
        const good = `amqp://${host}:${fwd.port}/${path}`;
        const keeper = uniqueNode("keep");
        const first = await enroll(vhost, keeper, ["--public-broker", good]);
        assertEquals(first.code, 0, first.stderr);
        const keeperUrl = printedUrl(first.stdout);
        // A port nothing listens on (below the ephemeral range: no connect beside takes it).
        const closedPort = freePort();
        const node = uniqueNode("bad");
        const cases: [string, string[], RegExp][] = [
          [
            "a name that does not resolve",
            ["--public-broker", `amqp://mesh-no-such-host.invalid:5672/${path}`],
            /the public broker amqp:\/\/mesh-no-such-host\.invalid:5672\/\S+ \(mesh-no-such-host\.invalid port 5672\) does not resolve: /,
          ],
          [
            "a port that refuses connections",
            ["--public-broker", `amqp://${host}:${closedPort}/${path}`],
            new RegExp(
              `the public broker amqp://${host}:${closedPort}/\\S+ \\(${host} port ${closedPort}\\) refuses connections: `,
            ),
          ],
          [
            "something that is not an AMQP broker (PostgreSQL)",
            ["--public-broker", `amqp://127.0.0.1:5432/${path}`, "--node-is-local"],
            /the public broker amqp:\/\/127\.0\.0\.1:5432\/\S+ \(127\.0\.0\.1 port 5432\) accepted the connection and closed it without answering the AMQP 0-9-1 header/,
          ],
          [
            "a URL carrying a credential, masked",
            ["--public-broker", `amqp://someone:hunter2-secret@${host}:${fwd.port}/${path}`],
            new RegExp(`"amqp://someone:\\*\\*\\*@${host}:${fwd.port}/\\S+" carries a credential`),
          ],
          [
            "another vhost than the account's",
            ["--public-broker", `amqp://${host}:${fwd.port}/elsewhere`],
            /names vhost "elsewhere", and the node's account is made on vhost "mesh-test-/,
          ],
        ];
        for (const [what, extra, said] of cases) {
          await t.step(`enroll: ${what}`, async () => {
            const out = await enroll(vhost, node, extra);
            assertEquals(out.code, 2, out.stdout);
            assertEquals(out.stdout, "");
            assertMatch(out.stderr, said);
            assertStringIncludes(out.stderr, "nothing was recorded");
            assert(!out.stderr.includes("hunter2"), out.stderr);
            assert(!out.stderr.includes("guest:guest"), out.stderr);
            assertEquals((await inv.sql`select name from nodes where name = ${node}`).length, 0);
            assertEquals((await brokerApi("GET", `/api/users/${node}`)).status, 404);
            assertEquals(await kept(inv), good, "the kept address changed");
          });
          await t.step(`rotate: ${what}`, async () => {
            const out = await controlCli(["node", "rotate", keeper, ...extra], vhost.env);
            assertEquals(out.code, 2, out.stdout);
            assertMatch(out.stderr, said);
            assertEquals(await kept(inv), good, "the kept address changed");
            await works(keeperUrl, keeper);
          });
        }
      });
    } finally {
      fwd.close();
    }
  },
);
