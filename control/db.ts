/**
 * The inventory database (PostgreSQL): connecting with clear errors, and migrations as ordered SQL
 * files, each applied in its own transaction and recorded in `schema_migrations`.
 *
 * @module
 */

import postgres from "postgres";
import { connect as netConnect, isIP, type Socket } from "node:net";
import { redactUrl } from "../lib/url.ts";
import {
  PlainRefusedError,
  refusePlain,
  tlsRefusal,
  trustAnchorFor,
  TrustFileError,
} from "../lib/wire_trust.ts";
import m0001 from "./migrations/0001_inventory.sql" with { type: "text" };
import m0002 from "./migrations/0002_catalogue.sql" with { type: "text" };
import m0003 from "./migrations/0003_fleet_truth.sql" with { type: "text" };
import m0004 from "./migrations/0004_drift.sql" with { type: "text" };
import m0005 from "./migrations/0005_scale_out.sql" with { type: "text" };
import m0006 from "./migrations/0006_node_state.sql" with { type: "text" };
import m0007 from "./migrations/0007_settings.sql" with { type: "text" };
import m0008 from "./migrations/0008_not_pushed.sql" with { type: "text" };
import m0009 from "./migrations/0009_epochs.sql" with { type: "text" };
import m0010 from "./migrations/0010_drift_ran_at.sql" with { type: "text" };

/** A connected inventory database (postgres.js). */
export type Sql = postgres.Sql;
/** A connection or a transaction: what a query needs. */
export type Queryable = postgres.Sql | postgres.TransactionSql;

/** One migration: its name (ordered) and its SQL. */
export interface Migration {
  name: string;
  sql: string;
}

/** Every migration, in the order they are applied. Append only: never edit an applied one. */
export const MIGRATIONS: readonly Migration[] = [
  { name: "0001_inventory", sql: m0001 },
  { name: "0002_catalogue", sql: m0002 },
  { name: "0003_fleet_truth", sql: m0003 },
  { name: "0004_drift", sql: m0004 },
  { name: "0005_scale_out", sql: m0005 },
  { name: "0006_node_state", sql: m0006 },
  { name: "0007_settings", sql: m0007 },
  { name: "0008_not_pushed", sql: m0008 },
  { name: "0009_epochs", sql: m0009 },
  { name: "0010_drift_ran_at", sql: m0010 },
];

/** The inventory cannot be reached, is not migrated, or refused an operation. */
export class DatabaseError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DatabaseError";
  }
}

/** Options for {@linkcode connectDatabase}. */
export interface ConnectOptions {
  /** Connections in the pool (default 4). */
  max?: number;
  /** Seconds to wait for a connection (default 5). */
  connectTimeout?: number;
  /** Refuse unless every migration is applied (default true; `migrate` passes false). */
  requireMigrated?: boolean;
  /**
   * Ask the server for its array types when each connection opens (default true): what lets the
   * driver send a JS array as a parameter (`= any(${names})`) and parse array columns. One round
   * trip a connection; false only for a caller none of whose queries sends or reads an array (or
   * a type of an extension): `status` and `board`.
   */
  fetchTypes?: boolean;
}

/**
 * Connects to the inventory at `url` (`postgres://user@host:port/inventory`) and proves the
 * connection works with one query: the read of the applied migrations (unless `requireMigrated`
 * is false: then `select 1`).
 *
 * @throws {DatabaseError} naming the URL (password redacted) when it does not answer, refuses,
 *   or (unless `requireMigrated` is false) is not migrated to {@linkcode MIGRATIONS}.
 */
export async function connectDatabase(url: string, options: ConnectOptions = {}): Promise<Sql> {
  return (await connectDatabaseWith(url, options, () => Promise.resolve()))[0];
}

/**
 * {@linkcode connectDatabase}, with `read` sent on the new pool at once, alongside the migrations
 * check instead of after it: its queries go out while the check's connection opens (with two
 * connections or more, the second opens beside the first), so a command that only reads waits
 * for one connection's start-up and round trip, not two in a row (`status` and `board`). The
 * check still decides: when it fails, its error is thrown whatever `read` did (`read`'s
 * queries may have failed on tables that are not there yet); `read`'s own failure is thrown
 * only after the check passed.
 *
 * @returns the pool and what `read` returned.
 * @throws {DatabaseError} as {@linkcode connectDatabase}; whatever `read` throws.
 */
