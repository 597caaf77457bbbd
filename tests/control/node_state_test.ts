/**
 * Each node's current state kept current when it is written (migration 0006_node_state):
 * `last_reports` holds a copy of each node's last report (highest id) and `current_declarations`
 * of its current declaration (highest generation). The status read uses them instead of
 * descending `reports` and `declarations` per node, so they must always equal what those tables
 * say: after the migration's backfill of an inventory that already holds reports, and after every
 * kind of write (multi-row inserts, updates, deletes, a node removed, truncation).
 */

import postgres from "postgres";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { migrate, MIGRATIONS, type Sql } from "../../control/db.ts";
import { type NodeState, readNodeStates } from "../../control/inventory.ts";
import { readFleet } from "../../control/node_state.ts";
import { NOT_KEPT_PROBLEM, ranAt } from "../../control/drift.ts";
import { boardOf } from "../../control/report.ts";
import type { DriftSummary } from "../../lib/drift.ts";
import { freshInventory } from "./support.ts";

/** A node's state without what the rules say of it: what the inventory's tables hold. */
const stored = (states: NodeState[]) =>
  states.map(({ said: _s, applied: _a, total: _t, claim: _c, ...state }) => state);

const DIGEST = (c: string) => `sha256:${c.repeat(64)}`;

/** last_reports as stored, and as recomputed from reports (each node's highest id). */
async function lastReports(sql: Sql): Promise<{ kept: unknown[]; truth: unknown[] }> {
  const columns = `generation, digest, outcome, applied, total, trigger, problems, interval_ms,
    reported_at, received_at`;
  const kept = await sql.unsafe(
    `select node, report_id as id, ${columns} from last_reports order by node`,
  );
  const truth = await sql.unsafe(
    `select distinct on (node) node, id, ${columns} from reports order by node, id desc`,
  );
  return { kept: [...kept], truth: [...truth] };
}

/** current_declarations as stored, and as recomputed from declarations. */
async function currentDeclarations(sql: Sql): Promise<{ kept: unknown[]; truth: unknown[] }> {
  const columns = "node, generation, digest, total, pushed_at";
  const kept = await sql.unsafe(`select ${columns} from current_declarations order by node`);
  const truth = await sql.unsafe(
    `select distinct on (node) ${columns} from declarations order by node, generation desc`,
  );
  return { kept: [...kept], truth: [...truth] };
}

async function assertKept(sql: Sql, what: string): Promise<void> {
  const r = await lastReports(sql);
  assertEquals(r.kept, r.truth, `last_reports after ${what}`);
  const d = await currentDeclarations(sql);
  assertEquals(d.kept, d.truth, `current_declarations after ${what}`);
}

/** Inserts `count` reports for each of `nodes`, interleaved, in one statement. */
async function report(
  sql: Sql,
  nodes: string[],
  count: number,
  fields: { generation?: number; outcome?: string } = {},
): Promise<void> {
  await sql`
    insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
      changes, host_version, interval_ms, reported_at)
    select n, ${fields.generation ?? 1}, ${DIGEST("a")}, ${fields.outcome ?? "applied"}, 3, 3,
      'interval',
      case when k = ${count} then jsonb_build_array(jsonb_build_object('message', n || ' ' || k))
        else '[]'::jsonb end,
      '[]', 'test', 60000 + k * 1000, now() - make_interval(secs => ${count} - k)
    from generate_series(1, ${count}) k, unnest(${nodes}::text[]) n
    order by k, n`;
}

