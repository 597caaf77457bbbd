/**
 * The repeated-key scan (`lib/json_keys.ts` `duplicateKeys`) before and after, against
 * `JSON.parse` of the same text as the floor, in one run, on two inputs:
 *
 * - **declaration**: a 1,100-resource declaration built as `bench/host_bench.ts` builds its own
 *   (100 directories of 10 files, 100-200 characters of content each, `JSON.stringify(.., null,
 *   1)`), scanned once per process by the host: timed warm (median of rounds) and cold (the
 *   first call in a fresh process, median of `--cold` processes);
 * - **report**: a typical report body as `bench/control_bench.ts` builds them (20 changes), scanned
 *   once per delivery by mesh-control's ingest: timed warm.
 *
 * "Before" is `git show <ref>:lib/json_keys.ts` (default `main`, `--before REF`) written to a
 * temporary file; "after" is the working tree's. Usage:
 *
 * ```sh
 * deno run -A bench/json_keys_bench.ts [--before REF] [--rounds 15] [--cold 7]
 * ```
 *
 * The Markdown table goes to stdout.
 *
 * @module
 */

import { duplicateKeys as after } from "../lib/json_keys.ts";

type Scan = (text: string) => unknown[];

const WORDS = ["alpha", "bravo", "cache", "delta", "echo", "fox", "golf", "hotel", "india"];

/** A seeded generator (mulberry32), so every run scans the same text. */
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

/** A 1,100-resource declaration shaped as the host bench's. */
export function declarationText(): string {
  const random = prng(0x6d657368);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const hex = (n: number) =>
    Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join("");
  const tree = "/tmp/mesh-bench/mesh/tree";
  const resources: unknown[] = [];
  for (let d = 1; d <= 100; d++) {
    const dir = `d${String(d).padStart(3, "0")}`;
    resources.push({ id: dir, type: "directory", path: `${tree}/${dir}`, mode: "0755" });
    for (let f = 1; f <= 10; f++) {
      const rel = `${dir}/f${String(f).padStart(2, "0")}.conf`;
      const target = 100 + Math.floor(random() * 100);
      let content = `# ${rel}: managed by bench/host_bench.ts\n`;
      for (let k = 1; content.length < target; k++) {
        const line = `${pick(WORDS)}_${k} = ${pick(WORDS)}-${hex(4 + Math.floor(random() * 12))}\n`;
        if (content.length + line.length > 200) break;
        content += line;
      }
      resources.push({
        id: rel.replace("/", "-"),
        type: "file",
        path: `${tree}/${rel}`,
        content,
        mode: "0644",
      });
    }
  }
  return JSON.stringify({ version: 1, resources }, null, 1);
}

/** A report body shaped as the control bench's (20 changes, one updated). */
export function reportText(): string {
  return JSON.stringify({
    kind: "report",
    node: "node-00042",
    generation: 3,
    trigger: "interval",
    at: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    hostVersion: "mesh-host 0.1.0",
    outcome: "applied",
    applied: 20,
    total: 20,
    declaration: `sha256:${"ab".repeat(32)}`,
    changes: Array.from({ length: 20 }, (_, k) => ({
      id: `app-f${String(k).padStart(2, "0")}`,
      type: "file",
      change: k === 3 ? "updated" : "unchanged",
    })),
    problems: [],
  });
}

/** Imports `lib/json_keys.ts` as it is at `ref`, from a temporary copy. */
async function before(ref: string): Promise<Scan> {
  const out = await new Deno.Command("git", {
    args: ["show", `${ref}:lib/json_keys.ts`],
    cwd: new URL("..", import.meta.url).pathname,
  }).output();
  if (!out.success) {
    throw new Error(
      `Cannot read lib/json_keys.ts at ${ref}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const source = new TextDecoder().decode(out.stdout).replace(
    '"./json_path.ts"',
    JSON.stringify(new URL("../lib/json_path.ts", import.meta.url).href),
  );
  const dir = await Deno.makeTempDir({ prefix: "json_keys_bench" });
  const file = `${dir}/json_keys_before.ts`;
  await Deno.writeTextFile(file, source);
  try {
    return (await import(`file://${file}`)).duplicateKeys as Scan;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Median microseconds per call of each function over `rounds` interleaved rounds. */
function warm(text: string, fns: Record<string, () => unknown>, rounds: number) {
  // Calibrate: about 20 ms per round and function.
  let iterations = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) fns.parse!();
    if (performance.now() - t0 > 20) break;
    iterations *= 2;
  }
  const samples: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, fn] of Object.entries(fns)) {
      const t0 = performance.now();
      for (let i = 0; i < iterations; i++) fn();
      (samples[name] ??= []).push(((performance.now() - t0) * 1000) / iterations);
    }
  }
  void text;
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
}

async function main() {
  const args = Deno.args;
  const flag = (name: string, fallback: string) => {
    const i = args.indexOf(name);
    return i === -1 ? fallback : args[i + 1]!;
  };
  const ref = flag("--before", "main");
  const rounds = Number(flag("--rounds", "15"));
  const colds = Number(flag("--cold", "7"));

  // A child of --cold-child: time JSON.parse and one scan, each the first in this process.
  const child = flag("--cold-child", "");
  if (child) {
    const scan = child === "before" ? await before(ref) : after;
    const text = declarationText();
    const t0 = performance.now();
    JSON.parse(text);
    const t1 = performance.now();
    scan(text);
    const t2 = performance.now();
    console.log(JSON.stringify({ parse: (t1 - t0) * 1000, scan: (t2 - t1) * 1000 }));
    return;
  }

  const old = await before(ref);
  const declaration = declarationText();
  const report = reportText();
  for (const text of [declaration, report]) {
    if (JSON.stringify(old(text)) !== JSON.stringify(after(text)) || after(text).length !== 0) {
      throw new Error("The two scans disagree, or the bench input repeats a key");
    }
  }
  const rows: string[] = [];
  const row = (what: string, r: Record<string, number>) => {
    const p = r.parse!;
    rows.push(
      `| ${what} | ${r.parse!.toFixed(1)} | ${r.before!.toFixed(1)} (${
        (r.before! / p).toFixed(2)
      }x) | ${r.after!.toFixed(1)} (${(r.after! / p).toFixed(2)}x) | ${
        (r.before! / r.after!).toFixed(1)
      }x |`,
    );
  };
  for (const [what, text] of [["declaration", declaration], ["report", report]] as const) {
    const r = warm(text, {
      parse: () => JSON.parse(text),
      before: () => old(text),
      after: () => after(text),
    }, rounds);
    row(`${what} (${text.length} chars), warm`, r);
  }
  // Cold: the first scan of a fresh process, as the host does once per apply.
  const cold: Record<string, number[]> = { parse: [], before: [], after: [] };
  for (let i = 0; i < colds; i++) {
    for (const which of ["before", "after"]) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL(import.meta.url).pathname,
          "--before",
          ref,
          "--cold-child",
          which,
        ],
        stderr: "inherit",
      }).output();
      const r = JSON.parse(new TextDecoder().decode(out.stdout));
      cold[which]!.push(r.scan);
      cold.parse!.push(r.parse);
    }
  }
  row(
    `declaration (${declaration.length} chars), cold (first call, ${colds} processes each)`,
    Object.fromEntries(Object.entries(cold).map(([k, v]) => [k, median(v)])),
  );
  console.log(`Repeated-key scan, µs per call (median); ratio to JSON.parse of the same text\n`);
  console.log("| input | JSON.parse | before | after | before / after |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const r of rows) console.log(r);
}

if (import.meta.main) await main();
