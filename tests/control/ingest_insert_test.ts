// Ingest's insert (control/ingest.ts) takes the batch as one array a column (unnest) where it took
// one JSON document of the rows (json_to_recordset): these tests hold the rows it stores, and the
// error a report the database refuses stops it with, equal to the old statement's, on reports
// whose text needs escaping either way. A fake broker channel delivers the reports; the database
// is real.
import { assertEquals } from "../support/assert.ts";
import { reportKey, type ReportMessage } from "../../lib/broker.ts";
import { bodyIdentity, ingestReports } from "../../control/ingest.ts";
import type { Sql } from "../../control/db.ts";
import { freshInventory, reportOf } from "./support.ts";

/** The old insert, as it was before unnest (git show 957b002:control/ingest.ts): the reference. */
async function oldInsert(sql: Sql, table: string, reports: ReportMessage[]): Promise<void> {
  const rows = [];
  for (const report of reports) {
    rows.push({
      node: report.node,
      generation: report.generation,
      digest: report.declaration,
      outcome: report.outcome,
      applied: report.applied,
      total: report.total,
      trigger: report.trigger,
      problems: JSON.stringify(report.problems),
      changes: JSON.stringify(report.changes),
      host_version: report.hostVersion,
      interval_ms: report.intervalMs ?? null,
      reported_at: report.at,
      identity: await bodyIdentity(new TextEncoder().encode(JSON.stringify(report))),
    });
  }
  await sql.unsafe(
    `insert into ${table} (node, generation, digest, outcome, applied, total, trigger,
      problems, changes, host_version, interval_ms, reported_at, identity)
    select x.node, x.generation, x.digest, x.outcome, x.applied, x.total, x.trigger,
      x.problems::jsonb, x.changes::jsonb, x.host_version, x.interval_ms,
      x.reported_at::timestamptz, decode(x.identity, 'hex')
    from json_to_recordset($1::text::json) as x(
      node text, generation integer, digest text, outcome text, applied integer,
      total integer, trigger text, problems text, changes text, host_version text,
      interval_ms integer, reported_at text, identity text)
    on conflict (node, identity) where identity is not null do nothing
    returning encode(identity, 'hex') as identity`,
    [JSON.stringify(rows)],
  );
}

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

const STORED = `node, generation, digest, outcome, applied, total, trigger, problems, changes,
  host_version, interval_ms, reported_at, encode(identity, 'hex') as identity`;

/** Reports whose text needs escaping in a JSON document, in an array literal, or both. */
function awkward(node: string): ReportMessage[] {
  const texts = [
    'quote " backslash \\ brace { } comma , paren ( )',
    "NULL",
    "",
    " leading and trailing spaces ",
    "tab\tnewline\nreturn\r",
    "unicode é ü 中文 😀 \u2028",
    "\\u0000 written out",
    '{"json": "inside"}',
  ];
  return texts.map((text, i) =>
    reportOf(node, {
      generation: i,
      at: i % 2 ? `2026-01-0${i + 1}T10:00:00.123+02:00` : `2026-01-0${i + 1}T10:00:00Z`,
      hostVersion: text,
      intervalMs: i % 3 ? 60_000 + i : undefined,
      outcome: i % 2 ? "failed" : "applied",
      applied: i,
      total: i + 1,
      trigger: (["push", "start", "interval"] as const)[i % 3],
      problems: i % 2 ? [{ id: text, path: `a.b[${i}]`, message: text }] : [],
      changes: [{ id: text, type: "file", change: "updated" }, {
        id: `x${i}`,
        type: text,
        change: "unchanged",
      }],
    })
  );
}

Deno.test("ingest stores a batch exactly as the old json_to_recordset insert did", async () => {
  const inv = await freshInventory();
  try {
    const node = "awkward-1";
    await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
    await inv.sql.unsafe(`create table reports_old (like reports including all)`);
    const reports = awkward(node);
    await oldInsert(inv.sql, "reports_old", reports);
    const result = await ingest(inv.sql, reports);
    assertEquals((result as { ingested: number }).ingested, reports.length);
    const old = await inv.sql.unsafe(`select ${STORED} from reports_old order by id`);
    const now = await inv.sql.unsafe(`select ${STORED} from reports order by id`);
    assertEquals(now.length, reports.length);
    assertEquals([...now], [...old]);
    // And as text, where a difference of representation (a jsonb key order, a time zone) shows.
    const text = (table: string) =>
      inv.sql.unsafe(`select (r.*)::text as t from (select ${STORED} from ${table} order by id) r`);
    assertEquals(
      (await text("reports")).map((r) => r.t),
      (await text("reports_old")).map((r) => r.t),
    );
  } finally {
    await inv.drop();
  }
});

Deno.test("a report the database refuses stops ingest with the old insert's error", async () => {
  const inv = await freshInventory();
  try {
    const node = "refused-1";
    await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
    await inv.sql.unsafe(`create table reports_old (like reports including all)`);
    // The schema takes each; the database refuses each (NUL, a lone surrogate), in the host's
    // version (a scalar column) and in a problem's message (jsonb).
    const refused: Partial<ReportMessage>[] = [
      { hostVersion: "nul \u0000 here" },
      { hostVersion: "lone \ud800 surrogate" },
      { problems: [{ message: "nul \u0000 here" }] },
      { problems: [{ message: "lone \udc00 surrogate" }] },
    ];
    for (const fields of refused) {
      const reports = [reportOf(node, fields)];
      const old = await oldInsert(inv.sql, "reports_old", reports).then(
        () => "accepted",
        (e: Error) => e.message,
      );
      const now = await ingest(inv.sql, reports);
      assertEquals(
        now instanceof Error ? now.message : `accepted: ${JSON.stringify(now)}`,
        old,
        JSON.stringify(fields),
      );
    }
    assertEquals((await inv.sql`select count(*)::int as n from reports`)[0]!.n, 0);
  } finally {
    await inv.drop();
  }
});

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