Deno.test("migrating an inventory that holds reports backfills each node's current state", async () => {
  const inv = await freshInventory({ migrated: false });
  try {
    const before = MIGRATIONS.filter((m) => m.name < "0006");
    await migrate(inv.sql, { migrations: before });
    await inv.sql`insert into nodes (name, system)
      values ('a', 'debian'), ('b', 'debian'), ('quiet', 'arch'), ('never', 'alpine')`;
    await inv.sql`
      insert into declarations (node, generation, digest, body, total)
      select n, g, ${DIGEST("b")}, '{}', 3
      from unnest(array['a', 'b', 'never']) n, generate_series(1, 3) g`;
    await report(inv.sql, ["a", "b"], 5);
    await report(inv.sql, ["quiet"], 1, { outcome: "failed" });
    await report(inv.sql, ["a"], 1, { generation: 3, outcome: "refused" });
    const statesBefore = await readBefore(inv.sql);

    assertEquals(
      await migrate(inv.sql),
      MIGRATIONS.filter((m) => m.name >= "0006").map((m) => m.name),
    );
    await assertKept(inv.sql, "the backfill");
    const kept = await lastReports(inv.sql);
    assertEquals(kept.kept.length, 3, "a node that never reported has no last report");
    // The status read gives exactly what it gave before the migration.
    assertEquals(stored(await readNodeStates(inv.sql)), statesBefore);
    const a = (await readNodeStates(inv.sql)).find((s) => s.name === "a")!;
    assertEquals(a.report?.outcome, "refused");
    assertEquals(a.declaration?.generation, 3);
    // The digest CHECK is replaced by its equivalent, which still refuses a bad digest.
    for (const bad of ["sha256:" + "a".repeat(63), "sha256:" + "A".repeat(64), "sha1:" + "a"]) {
      const refused = await inv.sql`
        insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
          changes, host_version, reported_at)
        values ('a', 1, ${bad}, 'applied', 0, 0, 'start', '[]', '[]', 'test', now())`
        .then(() => undefined, (e: Error) => e.message);
      assertStringIncludes(refused ?? "accepted", "reports_digest_check", bad);
    }
  } finally {
    await inv.drop();
  }
});

Deno.test("every write to reports and declarations keeps each node's current state", async () => {
  const inv = await freshInventory();
  const sql = inv.sql;
  try {
    const nodes = ["n1", "n2", "n3", "n4"];
    await sql`insert into nodes (name, system) select unnest(${nodes}::text[]), 'debian'`;
    await assertKept(sql, "nothing");
    // Several reports of one node in one statement: the highest id wins.
    await report(sql, nodes, 4);
    await assertKept(sql, "a multi-row insert");
    await sql`insert into declarations (node, generation, digest, body, total)
      select n, g, ${DIGEST("c")}, '{}', g from unnest(${nodes}::text[]) n,
        generate_series(1, 3) g`;
    await assertKept(sql, "declarations inserted");
    // An insert of an older generation does not replace a newer one.
    await sql`delete from declarations where node = 'n1' and generation = 2`;
    await sql`insert into declarations (node, generation, digest, body, total)
      values ('n1', 2, ${DIGEST("d")}, '{}', 9)`;
    await assertKept(sql, "an older generation inserted");
    // An update of the last report (a test moving receipt back, an operator's fix-up).
    await sql`update reports set received_at = now() - interval '2 hours', interval_ms = 60000
      where node = 'n2'`;
    await assertKept(sql, "an update of a node's reports");
    await sql`update declarations set pushed_at = now() - interval '1 day' where node = 'n3'`;
    await assertKept(sql, "an update of a node's declarations");
    // The last report deleted: the one before it is the last now.
    await sql`delete from reports where id = (select max(id) from reports where node = 'n3')`;
    await assertKept(sql, "the last report deleted");
    // An older report deleted (what retention does): nothing changes.
    const unchanged = await lastReports(sql);
    await sql`delete from reports where id = (select min(id) from reports where node = 'n4')`;
    assertEquals((await lastReports(sql)).kept, unchanged.kept);
    // Every report of a node deleted: no last report.
    await sql`delete from reports where node = 'n4'`;
    await sql`delete from declarations where node = 'n4' and generation = 3`;
    await assertKept(sql, "all of a node's reports deleted");
    // A node removed: its rows go with it.
    await sql`delete from nodes where name = 'n1'`;
    await assertKept(sql, "a node removed");
    assertEquals(
      (await sql`select count(*)::int as n from last_reports where node = 'n1'`)[0]!.n,
      0,
    );
    await sql`truncate reports`;
    await assertKept(sql, "reports truncated");
    await report(sql, ["n2"], 2);
    await sql`truncate declarations`;
    await assertKept(sql, "declarations truncated");
  } finally {
    await inv.drop();
  }
});

