/**
 * `deno task test:fast` (scripts/test_fast.ts): the tier is chosen by what each test file imports,
 * so a lab or browser test is left to the whole suite without being listed.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { fastRun, fastTier } from "../../scripts/test_fast.ts";

Deno.test("test:fast leaves out the lab, Chromium and cluster tests by their imports, and keeps the rest", async () => {
  const { fast, whole } = await fastTier();
  assertEquals(
    whole.get("tests/lab/fleet_test.ts"),
    "boots lab machines (podman containers with a real init)",
  );
  // Through a support module: host/lab_e2e_test.ts imports tests/lab/mod.ts itself.
  assert(whole.has("tests/host/lab_e2e_test.ts"));
  assertEquals(whole.get("tests/control/board_html_test.ts"), "drives headless Chromium");
  assertEquals(
    whole.get("tests/control/scale_out_test.ts"),
    "starts a RabbitMQ cluster of its own",
  );
  // By its marker, whose reason may run over several comment lines.
  assertEquals(
    whole.get("tests/host/onefile_arch_test.ts"),
    "builds two aarch64 one-file hosts and starts their runtime under qemu: 86 s of " +
      "test:fast's 17 minutes, for what only a cross-architecture build changes",
  );
  for (const kept of ["tests/lib/wire_trust_test.ts", "tests/scripts/test_fast_test.ts"]) {
    assert(fast.includes(kept), `${kept} is in the fast tier`);
  }
  assertEquals(fast.filter((f) => whole.has(f)), []);
  assert(fast.length > 50, `${fast.length} fast files`);
});

Deno.test("test:fast runs its files with MESH_TEST_TIER=fast, its arguments before them", () => {
  const run = fastRun(["tests/a_test.ts"], ["--filter", "x"]);
  assertEquals(run.env, { MESH_TEST_TIER: "fast" });
  assertEquals(run.args, ["test", "-A", "--no-check=remote", "--filter", "x", "tests/a_test.ts"]);
});
