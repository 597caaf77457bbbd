/**
 * mesh-host against another build of itself, interleaved in one run: the host bench's desired
 * state (100 directories of 10 files each, 1,100 resources), a no-op apply and an apply after 10 %
 * of the files were edited, each run alternately by this checkout's `systems/debian/main.ts` and by a
 * baseline checkout's (e.g. the commit before a change, exported with `git archive`). On a
 * machine shared with other work, interleaving spreads the noise over both builds, so the ratio
 * is worth more than either median.
 *
 * Run as root from the repository root:
 * `deno run -A bench/host_compare.ts --baseline DIR [--runs N]` (default 15 rounds). Each run is
 * checked: exit 0, `applied` 1,100 of 1,100, and no change (no-op) or exactly 100 `updated`.
 * Prints a Markdown table; the temp dir is removed in a `finally`.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url).pathname;
const DIRS = 100;
const FILES = 10;

function parseArgs(args: string[]): { baseline: string; runs: number } {
  let baseline: string | undefined;
  let runs = 15;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--baseline") baseline = args[++i];
    else if (args[i] === "--runs") runs = Number(args[++i]);
    else throw new Error(`Unknown argument "${args[i]}" (--baseline DIR, --runs N)`);
  }
  if (!baseline) throw new Error("--baseline DIR is required (a checkout of the other build)");
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer`);
  return { baseline: baseline.replace(/\/+$/, ""), runs };
}

interface Build {
  name: string;
  entry: string;
  root: string;
  state: string;
  samples: { "no-op": number[]; "10% changed": number[] };
}

function declarationOf(root: string, round: number): unknown {
  const resources: unknown[] = [];
  for (let d = 0; d < DIRS; d++) {
    resources.push({ id: `d${d}`, type: "directory", path: `${root}/d${d}`, mode: "0755" });
    for (let f = 0; f < FILES; f++) {
      resources.push({
        id: `f${d}-${f}`,
        type: "file",
        path: `${root}/d${d}/f${f}`,
        content: `file ${d}/${f} ${"x".repeat(100 + ((d * FILES + f) % 100))}\n`,
        mode: "0644",
      });
    }
  }
  void round;
  return { version: 1, resources };
}

async function apply(
  b: Build,
  file: string,
  cwd: string,
): Promise<{ ms: number; changes: string[] }> {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", b.entry, "apply", file, "--json", "--state-dir", b.state],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - started;
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`${b.name}: exit ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
  const result = JSON.parse(text) as {
    outcome: string;
    applied: number;
    changes: { change: string }[];
  };
  if (result.outcome !== "applied" || result.applied !== DIRS * (FILES + 1)) {
    throw new Error(`${b.name}: ${result.outcome} ${result.applied}`);
  }
  return { ms, changes: result.changes.map((c) => c.change).filter((c) => c !== "unchanged") };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  const { baseline, runs } = parseArgs(Deno.args);
  const tmp = await Deno.makeTempDir({ prefix: "mesh-host-compare-" });
  try {
    const builds: Build[] = [
      { name: "this checkout", entry: `${ROOT}systems/debian/main.ts`, cwd: ROOT },
      {
        name: `baseline (${baseline})`,
        entry: `${baseline}/systems/debian/main.ts`,
        cwd: baseline,
      },
    ].map((b, i) => ({
      ...b,
      root: `${tmp}/root${i}`,
      state: `${tmp}/state${i}`,
      samples: { "no-op": [], "10% changed": [] },
    }));
    const cwdOf = (b: Build) => (b.entry.startsWith(ROOT) ? ROOT : baseline);
    for (const b of builds) {
      const file = `${tmp}/${b.state.slice(tmp.length + 1)}.json`;
      await Deno.writeTextFile(file, JSON.stringify(declarationOf(b.root, 0)));
      await apply(b, file, cwdOf(b)); // converge, not timed
      await apply(b, file, cwdOf(b)); // warm-up
    }
    for (let round = 0; round < runs; round++) {
      // Alternate which build goes first, so neither always follows the other.
      const order = round % 2 ? [...builds].reverse() : builds;
      for (const b of order) {
        const file = `${tmp}/${b.state.slice(tmp.length + 1)}.json`;
        const noop = await apply(b, file, cwdOf(b));
        if (noop.changes.length !== 0) throw new Error(`${b.name}: no-op changed ${noop.changes}`);
        b.samples["no-op"].push(noop.ms);
        for (let d = 0; d < DIRS; d++) {
          await Deno.writeTextFile(`${b.root}/d${d}/f${round % FILES}`, `edited ${round}\n`);
        }
        const changed = await apply(b, file, cwdOf(b));
        if (changed.changes.length !== DIRS || changed.changes.some((c) => c !== "updated")) {
          throw new Error(`${b.name}: 10% changed reported ${changed.changes.length} changes`);
        }
        b.samples["10% changed"].push(changed.ms);
      }
      Deno.stderr.writeSync(new TextEncoder().encode(`host_compare: round ${round + 1}/${runs}\n`));
    }
    const [mine, base] = builds as [Build, Build];
    const lines = [
      `| scenario | runs | this checkout, median s | baseline, median s | this / baseline |`,
      `| --- | ---: | ---: | ---: | ---: |`,
    ];
    for (const s of ["no-op", "10% changed"] as const) {
      const a = median(mine.samples[s]) / 1000;
      const b = median(base.samples[s]) / 1000;
      lines.push(`| ${s} | ${runs} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(a / b).toFixed(2)}× |`);
    }
    console.log(lines.join("\n"));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) await main();
