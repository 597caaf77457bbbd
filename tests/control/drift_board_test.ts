/**
 * Both verdicts on the board, against the REAL command line over a real inventory seeded with a
 * node in every drift state (./drift_estate.ts): clean, drift with counts, unobservable,
 * unreadable, stale (dead-man: its last result is older than twice its interval), not checked
 * (runs no mesh-reconcile) and never spoke.
 *
 * - `board --json` gives each node its drift verdict with counts per check and direction; the
 *   board's properties hold for every new field (nothing null, no time for a node that never
 *   reconciled, no key named like a secret).
 * - `status` lists exactly the nodes not doing what they were told or with a drift alarm, exits
 *   1, and `--json` carries the same; "not checked" is never listed as clean nor as an alarm.
 * - a report without a summary takes the node back to "not checked" (not its old verdict).
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { controlCli, freshInventory } from "./support.ts";
import { ATTENTION, EXPECTED_DRIFT, NODES, seedDriftEstate } from "./drift_estate.ts";
import { recordDrift } from "../../control/drift.ts";

const SECRET_KEY = /pass|token|secret|key|credential|auth|cookie|private/i;

interface DriftOut {
  verdict: string;
  words: string;
  findings: number;
  counts: { check: string; direction: string; count: number }[];
  last?: string;
  ranAt?: string;
  ageSeconds?: number;
  intervalSeconds?: number;
  registry?: string;
  unobserved?: string[];
  path?: string;
  problem?: string;
}

interface MachineOut {
  name: string;
  verdict: string;
  drift: DriftOut;
}

function* walk(value: unknown, path = "$", key = ""): Generator<[string, string, unknown]> {
  yield [path, key, value];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* walk(v, `${path}[${i}]`, key);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) yield* walk(v, `${path}.${k}`, k);
  }
}

Deno.test("the board and status show each node's drift verdict next to its declaration verdict", async (t) => {
  const inv = await freshInventory();
  try {
    await seedDriftEstate(inv);
    const boardOut = await controlCli(["board", "--json"], inv.env);
    assertEquals(boardOut.code, 0, boardOut.stderr);
    const board = JSON.parse(boardOut.stdout) as {
      driftCounts: Record<string, number>;
      machines: MachineOut[];
    };
    const byName = new Map(board.machines.map((m) => [m.name, m]));

    await t.step("each node has its drift verdict", () => {
      assertEquals(
        Object.fromEntries(board.machines.map((m) => [m.name, m.drift.verdict])),
        EXPECTED_DRIFT,
      );
      assertEquals(board.driftCounts, {
        "drift": 2,
        "unobservable": 1,
        "unreadable": 1,
        "stale": 1,
        "not-checked": 2,
        "clean": 1,
      });
    });

    await t.step("drift carries counts per check and direction, when and how often", () => {
      const rogue = byName.get(NODES.rogue)!.drift;
      assertEquals(rogue.counts, [{ check: "port", direction: "rogue", count: 1 }]);
      assertEquals([rogue.findings, rogue.intervalSeconds, rogue.last], [1, 900, "drift"]);
      assert(rogue.ranAt !== undefined && rogue.ageSeconds! >= 60, JSON.stringify(rogue));
      assertEquals(rogue.registry, "/var/lib/mesh/reconcile/registry.yaml");
      const failed = byName.get(NODES.failed)!.drift;
      assertEquals(failed.counts, [
        { check: "container", direction: "missing", count: 2 },
        { check: "port", direction: "rogue", count: 1 },
      ]);
      assertEquals(failed.findings, 3);
      assertEquals(byName.get(NODES.blind)!.drift.unobserved, ["podman@root"]);
      const unreadable = byName.get(NODES.unreadable)!.drift;
      assertEquals(unreadable.path, "/var/lib/mesh/reconcile/result.json");
      assertStringIncludes(unreadable.problem!, "truncated");
    });

    await t.step("stale: the last result is older than twice its interval", () => {
      const stale = byName.get(NODES.stale)!.drift;
      assertEquals([stale.verdict, stale.last], ["stale", "clean"]);
      assert(stale.ageSeconds! > 2 * 900, JSON.stringify(stale));
      // Judged on our clock: a result as old at the node but carried by a fresh report is not.
      assertEquals(byName.get(NODES.clean)!.drift.verdict, "clean");
    });

    await t.step("not checked and never spoke carry no time, nothing is null", () => {
      for (const name of [NODES.unchecked, NODES.silent]) {
        const d = byName.get(name)!.drift;
        assertEquals(d, { verdict: "not-checked", words: "not checked", findings: 0, counts: [] });
      }
      for (const [path, key, value] of walk(board)) {
        assert(value !== null, `${path} is null`);
        assert(!SECRET_KEY.test(key), `${path}: a key named like a secret`);
        assert(!(typeof value === "string" && value.startsWith("1970")), `${path} is 1970`);
      }
    });

    await t.step("machines needing attention come first", () => {
      const order = board.machines.map((m) => m.name);
      const last = order.slice(-2);
      assertEquals(last.sort(), [NODES.clean, NODES.unchecked].sort(), order.join(" "));
    });

    await t.step(
      "status lists drift, unobservable, unreadable and stale, and exits 1",
      async () => {
        const text = await controlCli(["status"], inv.env);
        assertEquals(text.code, 1, text.stderr);
        const listed = text.stdout.split("\n").slice(1).filter((l) => /^\S/.test(l))
          .map((l) => l.split(/\s+/)[0]).sort();
        assertEquals(listed, [...ATTENTION].sort(), text.stdout);
        assertStringIncludes(text.stdout, "drift: drift (1 port/rogue)");
        assertStringIncludes(text.stdout, "drift: stale (last result clean)");
        // Machine text is escaped: the hostile problem cannot carry a control character.
        assert(!text.stdout.includes("\u001b"));
        const json = await controlCli(["status", "--json"], inv.env);
        assertEquals(json.code, 1, json.stderr);
        const status = JSON.parse(json.stdout) as {
          behind: number;
          drifting: number;
          driftCounts: Record<string, number>;
          machines: MachineOut[];
        };
        assertEquals(status.machines.map((m) => m.name).sort(), [...ATTENTION].sort());
        assertEquals([status.behind, status.drifting], [2, 5]);
        assertEquals(status.driftCounts, board.driftCounts);
      },
    );

    await t.step("a report without a summary takes the node back to not checked", async () => {
      await inv.sql.begin(async (tx) => {
        await recordDrift(tx, [{
          kind: "report",
          node: NODES.rogue,
          generation: 1,
          trigger: "interval",
          at: new Date().toISOString(),
          hostVersion: "0.1.0-test",
          outcome: "applied",
          applied: 8,
          total: 8,
          declaration: `sha256:${"a".repeat(64)}`,
          changes: [],
          problems: [],
        }]);
      });
      const out = await controlCli(["board", "--json"], inv.env);
      const again = JSON.parse(out.stdout) as { machines: MachineOut[] };
      assertEquals(
        again.machines.find((m) => m.name === NODES.rogue)!.drift.verdict,
        "not-checked",
      );
    });
  } finally {
    await inv.drop();
  }
});
