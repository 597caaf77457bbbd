/**
 * Report retention against the real PostgreSQL: `mesh-control prune --keep` deletes old reports
 * and keeps each node's latest, however old; bad input is refused with nothing deleted.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { controlCli, freshInventory } from "./support.ts";
import { insertNode } from "../../control/inventory.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

Deno.test("prune keeps recent reports and each node's latest", opts, async () => {
  const inv = await freshInventory();
  try {
    await insertNode(inv.sql, "busy", "debian");
    await insertNode(inv.sql, "quiet", "debian");
    // busy: 30 reports, one a day, the newest today; quiet: 3 reports, the newest 40 days ago.
    const digest = `sha256:${"a".repeat(64)}`;
    const rows: [string, number][] = [];
    for (let d = 0; d < 30; d++) rows.push(["busy", d]);
    for (const d of [40, 41, 42]) rows.push(["quiet", d]);
    // Inserted oldest first, as ingest would have (ids grow with time).
    rows.sort((a, b) => b[1] - a[1]);
    for (const [node, daysAgo] of rows) {
      await inv.sql`
        insert into reports (node, generation, digest, outcome, applied, total, trigger,
          problems, changes, host_version, reported_at, received_at)
        values (${node}, 1, ${digest}, 'applied', 1, 1, 'interval', '[]', '[]', 't',
          now() - make_interval(days => ${daysAgo}), now() - make_interval(days => ${daysAgo}))`;
    }
    const refused = await controlCli(["prune", "--keep", "10m"], inv.env);
    assertEquals(refused.code, 2);
    assertMatch(refused.stderr, /--keep: at least 1h, not "10m"/);

    const dry = await controlCli(["prune", "--keep", "14d", "--dry-run"], inv.env);
    assertEquals(dry.code, 0, dry.stderr);
    // busy: days 14..29 are older than 14 days (16 reports); quiet: 2 of 3 (its latest stays).
    assertMatch(dry.stdout, /^would delete 18 reports received before .*; 15 would be left\n/);
    const counted = await inv.sql<{ n: number }[]>`select count(*)::int as n from reports`;
    assertEquals(counted[0]!.n, 33);

    const out = await controlCli(["prune", "--keep", "14d"], inv.env);
    assertEquals(out.code, 0, out.stderr);
    assertMatch(out.stdout, /^deleted 18 reports received before .*; 15 left\n/);
    const left = await inv.sql<{ node: string; n: number; oldest: number }[]>`
      select node, count(*)::int as n,
        max(extract(day from now() - received_at))::int as oldest
      from reports group by node order by node`;
    assertEquals(left.map((r) => [r.node, r.n]), [["busy", 14], ["quiet", 1]]);
    // The quiet node keeps its last word: the board still knows what it last said.
    const board = await controlCli(["board", "--json"], inv.env);
    const quiet = JSON.parse(board.stdout).machines.find((m: { name: string }) =>
      m.name === "quiet"
    );
    assertEquals(typeof quiet.lastReportAt, "string");
    // Running it again deletes nothing more.
    const again = await controlCli(["prune", "--keep", "14d"], inv.env);
    assertMatch(again.stdout, /^deleted 0 reports/);
  } finally {
    await inv.drop();
  }
});
