/**
 * Benchmark of `mesh-host apply` against cf-agent (CFEngine), ansible-playbook (`-c local`) and
 * `puppet apply` on the same desired state: 100 directories (mode 0755) holding 10 files each
 * (1,000 files, mode 0644, distinct contents of 100 to 200 bytes).
 *
 * Run as root from the repository root: `deno run -A bench/host_bench.ts [--runs N]
 * [--runs-for TOOL=N,...] [--tools TOOL,...] [--seed TOOL,...|none] [--host FILE]`. `--runs`
 * defaults to 5, and to 1 for ansible-playbook (minutes per run), whose tree is by default written
 * by the bench (`--seed`) instead of timing its first apply. mesh-host runs from its sources with
 * the built hosts' V8 flags, or, with `--host FILE`, as the one-file host FILE that `deno task
 * hosts --system debian` built (what a node runs). It installs the peers when they are missing
 * (`apt-get install -y --no-install-recommends cfengine3 ansible-core puppet`, and `time`).
 *
 * Each tool manages its own copy of the tree (its own root under one temp dir). For each tool:
 * the first apply from an empty root (converge, timed once), then `--runs` rounds of (a) a no-op
 * apply (everything already right) and (b) an apply after the script edited the contents of the
 * same 100 files (10 %) on disk. Every run is spawned under `/usr/bin/time -f '%e %M'` (peak RSS
 * in KiB of the largest process of the tree) with this script's monotonic clock around the spawn,
 * and checked: exit code, the changes the tool itself reports (none for (a), exactly the 100 edited
 * files for (b)), and the whole tree on disk (contents, modes, nothing else in it). The rounds are
 * interleaved across tools so that noise from the machine spreads over all of them.
 *
 * It prints a Markdown table and writes it, with the raw samples, to `bench/out/`. The temp dir
 * (trees, declarations, policies, mesh state, puppet's vardir) is removed in a `finally`.
 *
 * @module
 */

import { stringify } from "yaml";
import { exec as execWith, type ExecOptions, type Timed } from "./exec.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OUT_DIR = `${ROOT}bench/out`;
const TIME = "/usr/bin/time";
const DIRS = 100;
const FILES_PER_DIR = 10;
const FILES = DIRS * FILES_PER_DIR;
const CHANGED = FILES / 10;
const DIR_MODE = 0o755;
const FILE_MODE = 0o644;
/** The Debian package of each peer. */
const PACKAGES: Partial<Record<ToolName, string>> = {
  "cf-agent": "cfengine3",
  "ansible-playbook": "ansible-core",
  "puppet apply": "puppet",
};

/** The V8 flags a built host runs with: `HOST_V8_FLAGS` of scripts/build_hosts.ts (a script). */
const HOST_V8_FLAGS = [
  "--v8-flags=--max-semi-space-size=1,--optimize-for-size,--no-opt,--no-maglev",
];

const TOOLS = ["mesh-host", "floor", "cf-agent", "ansible-playbook", "puppet apply"] as const;
type ToolName = typeof TOOLS[number];
/** Default measured runs per scenario; ansible-playbook takes minutes per run over 1,100 items. */
const DEFAULT_RUNS: Partial<Record<ToolName, number>> = { "ansible-playbook": 1 };
/**
 * Tools whose tree the bench writes itself instead of timing their first apply (to save an
 * ansible-playbook run of several minutes); `--seed none` lets every tool converge on its own.
 */
const DEFAULT_SEED: ToolName[] = ["ansible-playbook"];

type Scenario = "converge" | "no-op" | "10% changed";

// ---------------------------------------------------------------------------------------------
// Running commands

/** Aborted on SIGINT/SIGTERM: kills the command in flight. */
const interrupt = new AbortController();

/** A command run from the repository root, timed, stopped with the bench (bench/exec.ts). */
const exec = (argv: string[], options: Omit<ExecOptions, "signal"> = {}): Promise<Timed> =>
  execWith(argv, { ...options, signal: interrupt.signal });

/** One timed run. */
interface Sample {
  /** Wall milliseconds by this script's monotonic clock around the spawn (includes `time`). */
  clockMs: number;
  /** `%e`: elapsed wall seconds by GNU time (10 ms resolution). */
  wallS: number;
  /** `%M`: peak resident set size in KiB of the largest process of the tree. */
  rssKiB: number;
  code: number;
  /** Resources the tool itself reported as changed (created, updated, repaired). */
  reported: number;
}

