/**
 * Mutation run for launcher.sh: applies each fault below to a COPY of the launcher, runs the
 * launcher suite (launcher_test.ts) against the copy, and says for each whether the suite
 * caught it.
 *
 *     deno run -A tests/launcher/mutate.ts [--json]      # exit 0 only when every fault is caught
 *
 * Verdicts, kept apart on purpose (the seed's harnesses read two of them as something else):
 *
 * - `caught`: the copy parses (`sh -n`), the suite ran to its end (JUnit report present, with
 *   every test of the unmutated run) and at least one test failed;
 * - `survived`: the suite ran to its end and everything passed: a hole in the tests;
 * - `syntax`: the copy does not parse: the fault was never tested, whatever the suite says;
 * - `aborted`: the suite did not run to its end (no report, or fewer tests than the baseline):
 *   never read as caught, and never as passed;
 * - `not-applied`: the text a fault edits is not in the launcher exactly once (the launcher
 *   changed under the list): the fault was not made.
 *
 * The unmutated launcher runs first and must pass every test; otherwise nothing is judged.
 * Used by mutate_test.ts, so the run is part of `deno task test`.
 *
 * @module
 */

const ROOT = new URL("../../", import.meta.url).pathname;
const SUITE = `${ROOT}tests/launcher/launcher_test.ts`;

/** A fault: text edits applied to the launcher, each `from` occurring exactly once. */
export interface Mutation {
  name: string;
  edits: [from: string, to: string][];
  /** A control: this fault is meant to break the syntax, to show it is reported as such. */
  control?: "syntax";
}

export const MUTATIONS: Mutation[] = [
  {
    name: "remove the clean-exit check (exit 0 counted as a failure)",
    edits: [['if [ "$status" -eq 0 ]; then', "if false; then"]],
  },
  {
    name: "the host not told its installed path (a repointed symlink goes unnoticed)",
    edits: [['  MESH_EXECUTABLE=$installed "$current"', '  "$current"']],
  },
  {
    name: "a relative MESH_LIB passed on relative (the host ignores it)",
    edits: [["*) installed=$PWD/$current ;;", "*) installed=$current ;;"]],
  },
  {
    name: "count before the start",
    edits: [
      [
        '  MESH_EXECUTABLE=$installed "$current" "$@" &\n',
        '  failures=$((failures + 1))\n  MESH_EXECUTABLE=$installed "$current" "$@" &\n',
      ],
      ["    failures=$((failures + 1))\n", ""],
    ],
  },
  {
    name: "skip the variable reset at rollback (reset only the file)",
    edits: [["  failures=0\n  write_counter 0\n}", "  write_counter 0\n}"]],
  },
  {
    name: "skip the file reset at rollback (reset only the variable)",
    edits: [["  failures=0\n  write_counter 0\n}", "  failures=0\n}"]],
  },
  {
    name: "drop the signal trap",
    edits: [["trap 'forward TERM' TERM\ntrap 'forward INT' INT\n", ""]],
  },
  {
    name: "trap the signal but do not pass it on",
    edits: [['    kill -s TERM "$child" 2>/dev/null\n', ""]],
  },
  {
    name: "do not wait for the child after passing the signal",
    edits: [[
      '    if [ "$status" -gt 128 ] && kill -0 "$child" 2>/dev/null; then continue; fi\n',
      "",
    ]],
  },
  {
    name: "exit 0 after a stop instead of the child's status",
    edits: [['    exit "$status"\n', "    exit 0\n"]],
  },
  {
    name: "start the host again after a stop",
    edits: [['    exit "$status"\n', "    stopping=\n"]],
  },
  {
    name: "interpret the counter arithmetically",
    edits: [[
      '  if [ "$#" -ge 1 ] && is_count "$1" 2 && [ "$1" -le "$max" ]; then\n    failures=$1\n',
      "  if true; then\n    failures=$((line))\n",
    ]],
  },
  {
    name: "read the counter with tr -d [:space:] (concatenates fields)",
    edits: [[
      '  IFS= read -r line <"$counter_file" || [ -n "$line" ] || line=\n',
      "  line=$(tr -d '[:space:]' <\"$counter_file\")\n",
    ]],
  },
  {
    name: 'refuse a counter of several fields (reset "1 2" instead of counting 1)',
    edits: [['  if [ "$#" -ge 1 ] && is_count', '  if [ "$#" -eq 1 ] && is_count']],
  },
  {
    name: "read the counter's last field instead of its first",
    edits: [[
      'is_count "$1" 2 && [ "$1" -le "$max" ]; then\n    failures=$1\n',
      'shift "$(($# - 1))" && is_count "$1" 2 && [ "$1" -le "$max" ]; then\n    failures=$1\n',
    ]],
  },
  {
    name: "drop the range check on the counter",
    edits: [[' && [ "$1" -le "$max" ]; then\n    failures=$1', "; then\n    failures=$1"]],
  },
  {
    name: "roll back to a missing binary",
    edits: [['if [ ! -f "$lib/$target" ] || [ ! -x "$lib/$target" ]; then', "if false; then"]],
  },
  {
    name: "loop without known-good",
    edits: [[
      '    say "$failures consecutive failures and no known-good version in $known_file: giving up"\n    exit 1\n',
      "    failures=0\n    return\n",
    ]],
  },
  {
    name: "roll back even when the current binary is the known-good one (loop)",
    edits: [['if [ "${now##*/}" = "$target" ]; then', "if false; then"]],
  },
  {
    name: "ignore the host clearing the counter",
    edits: [['    [ -e "$counter_file" ] || failures=0\n', ""]],
  },
  {
    name: "ignore the counter left by an earlier launcher",
    edits: [['read_counter\n[ "$failures" -ge "$max" ] && roll_back\n', "failures=0\n"]],
  },
  {
    name: "do not repoint the symlink (announce a rollback only)",
    edits: [['mv -f "$current.new" "$current"', 'rm -f "$current.new"']],
  },
  {
    name: "give up with exit 0",
    edits: [[
      '$lib/$target is missing: giving up"\n    exit 1',
      '$lib/$target is missing: giving up"\n    exit 0',
    ]],
  },
  {
    name: "control: an unclosed case (must be reported as syntax, not caught)",
    edits: [["0?*) return 1 ;;\n  esac\n", "0?*) return 1 ;;\n"]],
    control: "syntax",
  },
];

