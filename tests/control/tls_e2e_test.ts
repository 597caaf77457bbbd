/**
 * The mesh with TLS on, end to end against the machine's REAL TLS listeners (tests/support/wire.ts:
 * RabbitMQ's AMQPS and management HTTPS, PostgreSQL `ssl = on`, certificates from the test CA):
 * `mesh-control` over amqps://, https:// and `sslmode=verify-full`; enrollment hands the node
 * amqps:// and the CA certificate; a node's report is bound to its account (a report claiming
 * another node is never recorded, a publish under another node's key is refused); and a link that
 * meets a refused certificate keeps its kept declaration and retries, losing nothing.
 *
 * @module
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { AmqpError, openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { EXCHANGE, reportKey } from "../../lib/broker.ts";
import { makeTestPki } from "../support/tls.ts";
import { TEST_CA_FILE } from "../support/wire.ts";
import { controlCli, mustControl, reportOf, uniqueNode, waitFor } from "./support.ts";
import { startTestLink, type TestVhost, withVhost } from "./vhost.ts";
import type { TestInventory } from "./support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/**
 * `vhost.env` with every connection over TLS, verified against the test CA: the broker's AMQPS
 * and management HTTPS, the inventory with `sslmode=verify-full`; and MESH_CA_FILE, the mesh's CA
 * as control holds it.
 */
function tlsEnv(inv: TestInventory, vhost: TestVhost): Record<string, string> {
  const db = new URL(inv.url);
  db.searchParams.set("sslmode", "verify-full");
  db.searchParams.set("sslrootcert", TEST_CA_FILE);
  return {
    ...vhost.env,
    MESH_DATABASE_URL: db.href,
    MESH_BROKER_URL: `amqps://guest:guest@127.0.0.1:5671/${encodeURIComponent(vhost.name)}`,
    MESH_BROKER_API_URL: "https://guest:guest@127.0.0.1:15671",
    MESH_CA_FILE: TEST_CA_FILE,
  };
}

/** Enrolls `node` over TLS; returns the URL and everything enroll printed. */
async function enrollTls(
  env: Record<string, string>,
  vhost: TestVhost,
  node: string,
  extra: string[] = [],
): Promise<{ url: string; stdout: string }> {
  vhost.users.push(node);
  const out = await mustControl(env, [
    "node",
    "enroll",
    node,
    "--system",
    "debian",
    "--node-is-local",
    ...extra,
  ]);
  const url = out.stdout.split("\n").find((l) => l.startsWith("amqps://"));
  assert(url, `enroll printed no amqps:// URL: ${out.stdout}`);
  return { url, stdout: out.stdout };
}

/** `url` with its `cacertfile` naming `path` (the node's /etc/mesh/ca.crt, in a test directory). */
function withCaAt(url: string, path: string): string {
  const u = new URL(url);
  u.searchParams.set("cacertfile", path);
  return u.href;
}

