/**
 * The inventory's migrations against a REAL PostgreSQL (127.0.0.1:5432): `mesh-control migrate`
 * applies, a second run changes nothing, a missing database is created, a migration failing
 * midway leaves nothing behind, an applied migration whose SQL changed is refused, commands
 * refuse an unmigrated inventory, and the status read descends the indexes it was built for.
 *
 * @module
 */

import postgres from "postgres";
import { SHIPPED } from "../../control/shipped.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import {
  connectDatabaseWith,
  DatabaseError,
  migrate,
  MIGRATIONS,
  type Sql,
} from "../../control/db.ts";
import { controlCli, freshInventory, PG_SERVER } from "./support.ts";

/** What the schema is: migrations recorded, and every table, column, index and constraint. */
async function snapshot(sql: Sql): Promise<unknown> {
  return {
    migrations: await sql`
      select name, digest, applied_at from schema_migrations order by name`,
    columns: await sql`
      select table_name, column_name, data_type, is_nullable, column_default
      from information_schema.columns where table_schema = 'public'
      order by table_name, ordinal_position`,
    indexes: await sql`
      select indexname, indexdef from pg_indexes where schemaname = 'public' order by indexname`,
    constraints: await sql`
      select conrelid::regclass::text as relation, conname, pg_get_constraintdef(oid) as def
      from pg_constraint where connamespace = 'public'::regnamespace order by conname`,
  };
}

async function tables(sql: Sql): Promise<string[]> {
  return (await sql<{ tablename: string }[]>`
    select tablename from pg_tables where schemaname = 'public' order by tablename`)
    .map((r) => r.tablename);
}

async function applied(sql: Sql): Promise<string[]> {
  return (await sql<{ name: string }[]>`select name from schema_migrations order by name`)
    .map((r) => r.name);
}

/** Every migration this mesh-control carries, in order. */
const ALL = MIGRATIONS.map((m) => m.name);
/** What the first migrate says of the modules shipped with the control plane. */
const SHIPPED_LINES = SHIPPED.map((m) => `shipped module ${m.name} version 1 (created)\n`).join("");

Deno.test("migrate applies every migration on a fresh database; a second run changes nothing", async () => {
  const inv = await freshInventory({ migrated: false });
  try {
    assertEquals(await tables(inv.sql), []);
    const first = await controlCli(["migrate"], inv.env);
    assertEquals(first.code, 0, first.stderr);
    assertEquals(
      first.stdout,
      `applied ${ALL.length} migrations: ${ALL.join(", ")}\n${SHIPPED_LINES}`,
    );
    assertEquals(await applied(inv.sql), ALL);
    assertEquals(await tables(inv.sql), [
      "assignments",
      "builds",
      "current_declarations",
      "declarations",
      "last_reports",
      "modules",
      "node_drift",
      "nodes",
      "removals",
      "reports",
      "schema_migrations",
      "settings",
    ]);
    const before = await snapshot(inv.sql);

    const second = await controlCli(["migrate"], inv.env);
    assertEquals(second.code, 0, second.stderr);
    assertEquals(second.stdout, "inventory is current: no migration pending\n");
    assertEquals(await snapshot(inv.sql), before, "a second migrate changed the schema");

    // And the inventory is usable.
    const status = await controlCli(["status"], inv.env);
    assertEquals([status.code, status.stdout], [0, "no nodes enrolled\n"], status.stderr);
  } finally {
    await inv.drop();
  }
});

Deno.test("migrate creates a missing database (a name that needs quoting)", async () => {
  const name = `inventory-Test-${crypto.randomUUID().slice(0, 8)}`;
  const url = `${PG_SERVER}/${name}`;
  const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  try {
    const exists = async () =>
      (await admin`select 1 from pg_database where datname = ${name}`).length === 1;
    assert(!await exists());
    const first = await controlCli(["migrate"], { MESH_DATABASE_URL: url });
    assertEquals(first.code, 0, first.stderr);
    assertEquals(
      first.stdout,
      `created database ${name}\napplied ${ALL.length} migrations: ${
        ALL.join(", ")
      }\n${SHIPPED_LINES}`,
    );
    assert(await exists());
    const second = await controlCli(["migrate"], { MESH_DATABASE_URL: url });
    assertEquals(second.code, 0, second.stderr);
    assertEquals(second.stdout, "inventory is current: no migration pending\n");
    const board = await controlCli(["board", "--json"], { MESH_DATABASE_URL: url });
    assertEquals(board.code, 0, board.stderr);
    assertEquals(JSON.parse(board.stdout).nodes, 0);
  } finally {
    await admin.unsafe(`drop database if exists "${name.replaceAll('"', '""')}" with (force)`);
    await admin.end();
  }
});

Deno.test("a migration failing midway rolls back completely and is named", async () => {
  const inv = await freshInventory();
  try {
    const before = await snapshot(inv.sql);
    const broken = { name: "9999_broken", sql: "create table t_ok (x int); select 1/0;" };
    const error = await assertRejects(
      () => migrate(inv.sql, { migrations: [...MIGRATIONS, broken] }),
      DatabaseError,
    );
    assertStringIncludes(error.message, `"9999_broken"`);
    assertStringIncludes(error.message, "rolled back");
    assertStringIncludes(error.message, "division by zero");
    const [row] = await inv.sql`select to_regclass('t_ok') is null as gone`;
    assert(row?.gone, "t_ok was left behind by a migration that failed");
    assertEquals(await applied(inv.sql), ALL);
    assertEquals(await snapshot(inv.sql), before);
  } finally {
    await inv.drop();
  }
});

