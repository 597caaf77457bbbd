/**
 * The mutation run (mutate.ts) as part of the suite: every listed fault in a copy of
 * launcher.sh must make the launcher suite fail, having run to its end; the syntax control
 * must be reported as syntax. A fault that survives, aborts the harness, breaks the syntax or
 * no longer applies fails this test, with the table.
 *
 * In the fast tier (`deno task test:fast`, tests/support/tier.ts) every fault is still applied,
 * but the suite runs against a sample of them only, drawn by a seed it prints
 * (`MESH_MUTATE_SEED` replays it): each run of the suite costs several seconds.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { rng } from "../support/rng.ts";
import { FAST_TIER } from "../support/tier.ts";
import { apply, mutate, MUTATIONS, table } from "./mutate.ts";

/**
 * How many faults the fast tier runs the suite against (the syntax control besides): a fault
 * caught may cost the suite a deadline per test, up to a minute.
 */
const FAST_SAMPLE = 1;

/** The faults of this run: all of them, or in the fast tier a seeded sample and the controls. */
function chosen(): typeof MUTATIONS {
  if (!FAST_TIER) return MUTATIONS;
  const given = Deno.env.get("MESH_MUTATE_SEED");
  const seed = given ? Number(given) >>> 0 : crypto.getRandomValues(new Uint32Array(1))[0]!;
  console.log(`mutation sample seed ${seed} (replay with MESH_MUTATE_SEED=${seed})`);
  const r = rng(seed);
  const faults = MUTATIONS.filter((m) => m.control === undefined);
  const sample = new Set<(typeof MUTATIONS)[number]>();
  while (sample.size < Math.min(FAST_SAMPLE, faults.length)) sample.add(r.pick(faults));
  return MUTATIONS.filter((m) => m.control !== undefined || sample.has(m));
}

Deno.test("launcher mutations: every fault is caught by the launcher suite", async () => {
  if (FAST_TIER) {
    // Every fault still applies to the launcher as it is, whichever the suite runs against (the
    // whole suite's table says so of each as "not-applied").
    const source = await Deno.readTextFile(new URL("../../launcher.sh", import.meta.url));
    const unapplied = MUTATIONS.flatMap((m) => {
      try {
        apply(source, m);
        return [];
      } catch (error) {
        return [`${m.name}: not-applied: ${(error as Error).message}`];
      }
    });
    assertEquals(unapplied, []);
  }
  const mutations = chosen();
  const { tests, results } = await mutate({ mutations, concurrency: 7 });
  assert(tests >= 30, `the baseline ran ${tests} tests`);
  assertEquals(results.length, mutations.length);
  const bad = results.filter((r) => !r.expected);
  assertEquals(bad.map((r) => `${r.name}: ${r.verdict}`), [], table(results));
});