Deno.test(
  "over TLS, enroll hands the node amqps:// with the CA, and a report is bound to its node's account",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const env = tlsEnv(inv, vhost);
      const dir = await Deno.makeTempDir({ prefix: "mesh-tls-e2e-" });
      try {
        const [a, b] = [uniqueNode("tls"), uniqueNode("tls")];
        const ca = await Deno.readTextFile(TEST_CA_FILE);
        const enrolled = await enrollTls(env, vhost, a);
        const url = new URL(enrolled.url);
        assertEquals(url.protocol, "amqps:");
        assertEquals(url.port, "5671");
        assertEquals(url.searchParams.get("cacertfile"), "/etc/mesh/ca.crt");
        assertStringIncludes(enrolled.stdout, "put it at /etc/mesh/ca.crt on the node");
        assertStringIncludes(enrolled.stdout, ca.trim());
        const caOut = `${dir}/ca-for-${b}.crt`;
        const other = await enrollTls(env, vhost, b, ["--ca-out", caOut]);
        assertEquals(await Deno.readTextFile(caOut), ca.trim() + "\n");
        assertEquals((await Deno.stat(caOut)).mode! & 0o777, 0o644);
        assert(!other.stdout.includes("BEGIN CERTIFICATE"), other.stdout);
        assertStringIncludes(other.stdout, `to ${caOut}; put it at /etc/mesh/ca.crt`);

        // Node a over amqps:// (verified against the CA, as the node would with /etc/mesh/ca.crt).
        const s = await openBroker(withCaAt(enrolled.url, TEST_CA_FILE));
        try {
          const send = (key: string, body: unknown) =>
            publishConfirmed(s.channel, [{
              exchange: EXCHANGE,
              routingKey: key,
              body: new TextEncoder().encode(JSON.stringify(body)),
            }]);
          await send(reportKey(a), reportOf(a));
          // Under a's own key (the broker lets a publish nothing else) but claiming to be b.
          await send(reportKey(a), reportOf(b, { generation: 7 }));
          // Under b's key: refused by the broker, confirmed as refused.
          const refused = await send(reportKey(b), reportOf(b, { generation: 8 })).then(
            () => undefined,
            (e) => e,
          );
          assert(refused instanceof AmqpError, `a published under b's key: ${refused}`);
          assertStringIncludes(refused.message, "ACCESS_REFUSED");
        } finally {
          await s.close();
        }
        const out = await controlCli(["ingest", "--drain"], env);
        assertEquals(out.code, 0, out.stderr);
        assertMatch(out.stdout, /ingested 1 report; dropped 1/);
        assertMatch(out.stderr, new RegExp(`names node "${b}" but was published as "${a}"`));
        const rows = await inv.sql`select node, generation from reports order by node`;
        assertEquals(rows.map((r) => [r.node, r.generation]), [[a, 1]]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

Deno.test(
  "a link meeting a certificate from another CA says so, keeps its declaration and retries; with the right CA it connects and nothing is lost",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const env = tlsEnv(inv, vhost);
      const dir = await Deno.makeTempDir({ prefix: "mesh-tls-link-" });
      const node = uniqueNode("tlslink");
      let link: ReturnType<typeof startTestLink> | undefined;
      try {
        const wrong = await makeTestPki(dir, { stem: "wrong-" });
        const caFile = `${dir}/ca.crt`;
        await Deno.copyFile(TEST_CA_FILE, caFile);
        await Deno.chmod(caFile, 0o644);
        const { url } = await enrollTls(env, vhost, node);
        const nodeUrl = withCaAt(url, caFile);
        const module = async (name: string, file: string) => {
          const path = `${dir}/${name}.json`;
          await Deno.writeTextFile(
            path,
            JSON.stringify({
              version: 1,
              resources: [{
                id: name,
                type: "file",
                path: `${dir}/${file}`,
                content: `${name}\n`,
                mode: "0644",
              }],
            }),
          );
          await mustControl(env, ["module", "add", path]);
          await mustControl(env, ["node", "assign", node, name]);
        };
        await module(`one-${node}`, "one");
        await mustControl(env, ["push", node]);

        link = startTestLink(nodeUrl, `${dir}/state`);
        await waitFor("the first declaration applied", async () => {
          try {
            return await Deno.readTextFile(`${dir}/one`) === `one-${node}\n`;
          } catch {
            return false;
          }
        }, 60_000);
        await link.kill();

        // The node's CA file now holds another CA: the broker's certificate is refused.
        await Deno.copyFile(wrong.caCert, caFile);
        await module(`two-${node}`, "two");
        await mustControl(env, ["push", node]);
        await Deno.remove(`${dir}/one`);
        link = startTestLink(nodeUrl, `${dir}/state`);
        await waitFor("the refusal in the link's log", () =>
          link!.stderr().includes(
            `the server's certificate is not signed by the mesh CA in "${caFile}"`,
          ), 60_000);
        assertStringIncludes(link.stderr(), "retrying in");
        // Meanwhile it keeps reconciling the declaration it holds: what was removed is back.
        await waitFor("the kept declaration reconciled", async () => {
          try {
            return await Deno.readTextFile(`${dir}/one`) === `one-${node}\n`;
          } catch {
            return false;
          }
        }, 60_000);
        assertEquals(link.exited(), undefined, `the link stopped: ${link.stderr()}`);
        assert(!link.stderr().includes("connected to"), link.stderr());

        // The right CA again: the link connects at its next retry and takes the pushed declaration.
        await Deno.copyFile(TEST_CA_FILE, caFile);
        await waitFor("the second declaration applied", async () => {
          try {
            return await Deno.readTextFile(`${dir}/two`) === `two-${node}\n`;
          } catch {
            return false;
          }
        }, 90_000);
        assertStringIncludes(link.stderr(), "connected to amqps://");
        // Nothing lost: the reports made while refused reach the inventory, and the last is
        // the second declaration's clean apply.
        await waitFor("the reports recorded", async () => {
          await mustControl(env, ["ingest", "--drain"]);
          const rows = await inv.sql<{ generation: number; outcome: string }[]>`
            select generation, outcome from reports where node = ${node} order by id`;
          const last = rows.at(-1);
          return last?.generation === 2 && last.outcome === "applied" ? rows : undefined;
        }, 60_000);
      } finally {
        await link?.kill();
        await Deno.remove(dir, { recursive: true });
      }
    }),
);
