/**
 * Start-up of the four programs: `--help`, `--version` and one subcommand's `--help` of each,
 * against `deno run` of an empty script, all measured in the same run (issue 16, point 2: every
 * program's `--help` at most 40 ms).
 *
 * `deno run -A bench/startup_bench.ts [--runs N] [--before DIR]`: each case is started N times
 * (default 30), the cases interleaved round by round so that the load of a shared machine falls
 * on every case alike. Each start's wall time is measured here (`performance.now()` around the
 * child, GNU time's own start included, the same for every case); its CPU time (user + system,
 * every thread) comes from GNU time (`/usr/bin/time`, 10 ms resolution, so its mean is shown).
 * Printed: the wall median and the CPU mean of each case, each with its ratio to the empty
 * script's. With `--before DIR` (a copy of an earlier tree, e.g.
 * `git archive <commit> | tar -x -C DIR`) the same cases of that tree are measured too, in the
 * same rounds. With `--shipped DIR` (built by `deno task hosts --system debian --out DIR` and
 * `deno task programs --out DIR`) the one-file executables of this machine's architecture found
 * there are measured too, as installed: `<file> --help`, started directly (the sh header, its
 * digest checks, then the runtime on the bundled program), their cache (`MESH_RUNTIME_CACHE`, a
 * temporary directory) unpacked by the unmeasured first start. With `--shipped-before DIR` too
 * (the same files built from an earlier tree), those are measured in the same rounds, each tree's
 * files with a cache of their own (one cache would have each version prune the other).
 *
 * @module
 */

import { parseArgs } from "node:util";

