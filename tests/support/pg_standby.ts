/**
 * Test support: a PostgreSQL primary and a streaming hot standby of it, on ports of their own,
 * next to (never on) the machine's server on 5432. The primary is made with `initdb` (trust
 * authentication, which also lets the replication connection in from loopback), the standby
 * with `pg_basebackup -R` from it; both run as the `postgres` account from a temporary
 * directory and are stopped and removed by {@linkcode PgPair.remove}.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { freePort } from "./mod.ts";

const BIN = "/usr/lib/postgresql/15/bin";

/** A primary and its standby. */
export interface PgPair {
  /** `postgres://postgres@127.0.0.1:PORT` of the primary (no database). */
  primary: string;
  /** The same for the standby. */
  standby: string;
  /** Runs SQL on the standby through psql as postgres (e.g. `select pg_wal_replay_pause()`). */
  onStandby(sql: string): Promise<string>;
  /** Stops both servers and removes their directories. */
  remove(): Promise<void>;
}

/**
 * Starts a primary and a standby streaming from it.
 *
 * @throws the failed command (with its stderr); whatever started is removed first.
 */
export async function startPgPair(): Promise<PgPair> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-pg-" });
  await run(["chown", "postgres:postgres", dir]);
  const as = (argv: string[]) => run(["runuser", "-u", "postgres", "--", ...argv]);
  const primaryPort = freePort();
  const standbyPort = freePort();
  const started: string[] = [];
  const stop = async () => {
    for (const data of started.reverse()) {
      await as([`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
    }
    started.length = 0;
  };
  const options = (port: number) => `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`;
  try {
    await as([`${BIN}/initdb`, "-D", `${dir}/primary`, "-A", "trust", "-U", "postgres"]);
    await as([
      `${BIN}/pg_ctl`,
      "-D",
      `${dir}/primary`,
      "-l",
      `${dir}/primary.log`,
      "-o",
      options(primaryPort),
      "-w",
      "start",
    ]);
    started.push(`${dir}/primary`);
    await as([
      `${BIN}/pg_basebackup`,
      "-h",
      "127.0.0.1",
      "-p",
      String(primaryPort),
      "-U",
      "postgres",
      "-D",
      `${dir}/standby`,
      "-R",
      "-X",
      "stream",
    ]);
    await as([
      `${BIN}/pg_ctl`,
      "-D",
      `${dir}/standby`,
      "-l",
      `${dir}/standby.log`,
      "-o",
      options(standbyPort),
      "-w",
      "start",
    ]);
    started.push(`${dir}/standby`);
  } catch (error) {
    await stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
  return {
    primary: `postgres://postgres@127.0.0.1:${primaryPort}`,
    standby: `postgres://postgres@127.0.0.1:${standbyPort}`,
    onStandby: async (sql) =>
      (await as([
        "psql",
        "-h",
        "127.0.0.1",
        "-p",
        String(standbyPort),
        "-U",
        "postgres",
        "-Atc",
        sql,
      ])).stdout,
    remove: async () => {
      await stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
