/**
 * The figures behind sizing a fleet of 100,000 nodes (docs/mesh-control.md, "Sizing"), measured on
 * a three-member RabbitMQ cluster started on this machine for the run (tests/support/
 * rabbit_cluster.ts; the machine's own broker is not touched) and a database of its own on the
 * local PostgreSQL:
 *
 * 1. the size of a report message (the link's JSON, 20 resources);
 * 2. confirmed publish rate of reports into `mesh.reports`, quorum against classic on the same
 *    cluster (the peer), in batches of 100 in flight;
 * 3. `ingestReports` (the CLI's ingest, in-process) draining them into PostgreSQL, the same
 *    reports delivered again (recorded once) as its peer;
 * 4. bytes per report row in PostgreSQL with its indexes (the identity index of 0005 included);
 * 5. broker memory per node queue, quorum against classic (1,000 queues declared, the cluster's
 *    `mem_used` before and after, summed over the members).
 *
 * Usage: `deno run -A bench/scale_bench.ts [--reports 5000] [--runs 3] [--queues 1000]`.
 * Prints Markdown; everything it made is removed at the end, also on failure.
 *
 * @module
 */

import postgres from "postgres";
import { startRabbitCluster } from "../tests/support/rabbit_cluster.ts";
import { openBroker, publishConfirmed } from "../lib/amqp.ts";
import { EXCHANGE, nodeQueue, reportKey, type ReportMessage } from "../lib/broker.ts";
import { queueArguments, type QueueType, setupQueues } from "../control/topology.ts";
import { connectDatabase, migrate } from "../control/db.ts";
import { ingestReports } from "../control/ingest.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const REPORTS = arg("reports", 5000);
const RUNS = arg("runs", 3);
const QUEUES = arg("queues", 1000);
const NODES = 1000;
const PG = "postgres://postgres@127.0.0.1:5432";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const log = (s: string) => console.error(`scale_bench: ${s}`);

function reports(run: number): Uint8Array[] {
  const encoder = new TextEncoder();
  return Array.from({ length: REPORTS }, (_, i) => {
    const failed = i % 10 === 0;
    const report: ReportMessage = {
      kind: "report",
      node: `bench-${String(i % NODES).padStart(4, "0")}`,
      generation: 1,
      trigger: "interval",
      at: new Date(Date.UTC(2026, 0, 1) + run * 1e7 + i).toISOString(),
      hostVersion: "mesh-host 0.1.0",
      outcome: failed ? "failed" : "applied",
      applied: failed ? 17 : 20,
      total: 20,
      declaration: `sha256:${"ab".repeat(32)}`,
      changes: Array.from({ length: 20 }, (_, k) => ({
        id: `app-f${String(k).padStart(2, "0")}`,
        type: "file",
        change: "unchanged" as const,
      })),
      problems: failed ? [{ id: "app-f03", message: "write failed: disk full" }] : [],
    };
    return encoder.encode(JSON.stringify(report));
  });
}