async function timed(
  argv: string[],
  timeFile: string,
  env?: Record<string, string>,
): Promise<Timed & { clockMs: number; wallS: number; rssKiB: number }> {
  const started = performance.now();
  const out = await exec([TIME, "-f", "%e %M", "-o", timeFile, "--", ...argv], {
    env,
    allowFailure: true,
  });
  const clockMs = performance.now() - started;
  // On a non-zero exit GNU time writes "Command exited with non-zero status N" first.
  const last = (await Deno.readTextFile(timeFile)).trim().split("\n").pop() ?? "";
  const m = /^(\d+(?:\.\d+)?) (\d+)$/.exec(last);
  if (!m) throw new Error(`unexpected ${TIME} output "${last}" for ${argv.join(" ")}`);
  return { ...out, clockMs, wallS: Number(m[1]), rssKiB: Number(m[2]) };
}

function log(line: string) {
  console.error(`host_bench: ${line}`);
}

// ---------------------------------------------------------------------------------------------
// The desired state

interface DesiredFile {
  /** Relative to a tool's root, e.g. `d042/f07.conf`. */
  rel: string;
  content: string;
}

interface DesiredState {
  dirs: string[];
  files: DesiredFile[];
  /** The files whose contents are edited before each (b) run, the same for every tool. */
  changed: DesiredFile[];
}

