/**
 * Benchmark of registry parsing (`parseRegistry`: YAML with line counting, duplicate keys, the
 * zod schema, the cross-entry checks), showing that its time per entry stays flat from 1,000 to
 * 30,000 entries, next to the `yaml` package's own parse of the same text in the same run.
 *
 * Run from the repository root: `deno run -A bench/registry_parse_bench.ts [--runs N]
 * [--sizes 1000,3000,10000,30000]`. Needs nothing but Deno; starts no process.
 *
 * For each size it times, in one process, each `--runs` times (best and median kept):
 * - **floor**: `parseDocument(text, { uniqueKeys: false }).toJS()`, the `yaml` package parsing
 *   the same text into plain data, no line counting, no duplicate-key check, no schema;
 * - **yaml default**: `YAML.parse(text)` with the package's defaults (`uniqueKeys: true`, whose
 *   check compares every key with every earlier key of its map), timed once and only up to
 *   10,000 entries: it is quadratic;
 * - **the fast read alone**: `quickLoad(text)` (reconcile/registry_fast.ts: the plain-style check
 *   and js-yaml), what a valid registry's read costs before the schema;
 * - **registry, valid**: `parseRegistry(text)` of a valid registry (the fast read and the schema);
 * - **registry, 10 % bad**: `parseRegistry` of the same registry with every tenth entry given a
 *   bad port, an unknown field and a bad account (three problems each), so 30 % of the entries'
 *   problems are placed at their line and column (it throws; the count is checked): the fast
 *   read, the schema refusing, then the full read with positions.
 *
 * It prints a Markdown table (ms per parse, µs per entry, ratio to the floor) and writes it with
 * the raw samples to `bench/out/registry-parse-<time>.{md,json}`.
 *
 * @module
 */

import { parse, parseDocument } from "yaml";
import { parseRegistry, RegistryError } from "../reconcile/registry.ts";
import { quickLoad } from "../reconcile/registry_fast.ts";

const OUT_DIR = new URL("./out/", import.meta.url).pathname;

/**
 * A registry of `entries` entries in the mix a machine has: services (container, user, port,
 * web), daemons (port, unit), sites and batch jobs. With `bad`, every tenth entry carries three
 * problems: a port that is not a number, an unknown field, an account name that is not one.
 */
export function registryText(entries: number, options: { bad?: boolean } = {}): string {
  const lines = ["version: 1", "accounts:", "  - root", "  - app", "services:"];
  for (let i = 0; i < entries; i++) {
    const broken = options.bad === true && i % 10 === 0;
    const port = 1024 + (i % 60000);
    lines.push(`  entry-${i}:`);
    switch (broken ? 0 : i % 4) {
      case 0:
        lines.push(
          "    kind: service",
          `    container: web-${i}`,
          `    user: ${broken ? "Not An Account" : i % 8 === 0 ? "root" : "app"}`,
          `    port: ${broken ? "eighty" : port}`,
          `    web: app-${i}.example.org`,
          "    state:",
          `      - /srv/web-${i}`,
          ...(broken ? ["    colour: blue"] : []),
        );
        break;
      case 1:
        lines.push(
          "    kind: daemon",
          `    unit: daemon-${i}.service`,
          `    port: ${port}`,
          `    note: runs the ${i}th thing`,
        );
        break;
      case 2:
        lines.push(
          "    kind: site",
          `    web: [site-${i}.example.org, www.site-${i}.example.org]`,
          "    telemetry: false",
        );
        break;
      default:
        lines.push(
          "    kind: batch",
          `    timer: job-${i}.timer`,
          `    container: job-${i}`,
          "    user: app",
          "    secrets: [token]",
        );
    }
  }
  return lines.join("\n") + "\n";
}

interface Case {
  name: string;
  run: (text: string) => unknown;
  /** Which text: the valid registry or the one with problems. */
  bad?: boolean;
  /** Timed once, not `--runs` times, and only up to 10,000 entries (quadratic: beyond, minutes). */
  once?: boolean;
}