async function api(base: string, method: string, path: string, body?: unknown) {
  const u = new URL(base);
  const r = await fetch(`http://${u.host}${path}`, {
    method,
    headers: {
      authorization: `Basic ${btoa("guest:guest")}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return text ? JSON.parse(text) : undefined;
}

const cluster = await startRabbitCluster({ members: 3 });
const id = crypto.randomUUID().slice(0, 8);
const dbName = `meshbench_scale_${id}`;
const admin = postgres(`${PG}/postgres`, { max: 1, onnotice: () => {} });
const lines: string[] = [];
try {
  const apiBase = cluster.members[0]!.api;
  await admin.unsafe(`create database ${dbName}`);
  const sql = await connectDatabase(`${PG}/${dbName}`, { requireMigrated: false });
  await migrate(sql);
  await sql`insert into nodes (name, system)
    select 'bench-' || lpad(i::text, 4, '0'), 'debian' from generate_series(0, ${NODES - 1}) i`;

  const bodies = reports(0);
  const mean = bodies.reduce((n, b) => n + b.byteLength, 0) / bodies.length;
  lines.push(`- report message body: ${mean.toFixed(0)} bytes (20 resources, 10 % failed)`);

  // 2 and 3, per queue type, each in a vhost of its own.
  const publish: Record<QueueType, number[]> = { classic: [], quorum: [] };
  const ingest: number[] = [];
  const again: number[] = [];
  for (const type of ["classic", "quorum"] as const) {
    const vhost = `bench-${type}`;
    await api(apiBase, "PUT", `/api/vhosts/${vhost}`, {});
    await api(apiBase, "PUT", `/api/permissions/${vhost}/guest`, {
      configure: ".*",
      write: ".*",
      read: ".*",
    });
    const urls = cluster.urls.map((u) => `${u}/${vhost}`);
    await setupQueues(urls, type);
    const session = await openBroker(urls);
    try {
      for (let run = 0; run <= RUNS; run++) {
        const batch = reports(run + 1);
        const t0 = performance.now();
        for (let i = 0; i < batch.length; i += 100) {
          await publishConfirmed(
            session.channel,
            batch.slice(i, i + 100).map((body) => ({
              exchange: EXCHANGE,
              routingKey: reportKey(JSON.parse(new TextDecoder().decode(body)).node),
              body,
            })),
          );
        }
        const rate = batch.length / ((performance.now() - t0) / 1000);
        if (run > 0) publish[type].push(rate);
        if (type === "quorum") {
          const t1 = performance.now();
          const done = await ingestReports(sql, session.channel, { drain: true });
          if (done.ingested !== batch.length) {
            throw new Error(`ingested ${done.ingested} of ${batch.length}`);
          }
          if (run > 0) ingest.push(batch.length / ((performance.now() - t1) / 1000));
          // The same reports delivered again: recorded once.
          for (let i = 0; i < batch.length; i += 100) {
            await publishConfirmed(
              session.channel,
              batch.slice(i, i + 100).map((body) => ({
                exchange: EXCHANGE,
                routingKey: reportKey(JSON.parse(new TextDecoder().decode(body)).node),
                body,
              })),
            );
          }
          const t2 = performance.now();
          const dup = await ingestReports(sql, session.channel, { drain: true });
          if (dup.ingested !== 0 || dup.duplicates !== batch.length) {
            throw new Error(`again: ingested ${dup.ingested}, duplicates ${dup.duplicates}`);
          }
          if (run > 0) again.push(batch.length / ((performance.now() - t2) / 1000));
        } else {
          await session.channel.purgeQueue("mesh.reports");
        }
      }
      log(`${type}: published`);
    } finally {
      await session.close();
    }
  }
  const pc = median(publish.classic), pq = median(publish.quorum);
  lines.push(
    `- confirmed publish into mesh.reports, 100 in flight (median of ${RUNS} runs of ${REPORTS}): classic ${
      pc.toFixed(0)
    }/s, quorum ${pq.toFixed(0)}/s (${(pq / pc).toFixed(2)} of classic's rate)`,
  );
  lines.push(
    `- ingestReports drain from the quorum mesh.reports into PostgreSQL: ${
      median(ingest).toFixed(0)
    } reports/s; the same reports delivered again (all recorded once, none inserted): ${
      median(again).toFixed(0)
    }/s (${(median(again) / median(ingest)).toFixed(2)} of the first drain's rate)`,
  );

  // 4. bytes per row.
  await sql`vacuum analyze reports`.catch(() => {});
  const [size] = await sql<
    { rows: number; heap: number; total: number; identity: number; last: number; pkey: number }[]
  >`
    select (select count(*) from reports)::int as rows,
      pg_table_size('reports')::float8 as heap,
      pg_total_relation_size('reports')::float8 as total,
      pg_relation_size('reports_identity')::float8 as identity,
      pg_relation_size('reports_node_last')::float8 as last,
      pg_relation_size('reports_pkey')::float8 as pkey`;
  const per = (n: number) => (n / size!.rows).toFixed(0);
  lines.push(
    `- PostgreSQL per report row (${size!.rows} rows): ${per(size!.total)} bytes in all = table ${
      per(size!.heap)
    } + reports_identity ${per(size!.identity)} + reports_node_last ${
      per(size!.last)
    } + reports_pkey ${per(size!.pkey)}`,
  );
  await sql.end({ timeout: 1 });

  // 5. memory per node queue.
  const memory = async () => {
    await new Promise((r) => setTimeout(r, 6000));
    const nodes = await api(apiBase, "GET", "/api/nodes?columns=name,mem_used") as {
      mem_used: number;
    }[];
    return nodes.reduce((n, x) => n + x.mem_used, 0);
  };
  for (const type of ["classic", "quorum"] as const) {
    const urls = cluster.urls.map((u) => `${u}/bench-${type}`);
    const session = await openBroker(urls);
    try {
      const before = await memory();
      for (let i = 0; i < QUEUES; i++) {
        const q = nodeQueue(`mem-${i}`);
        await session.channel.assertQueue(q, {
          durable: true,
          arguments: queueArguments("node", type),
        });
        await session.channel.bindQueue(q, EXCHANGE, `declaration.mem-${i}`);
      }
      const after = await memory();
      lines.push(
        `- broker memory per node queue (${QUEUES} declared, mem_used summed over 3 members): ${type} ${
          ((after - before) / QUEUES / 1024).toFixed(0)
        } KiB`,
      );
      for (let i = 0; i < QUEUES; i++) await session.channel.deleteQueue(nodeQueue(`mem-${i}`));
    } finally {
      await session.close();
    }
  }
  console.log(lines.join("\n"));
} finally {
  await cluster.remove();
  await admin.unsafe(`drop database if exists ${dbName} with (force)`).catch(() => {});
  await admin.end();
}