Deno.test("a migration failing on a fresh database keeps the ones before it", async () => {
  const inv = await freshInventory({ migrated: false });
  try {
    const broken = { name: "9999_broken", sql: "create table t_ok (x int); select 1/0;" };
    const error = await assertRejects(
      () => migrate(inv.sql, { migrations: [...MIGRATIONS, broken] }),
      DatabaseError,
    );
    assertStringIncludes(error.message, `"9999_broken"`);
    assertEquals(await applied(inv.sql), ALL);
    assert(!(await tables(inv.sql)).includes("t_ok"));
  } finally {
    await inv.drop();
  }
});

Deno.test("an applied migration whose SQL changed is refused with a clear error", async () => {
  const inv = await freshInventory();
  try {
    const before = await snapshot(inv.sql);
    const edited = { name: "0001_inventory", sql: `${MIGRATIONS[0]!.sql}\n-- edited afterwards\n` };
    const error = await assertRejects(
      () => migrate(inv.sql, { migrations: [edited] }),
      DatabaseError,
    );
    assertStringIncludes(error.message, `"0001_inventory"`);
    assertStringIncludes(error.message, "different SQL");
    assertEquals(await snapshot(inv.sql), before);

    // The command line sees the same through the recorded digest: every command refuses.
    await inv.sql`update schema_migrations set digest = ${`sha256:${"0".repeat(64)}`}`;
    for (const args of [["migrate"], ["status"], ["board", "--json"]]) {
      const r = await controlCli(args, inv.env);
      assertEquals(r.code, 2, `${args.join(" ")}: ${r.stdout}`);
      assertStringIncludes(r.stderr, `"0001_inventory"`);
      assertStringIncludes(r.stderr, "different SQL");
      assertEquals(r.stdout, "");
    }
  } finally {
    await inv.drop();
  }
});

Deno.test("a migration this mesh-control does not know is refused", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into schema_migrations (name, digest) values
      ('0099_future', ${`sha256:${"1".repeat(64)}`})`;
    const r = await controlCli(["status"], inv.env);
    assertEquals(r.code, 2, r.stdout);
    assertStringIncludes(r.stderr, `"0099_future"`);
    assertStringIncludes(r.stderr, "does not know");
  } finally {
    await inv.drop();
  }
});

Deno.test("status and board refuse an unmigrated inventory, saying to migrate", async () => {
  const inv = await freshInventory({ migrated: false });
  try {
    for (const args of [["status"], ["status", "--json"], ["board"], ["board", "--json"]]) {
      const r = await controlCli(args, inv.env);
      assertEquals(r.code, 2, `${args.join(" ")} exited ${r.code}: ${r.stdout}`);
      assertEquals(r.stdout, "");
      assertStringIncludes(r.stderr, "not migrated");
      assertStringIncludes(r.stderr, "run mesh-control migrate");
      assertStringIncludes(r.stderr, inv.url);
    }
    assertEquals(await tables(inv.sql), [], "a read-only command created tables");
  } finally {
    await inv.drop();
  }
});

Deno.test("a read sent with the migrations check: it runs while the check waits, and the check decides", async (t) => {
  const inv = await freshInventory();
  try {
    await t.step("the read is answered while the check is still held", async () => {
      // The check reads schema_migrations; a transaction holding it exclusively holds the check.
      const holder = postgres(inv.url, { max: 1, onnotice: () => {} });
      try {
        let answered!: (n: number) => void;
        const read = new Promise<number>((resolve) => answered = resolve);
        let release!: () => void;
        const released = new Promise<void>((resolve) => release = resolve);
        const holding = holder.begin(async (tx) => {
          await tx`lock table schema_migrations in access exclusive mode`;
          await released;
        });
        // The lock is taken before the pool is opened.
        while (
          (await inv.sql`select 1 from pg_locks l join pg_class c on c.oid = l.relation
            where c.relname = 'schema_migrations' and l.mode = 'AccessExclusiveLock'`).length === 0
        ) await new Promise((r) => setTimeout(r, 10));
        const connecting = connectDatabaseWith(inv.url, { max: 2 }, async (sql) => {
          const [row] = await sql<{ n: number }[]>`select count(*)::int as n from nodes`;
          answered(row!.n);
          return row!.n;
        });
        // The check is held until release() below: a read that waited for it would never be
        // answered, so the bound only has to be finite (and roomy for a loaded machine).
        let timer: ReturnType<typeof setTimeout> | undefined;
        const first = await Promise.race([
          read.then(() => "read"),
          new Promise((r) => timer = setTimeout(() => r("timed out"), 30_000)),
        ]);
        clearTimeout(timer);
        release();
        await holding;
        const [sql, n] = await connecting;
        await sql.end({ timeout: 1 });
        assertEquals(first, "read", "the read waited for the migrations check");
        assertEquals(n, 0);
      } finally {
        await holder.end({ timeout: 1 });
      }
    });
    await t.step("a read that fails on a migrated inventory: its error", async () => {
      const error = await assertRejects(
        () => connectDatabaseWith(inv.url, {}, async (sql) => await sql`select * from no_such`),
        Error,
      );
      assertStringIncludes(error.message, "no_such");
    });
  } finally {
    await inv.drop();
  }
  const bare = await freshInventory({ migrated: false });
  try {
    // The read fails on the missing table; the check's error is the one thrown.
    const error = await assertRejects(
      () => connectDatabaseWith(bare.url, {}, async (sql) => await sql`select * from nodes`),
      DatabaseError,
    );
    assertStringIncludes(error.message, "not migrated");
    assertEquals(await tables(bare.sql), []);
  } finally {
    await bare.drop();
  }
});

// The status read's plan (the kept state, never reports nor declarations): node_state_test.ts.
