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
 * The files are run by one `deno test` process per core and one more (`--shards N` says otherwise),
 * split by the seconds each took in the last whole run here ({@linkcode DURATIONS_FILE}), or by
 * size for a file with none; each process's lines are said prefixed with its number (`[1] `), and
 * the run closes with their counts added up. Separate processes, not `deno test --parallel`: a
 * test's environment variables and working directory are its process's own. What files share across
 * processes is made unique per test (databases, broker vhosts, node names, temporary directories);
 * a file that stops a shared service is left to the whole suite, and a file whose test reads the
 * whole machine (every listening socket, every container) and wants it as it was says `@tier alone
 * (why)` in its first comment: it runs after the others, with nothing beside it.
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
 * every test file (static imports only: a dynamic import runs when its test runs); `alone`, the
 * fast files marked `@tier alone`, with the reason.
 *
 * @throws {Error} when `deno info` fails.
 */
export async function fastTier(): Promise<
  { fast: string[]; whole: Map<string, string>; alone: Map<string, string> }
> {
  const files = await testFiles();
  const whole = new Map<string, string>();
  const alone = new Map<string, string>();
  for (const file of files) {
    const head = (await Deno.readTextFile(`${ROOT}${file}`)).slice(0, 4000);
    const marked = /@tier (whole|alone)\b\s*(?:\(([^)]*)\))?/.exec(head);
    if (marked === null) continue;
    // A reason may run over several comment lines: their leaders (` * `, `// `) are dropped.
    const why = marked[2]?.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, " ").trim();
    (marked[1] === "whole" ? whole : alone).set(file, why || `marked @tier ${marked[1]}`);
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
  for (const file of whole.keys()) alone.delete(file);
  return { fast: files.filter((f) => !whole.has(f)), whole, alone };
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

/** Where the seconds each fast file took are kept between runs (`dist/` is not committed). */
export const DURATIONS_FILE = `${ROOT}dist/test/durations.json`;

/**
 * The rate of a file with no recorded time, when no file has one: the fast tier's tests took 393 s
 * over 1,307,824 bytes of test files (2026-12-06, one process).
 */
export const SECONDS_PER_BYTE = 393 / 1_307_824;

/**
 * The seconds each file is expected to take: its recorded duration (`recorded`, seconds by path)
 * when there is one, else its size (`sizes`, bytes by path) at the rate the recorded files ran
 * (total seconds over total bytes), or at {@linkcode SECONDS_PER_BYTE} when nothing is recorded.
 */
export function estimates(
  files: string[],
  recorded: Record<string, number>,
  sizes: Record<string, number>,
): Map<string, number> {
  let seconds = 0;
  let bytes = 0;
  for (const f of files) {
    const s = recorded[f];
    if (s !== undefined && sizes[f] !== undefined) {
      seconds += s;
      bytes += sizes[f];
    }
  }
  const rate = seconds > 0 && bytes > 0 ? seconds / bytes : SECONDS_PER_BYTE;
  return new Map(files.map((f) => [f, recorded[f] ?? (sizes[f] ?? 0) * rate]));
}

/**
 * Splits `files` into at most `n` shards of about equal expected time: longest first, each to the
 * shard with the least so far (the longest-processing-time rule: the longest shard is within a
 * third of the best split). Each shard's files are in path order; no shard is empty.
 *
 * @throws {RangeError} when `n` is not a positive integer.
 */
export function shard(files: string[], cost: Map<string, number>, n: number): string[][] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`Shard count must be >= 1, not ${n}`);
  const shards = Array.from({ length: Math.min(n, files.length) }, () => ({
    files: [] as string[],
    total: 0,
  }));
  const order = [...files].sort((a, b) =>
    (cost.get(b) ?? 0) - (cost.get(a) ?? 0) || (a < b ? -1 : 1)
  );
  for (const f of order) {
    const least = shards.reduce((m, s) => (s.total < m.total ? s : m));
    least.files.push(f);
    least.total += cost.get(f) ?? 0;
  }
  return shards.map((s) => s.files.sort());
}

/** What one `deno test` process said at its end. */
export interface Tally {
  passed: number;
  steps: number;
  failed: number;
  ignored: number;
}

