/**
 * Read routing: `status` and `board` may read from a PostgreSQL hot standby (`--database-read`)
 * instead of the primary; every write goes to the primary (`--database`), which no other command
 * lets a read URL replace. A standby's data is as old as its replay lag, which the board says:
 *
 * - streaming and everything received replayed: 0 (as far as the standby can know);
 * - streaming with WAL received and not yet replayed: the time since the last transaction it
 *   replayed was committed on the primary (`now() - pg_last_xact_replay_timestamp()`);
 * - not streaming (the primary is away, or replay is stuck): the same, and said, since the
 *   standby cannot know what it has not received.
 *
 * @module
 */

import { redactUrl } from "../lib/url.ts";
import { connectDatabase, DatabaseError, describe, type Sql } from "./db.ts";

/** The default limit of a standby's replay lag before the board says its data is stale, in ms. */
export const DEFAULT_MAX_LAG_MS = 60_000;

/** Where status and board read from: the primary, or a standby and how far behind it is. */
export type ReadSource =
  | { kind: "primary" }
  | {
    kind: "standby";
    /** The standby's URL, password redacted. */
    standby: string;
    /** Whether a WAL receiver is streaming from a primary right now. */
    streaming: boolean;
    /** How old the data is, in ms (see the module's description). Absent when unknown. */
    replayLagMs?: number;
    /** When the last replayed transaction was committed on the primary (ISO 8601), if any. */
    lastReplayedAt?: string;
    /** The limit given (ms). */
    maxLagMs: number;
    /** True when the lag is beyond the limit, unknown, or the standby is not streaming. */
    stale: boolean;
  };

/**
 * Connects to the hot standby at `url` and measures its replay lag.
 *
 * @throws {DatabaseError} when it cannot be reached or is not migrated (as the primary), or when
 *   it is not a standby (`pg_is_in_recovery()` is false: a primary given as a standby is refused,
 *   naming it, rather than read as if it were one).
 */
export async function connectStandby(
  url: string,
  options: { maxLagMs?: number } = {},
): Promise<{ sql: Sql; source: ReadSource }> {
  const sql = await connectDatabase(url, { max: 2 });
  try {
    const [row] = await sql<{
      recovery: boolean;
      caught_up: boolean | null;
      streaming: boolean;
      lag_ms: number | null;
      last: Date | null;
    }[]>`
      select pg_is_in_recovery() as recovery,
        pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() as caught_up,
        exists (select 1 from pg_stat_wal_receiver where status = 'streaming') as streaming,
        (extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8
          as lag_ms,
        pg_last_xact_replay_timestamp() as last`;
    if (!row!.recovery) {
      throw new DatabaseError(
        `Cannot read from standby "${
          redactUrl(url)
        }": it is not a standby (pg_is_in_recovery() is false, so it is a primary): give a primary as --database, a hot standby as --database-read`,
      );
    }
    const maxLagMs = options.maxLagMs ?? DEFAULT_MAX_LAG_MS;
    const lag = row!.streaming && row!.caught_up === true
      ? 0
      : row!.lag_ms === null
      ? undefined
      : Math.max(0, Math.round(row!.lag_ms));
    const source: ReadSource = {
      kind: "standby",
      standby: redactUrl(url),
      streaming: row!.streaming,
      maxLagMs,
      stale: !row!.streaming || lag === undefined || lag > maxLagMs,
    };
    if (lag !== undefined) source.replayLagMs = lag;
    if (row!.last !== null) source.lastReplayedAt = row!.last.toISOString();
    return { sql, source };
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    if (error instanceof DatabaseError) throw error;
    throw new DatabaseError(
      `Cannot read the replay state of standby "${redactUrl(url)}": ${describe(error)}`,
    );
  }
}

/** One line saying where the data comes from and how old it is (for the text forms). */
export function sourceText(source: ReadSource): string {
  if (source.kind === "primary") return "";
  const limit = `${source.maxLagMs / 1000} s`;
  const lag = source.replayLagMs === undefined
    ? "an unknown time"
    : `${(source.replayLagMs / 1000).toFixed(1)} s`;
  if (!source.streaming) {
    return `read from standby ${source.standby}, which is not streaming from its primary: its data is at least ${lag} old${
      source.lastReplayedAt ? ` (last replayed a transaction of ${source.lastReplayedAt})` : ""
    }; what follows may be out of date\n`;
  }
  if (source.stale) {
    return `read from standby ${source.standby}: its data is ${lag} behind the primary, beyond the limit of ${limit}; what follows may be out of date\n`;
  }
  return `read from standby ${source.standby}: its data is ${lag} behind the primary\n`;
}