export async function connectDatabaseWith<T>(
  url: string,
  options: ConnectOptions,
  read: (sql: Sql) => Promise<T>,
): Promise<[Sql, T]> {
  const target = await postgresTarget(url);
  let sql: Sql;
  try {
    sql = postgres(target.href, {
      ssl: target.ssl,
      // postgres.js 3.4.9's `socket` (src/connection.js), absent from its types.
      ...noDelaySocket(target, options.connectTimeout ?? 5),
      max: options.max ?? 4,
      connect_timeout: options.connectTimeout ?? 5,
      onnotice: () => {},
      fetch_types: options.fetchTypes ?? true,
      // The status read's estimated cost is above jit_above_cost at fleet size; compiling it
      // costs more than it saves for a query that runs once per command.
      connection: { jit: "off" },
    });
  } catch (error) {
    throw new DatabaseError(`Cannot use database URL "${redactUrl(url)}": ${describe(error)}`);
  }
  const cannotConnect = async (error: unknown) => {
    await sql.end({ timeout: 1 }).catch(() => {});
    return new DatabaseError(
      `Cannot connect to database "${redactUrl(url)}": ${
        await refusedCertificate(error, target) ?? describe(error)
      }`,
    );
  };
  const migrated = options.requireMigrated ?? true;
  // The first query proves the connection: one round trip, not a `select 1` before the check.
  // Sent first, `read` right behind it, neither awaited yet; `read` is settled (never left
  // rejected unhandled) before anything is thrown.
  const checking = migrated ? appliedMigrations(sql) : sql`select 1`.then(() => undefined);
  const reading = (async () => await read(sql))();
  reading.catch(() => {});
  const fail = async (error: unknown) => {
    await reading.catch(() => {});
    return error;
  };
  let applied: AppliedMigration[] | undefined;
  try {
    applied = await checking;
  } catch (error) {
    throw await fail(await cannotConnect(error));
  }
  let pending: Migration[] = [];
  try {
    if (migrated) pending = await pendingOf(applied);
  } catch (error) {
    await fail(error);
    await sql.end({ timeout: 1 }).catch(() => {});
    throw error;
  }
  if (pending.length > 0) {
    await fail(undefined);
    await sql.end({ timeout: 1 }).catch(() => {});
    throw new DatabaseError(
      `The inventory "${
        redactUrl(url)
      }" is not migrated (${pending.length} of ${MIGRATIONS.length} migrations pending, first ${
        pending[0]!.name
      }): run mesh-control migrate`,
    );
  }
  try {
    return [sql, await reading];
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw error;
  }
}

/**
 * The migrations not yet applied, in order.
 *
 * @throws {DatabaseError} when an applied migration's SQL differs from this program's (the
 *   database was migrated by another version), or one unknown to this program is applied.
 */
export async function pendingMigrations(sql: Sql): Promise<Migration[]> {
  return await pendingOf(await appliedMigrations(sql));
}

/** One row of `schema_migrations`. */
interface AppliedMigration {
  name: string;
  digest: string;
}

/**
 * The migrations recorded as applied, in name order, in one round trip; undefined when
 * `schema_migrations` does not exist (nothing was ever migrated).
 */
async function appliedMigrations(sql: Sql): Promise<AppliedMigration[] | undefined> {
  try {
    return await sql<AppliedMigration[]>`select name, digest from schema_migrations order by name`;
  } catch (error) {
    // undefined_table: not a failure, a database never migrated.
    if ((error as { code?: string }).code === "42P01") return undefined;
    throw error;
  }
}

async function pendingOf(rows: AppliedMigration[] | undefined): Promise<Migration[]> {
  if (rows === undefined) return [...MIGRATIONS];
  const known = new Map(MIGRATIONS.map((m) => [m.name, m]));
  for (const row of rows) {
    const migration = known.get(row.name);
    if (migration === undefined) {
      throw new DatabaseError(
        `The inventory has migration "${row.name}" applied, which this mesh-control does not know (a newer version migrated it)`,
      );
    }
    if (row.digest !== await digestOf(migration.sql)) {
      throw new DatabaseError(
        `The inventory's migration "${row.name}" was applied with different SQL than this mesh-control carries`,
      );
    }
  }
  const applied = new Set(rows.map((r) => r.name));
  return MIGRATIONS.filter((m) => !applied.has(m.name));
}

/**
 * Applies every pending migration, each in its own transaction (with an advisory lock so two
 * concurrent runs apply each once), recording it in `schema_migrations`. Running it again
 * changes nothing.
 *
 * @param options.migrations the migrations to apply (default {@linkcode MIGRATIONS}; tests
 *   pass others).
 * @returns the names applied now (empty when the inventory was already current).
 * @throws {DatabaseError} naming the migration that failed (its transaction rolled back).
 */
