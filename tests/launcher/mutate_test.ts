/**
 * The mutation run (mutate.ts) as part of the suite: every listed fault in a copy of
 * launcher.sh must make the launcher suite fail, having run to its end; the syntax control
 * must be reported as syntax. A fault that survives, aborts the harness, breaks the syntax or
 * no longer applies fails this test, with the table.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { mutate, MUTATIONS, table } from "./mutate.ts";

Deno.test("launcher mutations: every fault is caught by the launcher suite", async () => {
  const { tests, results } = await mutate({ concurrency: 7 });
  assert(tests >= 30, `the baseline ran ${tests} tests`);
  assertEquals(results.length, MUTATIONS.length);
  const bad = results.filter((r) => !r.expected);
  assertEquals(bad.map((r) => `${r.name}: ${r.verdict}`), [], table(results));
});