export type Verdict = "caught" | "survived" | "syntax" | "aborted" | "not-applied";

export interface MutationResult {
  name: string;
  verdict: Verdict;
  /** As intended: `caught`, or `syntax` for a syntax control. */
  expected: boolean;
  /** The tests that failed (when the suite ran to its end). */
  failed: string[];
  detail: string;
}

interface SuiteRun {
  /** `undefined` when no JUnit report was written: the run did not end. */
  total: number | undefined;
  failed: string[];
  output: string;
}

async function runSuite(launcher: string, dir: string): Promise<SuiteRun> {
  const junit = `${dir}/junit.xml`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", `--junit-path=${junit}`, SUITE],
    // A shorter deadline for a launcher run: faults that loop cost it per test. The baseline
    // runs with the same deadline, and must pass under it.
    env: { MESH_LAUNCHER: launcher, MESH_LAUNCHER_DEADLINE_MS: "2000", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).output();
  const dec = new TextDecoder();
  const output = dec.decode(out.stdout) + dec.decode(out.stderr);
  let xml: string;
  try {
    xml = await Deno.readTextFile(junit);
  } catch {
    return { total: undefined, failed: [], output };
  }
  const cases = xml.split("<testcase ").slice(1);
  const failed = cases.filter((c) => c.slice(0, c.indexOf("</testcase>")).includes("<failure"))
    .map((c) => unescape(/^name="([^"]*)"/.exec(c)?.[1] ?? "?"));
  return { total: cases.length, failed, output };
}

function unescape(s: string): string {
  return s.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'").replaceAll("&amp;", "&");
}

/**
 * The launcher text `m` makes of `text`.
 *
 * @throws {Error} when the text one of its edits replaces is not in `text` exactly once.
 */