export async function migrate(
  sql: Sql,
  options: { migrations?: readonly Migration[] } = {},
): Promise<string[]> {
  const applied: string[] = [];
  for (const migration of options.migrations ?? MIGRATIONS) {
    const digest = await digestOf(migration.sql);
    try {
      const done = await sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
        await tx`create table if not exists schema_migrations (
          name text primary key,
          digest text not null,
          applied_at timestamptz not null default now())`;
        const [row] = await tx<{ digest: string }[]>`
          select digest from schema_migrations where name = ${migration.name}`;
        if (row !== undefined) {
          if (row.digest !== digest) {
            throw new DatabaseError(
              `Migration "${migration.name}" was applied with different SQL than this mesh-control carries`,
            );
          }
          return false;
        }
        await tx.unsafe(migration.sql);
        await tx`insert into schema_migrations (name, digest) values (${migration.name}, ${digest})`;
        return true;
      });
      if (done) applied.push(migration.name);
    } catch (error) {
      if (error instanceof DatabaseError) throw error;
      throw new DatabaseError(
        `Cannot apply migration "${migration.name}" (rolled back): ${describe(error)}`,
      );
    }
  }
  return applied;
}

/**
 * Creates the database named in `url` when it does not exist, connecting to the server's
 * `postgres` database to do so.
 *
 * @returns true when it was created now.
 * @throws {DatabaseError} when the server does not answer or refuses.
 */