const CASES: Case[] = [
  {
    name: "floor: yaml parseDocument (uniqueKeys off) + toJS",
    run: (t) => parseDocument(t, { uniqueKeys: false }).toJS(),
  },
  { name: "yaml default: YAML.parse (uniqueKeys on), 1 run", run: (t) => parse(t), once: true },
  {
    name: "the fast read alone: quickLoad (js-yaml, plain-style check)",
    run: (t) => {
      if (quickLoad(t) === undefined) throw new Error("the fast read declined the registry");
    },
  },
  { name: "parseRegistry, valid", run: (t) => parseRegistry(t) },
  {
    name: "parseRegistry, 10 % bad (3 problems each)",
    bad: true,
    run: (t) => {
      try {
        parseRegistry(t);
      } catch (error) {
        if (error instanceof RegistryError) return error.problems.length;
        throw error;
      }
      throw new Error("the registry with problems was accepted");
    },
  },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function parseArgs(args: string[]): { runs: number; sizes: number[] } {
  const out = { runs: 5, sizes: [1000, 3000, 10000, 30000] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag, inline] = a.includes("=") ? a.split("=", 2) as [string, string] : [a, undefined];
    const value = inline ?? args[++i];
    if (value === undefined || (flag !== "--runs" && flag !== "--sizes")) {
      throw new Error(`unknown argument "${a}" (usage: [--runs N] [--sizes 1000,3000,...])`);
    }
    if (flag === "--runs") out.runs = Number(value);
    else out.sizes = value.split(",").map(Number);
    if (!Number.isInteger(out.runs) || out.runs < 1 || !out.sizes.every((n) => n > 0)) {
      throw new Error(`${flag}: "${value}" is not a count`);
    }
  }
  return out;
}

async function main() {
  const { runs, sizes } = parseArgs(Deno.args);
  const started = new Date();
  const rows: { entries: number; bytes: number; case: string; ms: number[]; problems?: number }[] =
    [];
  // Warm-up, so the first size does not carry the compilation of the parser and the schema.
  for (const c of CASES) {
    const text = registryText(300, { bad: c.bad });
    for (let i = 0; i < 3; i++) c.run(text);
  }
  for (const entries of sizes) {
    const texts = { valid: registryText(entries), bad: registryText(entries, { bad: true }) };
    for (const c of CASES) {
      if (c.once && entries > 10_000) continue;
      const text = c.bad ? texts.bad : texts.valid;
      const ms: number[] = [];
      let result: unknown;
      for (let i = 0; i < (c.once ? 1 : runs); i++) {
        const t0 = performance.now();
        result = c.run(text);
        ms.push(performance.now() - t0);
      }
      rows.push({
        entries,
        bytes: text.length,
        case: c.name,
        ms,
        ...(typeof result === "number" ? { problems: result } : {}),
      });
      console.error(`bench: ${entries} entries, ${c.name}: best ${Math.min(...ms).toFixed(0)} ms`);
    }
  }
  const lines = [
    `# registry parse benchmark, ${started.toISOString()}`,
    "",
    `Machine: ${Deno.hostname()}, ${navigator.hardwareConcurrency} cores, Linux ${Deno.osRelease()}, ` +
    `deno ${Deno.version.deno}; ${runs} runs per cell, best (median) shown; load average ` +
    `${Deno.loadavg().map((l) => l.toFixed(1)).join(" ")} at the end.`,
    "",
    "| entries | KiB | what | best ms | median ms | µs / entry (best) | × floor (best) |",
    "|---:|---:|---|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const floor = rows.find((f) => f.entries === r.entries && f.case === CASES[0]!.name)!;
    const best = Math.min(...r.ms);
    lines.push(
      `| ${r.entries} | ${(r.bytes / 1024).toFixed(0)} | ${r.case}${
        r.problems !== undefined ? ` (${r.problems} problems)` : ""
      } | ${best.toFixed(0)} | ${median(r.ms).toFixed(0)} | ${
        (best * 1000 / r.entries).toFixed(1)
      } | ${(best / Math.min(...floor.ms)).toFixed(2)}× |`,
    );
  }
  const markdown = lines.join("\n") + "\n";
  console.log(markdown);
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  await Deno.writeTextFile(`${OUT_DIR}registry-parse-${stamp}.md`, markdown);
  await Deno.writeTextFile(`${OUT_DIR}registry-parse-${stamp}.json`, JSON.stringify(rows, null, 2));
  console.error(`bench: wrote ${OUT_DIR}registry-parse-${stamp}.md and .json`);
}

if (import.meta.main) await main();
