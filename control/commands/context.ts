/**
 * What `mesh-control`'s commands share: their output, exit code and cleanups, and the
 * connections themselves (opened on first use, each closed when the command ends); their
 * options are declared in control/options.ts. Loaded with the command that runs (control/main.ts dispatches), never for the
 * program's own help. The database and broker clients are loaded only by the commands that use
 * them.
 *
 * @module
 */

import { messageOf } from "../../lib/atomic.ts";
import { writeAll } from "../../lib/write.ts";
import { brokerUrls } from "../../lib/broker_urls.ts";
import { redactUrl } from "../../lib/url.ts";
import type { BrokerSession } from "../../lib/amqp.ts";
import type { ConnectOptions, Sql } from "../db.ts";
import { Refused } from "../options.ts";

export { refuse, Refused } from "../options.ts";

/** The connection options a command was given (each also read from the environment). */
export interface Connections {
  database?: string;
  broker?: string[];
  brokerApi?: string;
}

/** What every `mesh-control` command is given. */
export interface ControlContext {
  /** Writes to stdout. */
  out: (text: string) => void;
  /** Writes to stderr. */
  err: (text: string) => void;
  /** The exit code the command leaves (0 unless it sets one). */
  code: number;
  /** Run when the command ends, last first: what closes its connections. */
  cleanups: (() => Promise<void>)[];
}

/** A new context writing to the process's stdout and stderr. */
export function controlContext(): ControlContext {
  return {
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    code: 0,
    cleanups: [],
  };
}

/**
 * `value`, or a refusal naming the option and the variable that give it.
 *
 * @throws {Refused} when it is not given.
 */
export function need(
  value: string | undefined,
  what: string,
  option: string,
  env: string,
): string {
  if (value === undefined || value === "") {
    throw new Refused(`No ${what} given: pass ${option} URL or set ${env}`);
  }
  return value;
}

/**
 * The broker members given, each checked.
 *
 * @throws {Refused} when none is given or one is not a broker URL.
 */
export function brokers(opts: Connections): string[] {
  if (opts.broker === undefined || opts.broker.length === 0) {
    throw new Refused("No broker given: pass --broker URL or set MESH_BROKER_URL");
  }
  try {
    return brokerUrls(opts.broker);
  } catch (error) {
    throw new Refused(`--broker: ${messageOf(error)}`);
  }
}

/** The connections a command opens, each closed when it ends (`ctx.cleanups`). */
export interface Connect {
  /**
   * The inventory database (migrated unless `requireMigrated` is false); `tuning` sets the pool's
   * size and whether the driver asks for the server's array types (`connectDatabase`).
   */
  database: (
    opts: Connections,
    requireMigrated?: boolean,
    tuning?: Pick<ConnectOptions, "max" | "fetchTypes"> & {
      /**
       * At the command's end, send each connection's Terminate and exit without waiting for the
       * server to close it (a round trip and a backend's exit): for a command whose every query
       * was awaited before it ends. Default false: wait up to 5 s for queries in flight.
       */
      closeWithoutWaiting?: boolean;
    },
  ) => Promise<Sql>;
  /**
   * {@linkcode Connect.database} (migrated), with `read` sent alongside the migrations check
   * (`connectDatabaseWith`): for a command that only reads.
   */
  databaseWith: <T>(
    opts: Connections,
    tuning: Parameters<Connect["database"]>[2],
    read: (sql: Sql) => Promise<T>,
  ) => Promise<[Sql, T]>;
  /** A broker session, from the member `startAt` on. */
  broker: (opts: Connections, startAt?: number) => Promise<BrokerSession>;
  /**
   * The management API and the AMQP member that answers (a cluster's members share users,
   * permissions and queues), and every member.
   */
  endpoints: (opts: Connections) => Promise<{ amqp: string; api: string; members: string[] }>;
}

/** How `ctx`'s command opens its connections. */
export function connect(ctx: ControlContext): Connect {
  return {
    database: async (opts, requireMigrated = true, tuning = {}) => {
      const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
      const { connectDatabase } = await import("../db.ts");
      const { closeWithoutWaiting = false, ...options } = tuning;
      const sql = await connectDatabase(url, { ...options, requireMigrated });
      ctx.cleanups.push(() => sql.end({ timeout: closeWithoutWaiting ? 0 : 5 }));
      return sql;
    },
    databaseWith: async (opts, tuning = {}, read) => {
      const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
      const { connectDatabaseWith } = await import("../db.ts");
      const { closeWithoutWaiting = false, ...options } = tuning;
      const [sql, value] = await connectDatabaseWith(url, options, read);
      ctx.cleanups.push(() => sql.end({ timeout: closeWithoutWaiting ? 0 : 5 }));
      return [sql, value];
    },
    broker: async (opts, startAt = 0) => {
      const urls = brokers(opts);
      const { openBroker } = await import("../../lib/amqp.ts");
      const session = await openBroker(urls, { startAt });
      ctx.cleanups.push(() => session.close());
      return session;
    },
    // The management API administers users and permissions; over AMQP it is the first member
    // that answers.
    endpoints: async (opts) => {
      const urls = brokers(opts);
      const api = need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL");
      if (urls.length === 1) return { amqp: urls[0]!, api, members: urls };
      const { openBroker } = await import("../../lib/amqp.ts");
      const probe = await openBroker(urls);
      await probe.close();
      return { amqp: probe.url, api, members: urls };
    },
  };
}

/** Any URL with a password in an error message, redacted. */
export function redactSecrets(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"']+/gi, (url) => redactUrl(url));
}
