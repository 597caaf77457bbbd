/**
 * Shared test support for the control plane: a fresh, migrated inventory database per test,
 * the real broker's endpoints, and running `mesh-control`.
 *
 * @module
 */

import postgres from "postgres";
import { cli, type CliResult } from "../support/mod.ts";
import { assertEquals } from "../support/assert.ts";
import { connectDatabase, migrate, type Sql } from "../../control/db.ts";
import { installShipped } from "../../control/shipped.ts";
import { EXCHANGE, reportKey, type ReportMessage } from "../../lib/broker.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { TEST_KEYS } from "../support/signing.ts";

/** The test server (trust auth; docs/testing.md). */
export const PG_SERVER = "postgres://postgres@127.0.0.1:5432";
/** The real broker, with the administrative account. */
export const BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/%2F";
/** The real broker's management API. */
export const BROKER_API_URL = "http://guest:guest@127.0.0.1:15672";

/** A database made for one test. */
export interface TestInventory {
  url: string;
  sql: Sql;
  /** The environment `mesh-control` reads its connections from. */
  env: Record<string, string>;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** Creates a uniquely named database, migrated unless `migrated: false`. */
export async function freshInventory(
  options: { migrated?: boolean } = {},
): Promise<TestInventory> {
  const name = `inventory_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = `${PG_SERVER}/${name}`;
  const sql = await connectDatabase(url, { requireMigrated: false });
  if (options.migrated ?? true) {
    // As `mesh-control migrate` leaves it: migrated, with the shipped modules.
    await migrate(sql);
    await installShipped(sql);
  }
  return {
    url,
    sql,
    env: {
      MESH_DATABASE_URL: url,
      MESH_BROKER_URL: BROKER_URL,
      MESH_BROKER_API_URL: BROKER_API_URL,
      // Every test's control plane signs with the test key (tests/support/signing.ts).
      MESH_SIGNING_KEY: TEST_KEYS.signingKey,
    },
    drop: async () => {
      await sql.end({ timeout: 1 });
      const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/** Runs `mesh-control` (deno run control/main.ts). */
export function controlCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return cli("control/main.ts", args, env);
}

/** A node name unique to this run (a valid DNS label). */
export function uniqueNode(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Runs `mesh-control` and requires exit 0, saying the command and what it printed otherwise. */
export async function mustControl(env: Record<string, string>, args: string[]): Promise<CliResult> {
  const out = await controlCli(args, env);
  assertEquals(out.code, 0, `mesh-control ${args.join(" ")}: ${out.stderr}${out.stdout}`);
  return out;
}

/**
 * Asks `probe` every 250 ms until it returns something other than undefined or false, and returns
 * that; throws naming `what` after `timeoutMs` (default 120 s).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A valid report from `node` (a push applied, nothing to change), with `fields` laid over it. */
export function reportOf(node: string, fields: Partial<ReportMessage> = {}): ReportMessage {
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
    ...fields,
  };
}

/**
 * Publishes each `[node, body]` to the reports exchange with routing key `report.<node>`, as a
 * node's link does, confirmed by the broker (publisher confirms): every one is queued when this
 * returns. A string body is sent as it is (text that is not a report's JSON); anything else as
 * its JSON.
 *
 * @param amqpUrl the broker URL of the test's virtual host.
 * @throws when the broker cannot be reached or refuses (nacks) a message.
 */
export async function publishReports(
  amqpUrl: string,
  reports: readonly (readonly [node: string, body: unknown])[],
): Promise<void> {
  const s = await openBroker(amqpUrl);
  try {
    await publishConfirmed(
      s.channel,
      reports.map(([node, body]) => ({
        exchange: EXCHANGE,
        routingKey: reportKey(node),
        body: new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body)),
      })),
    );
  } finally {
    await s.close();
  }
}
