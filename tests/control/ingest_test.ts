/**
 * ingest against the real broker and PostgreSQL: a report is recorded under the node its routing
 * key names (the one the broker let publish it), and one whose body claims another node, that
 * does not decode, or whose node is not enrolled is dropped and said, never recorded.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { EXCHANGE, reportKey, type ReportMessage } from "../../lib/broker.ts";
import { controlCli, freshInventory, uniqueNode } from "./support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

function report(node: string): ReportMessage {
  return {
    kind: "report",
    node,
    generation: 1,
    trigger: "push",
    at: new Date().toISOString(),
    hostVersion: "test",
    outcome: "applied",
    applied: 0,
    total: 0,
    declaration: `sha256:${"a".repeat(64)}`,
    changes: [],
    problems: [],
  };
}

Deno.test(
  "ingest records a report under its routing key's node, and drops the rest",
  opts,
  async () => {
    const inv = await freshInventory();
    const [real, other, stranger] = [uniqueNode("in"), uniqueNode("in"), uniqueNode("in")];
    try {
      assertEquals((await controlCli(["broker", "setup"], inv.env)).code, 0);
      await inv
        .sql`insert into nodes (name, system) values (${real}, 'debian'), (${other}, 'debian')`;
      const s = await openBroker(inv.env.MESH_BROKER_URL!);
      const send = (key: string, body: string) =>
        publishConfirmed(s.channel, [{
          exchange: EXCHANGE,
          routingKey: key,
          body: new TextEncoder().encode(body),
        }]);
      await send(reportKey(real), JSON.stringify(report(real)));
      // Published as `real` (the broker would allow nothing else) but claiming to be `other`.
      await send(reportKey(real), JSON.stringify(report(other)));
      await send(reportKey(real), "{not json");
      await send(reportKey(stranger), JSON.stringify(report(stranger)));
      await s.close();

      const out = await controlCli(["ingest", "--drain"], inv.env);
      assertEquals(out.code, 0, out.stderr);
      assertMatch(out.stdout, /ingested 1 report; dropped 3/);
      assertMatch(out.stderr, new RegExp(`names node "${other}" but was published as "${real}"`));
      assertMatch(out.stderr, /not UTF-8 JSON/);
      assertMatch(out.stderr, new RegExp(`node "${stranger}" is not enrolled`));
      const rows = await inv.sql`select node from reports`;
      assertEquals(rows.map((r) => r.node), [real]);
    } finally {
      await inv.drop();
    }
  },
);