export async function createDatabaseIfMissing(url: string): Promise<boolean> {
  const target = await postgresTarget(url);
  const name = decodeURIComponent(new URL(target.href).pathname.replace(/^\//, ""));
  if (name === "") {
    throw new DatabaseError(`Database URL "${redactUrl(url)}" names no database`);
  }
  const admin = new URL(target.href);
  admin.pathname = "/postgres";
  const sql = postgres(admin.href, {
    ssl: target.ssl,
    ...noDelaySocket(target, 5),
    max: 1,
    connect_timeout: 5,
    onnotice: () => {},
  });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length > 0) return false;
    await sql.unsafe(`create database ${quoteIdent(name)}`);
    return true;
  } catch (error) {
    throw new DatabaseError(
      `Cannot create database "${name}" at "${redactUrl(url)}": ${
        await refusedCertificate(error, target) ?? describe(error)
      }`,
    );
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/**
 * `url` parsed, refused unless it is a `postgres://` (or `postgresql://`) URL. Anything else
 * would be handed to the client, which reads a string that is not such a URL as something else
 * (`user:password@host/db` connects to its defaults), and could not be redacted when named in
 * a message: it is not shown.
 *
 * @throws {DatabaseError} when it is not.
 */
function postgresUrl(url: string): URL {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch { /* refused below */ }
  if (parsed === undefined || !/^postgres(?:ql)?:\/\//i.test(url)) {
    throw new DatabaseError(
      "The database URL is not a valid postgres:// or postgresql:// URL (it is not shown: it may hold a password)",
    );
  }
  return parsed;
}

/** What postgres.js is given for a database URL: {@linkcode postgresTarget}'s answer. */
export interface PostgresTarget {
  /** The URL without `sslmode` and `sslrootcert` (postgres.js would send unknown ones on). */
  href: string;
  /** postgres.js's `ssl`: false for clear text, node:tls options for `sslmode=verify-full`. */
  ssl: false | "prefer" | "require" | "allow" | {
    ca?: string;
    host: string;
    servername?: string;
    rejectUnauthorized: true;
  };
  /** The host name or address (IPv6 without brackets), for {@linkcode tlsRefusal}. */
  host: string;
  /** The CA file verified against (undefined: clear text, or the system's roots). */
  caFile?: string;
}

/**
 * The connection to make for the database URL `url`, by the rule for the wire
 * (lib/wire_trust.ts), with libpq's names: `sslmode=verify-full` verifies the server's
 * certificate against `sslrootcert=PATH`, else MESH_CA_FILE, else /etc/mesh/ca.crt when it
 * exists, else the system's roots, and for the URL's host (a name or an address); any other
 * `sslmode` (absent, `disable`, or an unverified `allow`, `prefer`, `require`, `verify-ca`) is
 * clear text or unverified, refused to a host that is not this machine unless `MESH_ALLOW_PLAIN=1`.
 *
 * Deno's node:tls (what postgres.js upgrades with) checks the name `servername`, else `host`,
 * else "localhost"; postgres.js gives no `servername` for an address (node refuses an IP as a
 * server name), so `host` is given too: without it an address was verified as "localhost"
 * (seen: a certificate for localhost and 127.0.0.1 accepted at 127.0.0.2).
 *
 * @throws {DatabaseError} when `url` is not a postgres:// URL, names an unknown `sslmode`, the
 *   CA file cannot be used (naming its path), or clear text to another machine is not allowed.
 */
export async function postgresTarget(url: string): Promise<PostgresTarget> {
  const parsed = postgresUrl(url);
  const mode = parsed.searchParams.get("sslmode") ?? "disable";
  const rootCert = parsed.searchParams.get("sslrootcert") ?? undefined;
  parsed.searchParams.delete("sslmode");
  parsed.searchParams.delete("sslrootcert");
  const host = decodeURIComponent(parsed.hostname.replace(/^\[|\]$/g, "")) ||
    parsed.searchParams.get("host") || "localhost";
  const href = parsed.href;
  const modes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
  if (!modes.includes(mode)) {
    throw new DatabaseError(
      `Cannot use database URL "${redactUrl(url)}": sslmode "${mode}" is not one of ${
        modes.join(", ")
      }`,
    );
  }
  try {
    if (mode === "verify-full") {
      const anchor = await trustAnchorFor(rootCert);
      return {
        href,
        host,
        caFile: anchor?.path,
        ssl: {
          ca: anchor?.certs.join(""),
          host,
          servername: isIP(host) === 0 ? host : undefined,
          rejectUnauthorized: true,
        },
      };
    }
    refusePlain(
      host,
      `database "${redactUrl(url)}"`,
      "use sslmode=verify-full, with sslrootcert=PATH or the mesh CA in /etc/mesh/ca.crt",
    );
  } catch (error) {
    if (error instanceof TrustFileError || error instanceof PlainRefusedError) {
      throw new DatabaseError(error.message, { cause: error });
    }
    throw error;
  }
  const ssl = mode === "disable" || mode === "verify-ca"
    ? (mode === "disable" ? false : "require")
    : mode as "allow" | "prefer" | "require";
  return { href, host, ssl };
}

/**
 * postgres.js's `socket` option for a TLS connection (none for clear text or a Unix socket, which
 * postgres.js opens itself): a TCP connection to the target's host and port, connected, with
 * TCP_NODELAY set before postgres.js sends its SSLRequest and starts TLS on it. With Nagle's
 * algorithm on, each TLS handshake stalled on a delayed ACK, ~40 ms a connection on loopback
 * (probed 2026-12-06: 46-50 ms to PostgreSQL's SSLRequest, 5-6 ms with TCP_NODELAY); postgres.js
 * sets no TCP_NODELAY of its own.
 *
 * The answer rejects with node's error for a refused connection or an unknown host, or
 * `connect ETIMEDOUT host:port` after `timeoutSeconds` (postgres.js's `connect_timeout` starts
 * only once it has the socket).
 */
function noDelaySocket(
  target: PostgresTarget,
  timeoutSeconds: number,
): { socket?: () => Promise<Socket> } {
  if (target.ssl === false || target.host.startsWith("/")) return {};
  const url = new URL(target.href);
  const port = url.port === "" ? 5432 : Number(url.port);
  const dial = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = netConnect({ host: target.host, port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect ETIMEDOUT ${target.host}:${port}`));
      }, timeoutSeconds * 1000);
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(socket);
      });
    });
  return { socket: dial };
}

/**
 * The sentence saying why the server's certificate was refused, when `error` is such a refusal
 * (lib/wire_trust.ts's {@linkcode tlsRefusal}), else undefined. Deno's node:tls gives every
 * certificate it refuses one code (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`, "unable to verify the first
 * certificate"), an expired one as another CA's; so for that code the handshake is made once
 * more, alone, the way libpq opens it (an SSLRequest, then TLS through Deno.startTls with the same
 * CA and host), and rustls's own reason read from it.
 */
async function refusedCertificate(
  error: unknown,
  target: PostgresTarget,
): Promise<string | undefined> {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code !== "UNABLE_TO_VERIFY_LEAF_SIGNATURE" || typeof target.ssl !== "object") {
    return tlsRefusal(error, target);
  }
  const url = new URL(target.href);
  const port = url.port === "" ? 5432 : Number(url.port);
  let conn: Deno.Conn | undefined;
  try {
    const tcp = await Deno.connect({ hostname: target.host, port });
    conn = tcp;
    // SSLRequest: length 8, code 80877103 (PostgreSQL protocol, "SSL Session Encryption").
    await tcp.write(new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]));
    const answer = new Uint8Array(1);
    if (await tcp.read(answer) !== 1 || answer[0] !== 0x53) return tlsRefusal(error, target);
    const caCerts = target.ssl.ca === undefined ? undefined : [target.ssl.ca];
    const secure = await Deno.startTls(tcp, { hostname: target.host, caCerts });
    conn = secure;
    await secure.handshake();
  } catch (again) {
    return tlsRefusal(again, target) ?? tlsRefusal(error, target);
  } finally {
    try {
      conn?.close();
    } catch { /* closed */ }
  }
  return tlsRefusal(error, target);
}

/** Quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const LOCK_ID = 0x6d657368; // "mesh"

async function digestOf(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `sha256:${
    Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

/** A database error's message, with PostgreSQL's code and detail where it gave them. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const e = error as Error & { code?: string; detail?: string };
    const parts = [e.message || e.code || e.name];
    if (e.detail) parts.push(e.detail);
    return parts.join(": ");
  }
  return String(error);
}
