/**
 * Benchmark of the control plane (`mesh-control`) against peers measured in the same run.
 *
 * Run from the repository root: `deno run -A bench/control_bench.ts [--runs N] [--push-runs N]
 * [--ingest-runs N] [--only status,push,ingest]`. Needs PostgreSQL (trust auth, user postgres) at
 * 127.0.0.1:5432, RabbitMQ at 127.0.0.1:5672 (guest/guest, an administrator) with its management
 * API on 15672, and `psql`.
 *
 * What it sets up (and removes again, even on failure or Ctrl-C), all named `meshbench_<id>` /
 * `meshbench-<id>` with one random id per run:
 * - three databases, each created by `mesh-control migrate`: `_status` (10,000 nodes with 100
 *   reports each, 1,000,000 report rows, plus 100 nodes that never spoke), `_push` (1,000 nodes
 *   whose last reports failed) and `_ingest` (1,000 enrolled nodes);
 * - one broker vhost (`meshbench-<id>`, guest given full permissions on it), so that the bench's
 *   `mesh.reports` queue is not the one other sessions' tests publish to and consume from;
 *   `mesh-control broker setup` declares the topology in it, and the bench declares 1,000 node
 *   queues `mesh.node.<name>` (durable, NODE_QUEUE_ARGUMENTS) bound with `declaration.<name>`.
 *
 * What it measures (each command once unrecorded, then N times; wall clock around the spawn):
 * 1. `status` and `board --json` over the 10,100 nodes, against `psql` running the same query
 *    (`readNodeStates`'s own SQL, captured from postgres.js, so never out of date; also with
 *    `jit=off`) and Deno start-up; EXPLAIN (ANALYZE, BUFFERS) of that query with the indexes it
 *    uses, variants of it, and an in-process breakdown (query, board, rendering).
 * 2. `push --behind` to the 1,000 behind nodes, against a minimal amqplib process publishing the
 *    same 1,000 bodies with confirms; in-process: each step (drain, read, render, sameSince, the
 *    bulk insert rolled back, the confirmed publish); and the CLI's steps timed in a fresh process.
 * 3. `ingest --drain` of 20,000 reports, against the raw insert rate (same SQL, same batches of
 *    500, in-process), the broker's consume rate (no-op consumer that acks), the in-process
 *    ingest, decoding alone (as ingest does it, and with zod as it did before session 7) and the
 *    cost of the reports table's CHECK on `digest`; beside it the CLI's fixed cost (a drain of an
 *    empty queue) and a drain of 60,000 over which that cost and the warm-up are spread.
 *
 * It prints Markdown and writes it, with the raw samples as JSON, to `bench/out/control-<time>.*`.
 *
 * Two modes the bench runs as its own child processes: `--peer-publish FILE` (the publish peer,
 * loading amqplib only) and `--trace-push` (push --behind's steps timed one by one).
 *
 * @module
 */

import type { ConfirmChannel } from "amqplib";
import type { Sql } from "../control/db.ts";
import { cleanup, log, undos } from "./cleanup.ts";
import { exec as execWith, type ExecOptions, type Timed } from "./exec.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OUT_DIR = `${ROOT}bench/out`;
const PG_SERVER = "postgres://postgres@127.0.0.1:5432";
const BROKER_HOSTPORT = "127.0.0.1:5672";
const BROKER_API = "http://127.0.0.1:15672";
const BROKER_USER = "guest";
const BROKER_PASS = "guest";

/** Part 1: nodes that reported, reports per node, nodes that never spoke. */
const STATUS_NODES = 10_000;
const REPORTS_PER_NODE = 100;
const NEVER_SPOKE = 100;
/** Part 2: behind nodes. */
const PUSH_NODES = 1_000;
/** Part 3: reports published and ingested per run, over this many nodes; the ingest batch. */
const INGEST_REPORTS = 20_000;
const INGEST_NODES = 1_000;
const INGEST_BATCH = 500;
const WARMUP_REPORTS = 2_000;
/** Part 3: the reports of the longer CLI drain (a multiple of INGEST_REPORTS). */
const LONG_DRAIN = 60_000;

// ---------------------------------------------------------------------------------------------
// The publish peer: a minimal amqplib script (its own process, so it pays Deno start-up too).

async function peerPublish(file: string): Promise<void> {
  const { connect } = await import("amqplib");
  const { Buffer } = await import("node:buffer");
  const url = Deno.env.get("MESH_BENCH_AMQP");
  if (!url) throw new Error("MESH_BENCH_AMQP is not set");
  const messages = JSON.parse(await Deno.readTextFile(file)) as {
    key: string;
    body: string;
    messageId: string;
    timestamp: number;
  }[];
  const connection = await connect(url);
  const channel = await connection.createConfirmChannel();
  let returned = 0;
  channel.on("return", () => returned++);
  for (const m of messages) {
    channel.publish("mesh", m.key, Buffer.from(m.body), {
      persistent: true,
      mandatory: true,
      contentType: "application/json",
      type: "declaration",
      messageId: m.messageId,
      timestamp: m.timestamp,
    });
  }
  await channel.waitForConfirms();
  await channel.close();
  await connection.close();
  if (returned > 0) throw new Error(`${returned} messages were returned unroutable`);
  console.log(`published ${messages.length}`);
}

/**
 * `push --behind`'s steps as the CLI runs them, timed one by one in a fresh process (cold code,
 * like the CLI's): prints `{step: ms}` as JSON. The first `pushBehind` is a dry run (deciding
 * alone, cold); the second pushes (deciding again, warm, then publishRendered).
 */
async function tracePush(): Promise<void> {
  const marks: Record<string, number> = {};
  let last = performance.now();
  const mark = (step: string) => {
    const now = performance.now();
    marks[step] = now - last;
    last = now;
  };
  const { connectDatabase } = await import("../control/db.ts");
  const push = await import("../control/push.ts");
  const { ingestReports } = await import("../control/ingest.ts");
  const { openBroker } = await import("../lib/amqp.ts");
  await import("commander");
  await import("../lib/declaration.ts");
  mark("import modules");
  const sql = await connectDatabase(Deno.env.get("MESH_DATABASE_URL")!);
  mark("connect database (+ migration check)");
  const one = await openBroker(Deno.env.get("MESH_BROKER_URL")!);
  mark("connect broker");
  await ingestReports(sql, one.channel, { drain: true });
  mark("drain mesh.reports (empty)");
  const dry = await push.pushBehind(sql, undefined, { dryRun: true });
  mark("decide, cold (dry run)");
  // Signed by the bench's key, read as `push` reads --signing-key / MESH_SIGNING_KEY.
  const { readSigner } = await import("../control/signer.ts");
  const signer = await readSigner(Deno.env.get("MESH_SIGNING_KEY")!);
  mark("read signing key");
  const result = await push.pushBehind(sql, { channel: one.channel, ...signer });
  mark("decide again + publishRendered");
  if (dry.pushed.length !== result.pushed.length) throw new Error("dry run and push differ");
  let text = "";
  for (const p of result.pushed) {
    text += `pushed generation ${p.generation} to ${p.node}: ${p.why}\n`;
    if (p.stuck !== undefined) text += `  ${p.node}: ${p.stuck}\n`;
  }
  await Deno.writeTextFile("/dev/null", text);
  mark("output");
  await one.close();
  await sql.end({ timeout: 5 });
  mark("close");
  console.log(JSON.stringify({ pushed: result.pushed.length, marks }));
}

// ---------------------------------------------------------------------------------------------
// Running commands

/** Aborted on SIGINT/SIGTERM: kills the commands in flight and refuses new ones (but cleanup's). */
const interrupt = new AbortController();

/** A command run from the repository root, timed, stopped with the bench (bench/exec.ts). */
const exec = (argv: string[], options: Omit<ExecOptions, "signal"> = {}): Promise<Timed> =>
  execWith(argv, { ...options, signal: interrupt.signal });

const deno = (...args: string[]) => [Deno.execPath(), "run", "-A", "--quiet", ...args];
const control = (...args: string[]) => deno(`${ROOT}control/main.ts`, ...args);

// ---------------------------------------------------------------------------------------------
// Samples and tables

