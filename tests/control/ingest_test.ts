/**
 * ingest against the real broker and PostgreSQL: a report is recorded under the node its routing
 * key names (the one the broker let publish it), and one whose body claims another node, that
 * does not decode, or whose node is not enrolled is dropped and said, never recorded.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { EXCHANGE, reportKey, REPORTS_QUEUE } from "../../lib/broker.ts";
import { ingestReports } from "../../control/ingest.ts";
import { MAX_PROBLEM_MESSAGE_LENGTH, MAX_REPORT_BYTES } from "../../lib/report_rules.ts";
import {
  controlCli,
  freshInventory,
  publishReports,
  reportOf as report,
  uniqueNode,
} from "./support.ts";
import { withVhost } from "./vhost.ts";
import { within } from "../support/within.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test(
  "ingest records a report under its routing key's node, and drops the rest",
  opts,
  // A vhost of its own: a drain of "/"'s mesh.reports would take other tests' reports too.
  () =>
    withVhost(async (inv, vhost) => {
      const [real, other, stranger] = [uniqueNode("in"), uniqueNode("in"), uniqueNode("in")];
      await inv
        .sql`insert into nodes (name, system) values (${real}, 'debian'), (${other}, 'debian')`;
      const s = await openBroker(vhost.amqp);
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

      const out = await controlCli(["ingest", "--drain"], vhost.env);
      assertEquals(out.code, 0, out.stderr);
      assertMatch(out.stdout, /ingested 1 report; dropped 3/);
      assertMatch(out.stderr, new RegExp(`names node "${other}" but was published as "${real}"`));
      assertMatch(out.stderr, /not UTF-8 JSON/);
      assertMatch(out.stderr, new RegExp(`node "${stranger}" is not enrolled`));
      const rows = await inv.sql`select node from reports`;
      assertEquals(rows.map((r) => r.node), [real]);
    }),
);

Deno.test(
  "ingest acknowledges a batch only once it committed: a failing batch loses nothing, and a report delivered twice is recorded once",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const [a, b] = [uniqueNode("in"), uniqueNode("in")];
      await inv.sql`insert into nodes (name, system) values (${a}, 'debian'), (${b}, 'debian')`;
      const bodies = Array.from({ length: 12 }, (_, i) => {
        const r = report(i % 2 === 0 ? a : b);
        r.at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        // The seventh report's batch fails in the database (the trigger below).
        if (i === 6) r.generation = 99;
        return { key: reportKey(r.node), body: new TextEncoder().encode(JSON.stringify(r)) };
      });
      // Delivered twice: as a link sends a report again when its confirm was lost.
      const sent = [...bodies.slice(0, 3), bodies[1]!, ...bodies.slice(3)];
      const s = await openBroker(vhost.amqp);
      try {
        await publishConfirmed(
          s.channel,
          sent.map((m) => ({ exchange: EXCHANGE, routingKey: m.key, body: m.body })),
        );
      } finally {
        await s.close();
      }
      await inv.sql.unsafe(`
        create function refuse_99() returns trigger language plpgsql as $$
        begin
          if new.generation = 99 then raise exception 'refused by the test'; end if;
          return new;
        end $$;
        create trigger refuse_99 before insert on reports
          for each row execute function refuse_99();`);

      const first = await openBroker(vhost.amqp);
      let failure: unknown;
      try {
        await ingestReports(inv.sql, first.channel, { batch: 2, drain: true });
      } catch (error) {
        failure = error;
      } finally {
        await first.close().catch(() => {});
      }
      assertMatch(String(failure), /refused by the test/);
      const recorded = Number((await inv.sql`select count(*)::int as n from reports`)[0]!.n);
      assert(recorded < bodies.length, `${recorded} recorded although a batch failed`);
      // Nothing lost: every report not recorded is back in the queue.
      const check = await openBroker(vhost.amqp);
      try {
        const { messageCount } = await check.channel.checkQueue(REPORTS_QUEUE);
        assert(
          messageCount >= bodies.length - recorded,
          `${recorded} recorded and ${messageCount} queued of ${bodies.length}: a report was acknowledged before its batch committed`,
        );
      } finally {
        await check.close();
      }

      await inv.sql`drop trigger refuse_99 on reports`;
      const again = await openBroker(vhost.amqp);
      try {
        const result = await ingestReports(inv.sql, again.channel, { batch: 2, drain: true });
        assertEquals(result.dropped, []);
        assertEquals(result.ingested, bodies.length - recorded);
      } finally {
        await again.close();
      }
      const rows = await inv.sql<{ n: number; identities: number }[]>`
        select count(*)::int as n, count(distinct identity)::int as identities from reports`;
      assertEquals(rows[0], { n: bodies.length, identities: bodies.length });
      // The node's current state is its last report.
      const last = await inv.sql`
        select l.node, l.report_id = (select max(id) from reports r where r.node = l.node) as last
        from last_reports l order by node`;
      assertEquals(last.map((r) => r.last), [true, true]);
    }),
);

Deno.test(
  "ingest keeps delivery order across batches in flight together: each node's last report and drift summary are its last delivered",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const nodes = [uniqueNode("in"), uniqueNode("in"), uniqueNode("in")];
      await inv.sql`insert into nodes (name, system) select unnest(${nodes}::text[]), 'debian'`;
      // Many small batches, every node in each: a later batch's insert or summary overtaking an
      // earlier one's would leave an earlier report as the node's last.
      const count = 240;
      const messages = Array.from({ length: count }, (_, i) => {
        const r = report(nodes[i % nodes.length]!);
        r.at = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
        r.drift = { status: "unreadable", path: "/var/lib/mesh/drift.json", problem: `n${i}` };
        return [r.node, r] as const;
      });
      await publishReports(vhost.amqp, messages);
      const consumer = await openBroker(vhost.amqp);
      try {
        // Bounded: batches in flight waiting on each other in the wrong order would hang here.
        const result = await within(
          ingestReports(inv.sql, consumer.channel, { batch: 4, drain: true }),
          120_000,
          "ingest of the batches in flight",
        );
        assertEquals(result.ingested, count);
      } finally {
        await consumer.close();
      }
      // Report ids follow delivery order.
      const order = await inv.sql<{ at: string }[]>`
        select to_char(reported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as at
        from reports order by id`;
      const ats = order.map((r) => r.at);
      assertEquals(ats, [...ats].sort());
      const last = await inv.sql<{ node: string; last: boolean; problem: string }[]>`
        select l.node, l.report_id = (select max(id) from reports r where r.node = l.node) as last,
          d.summary->>'problem' as problem
        from last_reports l join node_drift d using (node) order by l.node`;
      const expected = nodes.map((node) => {
        const i = count - nodes.length + nodes.indexOf(node);
        return { node, last: true, problem: `n${i}` };
      }).sort((a, b) => a.node < b.node ? -1 : 1);
      assertEquals(last.map((r) => ({ ...r })), expected);
      const stored = await inv.sql<{ n: number }[]>`
        select count(*)::int as n from last_reports l join reports r on r.id = l.report_id
        where r.reported_at = (select max(reported_at) from reports x where x.node = l.node)`;
      assertEquals(stored[0]!.n, nodes.length);
    }),
);

Deno.test(
  "ingest stops on a report the database refuses, leaving it and the reports after it queued",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("in");
      await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
      const good = report(node);
      // The schema takes it; the database refuses it (the trigger below). A text jsonb cannot
      // hold (a NUL, a lone surrogate) is refused by the schema, and dropped: report_text_test.ts.
      const refused = report(node, {
        outcome: "failed",
        problems: [{ id: "app", message: "refuse me" }],
      });
      await inv.sql.unsafe(`
        create function refuse_failed() returns trigger language plpgsql as $$
        begin
          if new.outcome = 'failed' then raise exception 'refused by the test'; end if;
          return new;
        end $$;
        create trigger refuse_failed before insert on reports
          for each row execute function refuse_failed();`);
      await publishReports(vhost.amqp, [[node, good], [node, refused]]);
      const consumer = await openBroker(vhost.amqp);
      let failure: unknown;
      try {
        await ingestReports(inv.sql, consumer.channel, { drain: true });
      } catch (error) {
        failure = error;
      } finally {
        await consumer.close().catch(() => {});
      }
      assertMatch(String(failure), /refused by the test/);
      assertEquals((await inv.sql`select count(*)::int as n from reports`)[0]!.n, 0);
      const check = await openBroker(vhost.amqp);
      try {
        assertEquals((await check.channel.checkQueue(REPORTS_QUEUE)).messageCount, 2);
      } finally {
        await check.close();
      }
    }),
);

Deno.test(
  "ingest drops a report past a bound, saying which node, what and where, and records the rest",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("in");
      await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
      const long = report(node, {
        outcome: "failed",
        problems: [{ id: "app", message: "m".repeat(MAX_PROBLEM_MESSAGE_LENGTH + 1) }],
      });
      // Valid JSON of a valid report, padded past the largest body a report may be.
      const text = JSON.stringify(report(node));
      const huge = text + " ".repeat(MAX_REPORT_BYTES + 1 - text.length);
      await publishReports(vhost.amqp, [
        [node, long],
        [node, huge],
        [node, report(node, { generation: 2 })],
      ]);
      const out = await controlCli(["ingest", "--drain"], vhost.env);
      assertEquals(out.code, 0, out.stderr);
      assertMatch(out.stdout, /ingested 1 report; dropped 2/);
      assertEquals(
        out.stderr.split("\n").filter((l) => l !== ""),
        [
          `mesh-control: dropped a report (report.${node}): Cannot read report from "${node}": problems[0].message: Too big: expected string to have <=${MAX_PROBLEM_MESSAGE_LENGTH} characters`,
          `mesh-control: dropped a report (report.${node}): Cannot read report from "${node}": $: the body is ${
            MAX_REPORT_BYTES + 1
          } bytes, more than the ${MAX_REPORT_BYTES} it may be (not read)`,
        ],
      );
      // Nothing of them written; the report after them recorded.
      const rows = await inv.sql`select generation from reports where node = ${node}`;
      assertEquals(rows.map((r) => r.generation), [2]);
      const check = await openBroker(vhost.amqp);
      try {
        assertEquals((await check.channel.checkQueue(REPORTS_QUEUE)).messageCount, 0);
      } finally {
        await check.close();
      }
    }),
);

Deno.test(
  "ingest tells the database's failure first, and a broker that does not answer ends it with the database open",
  opts,
  async () => {
    // Neither answers: the database (opened first) is named, not the broker.
    const database = "postgres://postgres@127.0.0.1:1/inventory";
    const broker = "amqp://guest:guest@127.0.0.1:1/";
    const both = await controlCli(["ingest", "--drain"], {
      MESH_DATABASE_URL: database,
      MESH_BROKER_URL: broker,
    });
    assertEquals(both.code, 2, both.stderr);
    assertEquals(both.stdout, "");
    assertMatch(both.stderr, /^mesh-control: Cannot connect to database "postgres:\/\/[^"]*:1\//);
    // Only the broker does not answer: it is named, and the open database does not keep the
    // process from ending.
    const inv = await freshInventory();
    try {
      const out = await within(
        controlCli(["ingest", "--drain"], { MESH_DATABASE_URL: inv.url, MESH_BROKER_URL: broker }),
        30_000,
        "ingest with a broker that does not answer",
      );
      assertEquals(out.code, 2, out.stderr);
      assertEquals(out.stdout, "");
      assertMatch(out.stderr, /^mesh-control: .*127\.0\.0\.1:1/);
      assert(!/database/i.test(out.stderr), out.stderr);
    } finally {
      await inv.drop();
    }
  },
);