/** mulberry32: a small seeded PRNG, so the state is the same on every run of the bench. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  "alpha",
  "bravo",
  "cache",
  "delta",
  "echo",
  "fetch",
  "gamma",
  "host",
  "index",
  "jitter",
  "kilo",
  "limit",
  "mesh",
  "node",
  "owner",
  "pool",
  "quota",
  "retry",
  "socket",
  "timeout",
];
/** Characters that need no escaping in a CFEngine or Puppet string, YAML, JSON or Jinja. */
const SAFE_CONTENT = /^[A-Za-z0-9 #=._:/\n-]*$/;

function desiredState(): DesiredState {
  const random = prng(0x6d657368);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const hex = (n: number) =>
    Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join("");
  const dirs: string[] = [];
  const files: DesiredFile[] = [];
  for (let d = 1; d <= DIRS; d++) {
    const dir = `d${String(d).padStart(3, "0")}`;
    dirs.push(dir);
    for (let f = 1; f <= FILES_PER_DIR; f++) {
      const rel = `${dir}/f${String(f).padStart(2, "0")}.conf`;
      const target = 100 + Math.floor(random() * 100);
      let content = `# ${rel}: managed by bench/host_bench.ts\n`;
      for (let k = 1; content.length < target; k++) {
        const line = `${pick(WORDS)}_${k} = ${pick(WORDS)}-${hex(4 + Math.floor(random() * 12))}\n`;
        if (content.length + line.length > 200) break;
        content += line;
      }
      if (content.length < 100 || content.length > 200 || !SAFE_CONTENT.test(content)) {
        throw new Error(`bad generated content for ${rel}: ${JSON.stringify(content)}`);
      }
      files.push({ rel, content });
    }
  }
  if (new Set(files.map((f) => f.content)).size !== FILES) throw new Error("contents not distinct");
  // A seeded Fisher-Yates shuffle picks the 100 files edited before each (b) run.
  const order = files.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const changed = order.slice(0, CHANGED).sort((a, b) => a - b).map((i) => files[i]!);
  return { dirs, files, changed };
}

/**
 * The edited content of the `index`-th changed file: even ones keep their size (one character
 * replaced, so a tool must compare bytes), odd ones grow by a line (a size check is enough).
 */
function edited(file: DesiredFile, index: number, run: number): string {
  if (index % 2 === 1) return `${file.content}# edited by host_bench before run ${run}\n`;
  const at = Math.floor(file.content.length / 2);
  const was = file.content[at];
  return `${file.content.slice(0, at)}${was === "X" ? "Y" : "X"}${file.content.slice(at + 1)}`;
}

// ---------------------------------------------------------------------------------------------
// The tools

interface ToolRun {
  argv: string[];
  env?: Record<string, string>;
}

interface Tool {
  name: ToolName;
  /** The directory the tool manages (created empty, mode 0755, before its first apply). */
  tree: string;
  /** What the desired state looks like for this tool (a short description for the README). */
  input: string;
  /** Writes the tool's input for the desired state. */
  prepare(state: DesiredState): Promise<void>;
  run: ToolRun;
  /**
   * Checks a run's exit code and the tool's own report; returns the number of resources the tool
   * said it changed (which must be 0 for a no-op and exactly the edited files after the edits).
   */
  check(out: Timed, scenario: Scenario): number;
}

function fail(tool: ToolName, scenario: Scenario, why: string, out?: Timed): never {
  const tail = out
    ? `\n--- stdout (tail) ---\n${out.stdout.slice(-1500)}\n--- stderr (tail) ---\n${
      out.stderr.slice(-1500)
    }`
    : "";
  throw new Error(`${tool}, ${scenario}: ${why}${tail}`);
}

/** What each scenario must report: (a) nothing, (b) exactly the edited files. */
function expectReported(
  tool: ToolName,
  scenario: Scenario,
  reported: number,
  out: Timed,
): number {
  const want = scenario === "no-op" ? 0 : scenario === "10% changed" ? CHANGED : undefined;
  if (want !== undefined && reported !== want) {
    fail(tool, scenario, `reported ${reported} changed resources, expected ${want}`, out);
  }
  return reported;
}

/**
 * mesh-host: `deno run` of systems/debian/main.ts with the built hosts' V8 flags, or with `--host FILE` the
 * one-file host FILE as installed (`deno task hosts --system debian`).
 */
function meshHost(dir: string, shipped?: string): Tool {
  const tree = `${dir}/mesh/tree`;
  const declaration = `${dir}/mesh/declaration.json`;
  return {
    name: "mesh-host",
    tree,
    input: "declaration JSON",
    async prepare(state) {
      const resources: unknown[] = [];
      for (const d of state.dirs) {
        resources.push({ id: d, type: "directory", path: `${tree}/${d}`, mode: "0755" });
        for (const f of state.files.filter((f) => f.rel.startsWith(`${d}/`))) {
          resources.push({
            id: f.rel.replace("/", "-"),
            type: "file",
            path: `${tree}/${f.rel}`,
            content: f.content,
            mode: "0644",
          });
        }
      }
      await Deno.writeTextFile(declaration, JSON.stringify({ version: 1, resources }, null, 1));
    },
    run: shipped
      ? {
        // The one-file host as installed; its runtime cache is unpacked by the converge (the first
        // run, timed once), as on a node by its first start.
        argv: [shipped, "apply", declaration, "--state-dir", `${dir}/mesh/state`, "--json"],
        env: { MESH_RUNTIME_CACHE: `${dir}/mesh/runtime` },
      }
      : {
        argv: [
          Deno.execPath(),
          "run",
          "-A",
          ...HOST_V8_FLAGS,
          "systems/debian/main.ts",
          "apply",
          declaration,
          "--state-dir",
          `${dir}/mesh/state`,
          "--json",
        ],
      },
    check(out, scenario) {
      if (out.code !== 0) fail(this.name, scenario, `exit code ${out.code}`, out);
      let result: {
        outcome: string;
        applied: number;
        total: number;
        changes: { change: string }[];
      };
      try {
        result = JSON.parse(out.stdout);
      } catch {
        return fail(this.name, scenario, "stdout is not JSON", out);
      }
      const total = DIRS + FILES;
      if (result.outcome !== "applied" || result.applied !== total || result.total !== total) {
        fail(this.name, scenario, `outcome ${result.outcome}, ${result.applied} of ${total}`, out);
      }
      const counts = new Map<string, number>();
      for (const c of result.changes) counts.set(c.change, (counts.get(c.change) ?? 0) + 1);
      if (scenario === "converge" && counts.get("created") !== total) {
        fail(this.name, scenario, `created ${counts.get("created") ?? 0}, expected ${total}`, out);
      }
      if (scenario === "10% changed" && counts.get("updated") !== CHANGED) {
        fail(
          this.name,
          scenario,
          `updated ${counts.get("updated") ?? 0}, expected ${CHANGED}`,
          out,
        );
      }
      const reported = result.changes.filter((c) => c.change !== "unchanged").length;
      return expectReported(this.name, scenario, reported, out);
    },
  };
}

/**
 * The floor: a Deno script (start-up included) that does what the task needs and nothing else,
 * synchronously: lstat every path; a directory missing is made, a wrong mode set; a file whose
 * size differs or whose bytes differ (read and compared) is written durably as mesh-host writes
 * it (temporary file beside it, fsync, rename). No footprint, no journal, no validation.
 */
function floor(dir: string): Tool {
  const tree = `${dir}/floor/tree`;
  const spec = `${dir}/floor/spec.json`;
  const script = `${dir}/floor/floor.ts`;
  return {
    name: "floor",
    tree,
    input: "JSON list of paths",
    async prepare(state) {
      await Deno.writeTextFile(
        spec,
        JSON.stringify({
          dirs: state.dirs.map((d) => `${tree}/${d}`),
          files: state.files.map((f) => [`${tree}/${f.rel}`, f.content]),
        }),
      );
      await Deno.writeTextFile(
        script,
        `const spec = JSON.parse(Deno.readTextFileSync(Deno.args[0]));
const encoder = new TextEncoder();
let changed = 0;
const lstat = (p) => { try { return Deno.lstatSync(p); } catch { return undefined; } };
for (const d of spec.dirs) {
  const info = lstat(d);
  if (!info) { Deno.mkdirSync(d); Deno.chmodSync(d, 0o755); changed++; }
  else if ((info.mode & 0o7777) !== 0o755) { Deno.chmodSync(d, 0o755); changed++; }
}
for (const [path, content] of spec.files) {
  const want = encoder.encode(content);
  const info = lstat(path);
  let same = info !== undefined && info.size === want.length && (info.mode & 0o7777) === 0o644;
  if (same) {
    const have = Deno.readFileSync(path);
    for (let i = 0; i < have.length; i++) if (have[i] !== want[i]) { same = false; break; }
  }
  if (same) continue;
  const temp = path.replace(/[^/]*$/, (n) => "." + n + ".tmp");
  const f = Deno.openSync(temp, { write: true, createNew: true, mode: 0o600 });
  f.writeSync(want); f.syncSync(); f.close();
  Deno.chmodSync(temp, 0o644);
  Deno.renameSync(temp, path);
  changed++;
}
console.log(JSON.stringify({ changed }));
`,
      );
    },
    run: { argv: [Deno.execPath(), "run", "-A", "--no-config", script, spec] },
    check(out, scenario) {
      if (out.code !== 0) fail(this.name, scenario, `exit code ${out.code}`, out);
      const reported = (JSON.parse(out.stdout) as { changed: number }).changed;
      if (scenario === "converge" && reported !== DIRS + FILES) {
        fail(this.name, scenario, `changed ${reported}, expected ${DIRS + FILES}`, out);
      }
      return expectReported(this.name, scenario, reported, out);
    },
  };
}

function cfAgent(dir: string): Tool {
  const tree = `${dir}/cfengine/tree`;
  const policy = `${dir}/cfengine/policy.cf`;
  return {
    name: "cf-agent",
    tree,
    input: "policy (.cf)",
    async prepare(state) {
      const promises: string[] = [];
      for (const d of state.dirs) {
        promises.push(
          `      "${tree}/${d}/."\n        create => "true",\n        perms => m("0755");`,
        );
        for (const f of state.files.filter((f) => f.rel.startsWith(`${d}/`))) {
          promises.push(
            `      "${tree}/${f.rel}"\n        create => "true",\n        content => "${f.content}",\n        perms => m("0644");`,
          );
        }
      }
      await Deno.writeTextFile(
        policy,
        `# ${DIRS} directories and ${FILES} files, generated by bench/host_bench.ts.
body common control
{
      bundlesequence => { "host_bench" };
}

# The standard library's m(mode), with rxdirs set explicitly (3.21 warns when it is not).
body perms m(mode)
{
      mode => "$(mode)";
      rxdirs => "false";
}

bundle agent host_bench
{
  files:
${promises.join("\n\n")}
}
`,
      );
      // cf-agent refuses a policy file that others can write.
      await Deno.chmod(policy, 0o600);
    },
    // -K: ignore promise locks, or a run within a minute of the last one would skip promises.
    // -I (inform): one "info:" line per repair, counted below.
    run: { argv: ["cf-agent", "--no-lock", "--inform", "--file", policy] },
    check(out, scenario) {
      if (out.code !== 0) fail(this.name, scenario, `exit code ${out.code}`, out);
      const text = `${out.stdout}\n${out.stderr}`;
      if (/^\s*(error|warning):/m.test(text)) {
        fail(this.name, scenario, "cf-agent printed an error or a warning", out);
      }
      const reported = (text.match(/^\s*info: /gm) ?? []).length;
      if (
        scenario === "10% changed" &&
        (text.match(/^\s*info: Updated file '/gm) ?? []).length !== CHANGED
      ) fail(this.name, scenario, `expected ${CHANGED} "Updated file" lines`, out);
      return expectReported(this.name, scenario, reported, out);
    },
  };
}

function ansiblePlaybook(dir: string): Tool {
  const tree = `${dir}/ansible/tree`;
  const playbook = `${dir}/ansible/playbook.yml`;
  return {
    name: "ansible-playbook",
    tree,
    input: "playbook (YAML)",
    async prepare(state) {
      const play = {
        hosts: "localhost",
        connection: "local",
        gather_facts: false,
        vars: {
          ansible_python_interpreter: "/usr/bin/python3",
          tree,
          directories: state.dirs,
          files: state.files.map((f) => ({ path: f.rel, content: f.content })),
        },
        tasks: [
          {
            name: "Directories",
            "ansible.builtin.file": {
              path: "{{ tree }}/{{ item }}",
              state: "directory",
              mode: "0755",
            },
            loop: "{{ directories }}",
          },
          {
            name: "Files",
            "ansible.builtin.copy": {
              dest: "{{ tree }}/{{ item.path }}",
              content: "{{ item.content }}",
              mode: "0644",
            },
            loop: "{{ files }}",
            loop_control: { label: "{{ item.path }}" },
          },
        ],
      };
      await Deno.writeTextFile(
        playbook,
        `# ${DIRS} directories and ${FILES} files, generated by bench/host_bench.ts.\n${
          stringify([play], { lineWidth: 0 })
        }`,
      );
    },
    run: {
      argv: ["ansible-playbook", "-i", "localhost,", playbook],
      env: {
        ANSIBLE_NOCOLOR: "1",
        ANSIBLE_LOCAL_TEMP: `${dir}/ansible/tmp`,
        ANSIBLE_REMOTE_TEMP: `${dir}/ansible/tmp`,
      },
    },
    check(out, scenario) {
      if (out.code !== 0) fail(this.name, scenario, `exit code ${out.code}`, out);
      const recap = /^localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/m
        .exec(out.stdout);
      if (!recap || recap[3] !== "0" || recap[4] !== "0") {
        fail(this.name, scenario, "no clean PLAY RECAP", out);
      }
      const reported = (out.stdout.match(/^changed: \[localhost\] => \(item=/gm) ?? []).length;
      return expectReported(this.name, scenario, reported, out);
    },
  };
}

function puppetApply(dir: string): Tool {
  const tree = `${dir}/puppet/tree`;
  const manifest = `${dir}/puppet/site.pp`;
  const vardir = `${dir}/puppet/var`;
  return {
    name: "puppet apply",
    tree,
    input: "manifest (.pp)",
    async prepare(state) {
      const resources: string[] = [];
      const quote = (s: string) => `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
      for (const d of state.dirs) {
        resources.push(
          `file { ${quote(`${tree}/${d}`)}:\n  ensure => directory,\n  mode   => '0755',\n}`,
        );
        for (const f of state.files.filter((f) => f.rel.startsWith(`${d}/`))) {
          resources.push(
            `file { ${quote(`${tree}/${f.rel}`)}:\n  ensure  => file,\n  content => ${
              quote(f.content)
            },\n  mode    => '0644',\n}`,
          );
        }
      }
      await Deno.writeTextFile(
        manifest,
        `# ${DIRS} directories and ${FILES} files, generated by bench/host_bench.ts.\n${
          resources.join("\n")
        }\n`,
      );
    },
    // --detailed-exitcodes: 0 = nothing changed, 2 = changes applied, 4/6 = failures.
    // Its own vardir (state, reports, the filebucket of replaced contents) lives in the temp dir.
    run: {
      argv: [
        "puppet",
        "apply",
        "--detailed-exitcodes",
        "--color=false",
        "--vardir",
        vardir,
        "--logdir",
        `${vardir}/log`,
        "--rundir",
        `${vardir}/run`,
        manifest,
      ],
    },
    check(out, scenario) {
      const want = scenario === "no-op" ? 0 : 2;
      if (out.code !== want) {
        fail(this.name, scenario, `exit code ${out.code}, expected ${want}`, out);
      }
      const text = `${out.stdout}\n${out.stderr}`;
      const reported = (text.match(/^Notice: \/Stage\[main\]\/Main\/File\[/gm) ?? []).length;
      return expectReported(this.name, scenario, reported, out);
    },
  };
}

/** Checks the whole tree on disk: modes, contents, and nothing else in it. */
async function verifyTree(tool: Tool, state: DesiredState, scenario: Scenario): Promise<void> {
  const problems: string[] = [];
  const want = new Map(state.files.map((f) => [f.rel, f.content]));
  const top = new Set<string>();
  for await (const e of Deno.readDir(tool.tree)) top.add(e.name);
  for (const d of state.dirs) {
    const path = `${tool.tree}/${d}`;
    const info = await Deno.lstat(path).catch(() => undefined);
    if (!info?.isDirectory) {
      problems.push(`${d}: not a directory`);
      continue;
    }
    top.delete(d);
    if (((info.mode ?? 0) & 0o7777) !== DIR_MODE) {
      problems.push(`${d}: mode ${((info.mode ?? 0) & 0o7777).toString(8)}`);
    }
    for await (const e of Deno.readDir(path)) {
      const rel = `${d}/${e.name}`;
      if (!want.has(rel)) problems.push(`${rel}: not declared (left by the tool?)`);
    }
  }
  for (const extra of top) problems.push(`${extra}: not declared (left by the tool?)`);
  for (const [rel, content] of want) {
    const path = `${tool.tree}/${rel}`;
    const info = await Deno.lstat(path).catch(() => undefined);
    if (!info?.isFile) {
      problems.push(`${rel}: not a file`);
      continue;
    }
    if (((info.mode ?? 0) & 0o7777) !== FILE_MODE) {
      problems.push(`${rel}: mode ${((info.mode ?? 0) & 0o7777).toString(8)}`);
    }
    if (await Deno.readTextFile(path) !== content) problems.push(`${rel}: wrong content`);
  }
  if (problems.length > 0) {
    throw new Error(
      `${tool.name}, ${scenario}: the tree is wrong after the run (${problems.length} problems): ${
        problems.slice(0, 10).join("; ")
      }`,
    );
  }
}

/** Writes the desired tree for `tool` directly (what its first apply would have made). */
async function seed(tool: Tool, state: DesiredState): Promise<void> {
  for (const d of state.dirs) {
    await Deno.mkdir(`${tool.tree}/${d}`);
    await Deno.chmod(`${tool.tree}/${d}`, DIR_MODE);
  }
  for (const f of state.files) {
    await Deno.writeTextFile(`${tool.tree}/${f.rel}`, f.content);
    await Deno.chmod(`${tool.tree}/${f.rel}`, FILE_MODE);
  }
}

// ---------------------------------------------------------------------------------------------
// Setup

async function packageVersion(name: string): Promise<string | undefined> {
  const out = await exec(["dpkg-query", "-W", "-f", "${Status}\t${Version}", name], {
    allowFailure: true,
  });
  const [status, version] = out.stdout.split("\t");
  return out.code === 0 && status === "install ok installed" ? version : undefined;
}

/** Installs the peers (and GNU time) from Debian when any is missing. */
async function ensurePeers(tools: readonly ToolName[]): Promise<void> {
  const missing: string[] = [];
  const wanted = tools.flatMap((t) => PACKAGES[t] ?? []);
  for (const p of [...wanted, "time"]) if (await packageVersion(p) === undefined) missing.push(p);
  if (missing.length === 0) return;
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  const install = ["apt-get", "install", "-y", "--no-install-recommends", ...missing];
  log(`installing ${missing.join(", ")}`);
  const first = await exec(install, { env, allowFailure: true });
  if (first.code !== 0) {
    log("apt-get install failed; running apt-get update first");
    await exec(["apt-get", "update"], { env });
    await exec(install, { env });
  }
}

// ---------------------------------------------------------------------------------------------
// Measuring and reporting

interface Row {
  tool: ToolName;
  scenario: Scenario;
  samples: Sample[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function table(rows: Row[]): string {
  const mesh = (scenario: Scenario) =>
    rows.find((r) => r.tool === "mesh-host" && r.scenario === scenario);
  const lines = [
    "| tool | scenario | runs | median wall s | min–max wall s | peak RSS MiB (median) | changes reported | ratio to mesh-host |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    if (r.samples.length === 0) continue;
    const wall = r.samples.map((s) => s.clockMs / 1000);
    const base = mesh(r.scenario);
    const x = base && base.samples.length > 0
      ? median(wall) / median(base.samples.map((s) => s.clockMs / 1000))
      : undefined;
    const ratio = x === undefined ? "—" : `${x < 10 ? x.toFixed(1) : x.toFixed(0)}×`;
    const range = wall.length > 1
      ? `${Math.min(...wall).toFixed(2)}–${Math.max(...wall).toFixed(2)}`
      : "—";
    const reported = [...new Set(r.samples.map((s) => s.reported))].join(", ");
    lines.push(
      `| ${r.tool} | ${r.scenario} | ${r.samples.length} | ${
        median(wall).toFixed(2)
      } | ${range} | ${
        (median(r.samples.map((s) => s.rssKiB)) / 1024).toFixed(1)
      } | ${reported} | ${ratio} |`,
    );
  }
  return lines.join("\n");
}

interface Options {
  runs: number;
  runsFor: Partial<Record<ToolName, number>>;
  tools: ToolName[];
  seed: ToolName[];
  /** `--host FILE`: a one-file host to run in place of the sources. */
  host?: string;
}

function toolName(s: string): ToolName {
  const name = s === "puppet" ? "puppet apply" : s === "ansible" ? "ansible-playbook" : s;
  if (!(TOOLS as readonly string[]).includes(name)) {
    throw new Error(
      `unknown tool "${s}" (one of: mesh-host, floor, cf-agent, ansible-playbook, puppet)`,
    );
  }
  return name as ToolName;
}

function positive(flag: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer`);
  return n;
}

function parseArgs(args: string[]): Options {
  const options: Options = { runs: 5, runsFor: {}, tools: [...TOOLS], seed: [...DEFAULT_SEED] };
  let runsGiven = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--runs") {
      options.runs = positive(a, args[++i]);
      runsGiven = true;
    } else if (a === "--runs-for") {
      for (const pair of (args[++i] ?? "").split(",").filter(Boolean)) {
        const [name, n] = pair.split("=");
        options.runsFor[toolName(name ?? "")] = positive(a, n);
      }
    } else if (a === "--tools") {
      options.tools = (args[++i] ?? "").split(",").filter(Boolean).map(toolName);
      if (!options.tools.includes("floor")) options.tools.unshift("floor");
      if (!options.tools.includes("mesh-host")) options.tools.unshift("mesh-host");
    } else if (a === "--host") {
      const file = args[++i];
      if (!file?.startsWith("/")) throw new Error("--host needs the absolute path of a built host");
      options.host = file;
    } else if (a === "--seed") {
      const list = args[++i] ?? "";
      options.seed = list === "none" ? [] : list.split(",").filter(Boolean).map(toolName);
      if (options.seed.includes("mesh-host")) {
        throw new Error("--seed: mesh-host always converges itself (its footprint needs it)");
      }
    } else {
      throw new Error(
        `unknown argument "${a}"; usage: deno run -A bench/host_bench.ts [--runs N] ` +
          "[--runs-for TOOL=N,...] [--tools TOOL,...] [--seed TOOL,...|none] [--host FILE]",
      );
    }
  }
  // Defaults for slow tools apply unless --runs or --runs-for says otherwise.
  for (const [name, n] of Object.entries(DEFAULT_RUNS) as [ToolName, number][]) {
    if (!runsGiven && options.runsFor[name] === undefined) options.runsFor[name] = n;
  }
  return options;
}

async function main(dir: string) {
  const options = parseArgs(Deno.args);
  if (Deno.uid() !== 0) throw new Error("run as root (the peers manage files as root)");
  await ensurePeers(options.tools);
  const versions = {
    deno: Deno.version.deno,
    cfengine3: await packageVersion("cfengine3"),
    "ansible-core": await packageVersion("ansible-core"),
    puppet: await packageVersion("puppet"),
    kernel: Deno.osRelease(),
    cores: navigator.hardwareConcurrency,
  };
  log(`versions: ${JSON.stringify(versions)}`);

  const state = desiredState();
  const all = [
    meshHost(dir, options.host),
    floor(dir),
    cfAgent(dir),
    ansiblePlaybook(dir),
    puppetApply(dir),
  ];
  const tools = all.filter((t) => options.tools.includes(t.name));
  const runsOf = (t: Tool) => options.runsFor[t.name] ?? options.runs;
  for (const t of tools) {
    await Deno.mkdir(t.tree, { recursive: true });
    await Deno.chmod(t.tree, DIR_MODE);
    await t.prepare(state);
  }
  await Deno.mkdir(`${dir}/ansible/tmp`, { recursive: true });
  const timeFile = `${dir}/time.out`;

  const rows: Row[] = [];
  const row = (tool: ToolName, scenario: Scenario) => {
    let r = rows.find((x) => x.tool === tool && x.scenario === scenario);
    if (!r) rows.push(r = { tool, scenario, samples: [] });
    return r;
  };
  const measure = async (t: Tool, scenario: Scenario, label: string) => {
    const out = await timed(t.run.argv, timeFile, t.run.env);
    const reported = t.check(out, scenario);
    await verifyTree(t, state, scenario);
    const sample = { clockMs: out.clockMs, wallS: out.wallS, rssKiB: out.rssKiB, code: out.code };
    row(t.name, scenario).samples.push({ ...sample, reported });
    log(
      `${t.name} ${label}: ${(out.clockMs / 1000).toFixed(2)} s, ${
        (out.rssKiB / 1024).toFixed(1)
      } MiB, ${reported} reported changes`,
    );
  };

  // Rows in a fixed order: every tool's converge, then no-op, then 10% changed.
  for (const scenario of ["converge", "no-op", "10% changed"] as const) {
    for (const t of tools) row(t.name, scenario);
  }
  for (const t of tools) {
    if (!options.seed.includes(t.name)) await measure(t, "converge", "converge (first apply)");
    else {
      await seed(t, state);
      await verifyTree(t, state, "converge");
      log(`${t.name}: tree written by the bench (--seed), first apply not timed`);
    }
  }
  const rounds = Math.max(...tools.map(runsOf));
  for (let run = 1; run <= rounds; run++) {
    for (const t of tools) {
      if (run > runsOf(t)) continue;
      await measure(t, "no-op", `no-op ${run}/${runsOf(t)}`);
      for (const [i, f] of state.changed.entries()) {
        await Deno.writeTextFile(`${t.tree}/${f.rel}`, edited(f, i, run));
      }
      await measure(t, "10% changed", `10% changed ${run}/${runsOf(t)}`);
    }
  }

  const markdown = [
    `Host bench: ${DIRS} directories + ${FILES} files per tool, ${CHANGED} files edited for (b).`,
    "",
    `deno ${versions.deno}, cfengine3 ${versions.cfengine3}, ansible-core ${
      versions["ansible-core"]
    }, puppet ${versions.puppet}, Linux ${versions.kernel}, ${versions.cores} cores.`,
    "",
    table(rows),
    "",
    "Wall time by the bench's monotonic clock around the spawn (median over the runs); peak RSS",
    "is GNU time's `%M` (largest process of the tree). Ratio: the tool's median wall time over",
    "mesh-host's in the same scenario. mesh-host runs as `deno run -A systems/debian/main.ts` (Deno's",
    "startup and module loading included).",
  ].join("\n");
  console.log(markdown);
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const stamp = new Date().toISOString().replaceAll(/[:.]/g, "-");
  await Deno.writeTextFile(`${OUT_DIR}/host-${stamp}.md`, `${markdown}\n`);
  await Deno.writeTextFile(
    `${OUT_DIR}/host-${stamp}.json`,
    JSON.stringify({ date: new Date().toISOString(), versions, options, rows }, null, 2),
  );
  log(`wrote ${OUT_DIR}/host-${stamp}.md and .json`);
}

const onSignal = () => {
  if (interrupt.signal.aborted) return log("interrupted again; still cleaning up");
  log("interrupted; stopping and cleaning up");
  interrupt.abort(new Error("interrupted"));
};
Deno.addSignalListener("SIGINT", onSignal);
Deno.addSignalListener("SIGTERM", onSignal);
let failed = false;
const dir = await Deno.makeTempDir({ prefix: "mesh-host-bench-" });
try {
  await main(dir);
} catch (error) {
  failed = true;
  log(`FAILED: ${error instanceof Error ? error.message : error}`);
} finally {
  await Deno.remove(dir, { recursive: true }).catch((error) =>
    log(`cleanup: FAILED to remove ${dir}: ${error instanceof Error ? error.message : error}`)
  );
  log(`cleanup: removed ${dir}`);
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
}
if (failed) Deno.exit(interrupt.signal.aborted ? 130 : 1);
