/**
 * ingest against the real broker and PostgreSQL, at the bounds of what its insert casts a report's
 * fields to (PostgreSQL's integer and timestamptz; lib/report_rules.ts): a report at each bound is
 * recorded, one just past it is dropped and said, naming the field, and ingest goes on (a database
 * error would stop it for every node, the batch delivered again and failing again).
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { openBroker } from "../../lib/amqp.ts";
import { MAX_INTERVAL_MS, type ReportMessage } from "../../lib/broker.ts";
import { ingestReports } from "../../control/ingest.ts";
import { publishReports, reportOf as report, uniqueNode } from "./support.ts";
import { withVhost } from "./vhost.ts";

/** PostgreSQL's largest integer, the type the insert casts `generation`, `applied`, `total` to. */
const MAX_REPORT_INT = 2 ** 31 - 1;

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test(
  "ingest records reports at PostgreSQL's integer and timestamptz bounds, drops those past them naming the field, and goes on",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("ib");
      await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
      const at: Partial<ReportMessage>[] = [
        { generation: MAX_REPORT_INT, applied: MAX_REPORT_INT, total: MAX_REPORT_INT },
        { intervalMs: MAX_INTERVAL_MS },
        { at: "0001-01-01T00:00:00.000Z" },
        { at: "0001-01-01T00:00:00+15:59" },
        { at: "9999-12-31T23:59:59.999999-15:59" },
        { at: "2026-12-02T05:00:00.123456+15:59" },
      ];
      const past: [string, Partial<ReportMessage>][] = [
        ["generation", { generation: MAX_REPORT_INT + 1 }],
        ["applied", { applied: MAX_REPORT_INT + 1 }],
        ["total", { total: MAX_REPORT_INT + 1 }],
        ["intervalMs", { intervalMs: MAX_INTERVAL_MS + 1 }],
        ["at", { at: "0000-01-01T00:00:00Z" }],
        ["at", { at: "2026-12-02T05:00:00+16:00" }],
        ["at", { at: "2026-12-02T05:00:00-16:00" }],
        ["at", { at: "2026-12-02T05:00:00.1234567Z" }],
        ["at", { at: `2026-12-02T05:00:00.${"1".repeat(200)}Z` }],
      ];
      const healthy = report(node, { hostVersion: "healthy" });
      const bodies = [
        ...at.map((f, i) => report(node, { ...f, hostVersion: `at ${i}` })),
        ...past.map(([, f], i) => report(node, { ...f, hostVersion: `past ${i}` })),
        healthy,
      ];
      await publishReports(vhost.amqp, bodies.map((r) => [node, r]));

      const consumer = await openBroker(vhost.amqp);
      try {
        const result = await ingestReports(inv.sql, consumer.channel, { drain: true });
        assertEquals(result.ingested, at.length + 1);
        assertEquals(result.dropped.length, past.length);
        result.dropped.forEach((d, i) => {
          assertMatch(d.reason, new RegExp(`Cannot read report from "${node}": ${past[i]![0]}: `));
        });
      } finally {
        await consumer.close();
      }
      const rows = await inv.sql<
        { host_version: string; generation: number; applied: number; reported_at: string }[]
      >`
        select host_version, generation, applied, (reported_at at time zone 'UTC')::text
          as reported_at
        from reports where node = ${node} order by id`;
      assertEquals(rows.map((r) => r.host_version), [
        ...at.map((_, i) => `at ${i}`),
        "healthy",
      ]);
      assertEquals([rows[0]!.generation, rows[0]!.applied], [MAX_REPORT_INT, MAX_REPORT_INT]);
      // Each time held as it was written: no year, offset or fraction lost or rounded.
      assertEquals(rows.slice(2, 6).map((r) => r.reported_at), [
        "0001-01-01 00:00:00",
        "0001-12-31 08:01:00 BC",
        "10000-01-01 15:58:59.999999",
        "2026-12-01 13:01:00.123456",
      ]);
    }),
);
