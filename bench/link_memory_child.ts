/**
 * The child of bench/link_memory_bench.ts: the link's loop (`runLink` of host/link.ts) until a
 * number of reports, sampling its own memory. It loads only what the link loads, so that its
 * figures are the link's; the bench runs it bundled (`deno bundle`, as the built host runs its
 * program) unless `--source` is given.
 *
 * Run by the bench: `deno run -A [--v8-flags=...] bench/link_memory_child.ts ARGS` (or its
 * bundle, or its one-file build as `FILE link ARGS`), ARGS being the JSON of `{broker, node, stateDir, applies}`; prints one JSON
 * {@linkcode Sample} a line on stdout.
 *
 * @module
 */

import { runLink } from "../host/link.ts";
import { readControlKey } from "../lib/signing.ts";
import { debian } from "../systems/debian/mod.ts";

/** Directories in the bench's declaration. */
export const DIRS = 100;
/** Files in each directory. */
export const FILES_PER_DIR = 10;
/** How much faster the child's clock runs than the real one (see `child`). */
export const SPEED = 50;

/** One sample the child prints: after `applies` applies. */
export interface Sample {
  applies: number;
  /** Present on a sample taken right after a refused oversized message: refusals so far. */
  refusals?: number;
  rssKiB: number;
  hwmKiB: number;
  /** Of `rssKiB`: anonymous pages (V8's heap, malloc, stacks) and file-backed (Deno's binary). */
  anonKiB: number;
  fileKiB: number;
  /** The process's CPU time so far (user + system, ms; 10 ms steps). */
  cpuMs: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  ms: number;
}

const encoder = new TextEncoder();

/**
 * Writes a line to stderr. Not `console`: Deno keeps every message given to `console` (V8's
 * inspector stores the last 1,000 with their stack traces, ~1.5 KiB of heap and malloc each), which
 * the link itself never does (it writes its reports with `Deno.stdout`), and which made the
 * samples grow by ~1.6 MiB over 1,000 applies (heap snapshots of the child, 2026-12-02).
 */
function log(line: string) {
  writeLine(Deno.stderr, `link_memory_bench: ${line}`);
}

function writeLine(stream: typeof Deno.stdout | typeof Deno.stderr, line: string) {
  const bytes = encoder.encode(`${line}\n`);
  let written = 0;
  while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
}

function status(): {
  rssKiB: number;
  hwmKiB: number;
  anonKiB: number;
  fileKiB: number;
  cpuMs: number;
} {
  const text = Deno.readTextFileSync("/proc/self/status");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1]);
  return {
    rssKiB: field("VmRSS"),
    hwmKiB: field("VmHWM"),
    anonKiB: field("RssAnon"),
    fileKiB: field("RssFile"),
    cpuMs: cpuMs(),
  };
}

/** User + system CPU time of this process (ms), from `/proc/self/stat` (clock ticks of 10 ms). */
function cpuMs(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  // The fields after the command name (in parentheses, which may hold spaces): utime is the 14th
  // field of the line, stime the 15th.
  const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(after[11]) + Number(after[12])) * 10;
}

/** The child: the link's loop until `applies` reports, sampling its own memory. */
async function child(
  args: {
    broker: string;
    node: string;
    stateDir: string;
    /** The control plane's public key file the link verifies with. */
    controlKey: string;
    applies: number;
    every: number;
    everyApply?: boolean;
    /** How much faster the clock runs (default {@linkcode SPEED}). */
    speed?: number;
    /** Collect before each sample (the live heap): the bench's `--v8-flags` had `--expose-gc`. */
    gc?: boolean;
    /** The bench publishes an oversized message after every this many applies (0: none). */
    oversizedEvery?: number;
  },
) {
  // A report says its interval, which must be 1 s at least (as `--every`): the link runs with 1 s
  // on a clock that goes `SPEED` times faster. Its loop sleeps (a real timer) until its next
  // interval as that clock counts it, so it applies about once a real second, for 1,000 applies
  // about 18 minutes. Only the link's schedule reads Date.now.
  const realNow = Date.now.bind(Date);
  const origin = realNow();
  const speed = args.speed ?? SPEED;
  Date.now = () => origin + (realNow() - origin) * speed;
  const total = DIRS + DIRS * FILES_PER_DIR;
  const stop = new AbortController();
  const started = performance.now();
  let count = 0;
  let problem: string | undefined;
  let refusals = 0;
  const sample = (applies: number, refused?: number) => {
    // With --gc: the heap's live size, collected first (else it includes garbage).
    if (args.gc) (globalThis as { gc?: () => void }).gc?.();
    const m = Deno.memoryUsage();
    const sample: Sample = {
      applies,
      ...(refused !== undefined ? { refusals: refused } : {}),
      ...status(),
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      ms: Math.round(performance.now() - started),
    };
    writeLine(Deno.stdout, JSON.stringify(sample));
  };
  const marks = new Set([1, 2, 10, 50, 100, 200, 500, 1000, 10000, args.applies]);
  await runLink({
    system: debian,
    broker: args.broker,
    node: args.node,
    controlKey: { path: args.controlKey, key: await readControlKey(args.controlKey) },
    stateDir: args.stateDir,
    version: "bench",
    every: 1000,
    retry: 1000,
    signal: stop.signal,
    onNews: (line) => log(`link: ${line}`),
    onApplied: (report) => {
      if (args.oversizedEvery && count > 0 && report.trigger === "push") {
        // After the converge (the declaration's push), an oversized message the bench published:
        // refused from its header, not an apply.
        if (
          report.outcome === "refused" &&
          /more than the \d+ it may be \(not read\)$/.test(report.problems[0]?.message ?? "")
        ) {
          refusals++;
          sample(count, refusals);
        } else {
          problem ??= `push after apply ${count}: ${report.outcome}, ${
            JSON.stringify(report.problems).slice(0, 200)
          }`;
          stop.abort();
        }
        return;
      }
      count++;
      const changed = report.changes.filter((c) => c.change !== "unchanged").length;
      if (report.outcome !== "applied" || report.applied !== total || report.total !== total) {
        problem ??= `apply ${count}: ${report.outcome}, ${report.applied} of ${report.total}`;
      } else if (count > 1 && changed !== 0) {
        problem ??= `apply ${count} (${report.trigger}) changed ${changed} resources`;
      }
      if (problem !== undefined) stop.abort();
      if (
        marks.has(count) || args.everyApply ||
        (args.oversizedEvery && count % args.oversizedEvery === 0)
      ) {
        sample(count);
      }
      if (count >= args.applies) stop.abort();
    },
  });
  if (problem !== undefined) throw new Error(problem);
}

// Started as a one-file host starts its link (`FILE link ARGS`, the bench's `--onefile`), the
// command comes first. `--warm`: loaded (and so compiled and code-cached) only.
const argv = Deno.args[0] === "link" ? Deno.args.slice(1) : Deno.args;
if (import.meta.main && argv[0] !== "--warm") await child(JSON.parse(argv[0]!));