const root = new URL("../", import.meta.url).pathname;
const parsed = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "30" },
    before: { type: "string" },
    shipped: { type: "string" },
    "shipped-before": { type: "string" },
  },
});
const runs = Number(parsed.values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: a whole number, not ${runs}`);

/** One command started: its label and its argv after `deno run -A --quiet`, or its own argv. */
interface Case {
  tree: string;
  label: string;
  args: string[];
  /** The whole argv, for a one-file executable started directly. */
  argv?: string[];
}

const empty = await Deno.makeTempFile({ dir: root, prefix: "_startup_empty_", suffix: ".ts" });
await Deno.writeTextFile(empty, "export {};\n");

/** The cases of one tree (the checkout, or --before). */
function casesOf(tree: string, dir: string): Case[] {
  const at = (p: string) => `${dir}${p}`;
  const c = (label: string, entry: string, args: string[]): Case => ({
    tree,
    label,
    args: [at(entry), ...args],
  });
  return [
    c("host --help", "systems/debian/main.ts", ["--help"]),
    c("host --version", "systems/debian/main.ts", ["--version"]),
    c("host apply --help", "systems/debian/main.ts", ["apply", "--help"]),
    c("control --help", "control/main.ts", ["--help"]),
    c("control --version", "control/main.ts", ["--version"]),
    c("control status --help", "control/main.ts", ["status", "--help"]),
    c("reconcile --help", "reconcile/main.ts", ["--help"]),
    c("reconcile --version", "reconcile/main.ts", ["--version"]),
    c("reconcile run --help", "reconcile/main.ts", ["run", "--help"]),
    c("builder --help", "builder/main.ts", ["--help"]),
    c("builder --version", "builder/main.ts", ["--version"]),
  ];
}

/** The one-file executables of this architecture in `dir`, each with `--help`. */
function shippedCases(dir: string, tree = "shipped"): Case[] {
  const arch = Deno.build.arch;
  return [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && e.name.startsWith("mesh-") && e.name.endsWith(`-${arch}`))
    .map((e) => e.name)
    .sort()
    .map((name) => ({
      tree,
      label: `${name} --help`,
      args: [],
      argv: [`${dir.replace(/\/$/, "")}/${name}`, "--help"],
    }));
}

const shippedCache = parsed.values.shipped
  ? await Deno.makeTempDir({ prefix: "mesh-startup-cache-" })
  : undefined;
const shippedBeforeCache = parsed.values["shipped-before"]
  ? await Deno.makeTempDir({ prefix: "mesh-startup-cache-before-" })
  : undefined;
const cases: Case[] = [
  { tree: "floor", label: "deno run empty script", args: [empty] },
  ...casesOf("now", root),
  ...(parsed.values.before ? casesOf("before", parsed.values.before.replace(/\/?$/, "/")) : []),
  ...(parsed.values.shipped ? shippedCases(parsed.values.shipped) : []),
  ...(parsed.values["shipped-before"]
    ? shippedCases(parsed.values["shipped-before"], "shipped-before")
    : []),
];
if (parsed.values.shipped && !cases.some((c) => c.tree === "shipped")) {
  throw new Error(`--shipped: no mesh-*-${Deno.build.arch} file in "${parsed.values.shipped}"`);
}

/** Wall and CPU seconds of one start, from GNU time. */
async function once(c: Case): Promise<{ wall: number; cpu: number }> {
  const out = await Deno.makeTempFile({ prefix: "mesh-startup-" });
  try {
    const t0 = performance.now();
    const r = await new Deno.Command("/usr/bin/time", {
      args: [
        "-o",
        out,
        "-f",
        "%e %U %S",
        ...(c.argv ?? [Deno.execPath(), "run", "-A", "--quiet", ...c.args]),
      ],
      cwd: c.tree === "before" ? parsed.values.before : root,
      env: c.tree === "shipped-before" && shippedBeforeCache
        ? { MESH_RUNTIME_CACHE: shippedBeforeCache }
        : shippedCache
        ? { MESH_RUNTIME_CACHE: shippedCache }
        : {},
      stdout: "null",
      stderr: "piped",
    }).output();
    const wall = (performance.now() - t0) / 1000;
    if (r.code !== 0) {
      throw new Error(
        `${c.label} (${c.tree}) exited ${r.code}: ${new TextDecoder().decode(r.stderr)}`,
      );
    }
    const [, user, sys] = (await Deno.readTextFile(out)).trim().split("\n").at(-1)!.split(" ")
      .map(Number);
    return { wall, cpu: user! + sys! };
  } finally {
    await Deno.remove(out);
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

try {
  // Once each first, unmeasured: Deno's caches (transpiled code, npm resolution) are warm.
  for (const c of cases) await once(c);
  const samples = new Map(cases.map((c) => [c, { wall: [] as number[], cpu: [] as number[] }]));
  for (let round = 0; round < runs; round++) {
    for (const c of cases) {
      const s = await once(c);
      samples.get(c)!.wall.push(s.wall * 1000);
      samples.get(c)!.cpu.push(s.cpu * 1000);
    }
    Deno.stderr.writeSync(new TextEncoder().encode(`round ${round + 1}/${runs}\r`));
  }
  const floor = samples.get(cases[0]!)!;
  const floorWall = median(floor.wall);
  const floorCpu = mean(floor.cpu);
  const lines = [
    `${runs} starts per case, interleaved; ${Deno.build.os}/${Deno.build.arch}, deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cores, load average ${
      (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")
    } at the end`,
    "",
    "| tree | command | wall median (ms) | x empty | CPU mean (ms) | x empty |",
    "|---|---|---:|---:|---:|---:|",
  ];
  for (const c of cases) {
    const s = samples.get(c)!;
    const w = median(s.wall);
    const u = mean(s.cpu);
    lines.push(
      `| ${c.tree} | ${c.label} | ${w.toFixed(0)} | ${(w / floorWall).toFixed(2)} | ${
        u.toFixed(0)
      } | ${(u / floorCpu).toFixed(2)} |`,
    );
  }
  console.log(lines.join("\n"));
} finally {
  await Deno.remove(empty);
  if (shippedCache) await Deno.remove(shippedCache, { recursive: true });
  if (shippedBeforeCache) await Deno.remove(shippedBeforeCache, { recursive: true });
}