// deno test's closing line, e.g. "ok | 7 passed (2 steps) | 0 failed | 1 ignored (4s)".
const SUMMARY =
  /^(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?(?: \| (\d+) ignored(?: \((\d+) steps?\))?)?/;
// The line deno test prints as it starts a file's tests.
const RUNNING = /^running \d+ tests? from (\S+)/;
// deno's colours.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** The counts of deno test's closing line, or undefined when `line` is not one. */
export function tally(line: string): Tally | undefined {
  const m = SUMMARY.exec(line.replace(ANSI, "").trim());
  if (m === null) return undefined;
  return {
    passed: Number(m[1]),
    steps: Number(m[2] ?? 0) + Number(m[4] ?? 0) + Number(m[6] ?? 0),
    failed: Number(m[3]),
    ignored: Number(m[5] ?? 0),
  };
}

/** The outcome of {@linkcode runShards}. */
export interface ShardsOutcome {
  /** 0 when every process passed, else the first failing process's exit code. */
  code: number;
  /** The sum of the processes' closing lines. */
  total: Tally;
  /** Each process's closing counts (undefined when it ended without one) and exit code. */
  shards: {
    label: string;
    files: number;
    tally?: Tally;
    code: number;
    seconds: number;
    failures: string[];
  }[];
  /** Seconds from a file's first test starting to the next file's (or the process's end). */
  durations: Record<string, number>;
}

/** Splits a byte stream into lines (the last one even without its newline). */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    let at;
    while ((at = rest.indexOf("\n")) >= 0) {
      yield rest.slice(0, at);
      rest = rest.slice(at + 1);
    }
  }
  if (rest !== "") yield rest;
}

/**
 * Runs one `deno test` process per shard at the same time (each with {@linkcode fastRun}'s
 * options, so a test's environment variables and working directory are its process's own),
 * passing each line they print to `say` prefixed with the shard's number (`[1] `), and adds up
 * their closing lines. With `--fail-fast` among `args`, the first failing process ends the others.
 */