Deno.test("a report committed after one with a higher id does not replace it as the last", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into nodes (name, system) values ('n', 'debian')`;
    const insert = (id: number, outcome: string) =>
      inv.sql`
        insert into reports (id, node, generation, digest, outcome, applied, total, trigger,
          problems, changes, host_version, reported_at)
        values (${id}, 'n', 1, ${DIGEST("a")}, ${outcome}, 0, 0, 'start', '[]', '[]', 'test',
          now())`;
    // Two ingest transactions in flight: the one holding the lower id commits last.
    await insert(1000, "applied");
    await insert(500, "failed");
    await assertKept(inv.sql, "a lower id committed last");
    const [row] = await inv.sql`select report_id, outcome from last_reports where node = 'n'`;
    assertEquals([Number(row!.report_id), row!.outcome], [1000, "applied"]);
  } finally {
    await inv.drop();
  }
});

Deno.test("the status read scans the kept state, never reports nor declarations", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into nodes (name, system)
      select 'n-' || i, 'debian' from generate_series(1, 40) i
      union all values ('quiet', 'debian'), ('silent', 'debian')`;
    await inv.sql`
      insert into declarations (node, generation, digest, body, total)
      select 'n-' || i, g, ${DIGEST("a")}, '{}', 8
      from generate_series(1, 40) i, generate_series(1, 5) g`;
    await report(inv.sql, ["quiet"], 1);
    await report(inv.sql, Array.from({ length: 40 }, (_, i) => `n-${i + 1}`), 50);
    await inv.sql`analyze`;
    // The read exactly as status sends it (captured, not copied).
    const sent: { query: string; params: unknown[] }[] = [];
    const traced = postgres(inv.url, {
      max: 1,
      onnotice: () => {},
      debug: (_connection, query, params) => {
        sent.push({ query, params: params as unknown[] });
      },
    });
    try {
      const states = boardOf(await readFleet(traced, { listedOnly: true })).machines;
      // Every node claims generation 50 or never reported: each is listed.
      assertEquals(states.length, 42);
      assertEquals(states.find((s) => s.name === "quiet")?.trigger, "interval");
      assertEquals(states.find((s) => s.name === "silent")?.lastReportAt, undefined);
      const read = sent.find((s) => /from nodes n/.test(s.query));
      assert(read !== undefined, `the status read was not seen: ${JSON.stringify(sent)}`);
      const plan = (await traced.unsafe(
        `explain (analyze, costs off, timing off, summary off) ${read.query}`,
        read.params as never[],
      )).map((r) => r["QUERY PLAN"] as string).join("\n");
      console.log(`plan of the status read (readFleet):\n${plan}`);
      assert(/ on last_reports\b/.test(plan), plan);
      assert(/ on current_declarations\b/.test(plan), plan);
      assert(/ on node_drift\b/.test(plan), plan);
      assert(!/ on reports\b/.test(plan), `the status read touches reports:\n${plan}`);
      assert(!/ on declarations\b/.test(plan), `the status read touches declarations:\n${plan}`);
    } finally {
      await traced.end({ timeout: 1 });
    }
  } finally {
    await inv.drop();
  }
});

/**
 * The status read as it was before 0006 (each node's rows found in reports and declarations), with
 * whether each last report's claim was pushed (0009).
 */
