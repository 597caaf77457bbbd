/**
 * `deno task test:fast`: the suite without the tests that boot lab machines, drive a browser or
 * start clusters of their own, for the edit loop (docs/testing.md, "Tiers"). `deno task test` is
 * the whole suite, and CI runs that.
 *
 * A test file is left out when its static imports reach one of {@linkcode SLOW_SUPPORT} (so a new
 * lab or browser test is left out without being listed), or when it says `@tier whole` in its
 * first comment (with the reason beside it). Arguments are passed on to `deno test` (`--filter`,
 * `--fail-fast`, ...). The run has `MESH_TEST_TIER=fast` ({@linkcode TIER_VARIABLE}): a test that
 * repeats its work many times (fuzz inputs, kill points, mutations) takes a smaller count then
 * (tests/support/tier.ts).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { TIER_VARIABLE } from "../tests/support/tier.ts";

/** Test support modules whose users belong to the whole suite only, and why. */
export const SLOW_SUPPORT: Record<string, string> = {
  "tests/lab/mod.ts": "boots lab machines (podman containers with a real init)",
  "tests/support/chromium.ts": "drives headless Chromium",
  "tests/support/rabbit_cluster.ts": "starts a RabbitMQ cluster of its own",
  "tests/support/pg_standby.ts": "starts a PostgreSQL primary and standby of its own",
};

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The test files under tests/ (`*_test.ts`), relative to the root, sorted. */
async function testFiles(dir = "tests"): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...await testFiles(path));
    else if (entry.isFile && entry.name.endsWith("_test.ts")) out.push(path);
  }
  return out.sort();
}

/**
 * The files of the fast tier and those left out with the reason, from one `deno info --json` of
 * every test file (static imports only: a dynamic import runs when its test runs).
 *
 * @throws {Error} when `deno info` fails.
 */
export async function fastTier(): Promise<{ fast: string[]; whole: Map<string, string> }> {
  const files = await testFiles();
  const whole = new Map<string, string>();
  for (const file of files) {
    const head = (await Deno.readTextFile(`${ROOT}${file}`)).slice(0, 4000);
    const marked = /@tier whole\b\s*(?:\(([^)]*)\))?/.exec(head);
    // A reason may run over several comment lines: their leaders (` * `, `// `) are dropped.
    const why = marked?.[1]?.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, " ").trim();
    if (marked !== null) whole.set(file, why || "marked @tier whole");
  }
  // `deno info` takes one root: a temporary module importing every test file (never run).
  const rootFile = await Deno.makeTempFile({ prefix: "mesh-test-fast-", suffix: ".ts" });
  let info: Deno.CommandOutput;
  try {
    await Deno.writeTextFile(
      rootFile,
      files.map((f) => `import ${JSON.stringify(new URL(f, `file://${ROOT}`).href)};\n`).join(""),
    );
    info = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", `${ROOT}deno.json`, rootFile],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } finally {
    await Deno.remove(rootFile).catch(() => {});
  }
  if (!info.success) {
    throw new Error(`deno info failed: ${new TextDecoder().decode(info.stderr).slice(-2000)}`);
  }
  const graph = JSON.parse(new TextDecoder().decode(info.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; isDynamic?: boolean }[];
    }[];
  };
  const deps = new Map(
    graph.modules.map((m) => [
      m.specifier,
      (m.dependencies ?? []).filter((d) => !d.isDynamic).flatMap((d) =>
        d.code?.specifier === undefined ? [] : [d.code.specifier]
      ),
    ]),
  );
  const slow = new Map(
    Object.entries(SLOW_SUPPORT).map(([path, why]) => [new URL(path, `file://${ROOT}`).href, why]),
  );
  const reach = (specifier: string): string | undefined => {
    const seen = new Set<string>();
    const stack = [specifier];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (seen.has(s)) continue;
      seen.add(s);
      const why = slow.get(s);
      if (why !== undefined && s !== specifier) return why;
      stack.push(...(deps.get(s) ?? []));
    }
    return undefined;
  };
  for (const file of files) {
    if (whole.has(file)) continue;
    const why = reach(new URL(file, `file://${ROOT}`).href);
    if (why !== undefined) whole.set(file, why);
  }
  return { fast: files.filter((f) => !whole.has(f)), whole };
}

/**
 * How `deno test` is run for the fast tier: over `files`, with `args` before them, and with
 * `MESH_TEST_TIER=fast`, by which a test that repeats its work takes its smaller count.
 */
export function fastRun(files: string[], args: string[]): Deno.CommandOptions {
  return {
    args: ["test", "-A", "--no-check=remote", ...args, ...files],
    cwd: ROOT,
    env: { [TIER_VARIABLE]: "fast" },
  };
}

if (import.meta.main) {
  const { fast, whole } = await fastTier();
  if (Deno.args.includes("--list")) {
    for (const f of fast) console.log(`fast   ${f}`);
    for (const [f, why] of whole) console.log(`whole  ${f}: ${why}`);
    Deno.exit(0);
  }
  console.error(
    `test:fast: ${fast.length} files; ${whole.size} left to the whole suite (--list says which)`,
  );
  const child = new Deno.Command(Deno.execPath(), fastRun(fast, Deno.args)).spawn();
  Deno.exit((await child.status).code);
}
