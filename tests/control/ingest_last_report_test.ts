// Each node's last report (last_reports, kept by migration 0006's statement-level trigger over
// ingest's batch insert) is its last delivered report: within one batch (two reports of a node,
// the later delivered with the earlier clock) and across batches (a later batch whose reports are
// older by the node's clock than the stored last ones). A fake broker channel delivers the
// reports; the database is real.
import { assertEquals } from "../support/assert.ts";
import { reportKey, type ReportMessage } from "../../lib/broker.ts";
import { ingestReports } from "../../control/ingest.ts";
import type { Sql } from "../../control/db.ts";
import { freshInventory, reportOf } from "./support.ts";

/** Delivers `reports` through a fake channel to ingestReports (drain) on `sql`. */
async function ingest(sql: Sql, reports: ReportMessage[]): Promise<unknown> {
  let waiting = reports.length;
  let deliver!: (m: unknown) => void;
  const channel = {
    prefetch: () => Promise.resolve(),
    checkQueue: () => Promise.resolve({ messageCount: waiting }),
    consume: (_q: string, fn: (m: unknown) => void) => {
      deliver = fn;
      queueMicrotask(() => {
        for (const r of reports) {
          deliver({
            fields: { routingKey: reportKey(r.node), deliveryTag: 1 },
            properties: {},
            content: new TextEncoder().encode(JSON.stringify(r)),
          });
        }
        waiting = 0;
      });
      return Promise.resolve({ consumerTag: "t" });
    },
    cancel: () => Promise.resolve(),
    ack: () => {},
  };
  return await ingestReports(sql, channel as never, { drain: true }).then(
    (result) => result,
    (error: Error) => error,
  );
}

Deno.test("each node's last report is its last delivered, whatever its clock says, within a batch and across batches", async () => {
  const inv = await freshInventory();
  try {
    const [a, b] = ["order-a", "order-b"];
    await inv.sql`insert into nodes (name, system) values (${a}, 'debian'), (${b}, 'debian')`;
    const at = (minute: number) => `2026-01-01T10:${String(minute).padStart(2, "0")}:00Z`;
    const last = async () =>
      (await inv.sql<{ node: string; generation: number; newest: boolean }[]>`
        select l.node, l.generation,
          l.report_id = (select max(id) from reports r where r.node = l.node) as newest
        from last_reports l order by l.node`).map((r) => [r.node, r.generation, r.newest]);
    // One batch: two reports of `a`, the later delivered with the earlier clock; one of `b`.
    await ingest(inv.sql, [
      reportOf(a, { generation: 1, at: at(30) }),
      reportOf(b, { generation: 1, at: at(30) }),
      reportOf(a, { generation: 2, at: at(10) }),
    ]);
    assertEquals(await last(), [[a, 2, true], [b, 1, true]]);
    // A later batch whose reports are older by the node's clock than the stored last ones.
    await ingest(inv.sql, [
      reportOf(b, { generation: 3, at: at(1) }),
      reportOf(a, { generation: 4, at: at(2) }),
      reportOf(a, { generation: 5, at: at(0) }),
    ]);
    assertEquals(await last(), [[a, 5, true], [b, 3, true]]);
  } finally {
    await inv.drop();
  }
});