async function readBefore(sql: Sql): Promise<unknown> {
  const rows = await sql`
    select n.name, n.system, n.kind, n.enrolled_at,
      coalesce((select array_agg(a.module order by a.position) from assignments a
                where a.node = n.name), '{}') as modules,
      d.generation as d_generation, d.digest as d_digest, d.total as d_total,
      d.pushed_at as d_pushed_at,
      r.generation as r_generation, r.digest as r_digest, r.outcome as r_outcome,
      r.applied as r_applied, r.total as r_total, r.trigger as r_trigger,
      r.problems as r_problems, r.interval_ms as r_interval_ms, r.reported_at as r_reported_at,
      r.received_at as r_received_at,
      -- Whether the report's generation and digest were pushed to the node (docs/design.md,
      -- "Hostile inputs", rule 7): asked of every report about a declaration.
      case when r.outcome = 'undeclared' then null else exists (
        select 1 from declarations p where p.node = n.name and p.generation = r.generation
          and p.digest = r.digest) end as r_pushed
    from nodes n
    left join lateral (
      select generation, digest, total, pushed_at from declarations
      where node = n.name order by generation desc limit 1) d on true
    left join lateral (
      select * from reports where node = n.name order by id desc limit 1) r on true
    order by n.name`;
  return rows.map((row) => {
    const state: Record<string, unknown> = {
      name: row.name,
      system: row.system,
      kind: row.kind,
      enrolledAt: row.enrolled_at,
      modules: row.modules,
    };
    if (row.d_generation !== null) {
      state.declaration = {
        generation: row.d_generation,
        digest: row.d_digest,
        total: row.d_total,
        pushedAt: row.d_pushed_at,
      };
    }
    if (row.r_generation !== null) {
      const report: Record<string, unknown> = {
        generation: row.r_generation,
        digest: row.r_digest,
        outcome: row.r_outcome,
        applied: row.r_applied,
        total: row.r_total,
        trigger: row.r_trigger,
        problems: row.r_problems,
        reportedAt: row.r_reported_at,
        receivedAt: row.r_received_at,
      };
      if (row.r_interval_ms !== null) report.intervalMs = row.r_interval_ms;
      if (row.r_pushed !== null) report.pushed = row.r_pushed;
      state.report = report;
    }
    return state;
  });
}