interface Row {
  label: string;
  /** What it is, for the reader: the command line or what runs in-process. */
  what: string;
  samplesMs: number[];
  /** Items handled per run (reports, messages), for a rate. */
  items?: number;
  /** The row this one is a ratio against. */
  peer?: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const fmtMs = (ms: number) => ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
const fmtRatio = (r: number) => r >= 10 ? `${r.toFixed(0)}×` : `${r.toFixed(1)}×`;
const fmtRate = (n: number) => Math.round(n).toLocaleString("en-US");

function table(rows: Row[], options: { rates?: boolean } = {}): string {
  const lines = options.rates
    ? [
      "| what | how | runs | median ms | min ms | items | median per s | ratio |",
      "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    : [
      "| what | how | runs | median ms | min ms | ratio |",
      "|---|---|---:|---:|---:|---:|",
    ];
  for (const r of rows) {
    const peer = r.peer === undefined ? undefined : rows.find((p) => p.label === r.peer);
    const m = median(r.samplesMs);
    let ratio = "—";
    if (peer !== undefined) {
      ratio = options.rates && r.items !== undefined && peer.items !== undefined
        // Rates: how many times the peer's rate this one reaches (below 1: slower).
        ? `${
          ((r.items / m) / (peer.items / median(peer.samplesMs))).toFixed(2)
        } of ${peer.label}'s rate`
        : `${fmtRatio(m / median(peer.samplesMs))} ${peer.label}`;
    }
    const cells = [
      r.label,
      r.what,
      String(r.samplesMs.length),
      fmtMs(m),
      fmtMs(Math.min(...r.samplesMs)),
    ];
    if (options.rates) {
      cells.push(
        r.items === undefined ? "—" : fmtRate(r.items),
        r.items === undefined ? "—" : fmtRate(r.items / (m / 1000)),
      );
    }
    cells.push(ratio);
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Databases and the broker vhost

const RUN_ID = crypto.randomUUID().replaceAll("-", "").slice(0, 10);
const VHOST = `meshbench-${RUN_ID}`;
const AMQP_URL = `amqp://${BROKER_USER}:${BROKER_PASS}@${BROKER_HOSTPORT}/${VHOST}`;
const API_URL = `http://${BROKER_USER}:${BROKER_PASS}@${BROKER_API.replace(/^http:\/\//, "")}`;

/** The test CA (docs/testing.md, "TLS") the TLS variants verify the broker and PostgreSQL against. */
const CA_FILE = Deno.env.get("MESH_TEST_CA_FILE") ?? "/etc/mesh-test/ca.crt";
/** The same vhost over RabbitMQ's AMQPS listener (5671), verified against {@linkcode CA_FILE}. */
const AMQPS_URL = `amqps://${BROKER_USER}:${BROKER_PASS}@127.0.0.1:5671/${VHOST}?cacertfile=${
  encodeURIComponent(CA_FILE)
}`;
/** The management API over HTTPS (15671). */
const API_TLS_URL = `https://${BROKER_USER}:${BROKER_PASS}@127.0.0.1:15671`;

/**
 * The environment of a TLS variant: the same database with `sslmode=verify-full` against the test
 * CA, the broker over amqps:// and its management API over https://, and MESH_CA_FILE.
 */
function tlsEnv(databaseUrl: string): Record<string, string> {
  const db = new URL(databaseUrl);
  db.searchParams.set("sslmode", "verify-full");
  db.searchParams.set("sslrootcert", CA_FILE);
  return {
    MESH_DATABASE_URL: db.href,
    MESH_BROKER_URL: AMQPS_URL,
    MESH_BROKER_API_URL: API_TLS_URL,
    MESH_CA_FILE: CA_FILE,
  };
}

async function postgresModule() {
  return (await import("postgres")).default;
}

/** Creates database `meshbench_<id>_<part>` with `mesh-control migrate`; its drop is registered first. */
async function makeDatabase(part: string): Promise<{ url: string; name: string; sql: Sql }> {
  const name = `meshbench_${RUN_ID}_${part}`;
  const url = `${PG_SERVER}/${name}`;
  const postgres = await postgresModule();
  undos.push({
    what: `database ${name} dropped`,
    run: async () => {
      const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
        const [left] =
          await admin`select count(*)::int as n from pg_database where datname = ${name}`;
        if (left?.n !== 0) throw new Error("it is still there");
      } finally {
        await admin.end({ timeout: 1 });
      }
    },
  });
  const out = await exec(control("migrate", "--database", url));
  if (!/created database/.test(out.stdout)) throw new Error(`migrate: ${out.stdout}`);
  const { connectDatabase } = await import("../control/db.ts");
  const sql = await connectDatabase(url, { max: 4 });
  undos.push({ what: `pool of ${name} closed`, run: () => sql.end({ timeout: 1 }) });
  return { url, name, sql };
}

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${BROKER_API}${path}`, {
    method,
    headers: {
      authorization: `Basic ${btoa(`${BROKER_USER}:${BROKER_PASS}`)}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.body?.cancel();
  return response;
}

let vhostMade: Promise<void> | undefined;
/** The bench's own vhost with the topology (`mesh-control broker setup`), made once. */
function ensureVhost(): Promise<void> {
  vhostMade ??= (async () => {
    undos.push({
      what: `broker vhost ${VHOST} deleted`,
      run: async () => {
        const r = await api("DELETE", `/api/vhosts/${encodeURIComponent(VHOST)}`);
        if (r.status !== 204 && r.status !== 404) throw new Error(`DELETE answered ${r.status}`);
        const check = await api("GET", `/api/vhosts/${encodeURIComponent(VHOST)}`);
        if (check.status !== 404) throw new Error(`it is still there (${check.status})`);
      },
    });
    const made = await api("PUT", `/api/vhosts/${encodeURIComponent(VHOST)}`, {});
    if (made.status !== 201 && made.status !== 204) {
      throw new Error(`cannot create vhost ${VHOST}: ${made.status}`);
    }
    const perms = await api(
      "PUT",
      `/api/permissions/${encodeURIComponent(VHOST)}/${BROKER_USER}`,
      { configure: ".*", write: ".*", read: ".*" },
    );
    if (perms.status !== 201 && perms.status !== 204) {
      throw new Error(`cannot grant ${BROKER_USER} on ${VHOST}: ${perms.status}`);
    }
    const setup = await exec(control("broker", "setup"), {
      env: { MESH_BROKER_URL: AMQP_URL, MESH_BROKER_API_URL: API_URL },
    });
    log(setup.stdout.trim());
  })();
  return vhostMade;
}

async function openChannel() {
  const { openBroker } = await import("../lib/amqp.ts");
  return await openBroker(AMQP_URL);
}

// ---------------------------------------------------------------------------------------------
// Part 1: status and board over 10,000 nodes x 100 reports

const EXPECTED_COUNTS = {
  refused: STATUS_NODES * 2 / 100,
  failed: STATUS_NODES * 4 / 100,
  silent: STATUS_NODES / 100,
  outstanding: STATUS_NODES * 3 / 100,
  "never-spoke": NEVER_SPOKE,
  away: STATUS_NODES / 100,
  ok: STATUS_NODES * 89 / 100,
};
/** Nodes status counts as behind (every verdict but ok and away). */
const EXPECTED_BEHIND = STATUS_NODES * 10 / 100 + NEVER_SPOKE;

/** The report rows of rounds `where` (an SQL condition on r), every node once per round. */
function reportRowsSql(where: string, base: string): string {
  const changes = JSON.stringify([
    { id: "etc-meshbench", type: "directory", change: "unchanged" },
    { id: "app-conf", type: "file", change: "unchanged" },
    { id: "app-svc", type: "service", change: "unchanged" },
  ]);
  const problem = JSON.stringify([{ id: "app-svc", message: "unit app.service failed to start" }]);
  // Node i's class is i % 100: 0-3 failed and 4-5 refused for the last 10 rounds, 6-8 outstanding
  // (last report about generation 2 while 3 is current), 9 a server and 10 an episodic node that
  // stopped reporting after round 90 (silent, away), the rest ok (11 an episodic node that
  // reports). Generation 1 is current for rounds 1-33, 2 for 34-66, 3 for 67-100. Round r arrived
  // (100 - r) x 5 minutes before `base`; every report states a 5-minute interval.
  return `
    insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
      changes, host_version, interval_ms, reported_at, received_at)
    select format('node-%s', lpad(i::text, 5, '0')), s.gen,
      'sha256:' || encode(sha256(convert_to(i || '/' || s.gen, 'UTF8')), 'hex'),
      s.outcome, case s.outcome when 'applied' then 20 when 'failed' then 15 else 0 end, 20,
      case when r in (1, 34, 67) then 'push' when r % 12 = 0 then 'start' else 'interval' end,
      case s.outcome when 'applied' then '[]'::jsonb else '${problem}'::jsonb end,
      '${changes}'::jsonb, 'mesh-host 0.1.0', 300000,
      '${base}'::timestamptz - interval '5 minutes' * (100 - r) - interval '2 seconds',
      '${base}'::timestamptz - interval '5 minutes' * (100 - r)
    from generate_series(1, ${REPORTS_PER_NODE}) r
      cross join lateral generate_series(1, ${STATUS_NODES}) i
      cross join lateral (select
        case when r = 100 and i % 100 between 6 and 8 then 2
             when r > 66 then 3 when r > 33 then 2 else 1 end as gen,
        case when r > 90 and i % 100 < 4 then 'failed'
             when r > 90 and i % 100 between 4 and 5 then 'refused'
             else 'applied' end as outcome) s
    where (${where}) and not (i % 100 in (9, 10) and r > 90)`;
}

async function seedStatus(sql: Sql): Promise<void> {
  const base = new Date().toISOString();
  const migration = await Deno.readTextFile(`${ROOT}control/migrations/0001_inventory.sql`);
  const createIndex = /create index reports_node_last [^;]+;/.exec(migration)?.[0];
  if (createIndex === undefined) throw new Error("the migration has no reports_node_last index");
  const body = JSON.stringify({
    version: 1,
    resources: Array.from({ length: 20 }, (_, k) => ({
      id: `file-${k}`,
      type: "file",
      path: `/etc/meshbench/file-${k}.conf`,
      content: `# file ${k}\nkey = value-${k}\n`,
      mode: "0644",
    })),
  });
  const total = STATUS_NODES + NEVER_SPOKE;
  const t0 = performance.now();
  // The fixture is consistent by construction: foreign-key triggers are skipped for the load
  // (session_replication_role = replica); the CHECK constraints still run.
  await sql.begin(async (tx) => {
    await tx.unsafe("set local session_replication_role = replica");
    await tx.unsafe(`
      insert into modules (name, version, digest, body, origin)
      select m, 1, 'sha256:' || encode(sha256(convert_to(m, 'UTF8')), 'hex'),
        '{"version":1,"resources":[]}', 'handed-over'
      from unnest(array['base', 'web']) m`);
    await tx.unsafe(`
      insert into nodes (name, system, kind, enrolled_at)
      select format('node-%s', lpad(i::text, 5, '0')),
        (array['debian', 'arch', 'alpine', 'android'])[1 + i % 4],
        case when i % 100 in (10, 11) then 'episodic' else 'server' end,
        '${base}'::timestamptz - interval '30 days'
      from generate_series(1, ${total}) i`);
    await tx.unsafe(`
      insert into assignments (node, module)
      select format('node-%s', lpad(i::text, 5, '0')), m
      from generate_series(1, ${total}) i, unnest(array['base', 'web']) with ordinality u(m, k)
      where m = 'base' or i % 2 = 0 order by i, k`);
    // Generation g was pushed just before the round it is first reported in (1, 34, 67); the
    // nodes that never spoke were pushed generation 1 ten minutes ago.
    await tx.unsafe(
      `
      insert into declarations (node, generation, digest, body, total, pushed_at)
      select format('node-%s', lpad(i::text, 5, '0')), g,
        'sha256:' || encode(sha256(convert_to(i || '/' || g, 'UTF8')), 'hex'), $1, 20,
        case when i > ${STATUS_NODES} then '${base}'::timestamptz - interval '10 minutes'
          else '${base}'::timestamptz - interval '5 minutes' * (100 - (1 + 33 * (g - 1)))
            - interval '1 minute' end
      from generate_series(1, ${total}) i, generate_series(1, 3) g
      where i <= ${STATUS_NODES} or g = 1`,
      [body],
    );
    // Loaded without the index, which is then built with the migration's own statement.
    await tx.unsafe("drop index reports_node_last");
  });
  const t1 = performance.now();
  // Rounds 1-99 in two sessions at once (odd and even rounds: ids stay roughly in arrival
  // order), then round 100, so every node's last report by id is round 100.
  const load = (where: string) =>
    sql.begin(async (tx) => {
      await tx.unsafe("set local session_replication_role = replica");
      await tx.unsafe(reportRowsSql(where, base));
    });
  await Promise.all([load("r < 100 and r % 2 = 1"), load("r < 100 and r % 2 = 0")]);
  await load("r = 100");
  // The triggers that keep last_reports and current_declarations (migration 0006) were skipped
  // with the foreign keys: their rows are made with the migration's own backfill.
  // (A checkout from before that migration, measured for comparison, has neither.)
  const state = await Deno.readTextFile(`${ROOT}control/migrations/0006_node_state.sql`).catch(
    () => undefined,
  );
  const backfill = state === undefined
    ? "select 1"
    : /-- The existing inventory \(backfill\)[^]*?by node, generation desc;/.exec(state)?.[0];
  if (backfill === undefined) throw new Error("the migration has no backfill");
  const t2 = performance.now();
  await sql.unsafe(`set maintenance_work_mem = '256MB'; ${createIndex}`);
  await sql.unsafe(backfill);
  const t3 = performance.now();
  await sql.unsafe("analyze");
  const t4 = performance.now();
  const [sizes] = await sql<{ reports: string; index: string; n: number }[]>`
    select pg_size_pretty(pg_total_relation_size('reports')) as reports,
      pg_size_pretty(pg_relation_size('reports_node_last')) as index,
      (select count(*)::int from reports) as n`;
  log(
    `seeded ${total} nodes and ${sizes?.n} reports (reports ${sizes?.reports}, index ${sizes?.index}): ` +
      `small tables ${((t1 - t0) / 1000).toFixed(1)} s, reports ${
        ((t2 - t1) / 1000).toFixed(1)
      } s, index ${((t3 - t2) / 1000).toFixed(1)} s, analyze ${((t4 - t3) / 1000).toFixed(1)} s`,
  );
  seedFacts.status = {
    nodes: total,
    reports: sizes?.n ?? 0,
    reportsSize: sizes?.reports ?? "?",
    indexSize: sizes?.index ?? "?",
    seconds: (t4 - t0) / 1000,
  };
}

/**
 * Drift summaries for the status fixture's nodes, as ingest stores them (`node_drift`), by
 * `i % 50`: 0 drift (1 port/rogue, 2 container/missing), 1 unobservable, 2 unreadable, 3 stale
 * (ran 3 hours ago, every 15 minutes), 4-5 not checked (no row), the rest clean; the nodes that
 * never spoke have none.
 */
async function seedDrift(sql: Sql): Promise<void> {
  const base = new Date().toISOString();
  // Each run's time, to the second as the summary writes it; ingest stores it beside the summary
  // as epoch milliseconds and as toISOString writes it (control/drift.ts, ranAt).
  await sql.unsafe(`
    insert into node_drift (node, summary, reported_at, received_at, ran_at_ms, ran_at)
    select format('node-%s', lpad(i::text, 5, '0')),
      case
        when i % 50 = 2 then jsonb_build_object('status', 'unreadable',
          'path', '/var/lib/mesh/reconcile/result.json',
          'problem', 'not UTF-8 JSON (truncated?): Unexpected end of JSON input')
        else jsonb_build_object(
          'status', case i % 50 when 0 then 'drift' when 1 then 'unobservable' else 'clean' end,
          'ranAt', to_char(t.ran at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'intervalSeconds', 900,
          'registry', '/var/lib/mesh/reconcile/registry.yaml',
          'entries', 12,
          'findings', case when i % 50 = 0 then
            '[{"check":"container","direction":"missing","count":2},{"check":"port","direction":"rogue","count":1}]'::jsonb
            else '[]'::jsonb end)
          || case when i % 50 = 1 then '{"unobserved":["podman@root"]}'::jsonb
             else '{}'::jsonb end
      end,
      '${base}'::timestamptz - interval '1 minute', '${base}'::timestamptz - interval '1 minute',
      case when i % 50 <> 2 then (extract(epoch from t.ran) * 1000)::bigint end,
      case when i % 50 <> 2 then
        to_char(t.ran at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end
    from generate_series(1, ${STATUS_NODES}) i
      cross join lateral (select date_trunc('second', '${base}'::timestamptz -
        case when i % 50 = 3 then interval '3 hours' else interval '4 minutes' end) as ran) t
    where i % 50 not in (4, 5)`);
  await sql.unsafe("analyze node_drift");
}

/**
 * Moves part 1's fixture to now: every time status reads (each node's last report, its current
 * declaration, its drift summary with the `ranAt` inside it) shifted forward by the time since the
 * fixture's newest report arrived, so that every measurement reads the state the seeding made,
 * whenever it is taken. Without it the fixture ages: its reports state a 5-minute interval, so 11
 * minutes after seeding every server reads as silent (status then lists 9,900 nodes and prints
 * 4.1 MB instead of 0.46 MB), and 30 minutes after, every drift result is stale.
 *
 * The rows are shifted where they are written (each node's last report in `reports`, its current
 * declaration in `declarations`): migration 0006's triggers then update `last_reports` and
 * `current_declarations` as they would for any write, so the kept state stays equal to its
 * source. Older reports and declarations keep their times (status never reads them; they stay
 * older than the shifted ones). The touched tables are vacuumed after, so the read scans no dead
 * rows. Returns the shift, in seconds (about 0 right after seeding).
 */
async function refreshStatus(sql: Sql): Promise<number> {
  const seconds = await sql.begin(async (tx) => {
    const [row] = await tx<{ s: number }[]>`
      select extract(epoch from clock_timestamp() - max(received_at))::float8 as s
      from last_reports`;
    const s = row?.s ?? 0;
    if (!(s > 0)) return 0;
    const by = `${s} seconds`;
    await tx`
      update reports r set reported_at = r.reported_at + ${by}::interval,
        received_at = r.received_at + ${by}::interval
      from last_reports l where r.id = l.report_id`;
    await tx`
      update declarations d set pushed_at = d.pushed_at + ${by}::interval
      from current_declarations c where d.node = c.node and d.generation = c.generation`;
    await tx`
      update node_drift set reported_at = reported_at + ${by}::interval,
        received_at = received_at + ${by}::interval,
        summary = case when summary ? 'ranAt' then jsonb_set(summary, '{ranAt}', to_jsonb(to_char(
          ((summary->>'ranAt')::timestamptz + ${by}::interval) at time zone 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS"Z"'))) else summary end`;
    // The instant ingest stored beside it, from the summary's time as it now reads.
    await tx`
      update node_drift set
        ran_at_ms = (extract(epoch from (summary->>'ranAt')::timestamptz) * 1000)::bigint,
        ran_at = to_char((summary->>'ranAt')::timestamptz at time zone 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      where summary ? 'ranAt'`;
    return s;
  });
  await sql.unsafe(
    "vacuum (analyze) last_reports, current_declarations, node_drift",
  );
  return seconds;
}

const EXPECTED_DRIFT_COUNTS = {
  "drift": STATUS_NODES / 50,
  "unobservable": STATUS_NODES / 50,
  "unreadable": STATUS_NODES / 50,
  "stale": STATUS_NODES / 50,
  "not-checked": (STATUS_NODES / 50) * 2 + NEVER_SPOKE,
  "clean": STATUS_NODES * 44 / 50,
};

const seedFacts: {
  status?: {
    nodes: number;
    reports: number;
    reportsSize: string;
    indexSize: string;
    seconds: number;
  };
} = {};

interface PlanFacts {
  text: string;
  indexes: string[];
  seqScans: string[];
  executionMs: number;
}

function planFacts(text: string): PlanFacts {
  const indexes = [
    ...new Set([...text.matchAll(/Index (?:Only )?Scan(?: Backward)? using (\S+) on (\S+)/g)].map(
      (m) => `${m[1]} (${m[2]})`,
    )),
  ];
  const seqScans = [...new Set([...text.matchAll(/Seq Scan on (\S+)/g)].map((m) => m[1]!))];
  const executionMs = Number(/Execution Time: ([\d.]+) ms/.exec(text)?.[1] ?? NaN);
  return { text, indexes, seqScans, executionMs };
}

async function partStatus(runs: number, dir: string) {
  log("part 1: status and board over 10,000 nodes x 100 reports");
  const db = await makeDatabase("status");
  await seedStatus(db.sql);
  await seedDrift(db.sql);
  const env = { MESH_DATABASE_URL: db.url };
  const page = `${dir}/board.html`;
  const emptyPage = `${dir}/empty.html`;
  await Deno.writeTextFile(emptyPage, "<!doctype html><title>empty</title>\n");

  // The fleet reads' own SQL (readFleet's, as status and board --json send it), captured from
  // postgres.js with its parameters written in, so that psql can run it as is.
  const postgres = await postgresModule();
  let captured: string | undefined;
  const capture = postgres(db.url, {
    max: 1,
    onnotice: () => {},
    fetch_types: false,
    debug: (_connection, text, params) => {
      captured = text.replace(/\$(\d+)/g, (_, i) => {
        const value = (params as unknown[])[Number(i) - 1];
        return typeof value === "number"
          ? String(value)
          : `'${String(value).replaceAll("'", "''")}'`;
      });
    },
  });
  const { readFleet } = await import("../control/node_state.ts");
  const { DEFAULT_GRACE_MS } = await import("../control/state.ts");
  const report = await import("../control/report.ts");
  const queries: Record<"status" | "board", string> = { status: "", board: "" };
  try {
    for (const kind of ["status", "board"] as const) {
      captured = undefined;
      await readFleet(capture, { listedOnly: kind === "status" });
      // Set by the capture's debug callback, which the compiler does not follow.
      const text = captured as string | undefined;
      if (text === undefined) throw new Error(`no query captured from readFleet (${kind})`);
      queries[kind] = text.trim();
    }
  } finally {
    await capture.end({ timeout: 1 });
  }
  const statusFile = `${dir}/status.sql`;
  await Deno.writeTextFile(statusFile, `${queries.status};\n`);
  const boardFile = `${dir}/board.sql`;
  await Deno.writeTextFile(boardFile, `${queries.board};\n`);
  const emptyFile = `${dir}/empty.ts`;
  await Deno.writeTextFile(emptyFile, "");

  const rows: Row[] = [
    { label: "deno (empty file)", what: "`deno run -A empty.ts`", samplesMs: [] },
    {
      label: "mesh-control --help",
      what: "`deno run -A control/main.ts --help`: start-up + CLI modules",
      samplesMs: [],
    },
    {
      label: "psql status read",
      what:
        "`psql -At -f <status's read>`, printing its rows as status prints its text (read by this script), jit off as status runs it (`PGOPTIONS='-c jit=off'`)",
      samplesMs: [],
    },
    {
      label: "psql status read, to /dev/null",
      what: "the same with `-o /dev/null`: the rows not printed",
      samplesMs: [],
      peer: "psql status read",
    },
    {
      label: "psql status read, jit on",
      what: "printed, with psql's default jit (the read's estimated cost is above jit_above_cost)",
      samplesMs: [],
      peer: "psql status read",
    },
    {
      label: "status floor",
      what:
        "`bench/status_floor.ts`: start, postgres.js, connect as `status` does, status's read received raw (nothing decoded)",
      samplesMs: [],
      peer: "psql status read",
    },
    {
      label: "status",
      what: "`mesh-control status` (exit 1: 1,100 behind, 100 away)",
      samplesMs: [],
      peer: "psql status read",
    },
    {
      label: "psql board read",
      what: "`psql -At -f <board's read>`, printed, jit off (10,100 machines as JSON)",
      samplesMs: [],
    },
    {
      label: "psql board read, to /dev/null",
      what: "the same with `-o /dev/null`",
      samplesMs: [],
      peer: "psql board read",
    },
    {
      label: "board floor",
      what: "`bench/status_floor.ts` with board's read: received raw",
      samplesMs: [],
      peer: "psql board read",
    },
    {
      label: "board --json",
      what: "`mesh-control board --json`",
      samplesMs: [],
      peer: "psql board read",
    },
    {
      label: "board --html",
      what: "`mesh-control board --html FILE` (the same board, as one page)",
      samplesMs: [],
      peer: "board --json",
    },
    {
      label: "chromium, empty page",
      what: "headless `chromium --dump-dom` of a one-line page (browser start-up)",
      samplesMs: [],
    },
    {
      label: "chromium, board page",
      what:
        "headless `chromium --dump-dom` of the 10,100-node page (parse, script, layout, serialising the DOM)",
      samplesMs: [],
      peer: "chromium, empty page",
    },
  ];
  const chromium = (file: string) => [
    "sh",
    "-c",
    'p=$(mktemp -d) && chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$p" --dump-dom "file://$1" 2>/dev/null | wc -c; s=$?; rm -rf "$p"; exit $s',
    "chromium",
    file,
  ];
  const psql = (file: string) => ["psql", "-X", "-q", "-At", db.url, "-f", file];
  const argv: Record<string, string[]> = {
    "deno (empty file)": deno(emptyFile),
    "mesh-control --help": control("--help"),
    "psql status read": psql(statusFile),
    "psql status read, to /dev/null": [...psql(statusFile), "-o", "/dev/null"],
    "psql status read, jit on": psql(statusFile),
    "status floor": deno(`${ROOT}bench/status_floor.ts`, statusFile),
    "status": control("status"),
    "psql board read": psql(boardFile),
    "psql board read, to /dev/null": [...psql(boardFile), "-o", "/dev/null"],
    "board floor": deno(`${ROOT}bench/status_floor.ts`, boardFile),
    "board --json": control("board", "--json"),
    "board --html": control("board", "--html", page),
    "chromium, empty page": chromium(emptyPage),
    "chromium, board page": chromium(page),
  };
  const facts: Record<string, string> = {};
  for (let i = 0; i <= runs; i++) {
    // Every round reads the fixture as seeded, moved to now (refreshStatus).
    const shifted = await refreshStatus(db.sql);
    if (i === 0 || shifted > 60) log(`part 1: fixture moved ${shifted.toFixed(1)} s to now`);
    for (const row of rows) {
      const jitOff = row.label.startsWith("psql") && !row.label.endsWith("jit on");
      const out = await exec(argv[row.label]!, {
        env: jitOff ? { ...env, PGOPTIONS: "-c jit=off" } : env,
        allowFailure: true,
      });
      const expectedCode = row.label === "status" ? 1 : 0;
      if (out.code !== expectedCode) {
        throw new Error(`${row.label} exited with ${out.code}: ${out.stderr.trim().slice(-2000)}`);
      }
      if (row.label === "status") {
        const first = out.stdout.split("\n")[0] ?? "";
        if (
          !first.startsWith(`${EXPECTED_BEHIND} of ${STATUS_NODES + NEVER_SPOKE} nodes`) ||
          !first.includes(`; ${STATUS_NODES * 4 / 50} with a drift alarm`)
        ) {
          throw new Error(`status said: ${first}`);
        }
        facts.status = first;
        facts.statusBytes = String(out.stdout.length);
      }
      if (row.label === "board --json") {
        const board = JSON.parse(out.stdout) as {
          nodes: number;
          counts: Record<string, number>;
          machines: unknown[];
        };
        if (
          board.nodes !== STATUS_NODES + NEVER_SPOKE ||
          board.machines.length !== board.nodes ||
          JSON.stringify(board.counts) !==
            JSON.stringify({ ...board.counts, ...EXPECTED_COUNTS })
        ) {
          throw new Error(`board --json: ${board.nodes} nodes, ${JSON.stringify(board.counts)}`);
        }
        facts.boardBytes = String(out.stdout.length);
        facts.counts = JSON.stringify(board.counts);
        const drift = (JSON.parse(out.stdout) as { driftCounts: Record<string, number> })
          .driftCounts;
        if (JSON.stringify(drift) !== JSON.stringify(EXPECTED_DRIFT_COUNTS)) {
          throw new Error(`board --json: drift counts ${JSON.stringify(drift)}`);
        }
        facts.driftCounts = JSON.stringify(drift);
      }
      if (row.label === "board --html") {
        const html = await Deno.readTextFile(page);
        // The nodes status lists are rows; the rest are carried as data (#healthy-data).
        const rows = html.match(/<tr data-node=/g)?.length ?? 0;
        const data = /<script type="application\/json" id="healthy-data">([^]*?)<\/script>/.exec(
          html,
        );
        const healthy = data ? (JSON.parse(data[1]!) as { n: unknown[] }).n.length : 0;
        if (rows + healthy !== STATUS_NODES + NEVER_SPOKE) {
          throw new Error(`board --html: ${rows} rows and ${healthy} healthy nodes as data`);
        }
        facts.pageRows = String(rows);
        facts.pageHealthy = String(healthy);
        facts.pageBytes = String(new TextEncoder().encode(html).length);
        const gz = new Blob([html]).stream().pipeThrough(new CompressionStream("gzip"));
        facts.pageGzipBytes = String((await new Response(gz).arrayBuffer()).byteLength);
      }
      if (row.label === "chromium, board page") {
        const domBytes = Number(out.stdout.trim());
        if (!(domBytes > Number(facts.pageBytes ?? 0) / 2)) {
          throw new Error(`chromium dumped ${domBytes} bytes of the board page`);
        }
        facts.domBytes = String(domBytes);
      }
      if (i > 0) row.samplesMs.push(out.ms);
    }
    log(`part 1: ${i === 0 ? "warm-up" : `run ${i}/${runs}`} done`);
  }

  // In-process: where the CLI's time goes once started (the functions the CLI calls, on a pool
  // opened as status opens it: jit off).
  const breakdown: Row[] = [
    {
      label: "status read",
      what: "readFleet, listed nodes only (the query + rows)",
      samplesMs: [],
    },
    {
      label: "status render",
      what: "boardOf (parse the listed machines) + statusText",
      samplesMs: [],
    },
    { label: "board read", what: "readFleet, every node", samplesMs: [] },
    {
      label: "board --json render",
      what: "boardJsonParts (the database's text, escaped where needed)",
      samplesMs: [],
    },
    {
      label: "boardOf",
      what: "parse the 10,100 machines (what text and --html need)",
      samplesMs: [],
    },
    {
      label: "boardHtml",
      what: "render `board --html` (the same board)",
      samplesMs: [],
      peer: "board --json render",
    },
  ];
  const { boardHtml } = await import("../control/board_html.ts");
  const noJit = postgres(db.url, {
    max: 1,
    onnotice: () => {},
    fetch_types: false,
    connection: { jit: "off" },
  });
  try {
    for (let i = 0; i <= runs; i++) {
      await refreshStatus(db.sql);
      const t0 = performance.now();
      const listed = await readFleet(noJit, { listedOnly: true, graceMs: DEFAULT_GRACE_MS });
      const t1 = performance.now();
      report.statusText(report.boardOf(listed));
      const t2 = performance.now();
      const fleet = await readFleet(noJit, { graceMs: DEFAULT_GRACE_MS });
      const t3 = performance.now();
      report.boardJsonParts(fleet);
      const t4 = performance.now();
      const board = report.boardOf(fleet);
      const t5 = performance.now();
      boardHtml(board);
      const t6 = performance.now();
      if (i === 0) continue;
      const spans = [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5];
      for (const [k, ms] of spans.entries()) breakdown[k]!.samplesMs.push(ms);
    }
  } finally {
    await noJit.end({ timeout: 1 });
  }

  await refreshStatus(db.sql);
  const plans: PlanFacts[] = [];
  for (let i = 0; i < 3; i++) {
    const result = await db.sql.begin(async (tx) => {
      await tx.unsafe("set local jit = off");
      return await tx.unsafe(`explain (analyze, buffers) ${queries.status}`);
    });
    plans.push(planFacts(result.map((r) => r["QUERY PLAN"] as string).join("\n")));
  }
  const plan = plans[plans.length - 1]!;
  for (const needed of ["last_reports", "current_declarations", "node_drift"]) {
    if (!plan.seqScans.includes(needed) && !plan.indexes.some((x) => x.includes(`(${needed})`))) {
      log(`WARNING: the plan does not read ${needed}`);
    }
  }
  if (/ on (reports|declarations)\b/.test(plan.text)) {
    log("WARNING: the status read touches reports or declarations");
  }
  const [jit] = await db.sql<{ jit: string; above: string }[]>`
    select current_setting('jit') as jit, current_setting('jit_above_cost') as above`;
  return { rows, breakdown, plan, plans, queries, facts, jit: `${jit?.jit} (above ${jit?.above})` };
}

// ---------------------------------------------------------------------------------------------
// Part 2: push --behind to 1,000 behind nodes

function moduleFragment(prefix: string, files: number): string {
  const resources: Record<string, unknown>[] = [
    { id: `${prefix}-dir`, type: "directory", path: `/etc/meshbench/${prefix}`, mode: "0755" },
  ];
  for (let k = 1; k <= files; k++) {
    resources.push({
      id: `${prefix}-f${String(k).padStart(2, "0")}`,
      type: "file",
      path: `/etc/meshbench/${prefix}/f${String(k).padStart(2, "0")}.conf`,
      content: `# ${prefix} file ${k}, managed by mesh\n` +
        Array.from({ length: 4 }, (_, j) => `setting_${j} = ${prefix}-${k}-${j}\n`).join(""),
      mode: "0644",
    });
  }
  return JSON.stringify({ version: 1, resources }, null, 2);
}

const pushName = (i: number) => `push-${String(i).padStart(4, "0")}`;

async function partPush(runs: number, dir: string) {
  log("part 2: push --behind to 1,000 behind nodes");
  await ensureVhost();
  const db = await makeDatabase("push");
  // Control's signing key (push signs every declaration it publishes: lib/signing.ts), the bench's
  // own, 0600 in the temp dir; the same key signs the in-process "sign" step below.
  const { generateSigningKey, signDeclaration } = await import("../lib/signing.ts");
  const signing = await generateSigningKey();
  const keyFile = `${dir}/signing.key`;
  await Deno.writeTextFile(keyFile, signing.privatePem, { mode: 0o600 });
  await Deno.chmod(keyFile, 0o600);
  const env = { MESH_DATABASE_URL: db.url, MESH_BROKER_URL: AMQP_URL, MESH_SIGNING_KEY: keyFile };
  for (const [name, files] of [["base", 9], ["app", 10]] as const) {
    const file = `${dir}/${name}.json`;
    await Deno.writeTextFile(file, moduleFragment(name, files));
    log((await exec(control("module", "add", file), { env })).stdout.trim());
  }
  const sql = db.sql;
  const nodes = Array.from({ length: PUSH_NODES }, (_, i) => pushName(i + 1));
  await sql`insert into nodes (name, system) select unnest(${nodes}::text[]), 'debian'`;
  await sql`
    insert into assignments (node, module)
    select n, m from unnest(${nodes}::text[]) n, unnest(array['base', 'app']) with ordinality u(m, k)
    order by n, k`;
  const { readNodeStates, renderDeclarations, sameSince } = await import(
    "../control/inventory.ts"
  );
  const [rendered] = await renderDeclarations(sql, [nodes[0]!]);
  if (rendered === undefined) throw new Error("nothing rendered");
  // Generation 1 pushed 3 hours ago; six reports each, 20 minutes apart: two clean applies,
  // then four failures the same way (so every node is "stuck" past the default hour).
  await sql`
    insert into declarations (node, generation, digest, body, total, pushed_at)
    select n, 1, ${rendered.digest}::text, ${rendered.text}::text, ${rendered.total}::int,
      now() - interval '3 hours'
    from unnest(${nodes}::text[]) n`;
  const problems = JSON.stringify([{ id: "app-f03", message: "write failed: disk full" }]);
  await sql`
    insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
      changes, host_version, reported_at, received_at)
    select n, 1, ${rendered.digest}::text, case when r <= 2 then 'applied' else 'failed' end,
      case when r <= 2 then ${rendered.total}::int else ${rendered.total - 3}::int end,
      ${rendered.total}::int,
      case when r = 1 then 'push' else 'interval' end,
      case when r <= 2 then '[]'::jsonb else ${problems}::text::jsonb end, '[]'::jsonb,
      'mesh-host 0.1.0', now() - interval '3 hours' + interval '20 minutes' * r,
      now() - interval '3 hours' + interval '20 minutes' * r
    from generate_series(1, 6) r, unnest(${nodes}::text[]) n
    order by r, n`;
  await sql`analyze`;

  // The node queues, as createNodeAccount declares them.
  const { NODE_QUEUE_ARGUMENTS, nodeQueue, declarationKey, EXCHANGE } = await import(
    "../lib/broker.ts"
  );
  const session = await openChannel();
  undos.push({ what: "bench broker connection closed", run: () => session.close() });
  undos.push({
    what: `${PUSH_NODES} node queues mesh.node.push-* deleted`,
    run: async () => {
      const s = await openChannel();
      try {
        for (const node of nodes) await s.channel.deleteQueue(nodeQueue(node));
      } finally {
        await s.close();
      }
    },
  });
  for (const node of nodes) {
    await session.channel.assertQueue(nodeQueue(node), {
      durable: true,
      arguments: { ...NODE_QUEUE_ARGUMENTS },
    });
    await session.channel.bindQueue(nodeQueue(node), EXCHANGE, declarationKey(node));
  }
  log(`${PUSH_NODES} node queues declared and bound`);

  // Every run starts from the same state: generation 1 current, last report failed.
  const reset = () => sql`delete from declarations where generation > 1`;

  // The peer's bodies: what publishRendered publishes (generation 2).
  const pushedAt = new Date();
  const peerFile = `${dir}/peer_messages.json`;
  await Deno.writeTextFile(
    peerFile,
    JSON.stringify(nodes.map((node) => ({
      key: declarationKey(node),
      body: JSON.stringify({
        kind: "declaration",
        node,
        generation: 2,
        digest: rendered.digest,
        pushedAt: pushedAt.toISOString(),
        declaration: rendered.text,
      }),
      messageId: `${node}:2`,
      timestamp: Math.floor(pushedAt.getTime() / 1000),
    }))),
  );
  const bodyBytes = JSON.stringify({
    kind: "declaration",
    node: nodes[0],
    generation: 2,
    digest: rendered.digest,
    pushedAt: pushedAt.toISOString(),
    declaration: rendered.text,
  }).length;

  const { pushBehind } = await import("../control/push.ts");
  const { publishConfirmed } = await import("../lib/amqp.ts");
  const { ingestReports } = await import("../control/ingest.ts");
  const rows: Row[] = [
    { label: "deno (empty file)", what: "`deno run -A empty.ts`", samplesMs: [] },
    {
      label: "peer publish",
      what:
        "minimal amqplib process (`--peer-publish`): connect, publish the same 1,000 bodies persistent + mandatory, waitForConfirms",
      samplesMs: [],
    },
    {
      label: "push --behind",
      what: "`mesh-control push --behind` (1,000 failed nodes pushed)",
      samplesMs: [],
      peer: "peer publish",
    },
    {
      label: "push --behind, TLS",
      what:
        "the same over amqps:// (5671, cacertfile), PostgreSQL sslmode=verify-full, MESH_CA_FILE: the test CA",
      samplesMs: [],
      peer: "push --behind",
    },
  ];
  const breakdown: Row[] = [];
  const coldStepsTls: Row[] = [];
  const step = (label: string, what: string, ms: number) => {
    let row = breakdown.find((r) => r.label === label);
    if (row === undefined) breakdown.push(row = { label, what, samplesMs: [] });
    row.samplesMs.push(ms);
  };
  const coldSteps: Row[] = [];
  const emptyFile = `${dir}/empty.ts`;
  await Deno.writeTextFile(emptyFile, "");
  const facts: Record<string, string> = {
    bodyBytes: String(bodyBytes),
    resources: String(rendered.total),
  };
  const renders = await renderDeclarations(sql, nodes);
  const encoder = new TextEncoder();
  class Rollback extends Error {}
  const envTls = { ...tlsEnv(db.url), MESH_SIGNING_KEY: keyFile };
  /** One `push --behind` from the same state; checks what it said and recorded. */
  const pushOnce = async (withEnv: Record<string, string>) => {
    await reset();
    const push = await exec(control("push", "--behind"), { env: withEnv });
    const lines = push.stdout.trim().split("\n");
    const last = lines[lines.length - 1] ?? "";
    if (last !== `pushed to ${PUSH_NODES} of ${PUSH_NODES} nodes; 0 not behind`) {
      throw new Error(`push --behind said: ${last}`);
    }
    const [gen] = await sql<{ n: number }[]>`
      select count(*)::int as n from declarations where generation = 2`;
    if (gen?.n !== PUSH_NODES) throw new Error(`push --behind recorded ${gen?.n} declarations`);
    return push;
  };
  for (let i = 0; i <= runs; i++) {
    // Processes.
    const empty = await exec(deno(emptyFile));
    // Plain and TLS interleaved (order alternating), so that the machine's load hits both alike.
    let tlsMs = 0;
    if (i % 2 === 0) tlsMs = (await pushOnce(envTls)).ms;
    await reset();
    const push = await exec(control("push", "--behind"), { env });
    const lines = push.stdout.trim().split("\n");
    const last = lines[lines.length - 1] ?? "";
    if (last !== `pushed to ${PUSH_NODES} of ${PUSH_NODES} nodes; 0 not behind`) {
      throw new Error(`push --behind said: ${last}`);
    }
    facts.pushLast = last;
    facts.pushStuck = String(lines.filter((l) => /the same way since/.test(l)).length);
    facts.pushFirst = lines[0] ?? "";
    const [gen] = await sql<{ n: number }[]>`
      select count(*)::int as n from declarations where generation = 2`;
    if (gen?.n !== PUSH_NODES) throw new Error(`push --behind recorded ${gen?.n} declarations`);
    if (i % 2 === 1) tlsMs = (await pushOnce(envTls)).ms;
    const peer = await exec(deno(`${ROOT}bench/control_bench.ts`, "--peer-publish", peerFile), {
      env: { MESH_BENCH_AMQP: AMQP_URL },
    });
    if (peer.stdout.trim() !== `published ${PUSH_NODES}`) throw new Error(`peer: ${peer.stdout}`);
    await reset();
    await reset();
    const trace = await exec(deno(`${ROOT}bench/control_bench.ts`, "--trace-push"), { env });
    const traced = JSON.parse(trace.stdout) as { pushed: number; marks: Record<string, number> };
    if (traced.pushed !== PUSH_NODES) throw new Error(`trace pushed ${traced.pushed}`);
    if (i > 0) {
      const sum = Object.values(traced.marks).reduce((a, b) => a + b, 0);
      const steps = { "Deno start-up (wall − steps)": trace.ms - sum, ...traced.marks };
      for (const [step, ms] of Object.entries(steps)) {
        let row = coldSteps.find((r) => r.label === step);
        if (row === undefined) coldSteps.push(row = { label: step, what: "", samplesMs: [] });
        row.samplesMs.push(ms);
      }
      let whole = coldSteps.find((r) => r.label === "whole");
      if (whole === undefined) {
        coldSteps.push(
          whole = { label: "whole", what: "wall of the traced process", samplesMs: [] },
        );
      }
      whole.samplesMs.push(trace.ms);
    }
    // The TLS variant's steps (where TLS's time goes: handshakes or per-message work).
    await reset();
    const traceTls = await exec(deno(`${ROOT}bench/control_bench.ts`, "--trace-push"), {
      env: envTls,
    });
    const tracedTls = JSON.parse(traceTls.stdout) as {
      pushed: number;
      marks: Record<string, number>;
    };
    if (tracedTls.pushed !== PUSH_NODES) throw new Error(`TLS trace pushed ${tracedTls.pushed}`);
    if (i > 0) {
      const sum = Object.values(tracedTls.marks).reduce((a, b) => a + b, 0);
      const steps = {
        "Deno start-up (wall − steps)": traceTls.ms - sum,
        ...tracedTls.marks,
        whole: traceTls.ms,
      };
      for (const [step, ms] of Object.entries(steps)) {
        let row = coldStepsTls.find((r) => r.label === step);
        if (row === undefined) coldStepsTls.push(row = { label: step, what: "", samplesMs: [] });
        row.samplesMs.push(ms);
      }
    }

    if (i > 0) {
      rows[0]!.samplesMs.push(empty.ms);
      rows[1]!.samplesMs.push(peer.ms);
      rows[2]!.samplesMs.push(push.ms);
      rows[3]!.samplesMs.push(tlsMs);
    }

    // In-process, warm: the same work in parts.
    const timed = async <T>(label: string, what: string, fn: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      const result = await fn();
      if (i > 0) step(label, what, performance.now() - t);
      return result;
    };
    const drained = await timed(
      "drain (empty queue)",
      "ingestReports({drain: true}) on the empty mesh.reports",
      () => ingestReports(db.sql, session.channel, { drain: true }),
    );
    if (drained.ingested !== 0) throw new Error(`drain ingested ${drained.ingested}`);
    await reset();
    const states = await timed(
      "readNodeStates",
      "of the 1,000 nodes",
      () => readNodeStates(sql),
    );
    await timed(
      "renderDeclarations",
      "of the 1,000 nodes (module rows, parse of each rendered declaration, digest)",
      () => renderDeclarations(sql, states.map((s) => s.name)),
    );
    await timed("sameSince", "of the 1,000 failed nodes", () => sameSince(sql, nodes));
    const dry = await timed(
      "decide (all three)",
      "pushBehind(..., {dryRun: true}): the three above and the classification",
      () => pushBehind(sql, undefined, { dryRun: true }),
    );
    if (dry.pushed.length !== PUSH_NODES) throw new Error(`dry run: ${dry.pushed.length}`);
    await timed(
      "bulk insert",
      "publishRendered's lock + insert ... unnest(text[], ...) of 1,000 declarations (rolled back)",
      () =>
        sql.begin(async (tx) => {
          await tx`select name from nodes where name = any(${renders.map((r) => r.node)})
                   order by name for update`;
          await tx`
            insert into declarations (node, generation, digest, body, total)
            select x.node,
              coalesce((select max(d.generation) from declarations d where d.node = x.node), 0) + 1,
              x.digest, x.body, x.total
            from unnest(${renders.map((r) => r.node)}::text[], ${
            renders.map((r) => r.digest)
          }::text[], ${renders.map((r) => r.text)}::text[], ${renders.map((r) => r.total)}::int[])
              as x(node, digest, body, total)
            returning node, generation, pushed_at`;
          throw new Rollback();
        }).catch((error) => {
          if (!(error instanceof Rollback)) throw error;
        }),
    );
    await timed(
      "bulk insert, one JSON parameter",
      "the same insert with the rows as one json_to_recordset text parameter (rolled back)",
      () =>
        sql.begin(async (tx) => {
          await tx`select name from nodes where name = any(${renders.map((r) => r.node)})
                   order by name for update`;
          await tx`
            insert into declarations (node, generation, digest, body, total)
            select x.node,
              coalesce((select max(d.generation) from declarations d where d.node = x.node), 0) + 1,
              x.digest, x.body, x.total
            from json_to_recordset(${
            JSON.stringify(
              renders.map((r) => ({
                node: r.node,
                digest: r.digest,
                body: r.text,
                total: r.total,
              })),
            )
          }::text::json) as x(node text, digest text, body text, total integer)
            returning node, generation, pushed_at`;
          throw new Rollback();
        }).catch((error) => {
          if (!(error instanceof Rollback)) throw error;
        }),
    );
    const signatures = await timed(
      "sign",
      "signDeclaration of the 1,000 declarations one after another (Ed25519, WebCrypto), as publishRendered does",
      async () => {
        const out = [];
        for (const r of renders) {
          out.push(
            await signDeclaration(signing.key, {
              node: r.node,
              generation: 2,
              digest: r.digest,
              pushedAt: pushedAt.toISOString(),
            }),
          );
        }
        return out;
      },
    );
    const messages = renders.map((r, k) => ({
      exchange: EXCHANGE,
      routingKey: declarationKey(r.node),
      body: encoder.encode(JSON.stringify({
        kind: "declaration",
        node: r.node,
        generation: 2,
        digest: r.digest,
        pushedAt: pushedAt.toISOString(),
        declaration: r.text,
        ...signatures[k],
      })),
      options: {
        type: "declaration",
        messageId: `${r.node}:2`,
        timestamp: Math.floor(pushedAt.getTime() / 1000),
      },
    }));
    await timed(
      "publish",
      "publishConfirmed of the 1,000 (signed) bodies on an open channel",
      () => publishConfirmed(session.channel, messages),
    );
    log(`part 2: ${i === 0 ? "warm-up" : `run ${i}/${runs}`} done`);
  }
  const depth = await session.channel.checkQueue(nodeQueue(nodes[0]!));
  facts.nodeQueueDepth = String(depth.messageCount);
  // The whole row last.
  coldSteps.push(...coldSteps.splice(coldSteps.findIndex((r) => r.label === "whole"), 1));
  return { rows, breakdown, coldSteps, coldStepsTls, facts };
}

// ---------------------------------------------------------------------------------------------
// Part 3: ingest --drain

const ingestName = (i: number) => `ingest-${String(i).padStart(4, "0")}`;

async function partIngest(runs: number) {
  log(`part 3: ingest --drain of ${INGEST_REPORTS} reports`);
  await ensureVhost();
  const db = await makeDatabase("ingest");
  const sql = db.sql;
  const env = { MESH_DATABASE_URL: db.url, MESH_BROKER_URL: AMQP_URL };
  const nodes = Array.from({ length: INGEST_NODES }, (_, i) => ingestName(i + 1));
  await sql`insert into nodes (name, system) select unnest(${nodes}::text[]), 'debian'`;
  await sql`analyze`;

  const broker = await import("../lib/broker.ts");
  const { bodyIdentity } = await import("../control/ingest.ts");
  const { decodeReport } = await import("../control/report_check.ts");
  const digest = `sha256:${"ab".repeat(32)}`;
  const base = Date.now();
  /**
   * The reports of round `round`: a report's identity is its body's sha256 and a report delivered
   * twice is recorded once, so every round's bodies differ (by the node's clock, `at`).
   */
  const reportsOf = (round: number) =>
    Array.from({ length: INGEST_REPORTS }, (_, i) => {
      const node = nodes[i % INGEST_NODES]!;
      const failed = i % 10 === 0;
      return {
        kind: "report",
        node,
        generation: 1 + Math.floor(i / INGEST_NODES),
        trigger: i % 50 === 0 ? "push" : "interval",
        at: new Date(base + round * 1_000_000 + i).toISOString(),
        hostVersion: "mesh-host 0.1.0",
        outcome: failed ? "failed" : "applied",
        applied: failed ? 17 : 20,
        total: 20,
        declaration: digest,
        changes: Array.from({ length: 20 }, (_, k) => ({
          id: `app-f${String(k).padStart(2, "0")}`,
          type: "file",
          change: k === 3 && i % 7 === 0 ? "updated" : "unchanged",
        })),
        problems: failed ? [{ id: "app-f03", message: "write failed: disk full" }] : [],
      };
    });
  const encoder = new TextEncoder();
  const bodiesOf = (round: number) =>
    reportsOf(round).map((r) => encoder.encode(JSON.stringify(r)));
  let round = 0;
  const bodies = bodiesOf(round);
  broker.decodeMessage(broker.ReportMessage, bodies[0]!, "the bench's first report");
  broker.decodeMessage(broker.ReportMessage, bodies[10]!, "the bench's failed report");

  const session = await openChannel();
  undos.push({ what: "bench ingest broker connection closed", run: () => session.close() });
  const { Buffer } = await import("node:buffer");
  undos.push({
    what: `${broker.REPORTS_QUEUE} in ${VHOST} checked empty (purged if not)`,
    run: async () => {
      const s = await openChannel();
      try {
        const { messageCount } = await s.channel.checkQueue(broker.REPORTS_QUEUE);
        if (messageCount > 0) {
          log(`cleanup: ${messageCount} reports left in ${broker.REPORTS_QUEUE}: purging`);
          await s.channel.purgeQueue(broker.REPORTS_QUEUE);
        }
      } finally {
        await s.close();
      }
    },
  });

  /**
   * Publishes the first `n` bodies of a new round with confirms (persistent, as the link does);
   * `queued`: the reports the queue then holds (more than `n` when rounds are stacked).
   */
  const publish = async (n: number, queued = n): Promise<number> => {
    const fresh = bodiesOf(++round);
    const t = performance.now();
    const chunk = 2_000;
    for (let start = 0; start < n; start += chunk) {
      for (let i = start; i < Math.min(n, start + chunk); i++) {
        const body = fresh[i]!;
        session.channel.publish(
          broker.EXCHANGE,
          broker.reportKey(nodes[i % INGEST_NODES]!),
          Buffer.from(body.buffer, body.byteOffset, body.byteLength),
          { persistent: true, contentType: "application/json", type: "report" },
        );
      }
      await session.channel.waitForConfirms();
    }
    const ms = performance.now() - t;
    const { messageCount } = await session.channel.checkQueue(broker.REPORTS_QUEUE);
    if (messageCount !== queued) {
      throw new Error(`${messageCount} reports queued, expected ${queued}`);
    }
    return ms;
  };
  const countOf = async (table: string) =>
    Number((await sql.unsafe(`select count(*)::int as n from ${table}`))[0]!.n);
  const count = () => countOf("reports");
  await makeStatelessCopy(sql);
  const queueEmpty = async (what: string) => {
    const { messageCount } = await session.channel.checkQueue(broker.REPORTS_QUEUE);
    if (messageCount !== 0) throw new Error(`${what}: ${messageCount} reports left in the queue`);
  };

  const rows: Row[] = [
    {
      label: "publish",
      what: "publish with confirms (persistent), in-process, chunks of 2,000",
      samplesMs: [],
      items: INGEST_REPORTS,
    },
    {
      label: "raw consume",
      what: `in-process consumer: prefetch ${
        INGEST_BATCH * 2
      }, ack (multiple) every ${INGEST_BATCH}, nothing else: the broker alone`,
      samplesMs: [],
      items: INGEST_REPORTS,
    },
    {
      label: "check",
      what:
        "what ingest does per delivery in Deno: decodeReport (JSON, the validator generated from ReportMessage, control/report_check.ts) and sha256",
      samplesMs: [],
      items: INGEST_REPORTS,
    },
    {
      label: "check, zod",
      what:
        "the same with decodeMessage (JSON, zod and the repeated-key scan), as ingest did before session 7",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "check",
    },
    {
      label: "raw insert",
      what: `ingest's insert (json_to_recordset, last_reports trigger), ${
        INGEST_REPORTS / INGEST_BATCH
      } transactions of ${INGEST_BATCH}: the database alone`,
      samplesMs: [],
      items: INGEST_REPORTS,
    },
    {
      label: "raw insert, unnest",
      what:
        "the same rows as one array a column through unnest (tried, not used: no faster ingest --drain)",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw insert",
    },
    {
      label: "raw insert, jsonb",
      what:
        "the same rows with problems and changes as nested values through jsonb_to_recordset (tried, not used)",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw insert",
    },
    {
      label: "raw insert, no last_reports trigger",
      what: `ingest's insert into a copy of reports without the last_reports trigger`,
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw insert",
    },
    {
      label: "ingestReports",
      what: "ingestReports({drain: true}) in-process (no start-up, connections open)",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw insert",
    },
    {
      label: "ingest --drain",
      what: "`mesh-control ingest --drain` (start-up and connecting included)",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw insert",
    },
    {
      label: "ingest --drain, TLS",
      what:
        "the same over amqps:// (5671, cacertfile) and PostgreSQL sslmode=verify-full (the test CA), interleaved with the plain runs",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "ingest --drain",
    },
    {
      label: "ingest --drain vs broker",
      what: "the same runs, against the raw consume",
      samplesMs: [],
      items: INGEST_REPORTS,
      peer: "raw consume",
    },
    {
      label: "ingest --drain, empty queue",
      what:
        "`mesh-control ingest --drain` with nothing queued: start-up, connecting, one checkQueue (the fixed cost a drain pays)",
      samplesMs: [],
    },
    {
      label: `ingest --drain, ${LONG_DRAIN / 1000}k`,
      what: `\`mesh-control ingest --drain\` of ${
        LONG_DRAIN.toLocaleString("en-US")
      } reports (the same fixed cost, and the cold code and backends, over ${
        LONG_DRAIN / INGEST_REPORTS
      }x the reports)`,
      samplesMs: [],
      items: LONG_DRAIN,
      peer: "raw insert",
    },
  ];
  const byLabel = (label: string) => rows.find((r) => r.label === label)!;
  const { ingestReports } = await import("../control/ingest.ts");

  // Warm-up: a smaller batch through the CLI (module cache, connections, JIT of the queries).
  await publish(WARMUP_REPORTS);
  {
    const before = await count();
    const out = await exec(control("ingest", "--drain"), { env });
    if (out.stdout.trim() !== `ingested ${WARMUP_REPORTS} reports`) {
      throw new Error(`ingest warm-up said: ${out.stdout.trim()} ${out.stderr.trim()}`);
    }
    if (await count() - before !== WARMUP_REPORTS) throw new Error("warm-up: rows missing");
    await queueEmpty("ingest warm-up");
  }
  const envTls = tlsEnv(db.url);
  /** One `ingest --drain` of a fresh round of INGEST_REPORTS; checks what it said and recorded. */
  const drainOnce = async (withEnv: Record<string, string>, what: string) => {
    const publishMs = await publish(INGEST_REPORTS);
    const before = await count();
    const out = await exec(control("ingest", "--drain"), { env: withEnv });
    if (out.stdout.trim() !== `ingested ${INGEST_REPORTS} reports`) {
      throw new Error(`${what} said: ${out.stdout.trim()} ${out.stderr.trim()}`);
    }
    if (await count() - before !== INGEST_REPORTS) throw new Error(`${what}: rows missing`);
    await queueEmpty(what);
    return { publishMs, ms: out.ms };
  };
  // A warm-up of the TLS variant too (its own code paths: TLS handshakes, certificate reading).
  await drainOnce(envTls, "ingest --drain (TLS warm-up)");
  for (let i = 1; i <= runs; i++) {
    // The CLI, plain and over TLS interleaved (order alternating) so that load hits both alike.
    const order = i % 2 === 1 ? ["plain", "tls"] : ["tls", "plain"];
    for (const variant of order) {
      if (variant === "tls") {
        byLabel("ingest --drain, TLS").samplesMs.push(
          (await drainOnce(envTls, "ingest --drain (TLS)")).ms,
        );
      } else {
        const out = await drainOnce(env, "ingest --drain");
        byLabel("publish").samplesMs.push(out.publishMs);
        byLabel("ingest --drain").samplesMs.push(out.ms);
        byLabel("ingest --drain vs broker").samplesMs.push(out.ms);
      }
    }
    let before: number;

    // The CLI's fixed cost, and a longer drain over which it and the warm-up are spread.
    const empty = await exec(control("ingest", "--drain"), { env });
    if (empty.stdout.trim() !== "ingested 0 reports") {
      throw new Error(`ingest --drain (empty) said: ${empty.stdout.trim()}`);
    }
    byLabel("ingest --drain, empty queue").samplesMs.push(empty.ms);
    for (let k = 1; k <= LONG_DRAIN / INGEST_REPORTS; k++) {
      await publish(INGEST_REPORTS, k * INGEST_REPORTS);
    }
    before = await count();
    const long = await exec(control("ingest", "--drain"), { env });
    if (long.stdout.trim() !== `ingested ${LONG_DRAIN} reports`) {
      throw new Error(`ingest --drain (long) said: ${long.stdout.trim()} ${long.stderr.trim()}`);
    }
    if (await count() - before !== LONG_DRAIN) {
      throw new Error("ingest --drain (long): rows missing");
    }
    await queueEmpty("ingest --drain (long)");
    byLabel(`ingest --drain, ${LONG_DRAIN / 1000}k`).samplesMs.push(long.ms);

    // The library in-process.
    await publish(INGEST_REPORTS);
    before = await count();
    let t = performance.now();
    const result = await ingestReports(sql, session.channel, { drain: true });
    byLabel("ingestReports").samplesMs.push(performance.now() - t);
    if (result.ingested !== INGEST_REPORTS || await count() - before !== INGEST_REPORTS) {
      throw new Error(`ingestReports ingested ${result.ingested}`);
    }
    await queueEmpty("ingestReports");

    // The broker alone: a consumer that only acks, in batches like ingest's.
    await publish(INGEST_REPORTS);
    t = performance.now();
    await noopConsume(session.channel, broker.REPORTS_QUEUE, INGEST_REPORTS);
    byLabel("raw consume").samplesMs.push(performance.now() - t);
    await queueEmpty("no-op consumer");

    // Deno's work per delivery alone: as ingest does it, and as it did with zod (alternating).
    for (const label of i % 2 === 1 ? ["check", "check, zod"] : ["check, zod", "check"]) {
      t = performance.now();
      for (const body of bodies) {
        if (label === "check") decodeReport(body, "report");
        else broker.decodeMessage(broker.ReportMessage, body, "report");
        await bodyIdentity(body);
      }
      byLabel(label).samplesMs.push(performance.now() - t);
    }

    // The database alone: rows of a round of their own, built before the clock starts, in the
    // same batches.
    for (
      const [label, table, statement] of [
        ["raw insert", "reports", "json"],
        ["raw insert, unnest", "reports", "unnest"],
        ["raw insert, jsonb", "reports", "jsonb"],
        ["raw insert, no last_reports trigger", STATELESS, "json"],
      ] as const
    ) {
      const own = bodiesOf(++round);
      const batches = await insertBatches(own);
      const before = await countOf(table);
      t = performance.now();
      await rawInsert(sql, table, batches, statement);
      byLabel(label).samplesMs.push(performance.now() - t);
      if (await countOf(table) - before !== INGEST_REPORTS) {
        throw new Error(`${label}: rows missing`);
      }
    }
    log(`part 3: run ${i}/${runs} done`);
  }

  // What the reports table's CHECK on digest costs per row (PostgreSQL's regex engine and a
  // bounded repetition {64}), against the same check written without it.
  const check: Row[] = [];
  const digests = `(select 'sha256:' || encode(sha256(convert_to(g::text, 'UTF8')), 'hex') as d
    from generate_series(1, 100000) g) x`;
  const variants: [string, string][] = [
    ["no check", `select count(d) from ${digests}`],
    [
      "~ '^sha256:[0-9a-f]{64}$'",
      `select count(*) from ${digests} where d ~ '^sha256:[0-9a-f]{64}$'`,
    ],
    [
      "~ '^sha256:[0-9a-f]+$' and length(d) = 71",
      `select count(*) from ${digests} where d ~ '^sha256:[0-9a-f]+$' and length(d) = 71`,
    ],
  ];
  for (const [label, q] of variants) {
    const row: Row = { label, what: "100,000 digests", samplesMs: [], items: 100_000 };
    for (let i = 0; i <= 2; i++) {
      const t = performance.now();
      const [r] = await sql.unsafe(q);
      const ms = performance.now() - t;
      if (Number((r as Record<string, unknown>)?.count) !== 100_000) {
        throw new Error(`${label}: ${JSON.stringify(r)}`);
      }
      if (i > 0) row.samplesMs.push(ms);
    }
    check.push(row);
  }
  check[1]!.peer = "no check";
  check[2]!.peer = "no check";
  return { rows, check };
}

/** A report row as ingest's insert takes it (the columns of `reports` it writes). */
interface ReportRow {
  node: string;
  generation: number;
  digest: string;
  outcome: string;
  applied: number;
  total: number;
  trigger: string;
  problems: unknown[];
  changes: unknown[];
  host_version: string;
  interval_ms: number | null;
  reported_at: string;
  identity: string;
}

/** Bodies decoded and hashed as ingest does, in batches of {@linkcode INGEST_BATCH}. */
async function insertBatches(bodies: Uint8Array[]): Promise<ReportRow[][]> {
  const broker = await import("../lib/broker.ts");
  const { bodyIdentity } = await import("../control/ingest.ts");
  const rows: ReportRow[] = [];
  for (const body of bodies) {
    const r = broker.decodeMessage(broker.ReportMessage, body, "report");
    rows.push({
      node: r.node,
      generation: r.generation,
      digest: r.declaration,
      outcome: r.outcome,
      applied: r.applied,
      total: r.total,
      trigger: r.trigger,
      problems: r.problems,
      changes: r.changes,
      host_version: r.hostVersion,
      interval_ms: r.intervalMs ?? null,
      reported_at: r.at,
      identity: await bodyIdentity(body),
    });
  }
  const batches: ReportRow[][] = [];
  for (let i = 0; i < rows.length; i += INGEST_BATCH) {
    batches.push(rows.slice(i, i + INGEST_BATCH));
  }
  return batches;
}

/** A copy of `reports` (same columns, indexes, checks, foreign key) without the triggers of 0006. */
const STATELESS = "reports_stateless";

async function makeStatelessCopy(sql: Sql): Promise<void> {
  // `like ... including all` copies no trigger.
  await sql.unsafe(`create table ${STATELESS} (like reports including all)`);
  await sql.unsafe(
    `alter table ${STATELESS} add foreign key (node) references nodes (name) on delete cascade`,
  );
}

/**
 * The batches into `table`, one transaction each with the enrolled-nodes read before the insert,
 * by ingest's insert statement (`json`: the rows as one `json` document through
 * `json_to_recordset`, problems and changes as JSON strings in it, each cast to `jsonb`), by one
 * array a column through `unnest` (`unnest`: tried, 0.7x the statement's server CPU but no faster
 * `ingest --drain`: 0.75-0.95× the rate, 2026-12-02), or the same rows as nested values through
 * `jsonb_to_recordset` (`jsonb`, tried and slower).
 */
async function rawInsert(
  sql: Sql,
  table: string,
  batches: ReportRow[][],
  statement: "json" | "unnest" | "jsonb",
): Promise<void> {
  for (const batch of batches) {
    await sql.begin(async (tx) => {
      const names = [...new Set(batch.map((r) => r.node))];
      await tx`select name from nodes where name = any(${names})`;
      if (statement === "jsonb") {
        await tx.unsafe(
          `insert into ${table} (node, generation, digest, outcome, applied, total, trigger,
            problems, changes, host_version, interval_ms, reported_at, identity)
          select x.node, x.generation, x.digest, x.outcome, x.applied, x.total, x.trigger,
            x.problems, x.changes, x.host_version, x.interval_ms, x.reported_at::timestamptz,
            decode(x.identity, 'hex')
          from jsonb_to_recordset($1::text::jsonb) as x(
            node text, generation integer, digest text, outcome text, applied integer,
            total integer, trigger text, problems jsonb, changes jsonb, host_version text,
            interval_ms integer, reported_at text, identity text)
          on conflict (node, identity) where identity is not null do nothing
          returning encode(identity, 'hex') as identity`,
          [JSON.stringify(batch)],
        );
      } else if (statement === "json") {
        const rows = batch.map((r) => ({
          ...r,
          problems: JSON.stringify(r.problems),
          changes: JSON.stringify(r.changes),
        }));
        await tx.unsafe(
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
          { prepare: true },
        );
      } else {
        const column = <K extends keyof ReportRow>(k: K) => batch.map((r) => r[k]);
        await tx.unsafe(
          `insert into ${table} (node, generation, digest, outcome, applied, total, trigger,
            problems, changes, host_version, interval_ms, reported_at, identity)
          select x.node, x.generation, x.digest, x.outcome, x.applied, x.total, x.trigger,
            x.problems::jsonb, x.changes::jsonb, x.host_version::jsonb #>> '{}', x.interval_ms,
            x.reported_at::timestamptz, decode(x.identity, 'hex')
          from unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::integer[],
            $6::integer[], $7::text[], $8::text[], $9::text[], $10::text[], $11::integer[],
            $12::text[], $13::text[]) as x(node, generation, digest, outcome, applied, total,
              trigger, problems, changes, host_version, interval_ms, reported_at, identity)
          on conflict (node, identity) where identity is not null do nothing
          returning encode(identity, 'hex') as identity`,
          [
            column("node"),
            column("generation"),
            column("digest"),
            column("outcome"),
            column("applied"),
            column("total"),
            column("trigger"),
            batch.map((r) => JSON.stringify(r.problems)),
            batch.map((r) => JSON.stringify(r.changes)),
            batch.map((r) => JSON.stringify(r.host_version)),
            column("interval_ms"),
            column("reported_at"),
            column("identity"),
          ] as never,
          { prepare: true },
        );
      }
    });
  }
}

/** Consumes exactly `n` messages, acking every 500 (multiple), and returns when the last is acked. */
async function noopConsume(channel: ConfirmChannel, queue: string, n: number): Promise<void> {
  await channel.prefetch(INGEST_BATCH * 2);
  let seen = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  const { consumerTag } = await channel.consume(queue, (message) => {
    if (message === null) return;
    seen++;
    if (seen % INGEST_BATCH === 0 || seen === n) channel.ack(message, true);
    if (seen === n) done();
  }, { noAck: false });
  await finished;
  await channel.cancel(consumerTag);
}

// ---------------------------------------------------------------------------------------------

interface Args {
  runs: number;
  pushRuns: number;
  ingestRuns: number;
  only: Set<string>;
}

function parseArgs(args: string[]): Args {
  const out: Args = {
    runs: 5,
    pushRuns: 3,
    ingestRuns: 3,
    only: new Set(["status", "push", "ingest"]),
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag, inline] = a.includes("=") ? a.split("=", 2) as [string, string] : [a, undefined];
    const value = inline ?? args[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    const count = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: "${value}" is not a count`);
      return n;
    };
    if (flag === "--runs") out.runs = count();
    else if (flag === "--push-runs") out.pushRuns = count();
    else if (flag === "--ingest-runs") out.ingestRuns = count();
    else if (flag === "--only") {
      out.only = new Set(value.split(","));
      for (const p of out.only) {
        if (!["status", "push", "ingest"].includes(p)) throw new Error(`--only: unknown part ${p}`);
      }
    } else {
      throw new Error(
        `unknown argument "${a}" (usage: [--runs N] [--push-runs N] [--ingest-runs N] [--only status,push,ingest])`,
      );
    }
  }
  return out;
}

/** A row of the "TLS and signing" table: `variant` against `plain`, run for run (paired by index). */
function ratioLine(what: string, plain: Row, variant: Row): string {
  const pairs = variant.samplesMs.map((ms, k) => ms / plain.samplesMs[k]!);
  const p = median(plain.samplesMs);
  const v = median(variant.samplesMs);
  return `| ${what}: ${variant.label} | ${fmtMs(p)} | ${fmtMs(v)} | ${(v / p).toFixed(3)} | ${
    median(pairs).toFixed(3)
  } | ${pairs.length} |`;
}

async function machineFacts(): Promise<string> {
  const postgres = await postgresModule();
  const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  let pg = "?";
  try {
    const [row] = await admin<{ v: string; sb: string; wm: string; sc: string }[]>`
      select current_setting('server_version') as v, current_setting('shared_buffers') as sb,
        current_setting('work_mem') as wm, current_setting('synchronous_commit') as sc`;
    pg =
      `PostgreSQL ${row?.v} (shared_buffers ${row?.sb}, work_mem ${row?.wm}, synchronous_commit ${row?.sc})`;
  } finally {
    await admin.end({ timeout: 1 });
  }
  let rabbit = "RabbitMQ ?";
  try {
    const r = await fetch(`${BROKER_API}/api/overview`, {
      headers: { authorization: `Basic ${btoa(`${BROKER_USER}:${BROKER_PASS}`)}` },
    });
    const o = await r.json() as { rabbitmq_version?: string; erlang_version?: string };
    rabbit = `RabbitMQ ${o.rabbitmq_version} (Erlang ${o.erlang_version})`;
  } catch { /* reported as ? */ }
  const mem = Deno.systemMemoryInfo();
  return `${navigator.hardwareConcurrency} cores, ${
    (mem.total / 2 ** 30).toFixed(0)
  } GiB RAM, Linux ${Deno.osRelease()}, deno ${Deno.version.deno}, ${pg}, ${rabbit}`;
}

const loadavg = async () =>
  (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");

async function main() {
  const args = parseArgs(Deno.args);
  const started = new Date();
  const machine = await machineFacts();
  const loadBefore = await loadavg();
  log(`${machine}; load ${loadBefore}; run id ${RUN_ID}`);
  const dir = await Deno.makeTempDir({ prefix: "meshbench-control-" });
  undos.push({ what: `${dir} removed`, run: () => Deno.remove(dir, { recursive: true }) });

  const sections: string[] = [];
  /** Rows of the "TLS and signing" table (ratioLine). */
  const trust: string[] = [];
  const json: Record<string, unknown> = { started: started.toISOString(), machine, runId: RUN_ID };
  if (args.only.has("status")) {
    const p = await partStatus(args.runs, dir);
    const startup = median(p.rows.find((r) => r.label === "deno (empty file)")!.samplesMs);
    const help = median(p.rows.find((r) => r.label === "mesh-control --help")!.samplesMs);
    const psql = median(p.rows.find((r) => r.label === "psql status read")!.samplesMs);
    const psqlBoard = median(p.rows.find((r) => r.label === "psql board read")!.samplesMs);
    const status = median(p.rows.find((r) => r.label === "status")!.samplesMs);
    const board = median(p.rows.find((r) => r.label === "board --json")!.samplesMs);
    const floor = median(p.rows.find((r) => r.label === "status floor")!.samplesMs);
    const boardFloor = median(p.rows.find((r) => r.label === "board floor")!.samplesMs);
    const s = seedFacts.status;
    sections.push([
      `## 1. status and board over ${s?.nodes.toLocaleString("en-US")} nodes, ${
        s?.reports.toLocaleString("en-US")
      } reports`,
      "",
      `Seeded in ${
        s?.seconds.toFixed(1)
      } s (reports ${s?.reportsSize}, reports_node_last ${s?.indexSize}). ` +
      `Counts: ${p.facts.counts}. \`status\` prints ${p.facts.statusBytes} bytes ` +
      `(first line: "${p.facts.status}"), \`board --json\` ${p.facts.boardBytes} bytes. ` +
      `Drift counts: ${p.facts.driftCounts}. \`board --html\` writes a page of ${p.facts.pageBytes} ` +
      `bytes (${p.facts.pageGzipBytes} gzipped; ${p.facts.pageRows} nodes as rows, ${p.facts.pageHealthy} ` +
      `healthy ones as data); Chromium's DOM of it is ${p.facts.domBytes} bytes.`,
      "",
      table(p.rows),
      "",
      `Of \`status\`'s median ${fmtMs(status)} ms: Deno start-up ${fmtMs(startup)} ms (${
        (100 * startup / status).toFixed(0)
      } %), start-up + loading the CLI's modules (\`--help\`) ${fmtMs(help)} ms (${
        (100 * help / status).toFixed(0)
      } %); the rest, ${fmtMs(status - help)} ms, is connecting, the read and rendering ` +
      `(psql of the same read: ${fmtMs(psql)} ms). ` +
      `The floor of any \`status\` on this client (\`status floor\`: the read received, not ` +
      `decoded) is ${fmtMs(floor)} ms, ${fmtRatio(floor / psql)} psql's: \`status\` is ` +
      `${fmtRatio(status / floor)} it. \`board --json\` is ${
        fmtRatio(board / psqlBoard)
      } psql of ` +
      `its read and ${fmtRatio(board / boardFloor)} its floor (${fmtMs(boardFloor)} ms, ` +
      `${fmtRatio(boardFloor / psqlBoard)} psql's). ` +
      `Deno's start alone plus psql's whole time is ${fmtRatio((startup + psql) / psql)} psql's.`,
      "",
      "In-process (the same functions the CLI calls, on an open pool, jit off):",
      "",
      table(p.breakdown),
      "",
      `EXPLAIN (ANALYZE, BUFFERS) of status's read, jit off (execution ${
        p.plans.map((x) => `${x.executionMs.toFixed(0)} ms`).join(", ")
      } over 3 runs; the server's jit setting: ${p.jit}). Indexes used: ${
        p.plan.indexes.join(", ") || "none"
      }; sequential scans: ${p.plan.seqScans.length ? p.plan.seqScans.join(", ") : "none"}.`,
      "",
      "```",
      p.plan.text,
      "```",
    ].join("\n"));
    json.status = { ...p, seed: s };
  }
  if (args.only.has("push")) {
    const p = await partPush(args.pushRuns, dir);
    sections.push([
      `## 2. push --behind to ${PUSH_NODES.toLocaleString("en-US")} behind nodes`,
      "",
      `Two modules (${p.facts.resources} resources rendered, message body ${p.facts.bodyBytes} bytes). ` +
      `Every run starts from the same state (generation 1 current, last 4 reports failed, so ` +
      `${p.facts.pushStuck} "stuck" lines). Last line: "${p.facts.pushLast}". First line: "${p.facts.pushFirst}".`,
      "",
      table(p.rows),
      "",
      "In-process parts of the same work (open pool and channel, warm code):",
      "",
      table(p.breakdown),
      "",
      "The CLI's steps timed one by one in a fresh process (`--trace-push`: the same calls, cold code):",
      "",
      table(p.coldSteps),
      "",
      "The same steps over TLS (`--trace-push` with the TLS variant's environment):",
      "",
      table(p.coldStepsTls),
    ].join("\n"));
    json.push = p;
    const plain = p.rows.find((r) => r.label === "push --behind")!;
    const tls = p.rows.find((r) => r.label === "push --behind, TLS")!;
    trust.push(ratioLine(`push --behind of ${PUSH_NODES} nodes (ms)`, plain, tls));
    // push always signs: the unsigned figure is estimated as push --behind less the sum of its
    // 1,000 sign calls (timed in-process, warm; the CLI's are colder, so this understates them).
    const sign = p.breakdown.find((r) => r.label === "sign")!;
    const unsigned: Row = {
      label: "push --behind less its signing (estimate)",
      what: "",
      samplesMs: plain.samplesMs.map((ms, k) => ms - sign.samplesMs[k]!),
    };
    trust.push(ratioLine(
      `push --behind (signs) against itself less the in-process sum of its ${PUSH_NODES} sign calls (ms)`,
      unsigned,
      plain,
    ));
    trust.push(ratioLine(
      `push --behind over TLS and signing against the unsigned plain estimate (ms)`,
      unsigned,
      tls,
    ));
  }
  if (args.only.has("ingest")) {
    const p = await partIngest(args.ingestRuns);
    sections.push([
      `## 3. ingest: ${INGEST_REPORTS.toLocaleString("en-US")} reports from the broker`,
      "",
      `${
        INGEST_REPORTS.toLocaleString("en-US")
      } ReportMessage bodies (20 changes each, 10 % failed with a problem) ` +
      `over ${INGEST_NODES} enrolled nodes, published to \`mesh\` as \`report.<node>\`; batches of ${INGEST_BATCH}.`,
      "",
      table(p.rows, { rates: true }),
      "",
      "The reports table's CHECK on `digest`, evaluated alone:",
      "",
      table(p.check, { rates: true }),
    ].join("\n"));
    json.ingest = p;
    const plain = p.rows.find((r) => r.label === "ingest --drain")!;
    const tls = p.rows.find((r) => r.label === "ingest --drain, TLS")!;
    trust.push(ratioLine(`ingest --drain of ${INGEST_REPORTS} reports (ms)`, plain, tls));
  }

  if (trust.length > 0) {
    sections.push([
      "## TLS and signing against plain (issue 27: within 1.15×)",
      "",
      "Medians of the same run; the pairs were run interleaved (order alternating). Ratio of " +
      "medians, and the median of the per-pair ratios (time over plain time; below 1.15 holds).",
      "",
      "| what | plain median | variant median | ratio of medians | median pair ratio | runs |",
      "|---|---:|---:|---:|---:|---:|",
      ...trust,
    ].join("\n"));
  }

  const loadAfter = await loadavg();
  const header = [
    `# mesh-control benchmark, ${started.toISOString()}`,
    "",
    `Machine: ${machine}. Load average ${loadBefore} before, ${loadAfter} after.`,
    "Wall times are this script's clock around each spawn (processes) or call (in-process); one " +
    "unrecorded warm-up first. Ratios are of medians, against the row named.",
    "",
  ].join("\n");
  const markdown = `${header}\n${sections.join("\n\n")}\n`;
  console.log(markdown);
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  await Deno.writeTextFile(`${OUT_DIR}/control-${stamp}.md`, markdown);
  await Deno.writeTextFile(`${OUT_DIR}/control-${stamp}.json`, JSON.stringify(json, null, 2));
  log(`wrote ${OUT_DIR}/control-${stamp}.md and .json`);
}

