/**
 * `deno task test:fast` (scripts/test_fast.ts): the tier is chosen by what each test file imports,
 * so a lab or browser test is left to the whole suite without being listed; its files are split
 * by expected time over processes that run at the same time, and their counts added up.
 */

import { assert, assertEquals, assertMatch, assertThrows } from "../support/assert.ts";
import {
  closingLine,
  estimates,
  fastRun,
  fastTier,
  runTier,
  SECONDS_PER_BYTE,
  shard,
  shardOption,
  tally,
} from "../../scripts/test_fast.ts";
import { FREE_PORTS, freePort } from "../support/mod.ts";

Deno.test("test:fast leaves out the lab, Chromium and cluster tests by their imports, and keeps the rest", async () => {
  const { fast, whole, alone } = await fastTier();
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
    "builds two aarch64 one-file hosts and starts their runtime under qemu: about 86 s, " +
      "for what only a cross-architecture build changes",
  );
  // End to end, and it stops the machine's broker under the tests run beside it.
  assertMatch(whole.get("tests/control/link_e2e_test.ts") ?? "", /stops the machine's RabbitMQ/);
  // In the fast tier, with nothing beside it: it wants the whole machine as it was.
  assertMatch(alone.get("tests/reconcile/run_test.ts") ?? "", /another test opens meanwhile/);
  assert(fast.includes("tests/reconcile/run_test.ts"));
  assertEquals([...alone.keys()].filter((f) => !fast.includes(f)), []);
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

Deno.test("test:fast splits its files by expected time, longest first to the least loaded process", () => {
  const cost = new Map(Object.entries({ a: 10, b: 6, c: 5, d: 4, e: 3, f: 2 }));
  const files = [...cost.keys()];
  const two = shard(files, cost, 2);
  // a, then b, c to the other; d back to a's, e to b's, f to the lesser (a tie: the first).
  assertEquals(two, [["a", "d", "f"], ["b", "c", "e"]]);
  const sum = (s: string[]) => s.reduce((t, f) => t + cost.get(f)!, 0);
  assertEquals(two.map(sum), [16, 14]);
  assertEquals(shard(files, cost, 1), [files]);
  // No empty process: at most one per file.
  assertEquals(shard(["b", "a"], cost, 4), [["a"], ["b"]]);
  assertEquals(shard([], cost, 2), []);
  assertMatch(assertThrows(() => shard(files, cost, 0), RangeError).message, /must be >= 1/);
});

Deno.test("test:fast expects a file's recorded time, else its size at the recorded files' rate", () => {
  const sizes = { "a_test.ts": 1000, "b_test.ts": 500, "c_test.ts": 3000 };
  const got = estimates(Object.keys(sizes), { "a_test.ts": 10, "gone_test.ts": 99 }, sizes);
  assertEquals([...got], [["a_test.ts", 10], ["b_test.ts", 5], ["c_test.ts", 30]]);
  // Nothing recorded: the rate measured once over the whole tier.
  const none = estimates(["b_test.ts"], {}, sizes);
  assertEquals(none.get("b_test.ts"), 500 * SECONDS_PER_BYTE);
});

Deno.test("test:fast reads deno test's closing line, coloured or not, and --shards", () => {
  assertEquals(
    tally("\x1b[0m\x1b[32mok\x1b[0m | 7 passed | 0 failed \x1b[0m\x1b[38;5;245m(4s)\x1b[0m"),
    {
      passed: 7,
      steps: 0,
      failed: 0,
      ignored: 0,
    },
  );
  assertEquals(
    tally("FAILED | 5 passed (12 steps) | 2 failed (1 step) | 3 ignored (7m30s)"),
    { passed: 5, steps: 13, failed: 2, ignored: 3 },
  );
  assertEquals(tally("a test named ok | 7 passed ... ok (1ms)"), undefined);
  assertEquals(shardOption(["--filter", "x", "--shards", "3"]), { n: 3, rest: ["--filter", "x"] });
  assertEquals(shardOption(["--shards=1", "--fail-fast"]), { n: 1, rest: ["--fail-fast"] });
  assertEquals(shardOption([]).n, (navigator.hardwareConcurrency || 1) + 1);
  assertMatch(
    assertThrows(() => shardOption(["--shards", "0"]), Error).message,
    /^Reading --shards failed/,
  );
});

Deno.test("test:fast runs its processes side by side, then the alone files, says lines prefixed and adds up counts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-test-fast-" });
  try {
    // Each file waits for the other's mark: they pass only when both processes run at once. Then
    // each marks itself done, and the alone file passes only when both are done and nothing else
    // has started.
    const file = (me: string, other: string, extra = "") =>
      `Deno.test("${me} meets ${other}", async () => {\n` +
      `  await Deno.writeTextFile("${dir}/${me}", "");\n` +
      `  for (let i = 0; i < 600; i++) {\n` +
      `    if (await Deno.stat("${dir}/${other}").then(() => true, () => false)) {\n` +
      `      await Deno.writeTextFile("${dir}/${me}.done", "");\n` +
      `      return;\n` +
      `    }\n` +
      `    await new Promise((r) => setTimeout(r, 50));\n` +
      `  }\n` +
      `  throw new Error("${other} never ran beside ${me}");\n` +
      `});\n${extra}`;
    await Deno.writeTextFile(`${dir}/a_test.ts`, file("a", "b"));
    await Deno.writeTextFile(
      `${dir}/b_test.ts`,
      file(
        "b",
        "a",
        `Deno.test("b fails on purpose", () => { throw new Error("on purpose"); });\n`,
      ),
    );
    await Deno.writeTextFile(
      `${dir}/c_test.ts`,
      `Deno.test("c runs after a and b", async () => {\n` +
        `  const names = [];\n` +
        `  for await (const e of Deno.readDir("${dir}")) if (!e.name.endsWith(".ts")) names.push(e.name);\n` +
        `  if (names.sort().join() !== "a,a.done,b,b.done") throw new Error(names.join());\n` +
        `});\n`,
    );
    const said: string[] = [];
    const outcome = await runTier(
      { shards: [[`${dir}/a_test.ts`], [`${dir}/b_test.ts`]], alone: [`${dir}/c_test.ts`] },
      ["--no-check"],
      (line, stream) => said.push(`${stream} ${line}`),
    );
    const all = said.join("\n");
    assertEquals(outcome.total, { passed: 3, steps: 0, failed: 1, ignored: 0 }, all);
    assertEquals(outcome.code, 1);
    assertEquals(
      outcome.shards.map((s) => [s.label, s.files, s.code, s.tally?.passed, s.tally?.failed]),
      [["1", 1, 0, 1, 0], ["2", 1, 1, 1, 1], ["alone", 1, 0, 1, 0]],
    );
    assert(said.some((l) => /^stdout \[1\] .*a meets b \.\.\. .*ok/.test(l)), all);
    assert(said.some((l) => /^stdout \[2\] .*b meets a \.\.\. .*ok/.test(l)), all);
    assert(said.some((l) => /^stdout \[alone\] .*c runs after a and b \.\.\. .*ok/.test(l)), all);
    assert(said.every((l) => /^std(out|err) \[(1|2|alone)\] /.test(l)), all);
    // The failure is kept to be said again at the end of the run, under its process.
    assert(outcome.shards[1]!.failures.some((f) => f.startsWith("b fails on purpose")), all);
    const durations = Object.keys(outcome.durations).map((f) => f.replace(/^.*\//, "")).sort();
    assertEquals(durations, ["a_test.ts", "b_test.ts", "c_test.ts"]);
    assertEquals(
      closingLine(outcome, 65),
      "FAILED | 3 passed | 1 failed | 0 ignored (1m05s) in 3 processes",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("freePort draws below the ephemeral range, so no process's connect takes it, and skips a port in use", () => {
  const [low, high] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim()
    .split(/\s+/).map(Number);
  for (let i = 0; i < 200; i++) {
    const port = freePort();
    assert(port >= FREE_PORTS.from && port <= FREE_PORTS.to, `${port}`);
    assert(port < low! || port > high!, `${port} is in the ephemeral range ${low}-${high}`);
  }
  const held = Deno.listen({ hostname: "127.0.0.1", port: freePort() });
  try {
    const port = (held.addr as Deno.NetAddr).port;
    for (let i = 0; i < 20; i++) {
      assertEquals(freePort({ from: port, to: port + 1 }), port + 1);
    }
    assertMatch(
      assertThrows(() => freePort({ from: port, to: port }), Error).message,
      /^Cannot find a free port/,
    );
  } finally {
    held.close();
  }
});