Deno.test("a stored drift summary is shown as stored, and one this program does not read as unreadable", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into nodes (name, system)
      values ('good', 'debian'), ('bad', 'debian'), ('older', 'debian')`;
    const good: DriftSummary = {
      status: "drift",
      ranAt: "2026-12-01T11:00:00+01:00",
      intervalSeconds: 900,
      registry: "r",
      entries: 2,
      findings: [{ check: "port", direction: "rogue", count: 1 }],
    };
    const times = ranAt(good);
    await inv
      .sql`insert into node_drift (node, summary, reported_at, received_at, ran_at_ms, ran_at)
      values
      ('good', ${JSON.stringify(good)}::text::jsonb, '2026-12-01 10:00:01.123456+00',
        '2026-12-01 10:00:02.999999+00', ${times.ran_at_ms}, ${times.ran_at}),
      ('bad', ${JSON.stringify({ ...good, intervalSeconds: 0 })}::text::jsonb, now(), now(),
        ${times.ran_at_ms}, ${times.ran_at}),
      -- Stored before ingest recorded the instant (or by another version): no time.
      ('older', ${JSON.stringify(good)}::text::jsonb, now(), now(), null, null)`;
    const board = boardOf(await readFleet(inv.sql, { now: new Date("2026-12-01T10:01:00Z") }));
    const drift = new Map(board.machines.map((m) => [m.name, m.drift]));
    assertEquals(drift.get("good"), {
      verdict: "drift",
      words: "drift",
      findings: 1,
      counts: [{ check: "port", direction: "rogue", count: 1 }],
      last: "drift",
      ranAt: "2026-12-01T10:00:00.000Z",
      // 57 s since it arrived (our clock), 1.123 s old when it was reported (the node's).
      ageSeconds: 58,
      intervalSeconds: 900,
      registry: "r",
    });
    for (const name of ["bad", "older"]) {
      const view = drift.get(name)!;
      assertEquals([view.verdict, view.path, view.problem], [
        "unreadable",
        "(inventory)",
        NOT_KEPT_PROBLEM,
      ]);
    }
    assertStringIncludes(NOT_KEPT_PROBLEM, "the stored summary does not match this mesh-control's");
  } finally {
    await inv.drop();
  }
});

Deno.test("the fleet reads cut into rows of any size give every node once, in name order", async () => {
  const inv = await freshInventory();
  try {
    const sql = inv.sql;
    const nodes = Array.from({ length: 23 }, (_, i) => `n-${String(i).padStart(2, "0")}`);
    await sql`insert into nodes (name, system, kind)
      select n, 'debian', case when n like '%3' then 'episodic' else 'server' end
      from unnest(${[...nodes, "never"]}::text[]) n`;
    await sql`insert into modules (name, version, digest, body, origin)
      values ('m1', 1, ${DIGEST("c")}, '{}', 'handed-over'),
        ('m2', 1, ${DIGEST("d")}, '{}', 'handed-over')`;
    // Modules assigned in an order that is not the names' (m2 first on every third node).
    await sql`insert into assignments (node, module)
      select n, m from unnest(${nodes}::text[]) with ordinality as x(n, i),
        unnest(case when i % 3 = 0 then array['m2', 'm1'] else array['m1'] end) m
      order by n`;
    await sql`insert into declarations (node, generation, digest, body, total)
      select n, 2, ${DIGEST("b")}, '{}', 3 from unnest(${nodes.slice(0, 15)}::text[]) n`;
    await report(sql, nodes.slice(2), 3);
    // Problems whose text holds what separates fields and lines (escaped in JSON's text).
    await sql`update reports set problems = ${
      JSON.stringify([{ id: "a\tb", message: "line one\nline\ttwo\r\\n" }, { message: "é 💥" }])
    }::text::jsonb where node = 'n-05'`;
    const summary = (registry: string) =>
      JSON.stringify({
        status: "clean",
        ranAt: "2026-12-01T10:00:00.000Z",
        intervalSeconds: 900,
        registry,
        entries: 2,
        findings: [],
      });
    await sql`insert into node_drift (node, summary, reported_at, ran_at_ms, ran_at)
      select n, ${summary("/etc/a\tb\nc")}::text::jsonb, now(),
        ${Date.parse("2026-12-01T10:00:00.000Z")}, '2026-12-01T10:00:00.000Z'
      from unnest(${nodes.slice(4)}::text[]) n`;
    const expected = await readBefore(sql);
    const now = new Date();
    const fleet = await readFleet(sql, { now });
    const machines = boardOf(fleet).machines;
    assertEquals(machines.length, nodes.length + 1);
    assertEquals(machines.filter((m) => m.drift.last === "clean").length, nodes.length - 4);
    assertEquals(machines.find((m) => m.name === "n-07")?.drift.registry, "/etc/a\tb\nc");
    for (const perRow of [1, 2, 7, 24, 1000]) {
      assertEquals(
        stored(await readNodeStates(sql, undefined, perRow)),
        expected,
        `${perRow} a row`,
      );
      assertEquals(await readFleet(sql, { now, nodesPerRow: perRow }), fleet, `${perRow} a row`);
      const some = ["n-05", "n-00", "never", "n-22", "absent"];
      assertEquals(
        stored(await readNodeStates(sql, some, perRow)),
        (expected as { name: string }[]).filter((s) => some.includes(s.name)),
        `${perRow} a row, some nodes`,
      );
    }
    const n05 = (await readNodeStates(sql)).find((s) => s.name === "n-05")!;
    assertEquals(n05.report?.problems, [{ id: "a\tb", message: "line one\nline\ttwo\r\\n" }, {
      message: "é 💥",
    }]);
  } finally {
    await inv.drop();
  }
});
