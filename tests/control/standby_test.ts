/**
 * Reads from a PostgreSQL hot standby: a real primary and a real streaming replica made with
 * pg_basebackup, on ports of their own (the machine's server on 5432 is not touched). `status`
 * and `board` read from the standby and say how old its data is; a primary given as a standby
 * is refused, naming it; a standby lagging beyond the limit is said to be stale.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { startPgPair } from "../support/pg_standby.ts";
import { controlCli } from "./support.ts";
import { connectDatabase } from "../../control/db.ts";
import { insertNode } from "../../control/inventory.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

let currentLsn: () => Promise<string>;

Deno.test(
  "status and board read from a hot standby and say how old its data is",
  opts,
  async (t) => {
    const pair = await startPgPair();
    const primary = `${pair.primary}/inventory`;
    const standby = `${pair.standby}/inventory`;
    const env = { MESH_DATABASE_URL: primary };
    let sql: Awaited<ReturnType<typeof connectDatabase>> | undefined;
    try {
      const migrated = await controlCli(["migrate"], env);
      assertEquals(migrated.code, 0, migrated.stderr);
      sql = await connectDatabase(primary);
      currentLsn = async () =>
        (await sql!<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`)[0]!.lsn;
      await insertNode(sql, "standby-one", "debian");
      const caughtUp = async () => {
        const lsn = await currentLsn();
        for (let i = 0; i < 400; i++) {
          const replayed = await pair.onStandby(
            `select pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn`,
          );
          if (replayed.trim() === "t") return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error("The standby did not replay the primary's WAL");
      };
      await caughtUp();

      await t.step("board and status read from the standby, saying its replay lag", async () => {
        const board = await controlCli(["board", "--database-read", standby], {});
        assertEquals(board.code, 0, board.stderr);
        assertMatch(
          board.stdout,
          /^read from standby postgres:\/\/postgres@127\.0\.0\.1:\d+\/inventory: its data is 0\.0 s behind the primary\n/,
        );
        assertMatch(board.stdout, /standby-one/);
        const json = await controlCli(["board", "--json", "--database-read", standby], {});
        const parsed = JSON.parse(json.stdout);
        assertEquals(parsed.readFrom.kind, "standby");
        assertEquals(parsed.readFrom.streaming, true);
        assertEquals(parsed.readFrom.replayLagMs, 0);
        assertEquals(parsed.readFrom.stale, false);
        assertEquals(parsed.machines.map((m: { name: string }) => m.name), ["standby-one"]);
        const status = await controlCli(["status", "--database-read", standby], {});
        // The node never spoke: status says so (exit 1), read from the standby.
        assertEquals(status.code, 1, status.stderr);
        assertMatch(status.stdout, /read from standby .*\n1 of 1 nodes are not doing/);
      });

      await t.step("a primary given as the standby is refused, naming it", async () => {
        const out = await controlCli(["status", "--database-read", primary], {});
        assertEquals(out.code, 2, out.stdout);
        assertMatch(
          out.stderr,
          /Cannot read from standby "postgres:\/\/postgres@127\.0\.0\.1:\d+\/inventory": it is not a standby/,
        );
        assertEquals(out.stdout, "");
      });

      await t.step(
        "a standby lagging beyond the limit: the board says its data is stale",
        async () => {
          await pair.onStandby("select pg_wal_replay_pause()");
          await insertNode(sql!, "standby-two", "debian");
          const lsn = await currentLsn();
          for (let i = 0; i < 400; i++) {
            const received = await pair.onStandby(
              `select pg_last_wal_receive_lsn() >= '${lsn}'::pg_lsn`,
            );
            if (received.trim() === "t") break;
            await new Promise((r) => setTimeout(r, 50));
          }
          const board = await controlCli(
            ["board", "--database-read", standby, "--max-lag", "1ms"],
            {},
          );
          assertEquals(board.code, 0, board.stderr);
          assertMatch(
            board.stdout,
            /^read from standby .*: its data is [\d.]+ s behind the primary, beyond the limit of 0\.001 s; what follows may be out of date\n/,
          );
          // What the standby has not replayed is not on its board: it is read from the standby.
          assert(!board.stdout.includes("standby-two"), board.stdout);
          const json = JSON.parse(
            (await controlCli(
              ["board", "--json", "--database-read", standby, "--max-lag", "1ms"],
              {},
            ))
              .stdout,
          );
          assertEquals(json.readFrom.stale, true);
          assert(json.readFrom.replayLagMs > 1, String(json.readFrom.replayLagMs));
          // The primary has it: every write went there.
          const primaryBoard = await controlCli(["board"], env);
          assertMatch(primaryBoard.stdout, /standby-two/);
          await pair.onStandby("select pg_wal_replay_resume()");
        },
      );
    } finally {
      await sql?.end({ timeout: 1 });
      await pair.remove();
    }
  },
);