if (Deno.args[0] === "--peer-publish") {
  await peerPublish(Deno.args[1] ?? "");
  Deno.exit(0);
}
if (Deno.args[0] === "--seed-status") {
  // For profiling by hand: seed part 1's fixture into the migrated inventory at the given URL and
  // leave it there (nothing is removed).
  const { connectDatabase } = await import("../control/db.ts");
  const sql = await connectDatabase(Deno.args[1] ?? "", { max: 4 });
  await seedStatus(sql);
  await seedDrift(sql);
  await sql.end({ timeout: 1 });
  Deno.exit(0);
}
if (Deno.args[0] === "--refresh-status") {
  // For measuring by hand on a fixture seeded earlier: move it to now (refreshStatus).
  const { connectDatabase } = await import("../control/db.ts");
  const sql = await connectDatabase(Deno.args[1] ?? "", { max: 1 });
  log(`moved the fixture ${(await refreshStatus(sql)).toFixed(1)} s to now`);
  await sql.end({ timeout: 1 });
  Deno.exit(0);
}
if (Deno.args[0] === "--trace-push") {
  await tracePush();
  Deno.exit(0);
}

const onSignal = () => {
  if (interrupt.signal.aborted) return log("interrupted again; still cleaning up");
  log("interrupted; stopping and cleaning up");
  interrupt.abort(new Error("interrupted"));
};
Deno.addSignalListener("SIGINT", onSignal);
Deno.addSignalListener("SIGTERM", onSignal);
let failed = false;
const t0 = performance.now();
try {
  await main();
} catch (error) {
  failed = true;
  log(`FAILED: ${error instanceof Error ? error.stack ?? error.message : error}`);
} finally {
  await cleanup();
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  log(`took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
if (failed) Deno.exit(interrupt.signal.aborted ? 130 : 1);