export function apply(text: string, m: Mutation): string {
  let out = text;
  for (const [from, to] of m.edits) {
    const n = out.split(from).length - 1;
    if (n !== 1) throw new Error(`"${from.trim()}" occurs ${n} times in the launcher`);
    out = out.replace(from, () => to);
  }
  return out;
}

async function parses(path: string): Promise<string | undefined> {
  const r = await new Deno.Command("sh", { args: ["-n", path], stderr: "piped" }).output();
  return r.code === 0 ? undefined : new TextDecoder().decode(r.stderr).trim() || `exit ${r.code}`;
}

/**
 * Runs the baseline and then every mutation (`concurrency` at a time).
 *
 * @throws {Error} when the unmutated launcher does not pass the whole suite.
 */
export async function mutate(
  options: { mutations?: Mutation[]; concurrency?: number; launcher?: string } = {},
): Promise<{ tests: number; results: MutationResult[] }> {
  const source = await Deno.readTextFile(options.launcher ?? `${ROOT}launcher.sh`);
  const work = await Deno.makeTempDir({ prefix: "mesh-mutate-" });
  try {
    await Deno.writeTextFile(`${work}/launcher.sh`, source);
    const base = await runSuite(`${work}/launcher.sh`, work);
    if (base.total === undefined || base.total === 0 || base.failed.length > 0) {
      throw new Error(
        `The unmutated launcher does not pass the suite (tests ${base.total}, failed ${
          base.failed.join(", ") || "none"
        }):\n${base.output}`,
      );
    }
    const tests = base.total;
    const one = async (m: Mutation, i: number): Promise<MutationResult> => {
      const dir = `${work}/m${i}`;
      await Deno.mkdir(dir);
      const result = (verdict: Verdict, failed: string[], detail: string): MutationResult => ({
        name: m.name,
        verdict,
        expected: m.control === "syntax" ? verdict === "syntax" : verdict === "caught",
        failed,
        detail,
      });
      let text: string;
      try {
        text = apply(source, m);
      } catch (error) {
        return result("not-applied", [], (error as Error).message);
      }
      const path = `${dir}/launcher.sh`;
      await Deno.writeTextFile(path, text);
      const syntax = await parses(path);
      if (syntax !== undefined) return result("syntax", [], syntax);
      const run = await runSuite(path, dir);
      if (run.total === undefined) {
        return result("aborted", [], `no test report: ${run.output.slice(-400)}`);
      }
      if (run.total !== tests) {
        return result("aborted", run.failed, `${run.total} of ${tests} tests ran`);
      }
      if (run.failed.length === 0) return result("survived", [], `all ${tests} tests passed`);
      return result("caught", run.failed, `${run.failed.length} of ${tests} tests failed`);
    };
    const mutations = options.mutations ?? MUTATIONS;
    const results: MutationResult[] = new Array(mutations.length);
    let next = 0;
    const worker = async () => {
      while (next < mutations.length) {
        const i = next++;
        results[i] = await one(mutations[i]!, i);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 6 }, worker));
    return { tests, results };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** The results as a Markdown table. */
export function table(results: MutationResult[]): string {
  const rows = results.map((r) =>
    `| ${r.name} | ${r.verdict}${r.expected ? "" : " (NOT AS INTENDED)"} | ${
      r.failed.length > 0 ? r.failed.map((f) => f.replace(/^launcher: /, "")).join("; ") : r.detail
    } |`
  );
  return ["| fault | verdict | tests that failed / detail |", "| --- | --- | --- |", ...rows]
    .join("\n");
}

if (import.meta.main) {
  const { tests, results } = await mutate();
  if (Deno.args.includes("--json")) console.log(JSON.stringify({ tests, results }, null, 2));
  else {
    console.log(`baseline: ${tests} tests, all passed\n`);
    console.log(table(results));
  }
  const bad = results.filter((r) => !r.expected);
  console.log(
    bad.length === 0
      ? `\nevery fault caught (${results.length} mutations)`
      : `\n${bad.length} of ${results.length} mutations not as intended`,
  );
  Deno.exit(bad.length === 0 ? 0 : 1);
}
