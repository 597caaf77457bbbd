/**
 * Benchmark of the first node: a bare systemd lab machine (no Deno, no checkout, its own network
 * address) with the one-file debian host copied in. Measured in the same run:
 *
 * - the floor: the one file's first start (unpacking and verifying the runtime and the program)
 *   and a warm start (`mesh-host --help`);
 * - bare machine to substrate answering: the first `reconcile` (pulls the three images, creates
 *   the credentials, PostgreSQL, the inventory database and its schema, RabbitMQ and its
 *   topology, each verified by asking it);
 * - the no-op `reconcile` of the raised node (`--runs`, default 5), checked to change nothing;
 * - the images' sizes as the node stores them.
 *
 * Wall time is this script's monotonic clock around `podman exec`; peak RSS is the host process's
 * `VmHWM` (KiB) read from /proc inside the machine every 0.1 s until it exits (the one file execs
 * the runtime, so the pid started is the host). Run as root from the repository root, with the
 * lab built: `deno run -A bench/substrate_bench.ts [--runs N]`. Prints a Markdown table and
 * writes it to `bench/out/`.
 *
 * @module
 */

import "../tests/support/mod.ts";
import { freshSubstrateLock, substrateHost } from "../tests/support/substrate.ts";
import { bootLab, type LabMachine, registryForBridge } from "../tests/lab/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const runsAt = Deno.args.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(Deno.args[runsAt + 1]) : 5;
if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error("substrate_bench: --runs must be a positive integer");
  Deno.exit(2);
}

interface Sample {
  seconds: number;
  peakKib: number;
  stdout: string;
}

/** Runs `argv` in the machine, timing it and sampling its peak RSS. */
async function measured(m: LabMachine, argv: string[]): Promise<Sample> {
  const script = `"$@" >/tmp/bench.out 2>/tmp/bench.err & pid=$!; peak=0
while kill -0 $pid 2>/dev/null; do
  r=$(awk '/^VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null); [ -n "$r" ] && peak=$r
  sleep 0.1
done
wait $pid; code=$?; echo "peak=$peak code=$code" >&2; cat /tmp/bench.out`;
  const started = performance.now();
  const r = await m.exec(["sh", "-c", script, "sh", ...argv], { timeoutMs: 1_800_000 });
  const seconds = (performance.now() - started) / 1000;
  const said = /peak=(\d+) code=(\d+)/.exec(r.stderr);
  if (!said || said[2] !== "0") {
    const err = (await m.exec(["cat", "/tmp/bench.err"])).stdout;
    throw new Error(`${argv.join(" ")} failed in ${m.name}: ${r.stderr}\n${err}\n${r.stdout}`);
  }
  return { seconds, peakKib: Number(said[1]), stdout: r.stdout };
}

const changedOf = (stdout: string) =>
  (JSON.parse(stdout) as { changes: { change: string }[] }).changes.filter((c) =>
    c.change !== "unchanged"
  ).length;

// Images and a lock made on this machine (their digests differ from machine to machine), and the
// one-file host carrying that lock.
const file = (await substrateHost((await freshSubstrateLock()).path)).path;
const m = await bootLab("systemd", { bare: true, network: "bridge" });
const stop = await registryForBridge(m);
const rows: string[] = [];
try {
  await m.copyIn(file, "/usr/local/sbin/mesh-host");
  const unpack = await measured(m, ["mesh-host", "--help"]);
  const warm = await measured(m, ["mesh-host", "--help"]);
  const first = await measured(m, ["mesh-host", "reconcile", "--json"]);
  const firstChanged = changedOf(first.stdout);
  const noops: Sample[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = await measured(m, ["mesh-host", "reconcile", "--json"]);
    const n = changedOf(s.stdout);
    if (n !== 0) throw new Error(`no-op reconcile ${i + 1} changed ${n} resources: ${s.stdout}`);
    noops.push(s);
  }
  // The peer of a no-op reconcile's cost: one run of the mesh-control image, as two of the
  // bundle's verifies do (broker check, broker check --topology).
  const lock = await Deno.readTextFile(`${ROOT}bundles/substrate-debian.lock`);
  const controlImage = /127\.0\.0\.1:5000\/mesh-control@sha256:[0-9a-f]{64}/.exec(lock)?.[0];
  if (controlImage === undefined) throw new Error("the bundle pins no mesh-control image");
  const controlRuns: Sample[] = [];
  for (let i = 0; i < RUNS; i++) {
    controlRuns.push(await measured(m, ["podman", "run", "--rm", controlImage, "--help"]));
  }
  const images = (await m.exec([
    "podman",
    "image",
    "ls",
    "--format",
    "{{.Repository}} {{.Size}}",
  ])).stdout.trim().split("\n");
  const fileBytes = (await Deno.stat(file)).size;
  const fmt = (s: number) => s.toFixed(2);
  const range = (xs: number[]) =>
    `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))} (median ${
      fmt([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!)
    })`;
  rows.push(
    `Substrate bench, ${new Date().toISOString()}, ${RUNS} no-op runs, lab machine ${m.name}`,
    "",
    "| what | wall s | peak RSS MiB | vs warm start |",
    "| --- | --- | --- | --- |",
    `| first start of the one file (unpack + verify) | ${fmt(unpack.seconds)} | ${
      (unpack.peakKib / 1024).toFixed(0)
    } | ${(unpack.seconds / warm.seconds).toFixed(1)}× |`,
    `| warm start (\`--help\`), the floor | ${fmt(warm.seconds)} | ${
      (warm.peakKib / 1024).toFixed(0)
    } | 1× |`,
    `| first reconcile, bare to substrate answering (${firstChanged} changes) | ${
      fmt(first.seconds)
    } | ${(first.peakKib / 1024).toFixed(0)} | ${(first.seconds / warm.seconds).toFixed(0)}× |`,
    `| no-op reconcile of the raised node | ${range(noops.map((s) => s.seconds))} | ${
      (Math.max(...noops.map((s) => s.peakKib)) / 1024).toFixed(0)
    } | ${
      (noops.map((s) => s.seconds).sort((a, b) => a - b)[Math.floor(RUNS / 2)]! / warm.seconds)
        .toFixed(1)
    }× |`,
    `| peer: one \`podman run --rm mesh-control --help\` on the node | ${
      range(controlRuns.map((s) => s.seconds))
    } | (podman) | ${
      (controlRuns.map((s) => s.seconds).sort((a, b) => a - b)[Math.floor(RUNS / 2)]! /
        warm.seconds).toFixed(1)
    }× |`,
    "",
    `One file: ${(fileBytes / 1e6).toFixed(1)} MB. Images as the node stores them (vfs):`,
    "",
    ...images.map((l) => `- ${l}`),
  );
  const text = rows.join("\n") + "\n";
  console.log(text);
  await Deno.mkdir(`${ROOT}bench/out`, { recursive: true });
  await Deno.writeTextFile(
    `${ROOT}bench/out/substrate-${new Date().toISOString().replace(/[:.]/g, "-")}.md`,
    text,
  );
} finally {
  stop();
  await m.destroy();
}