export async function runShards(
  shards: string[][],
  args: string[],
  say: (line: string, stream: "stdout" | "stderr") => void,
  labels: string[] = shards.map((_, i) => String(i + 1)),
): Promise<ShardsOutcome> {
  const durations: Record<string, number> = {};
  const children: Deno.ChildProcess[] = [];
  const one = async (files: string[], i: number) => {
    const prefix = `[${labels[i]}] `;
    const started = performance.now();
    const child = new Deno.Command(Deno.execPath(), {
      ...fastRun(files, args),
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    children.push(child);
    let current: { file: string; at: number } | undefined;
    const close = (at: number) => {
      if (current !== undefined) durations[current.file] = (at - current.at) / 1000;
      current = undefined;
    };
    let result: Tally | undefined;
    // The FAILURES list deno test prints before its closing line, to say again at the very end.
    const failures: string[] = [];
    let inFailures = false;
    const read = async (stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr") => {
      for await (const line of lines(stream)) {
        const plain = line.replace(ANSI, "");
        const running = RUNNING.exec(plain);
        if (running !== null) {
          close(performance.now());
          current = { file: running[1]!.replace(/^\.\//, ""), at: performance.now() };
        }
        const t = tally(plain);
        if (t !== undefined) {
          close(performance.now());
          result = t;
          inFailures = false;
        } else if (plain.trim() === "FAILURES") inFailures = true;
        else if (inFailures && plain.trim() !== "") failures.push(plain.trim());
        say(`${prefix}${line}`, name);
      }
    };
    await Promise.all([read(child.stdout, "stdout"), read(child.stderr, "stderr")]);
    const { code } = await child.status;
    close(performance.now());
    if (code !== 0 && args.includes("--fail-fast")) {
      for (const c of children) if (c !== child) c.kill("SIGTERM");
    }
    return {
      label: labels[i]!,
      files: files.length,
      tally: result,
      code,
      seconds: (performance.now() - started) / 1000,
      failures,
    };
  };
  return combine(await Promise.all(shards.map(one)), durations);
}

/** The outcome of processes run one after another or side by side, added up. */
function combine(
  shards: ShardsOutcome["shards"],
  durations: Record<string, number>,
): ShardsOutcome {
  const total: Tally = { passed: 0, steps: 0, failed: 0, ignored: 0 };
  for (const o of shards) {
    for (const k of ["passed", "steps", "failed", "ignored"] as const) {
      total[k] += o.tally?.[k] ?? 0;
    }
  }
  return { code: shards.find((o) => o.code !== 0)?.code ?? 0, total, shards, durations };
}

/**
 * Runs the fast tier: the `shards` side by side ({@linkcode runShards}), then the `alone` files
 * in one process with nothing beside it (said as `[alone] `), unless `--fail-fast` is given and a
 * shard failed.
 */
export async function runTier(
  plan: { shards: string[][]; alone: string[] },
  args: string[],
  say: (line: string, stream: "stdout" | "stderr") => void,
): Promise<ShardsOutcome> {
  const side = await runShards(plan.shards, args, say);
  if (plan.alone.length === 0 || (side.code !== 0 && args.includes("--fail-fast"))) return side;
  const alone = await runShards([plan.alone], args, say, ["alone"]);
  return combine([...side.shards, ...alone.shards], { ...side.durations, ...alone.durations });
}

/** "3m05s" from seconds. */
function minutes(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/**
 * The run's closing line, deno test's shape over every process:
 * `ok | 611 passed (90 steps) | 0 failed | 0 ignored (3m50s) in 2 processes`.
 */
export function closingLine(outcome: ShardsOutcome, seconds: number): string {
  const t = outcome.total;
  const steps = t.steps > 0 ? ` (${t.steps} steps)` : "";
  const silent = outcome.shards.filter((s) => s.tally === undefined).length;
  const verdict = outcome.code === 0 ? "ok" : "FAILED";
  const processes = `${outcome.shards.length} process${outcome.shards.length === 1 ? "" : "es"}`;
  return `${verdict} | ${t.passed} passed${steps} | ${t.failed} failed | ${t.ignored} ignored ` +
    `(${minutes(seconds)}) in ${processes}` +
    (silent > 0 ? `; ${silent} ended without a summary (see its output above)` : "");
}

/**
 * `--shards N` (or `--shards=N`) taken out of `args`; the default is one more than this machine's
 * cores: the tests wait on the broker, PostgreSQL and their children for about a third of the
 * run, so a third process fills 2 cores (measured in docs/testing.md).
 */
export function shardOption(args: string[]): { n: number; rest: string[] } {
  const rest: string[] = [];
  let n = (navigator.hardwareConcurrency || 1) + 1;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = a === "--shards" ? args[++i] : a.startsWith("--shards=") ? a.slice(9) : undefined;
    if (value === undefined) {
      rest.push(a);
      continue;
    }
    n = Number(value);
    if (!Number.isInteger(n) || n < 1) {
      throw new Error(`Reading --shards failed: "${value}" is not a whole number of at least 1`);
    }
  }
  return { n, rest };
}

/** The recorded durations (seconds by path); none when the file is missing or unreadable. */
async function readDurations(): Promise<Record<string, number>> {
  try {
    const parsed = JSON.parse(await Deno.readTextFile(DURATIONS_FILE));
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, number] =>
        typeof e[1] === "number" && Number.isFinite(e[1]) && e[1] >= 0
      ),
    );
  } catch {
    return {};
  }
}

if (import.meta.main) {
  const { n, rest } = shardOption(Deno.args);
  const { fast, whole, alone } = await fastTier();
  const sizes: Record<string, number> = {};
  for (const f of fast) sizes[f] = (await Deno.stat(`${ROOT}${f}`)).size;
  const recorded = await readDurations();
  const cost = estimates(fast, recorded, sizes);
  const plan = {
    shards: shard(fast.filter((f) => !alone.has(f)), cost, n),
    alone: [...alone.keys()],
  };
  const expect = (f: string) =>
    `${cost.get(f)!.toFixed(1)} s ${f in recorded ? "as last time" : "by its size"}`;
  if (rest.includes("--list")) {
    plan.shards.forEach((files, i) => {
      for (const f of files) console.log(`fast[${i + 1}]  ${f}: ${expect(f)}`);
    });
    for (const f of plan.alone) console.log(`fast alone ${f}: ${expect(f)}; ${alone.get(f)}`);
    for (const [f, why] of whole) console.log(`whole  ${f}: ${why}`);
    Deno.exit(0);
  }
  const sum = (files: string[]) => files.reduce((t, f) => t + cost.get(f)!, 0);
  const expected = Math.max(0, ...plan.shards.map(sum)) + sum(plan.alone);
  console.error(
    `test:fast: ${fast.length} files, in ${plan.shards.length} processes side by side then ` +
      `${plan.alone.length} alone (expected ${minutes(expected)}); ${whole.size} left to the ` +
      `whole suite (--list says which)`,
  );
  const encoder = new TextEncoder();
  const write = (line: string, stream: "stdout" | "stderr") => {
    const bytes = encoder.encode(`${line}\n`);
    const to = stream === "stdout" ? Deno.stdout : Deno.stderr;
    for (let at = 0; at < bytes.length;) at += to.writeSync(bytes.subarray(at));
  };
  const started = performance.now();
  const outcome = await runTier(plan, rest, write);
  const seconds = (performance.now() - started) / 1000;
  if (rest.length === 0) {
    // A whole run's times, kept for the next run's split (a --filter run's would mislead it).
    await Deno.mkdir(`${ROOT}dist/test`, { recursive: true });
    const merged = { ...recorded, ...outcome.durations };
    const kept = Object.fromEntries(
      Object.entries(merged).filter(([f]) => fast.includes(f)).sort(),
    );
    await Deno.writeTextFile(`${DURATIONS_FILE}.tmp`, JSON.stringify(kept, null, 1) + "\n");
    await Deno.rename(`${DURATIONS_FILE}.tmp`, DURATIONS_FILE);
  }
  // Said again at the end: each process's failures and counts, then the run's.
  for (const s of outcome.shards) {
    for (const f of s.failures) console.log(`[${s.label}] failed: ${f}`);
  }
  for (const s of outcome.shards) {
    const t = s.tally;
    console.log(
      `[${s.label}] ${s.files} files: ` +
        (t === undefined
          ? `ended with code ${s.code} without a summary`
          : `${t.passed} passed | ${t.failed} failed | ${t.ignored} ignored`) +
        ` (${minutes(s.seconds)})`,
    );
  }
  console.log(closingLine(outcome, seconds));
  Deno.exit(outcome.code);
}
