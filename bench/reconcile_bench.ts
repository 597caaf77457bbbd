/**
 * Benchmark of `mesh-reconcile run --json` on a busy machine, and proof that its subprocess
 * count grows with the registry's accounts, not with its entries.
 *
 * Run as root from the repository root: `deno run -A bench/reconcile_bench.ts [--runs N]
 * [--hold FILE] [--cpu-prof DIR]`. `--hold FILE` keeps the fixtures up once set (the registries'
 * paths written to FILE) until FILE is removed, for profiling by hand; `--cpu-prof DIR` writes a
 * CPU profile of one run per registry (`deno run --cpu-prof`) to DIR before measuring.
 *
 * What it sets up (and removes again, even on failure or Ctrl-C):
 * - the machine's own state, adopted first with `reconcile/main.ts init --caddy-admin none`;
 * - 50 podman containers `meshbench-1..50` (label `mesh.bench=1`) from the local busybox image,
 *   each publishing one port on 127.0.0.1;
 * - one helper process (`deno run`) holding 200 listening TCP sockets on 127.0.0.1;
 * - a throwaway system account `meshbench` (with `/run/user/<uid>`), the second account;
 * - registries: the machine's adopted entries plus 200 bench entries (50 `service`, 150
 *   `daemon` claiming the 200 helper ports), and a 10-entry one; each with 1 and 2 accounts.
 *
 * What it measures, each command `--runs` times (after one unrecorded warm-up) under
 * `/usr/bin/time -f '%e %M'`: `mesh-reconcile run --json --caddy-admin none` per registry (and
 * once with `--boot none`), the peer (the raw observation commands of the first version, without
 * the boot view: `podman ps --format json` per account plus `ss -Htln`, concurrently), the
 * probes (the raw commands a run with the boot view needs: per account `podman ps` then one
 * `podman container inspect` of all, plus `ss -Htlnp`, concurrently), and `check-registry`
 * (startup and parsing, no observation). It prints a Markdown table and writes it, with the raw samples, to
 * `bench/out/`.
 *
 * @module
 */

import { Document, isMap, parseDocument } from "yaml";
import { ensureImage, freePort, IMAGE, ROOT } from "../tests/support/mod.ts";
import { cleanup, log, undos } from "./cleanup.ts";
import { exec as execWith, type ExecOptions, type Timed } from "./exec.ts";

const CONTAINERS = 50;
const SOCKETS = 200;
/** Daemon entries: the first {@linkcode PAIRED} claim two helper ports each, the rest one. */
const DAEMONS = 150;
const PAIRED = SOCKETS - DAEMONS; // 50 daemons x 2 ports + 100 daemons x 1 port = 200 ports
const SMALL_SERVICES = 5;
const SMALL_DAEMONS = 5;
const LABEL = "mesh.bench=1";
const ACCOUNT = "meshbench";
const START_CONCURRENCY = 4;
const TIME = "/usr/bin/time";
const OUT_DIR = `${ROOT}bench/out`;

// ---------------------------------------------------------------------------------------------
// Running commands

/** Aborted on SIGINT/SIGTERM: kills the commands in flight and refuses new ones (but cleanup's). */
const interrupt = new AbortController();

/** A command run from the repository root, timed, stopped with the bench (bench/exec.ts). */
const exec = (argv: string[], options: Omit<ExecOptions, "signal"> = {}): Promise<Timed> =>
  execWith(argv, { ...options, signal: interrupt.signal });

/** One timed run: `/usr/bin/time`'s wall seconds and peak RSS, and the parent's own clock. */
interface Sample {
  /** `%e`: elapsed wall seconds (10 ms resolution). */
  wallS: number;
  /** `%M`: peak resident set size in KiB (the largest process of the tree). */
  rssKiB: number;
  /** Wall milliseconds measured by this script around the spawn (includes `time` itself). */
  clockMs: number;
  /**
   * `%U + %S`: CPU seconds, user and system, of the command and the children it waited for (a
   * shared machine's load stretches wall time; this much less).
   */
  cpuS: number;
  code: number;
  stdout: string;
  stderr: string;
}

async function timed(argv: string[], timeFile: string): Promise<Sample> {
  const started = performance.now();
  const out = await exec([TIME, "-f", "%e %M %U %S", "-o", timeFile, ...argv], {
    allowFailure: true,
  });
  const clockMs = performance.now() - started;
  // On a non-zero exit GNU time writes "Command exited with non-zero status N" first.
  const last = (await Deno.readTextFile(timeFile)).trim().split("\n").pop() ?? "";
  const m = /^(\d+(?:\.\d+)?) (\d+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/.exec(last);
  if (!m) throw new Error(`unexpected ${TIME} output "${last}" for ${argv.join(" ")}`);
  return {
    wallS: Number(m[1]),
    rssKiB: Number(m[2]),
    cpuS: Number(m[3]) + Number(m[4]),
    clockMs,
    ...out,
  };
}

function reconcileArgv(...args: string[]): string[] {
  return [Deno.execPath(), "run", "-A", "--quiet", `${ROOT}reconcile/main.ts`, ...args];
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  }));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fixtures, each with its undo registered before it is made

async function removeContainers(names: string[], cleanup = false) {
  if (names.length === 0) return;
  await exec(["podman", "rm", "--force", "--time", "0", "--ignore", ...names], { cleanup });
}

async function benchContainers(cleanup = false): Promise<string[]> {
  const out = await exec(
    ["podman", "ps", "--all", "--filter", `label=${LABEL}`, "--format", "json"],
    { cleanup },
  );
  const list = JSON.parse(out.stdout || "[]") as { Names: string[] }[];
  return list.map((c) => c.Names[0]!).filter(Boolean);
}

/** Starts the helper holding {@linkcode SOCKETS} listening sockets; returns their ports. */
async function startSocketHelper(dir: string): Promise<number[]> {
  const script = `${dir}/sockets.ts`;
  await Deno.writeTextFile(
    script,
    `const held = [];
for (let i = 0; i < ${SOCKETS}; i++) held.push(Deno.listen({ hostname: "127.0.0.1", port: 0 }));
console.log(JSON.stringify(held.map((l) => l.addr.port)));
// Hold them until the parent closes our stdin (or dies).
for await (const _ of Deno.stdin.readable) { /* nothing */ }
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", script],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stdin = child.stdin.getWriter();
  undos.push({
    what: `socket helper (pid ${child.pid}) stopped`,
    run: async () => {
      await stdin.close().catch(() => {});
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 3000);
      await child.status;
      clearTimeout(timer);
    },
  });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the socket helper exited before listening");
    text += value;
  }
  reader.releaseLock();
  const ports = JSON.parse(text.split("\n")[0]!) as number[];
  if (ports.length !== SOCKETS) throw new Error(`the socket helper holds ${ports.length} ports`);
  return ports;
}

async function startBenchContainers(avoid: Set<number>): Promise<{ name: string; port: number }[]> {
  const names = Array.from({ length: CONTAINERS }, (_, i) => `meshbench-${i + 1}`);
  undos.push({
    what: `containers meshbench-1..${CONTAINERS} and any with label ${LABEL} removed`,
    run: async () => {
      // A second Ctrl-C reaches podman too: try again rather than leave containers behind.
      for (let attempt = 1;; attempt++) {
        try {
          await removeContainers([...new Set([...names, ...await benchContainers(true)])], true);
          if ((await benchContainers(true)).length === 0) return;
          throw new Error("some are still there");
        } catch (error) {
          if (attempt >= 3) throw error;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    },
  });
  return await mapLimit(names, START_CONCURRENCY, async (name) => {
    for (let attempt = 1;; attempt++) {
      let port = freePort();
      while (avoid.has(port)) port = freePort();
      avoid.add(port);
      const out = await exec([
        "podman",
        "run",
        "-d",
        "--name",
        name,
        "--label",
        LABEL,
        "-p",
        `127.0.0.1:${port}:80`,
        IMAGE,
        "httpd",
        "-f",
        "-p",
        "80",
      ], { allowFailure: true });
      if (out.code === 0) return { name, port };
      // A port taken between freePort() and podman's bind: try another one.
      await removeContainers([name]);
      if (attempt >= 3 || interrupt.signal.aborted) {
        throw new Error(`cannot start ${name}: ${out.stderr.trim()}`);
      }
    }
  });
}

/** Reads /etc/passwd for `name`; undefined when there is no such account. */
async function accountUid(name: string): Promise<number | undefined> {
  for (const line of (await Deno.readTextFile("/etc/passwd")).split("\n")) {
    const f = line.split(":");
    if (f[0] === name && f[2] !== undefined) return Number(f[2]);
  }
  return undefined;
}

/** Pids of the processes whose real uid is `uid`. */
async function processesOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const status = await Deno.readTextFile(`/proc/${entry.name}/status`).catch(() => "");
    const m = /^Uid:\s+(\d+)/m.exec(status);
    if (m && Number(m[1]) === uid) pids.push(Number(entry.name));
  }
  return pids;
}

/**
 * Creates the throwaway second account (rootless podman needs a home and `/run/user/<uid>`).
 * Its undo stops what rootless podman left running as it (the `catatonit -P` pause process),
 * then deletes the account, its home and its runtime directory.
 */
async function createAccount(): Promise<{ uid: number; home: string }> {
  if (await accountUid(ACCOUNT) !== undefined) {
    throw new Error(
      `account "${ACCOUNT}" already exists (left by an interrupted run?); remove it with ` +
        `"userdel -r ${ACCOUNT}" and run again`,
    );
  }
  undos.push({
    what: `account ${ACCOUNT} deleted (with its processes, home and /run/user dir)`,
    run: async () => {
      const uid = await accountUid(ACCOUNT);
      if (uid === undefined) return;
      for (const signal of ["SIGTERM", "SIGKILL"] as const) {
        for (const pid of await processesOf(uid)) {
          try {
            Deno.kill(pid, signal);
          } catch { /* gone */ }
        }
        for (let i = 0; i < 30 && (await processesOf(uid)).length > 0; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      await exec(["userdel", "--remove", ACCOUNT], { allowFailure: true, cleanup: true });
      if (await accountUid(ACCOUNT) !== undefined) throw new Error("userdel did not delete it");
      await Deno.remove(`/run/user/${uid}`, { recursive: true }).catch(() => {});
    },
  });
  await exec([
    "useradd",
    "--system",
    "--create-home",
    "--home-dir",
    `/home/${ACCOUNT}`,
    "--shell",
    "/usr/sbin/nologin",
    ACCOUNT,
  ]);
  const uid = (await accountUid(ACCOUNT))!;
  const run = `/run/user/${uid}`;
  const madeRunUser = !(await Deno.stat("/run/user").then(() => true, () => false));
  if (madeRunUser) {
    await Deno.mkdir("/run/user", { mode: 0o755 });
    undos.push({ what: "/run/user removed", run: () => Deno.remove("/run/user") });
  }
  await Deno.mkdir(run, { mode: 0o700 });
  await Deno.chown(run, uid, uid);
  return { uid, home: `/home/${ACCOUNT}` };
}

// ---------------------------------------------------------------------------------------------
// Registries

type Entry = Record<string, unknown>;

function benchEntries(
  containers: { name: string; port: number }[],
  ports: number[],
): [string, Entry][] {
  const entries: [string, Entry][] = containers.map((c, i) => [
    `bench-svc-${String(i + 1).padStart(2, "0")}`,
    { kind: "service", user: "root", container: c.name, port: c.port, note: "bench fixture" },
  ]);
  let next = 0;
  for (let i = 0; i < DAEMONS; i++) {
    const claim = ports.slice(next, next + (i < PAIRED ? 2 : 1));
    next += claim.length;
    entries.push([
      `bench-daemon-${String(i + 1).padStart(3, "0")}`,
      { kind: "daemon", port: claim.length === 1 ? claim[0] : claim, note: "bench fixture" },
    ]);
  }
  if (next !== ports.length) throw new Error(`daemon entries claim ${next} of ${ports.length}`);
  return entries;
}

/** The adopted machine registry with `entries` added and `accounts` replaced. */
function mergedRegistry(machine: string, entries: [string, Entry][], accounts: string[]): string {
  const doc = parseDocument(machine);
  const services = doc.get("services");
  if (!isMap(services)) throw new Error("the adopted registry has no services map");
  services.flow = false;
  for (const [name, entry] of entries) {
    if (services.has(name)) throw new Error(`the machine already has an entry "${name}"`);
    services.set(name, doc.createNode(entry));
  }
  doc.set("accounts", doc.createNode(accounts));
  doc.commentBefore = `${
    doc.commentBefore ?? ""
  }\n Bench fixtures added by bench/reconcile_bench.ts.`;
  return doc.toString({ lineWidth: 0 });
}

function smallRegistry(entries: [string, Entry][], accounts: string[]): string {
  const services = Object.fromEntries([
    ...entries.filter(([n]) => n.startsWith("bench-svc-")).slice(0, SMALL_SERVICES),
    ...entries.filter(([n]) => n.startsWith("bench-daemon-")).slice(0, SMALL_DAEMONS),
  ]);
  const doc = new Document({ version: 1, accounts, services });
  doc.commentBefore =
    " 10 bench entries (bench/reconcile_bench.ts); the rest of the machine is rogue.";
  return doc.toString({ lineWidth: 0 });
}

function portsOf(registryText: string): Set<number> {
  const data = parseDocument(registryText).toJS() as {
    services?: Record<string, { port?: number | number[] }>;
  };
  return new Set(Object.values(data.services ?? {}).flatMap((e) => e.port ?? []));
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface ReconcileJson {
  exitCode: number;
  entries: number;
  subprocesses: number;
  findings: { check: string; direction?: string; subject: string; detail: string }[];
  observed: Record<string, number>;
  sources: { source: string; account?: string; state: string; detail: string }[];
}

interface Row {
  label: string;
  kind: "reconcile" | "peer" | "parse";
  entries?: number;
  accounts: number;
  samples: Sample[];
  /** Per-run `subprocesses` from the JSON (reconcile), or the commands the peer runs. */
  subprocesses: number[];
  exitCodes: number[];
  findings: number[];
  peer?: string;
  /** The row of the raw probes this run is compared with (runs with the boot view). */
  probes?: string;
  lastJson?: ReconcileJson;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function spread(xs: number[]): string {
  const lo = Math.min(...xs), hi = Math.max(...xs);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}

async function measure(
  row: Omit<Row, "samples" | "subprocesses" | "exitCodes" | "findings">,
  argv: string[],
  runs: number,
  timeFile: string,
  fixed?: number,
): Promise<Row> {
  const out: Row = { ...row, samples: [], subprocesses: [], exitCodes: [], findings: [] };
  log(`measuring ${row.label}: 1 warm-up + ${runs} runs`);
  for (let i = 0; i <= runs; i++) {
    const sample = await timed(argv, timeFile);
    if (row.kind === "reconcile") {
      let json: ReconcileJson;
      try {
        json = JSON.parse(sample.stdout) as ReconcileJson;
      } catch {
        throw new Error(`${row.label}: no JSON (exit ${sample.code}): ${sample.stderr.trim()}`);
      }
      if (i === 0) continue; // warm-up
      out.subprocesses.push(json.subprocesses);
      out.findings.push(json.findings.length);
      out.lastJson = json;
    } else {
      if (sample.code !== 0) {
        throw new Error(`${row.label} exited with ${sample.code}: ${sample.stderr.trim()}`);
      }
      if (i === 0) continue;
      if (fixed !== undefined) out.subprocesses.push(fixed);
    }
    out.exitCodes.push(sample.code);
    out.samples.push(sample);
  }
  return out;
}

/** The peers: the raw commands of the original bench (no boot view), per account count. */
const PEER = { 1: "peer: podman ps + ss", 2: "peer: podman ps ×2 + ss" } as const;
/** The raw probes of a run with the boot view, per account count. */
const PROBES = {
  1: "probes: podman ps → inspect + ss -p",
  2: "probes: (podman ps → inspect) ×2 + ss -p",
} as const;

function table(rows: Row[]): string {
  const lines = [
    "| command | entries | accounts | runs | median wall s (`%e`) | median wall ms (clock) | median CPU s (`%U+%S`) | peak RSS MiB (`%M`, median) | subprocesses | exit (findings) | wall / peer | wall / probes | CPU / probes |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
  ];
  for (const r of rows) {
    const clock = median(r.samples.map((s) => s.clockMs));
    const cpu = median(r.samples.map((s) => s.cpuS));
    const versus = (label: string | undefined, of: "clockMs" | "cpuS" = "clockMs") => {
      const peer = label === undefined ? undefined : rows.find((p) => p.label === label);
      const mine = of === "clockMs" ? clock : cpu;
      return peer ? `${(mine / median(peer.samples.map((s) => s[of]))).toFixed(1)}×` : "—";
    };
    const exits = r.kind === "reconcile"
      ? `${spread(r.exitCodes)} (${spread(r.findings)})`
      : spread(r.exitCodes);
    lines.push(
      `| ${r.label} | ${r.entries ?? "—"} | ${r.accounts} | ${r.samples.length} | ${
        median(r.samples.map((s) => s.wallS)).toFixed(2)
      } | ${clock.toFixed(0)} | ${cpu.toFixed(2)} | ${
        (median(r.samples.map((s) => s.rssKiB)) / 1024).toFixed(1)
      } | ${r.subprocesses.length ? spread(r.subprocesses) : "—"} | ${exits} | ${
        versus(r.peer)
      } | ${versus(r.probes)} | ${versus(r.probes, "cpuS")} |`,
    );
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------

interface Args {
  runs: number;
  /** Keep the fixtures up, their registries listed in this file, until it is removed. */
  hold?: string;
  /** Write a CPU profile of one run per registry (`deno run --cpu-prof`) into this directory. */
  cpuProf?: string;
}

function parseArgs(args: string[]): Args {
  const out: Args = { runs: 5 };
  const usage = "usage: [--runs N] [--hold FILE] [--cpu-prof DIR]";
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.indexOf("=");
    const [flag, inline] = a.startsWith("--") && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a];
    if (!["--runs", "--hold", "--cpu-prof"].includes(flag!)) {
      throw new Error(`unknown argument "${a}" (${usage})`);
    }
    const value = inline ?? args[++i];
    if (value === undefined) throw new Error(`${flag} needs a value (${usage})`);
    if (flag === "--runs") {
      out.runs = Number(value);
      if (!Number.isInteger(out.runs) || out.runs < 1) {
        throw new Error(`--runs: "${value}" is not a count`);
      }
    } else if (flag === "--hold") out.hold = value;
    else out.cpuProf = value;
  }
  return out;
}

/** Resolves once `file` no longer exists (polled every 0.5 s), or rejects when interrupted. */
async function whileExists(file: string): Promise<void> {
  while (await Deno.stat(file).then(() => true, () => false)) {
    interrupt.signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function main() {
  const { runs, hold, cpuProf } = parseArgs(Deno.args);
  if (Deno.uid() !== 0) {
    throw new Error("run as root: it starts rootful podman and adds an account");
  }
  if (!(await Deno.stat(TIME).then((s) => s.isFile, () => false))) {
    throw new Error(`${TIME} (GNU time) is needed: apt-get install time`);
  }
  if (await accountUid(ACCOUNT) !== undefined) {
    throw new Error(
      `account "${ACCOUNT}" already exists; this benchmark creates and deletes it, so it ` +
        `will not use one it did not make (if an interrupted run left it: userdel -r ${ACCOUNT})`,
    );
  }
  const started = new Date();
  const dir = await Deno.makeTempDir({ prefix: "meshbench-" });
  undos.push({ what: `${dir} removed`, run: () => Deno.remove(dir, { recursive: true }) });
  const timeFile = `${dir}/time.txt`;

  const leftovers = await benchContainers();
  if (leftovers.length > 0) {
    log(`removing ${leftovers.length} containers left by an earlier run (label ${LABEL})`);
    await removeContainers(leftovers);
  }

  // 1. The machine as it is, before any fixture.
  const machine = (await exec(reconcileArgv("init", "--caddy-admin", "none"))).stdout;
  const machineEntries = Object.keys(
    (parseDocument(machine).toJS() as { services?: Record<string, unknown> }).services ?? {},
  ).length;
  log(`adopted ${machineEntries} entries from the machine`);

  // 2. Fixtures.
  await ensureImage();
  const ports = await startSocketHelper(dir);
  log(`helper holds ${ports.length} sockets`);
  const avoid = new Set([...portsOf(machine), ...ports]);
  const t0 = performance.now();
  const containers = await startBenchContainers(avoid);
  log(
    `${containers.length} containers started in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const account = await createAccount();
  log(`account ${ACCOUNT} (uid ${account.uid}) created`);

  const entries = benchEntries(containers, ports);
  const registries = {
    full1: mergedRegistry(machine, entries, ["root"]),
    full2: mergedRegistry(machine, entries, ["root", ACCOUNT]),
    small1: smallRegistry(entries, ["root"]),
    small2: smallRegistry(entries, ["root", ACCOUNT]),
  };
  const files: Record<keyof typeof registries, string> = {
    full1: `${dir}/full-1.yaml`,
    full2: `${dir}/full-2.yaml`,
    small1: `${dir}/small-1.yaml`,
    small2: `${dir}/small-2.yaml`,
  };
  const counts: Record<string, number> = {};
  for (const key of Object.keys(registries) as (keyof typeof registries)[]) {
    await Deno.writeTextFile(files[key], registries[key]);
    const check = await exec(reconcileArgv("check-registry", files[key]));
    const m = /valid, (\d+) entries/.exec(check.stdout);
    if (!m) throw new Error(`check-registry ${key}: ${check.stdout}`);
    counts[key] = Number(m[1]);
  }
  log(
    `registries: full ${counts.full1} entries (${machineEntries} adopted + ${entries.length} bench), small ${counts.small1}`,
  );

  if (hold !== undefined) {
    await Deno.writeTextFile(
      hold,
      Object.entries(files).map(([key, file]) => `${key} ${file}\n`).join(""),
    );
    log(`fixtures held: registries listed in ${hold}; remove it to measure and clean up`);
    await whileExists(hold);
  }
  if (cpuProf !== undefined) {
    await Deno.mkdir(cpuProf, { recursive: true });
    for (const key of Object.keys(files) as (keyof typeof files)[]) {
      const argv = reconcileArgv(
        "run",
        "--registry",
        files[key],
        "--json",
        "--caddy-admin",
        "none",
      );
      argv.splice(
        2,
        0,
        "--cpu-prof",
        `--cpu-prof-dir=${cpuProf}`,
        `--cpu-prof-name=${key}.cpuprofile`,
      );
      await exec(argv, { allowFailure: true });
    }
    log(`CPU profiles of one run per registry written to ${cpuProf}`);
  }

  // 3. Measure.
  const asAccount = (command: string) =>
    `runuser -u ${ACCOUNT} -- env HOME=${account.home} ` +
    `XDG_RUNTIME_DIR=/run/user/${account.uid} ${command}`;
  const peer1 = "podman ps --format json >/dev/null & a=$!; ss -Htln >/dev/null & b=$!; " +
    "wait $a && wait $b";
  const peer2 = `podman ps --format json >/dev/null & a=$!; ${
    asAccount("podman ps --format json >/dev/null")
  } & c=$!; ss -Htln >/dev/null & b=$!; wait $a && wait $c && wait $b`;
  // The raw probes of a run with the boot view (the default): per account, every container
  // listed and then inspected in one call (the restart policies), and the listening sockets with
  // their processes (`ss -p` reads /proc/*/fd as mesh-reconcile does).
  const inspectAll = "ids=$(podman ps --all --quiet --no-trunc) && " +
    'if [ -n "$ids" ]; then podman container inspect $ids >/dev/null; fi';
  const probes1 = `( ${inspectAll} ) & a=$!; ss -Htlnp >/dev/null & b=$!; wait $a && wait $b`;
  const probes2 = `( ${inspectAll} ) & a=$!; ${
    asAccount(`sh -c '${inspectAll}'`)
  } & c=$!; ss -Htlnp >/dev/null & b=$!; wait $a && wait $c && wait $b`;
  const run = (file: string, ...more: string[]) =>
    reconcileArgv("run", "--registry", file, "--json", "--caddy-admin", "none", ...more);
  const rows: Row[] = [];
  for (
    const [label, command, accounts, count] of [
      [PEER[1], peer1, 1, 2],
      [PEER[2], peer2, 2, 3],
      [PROBES[1], probes1, 1, 3],
      [PROBES[2], probes2, 2, 5],
    ] as const
  ) {
    rows.push(
      await measure(
        { label, kind: "peer", accounts },
        ["sh", "-c", command],
        runs,
        timeFile,
        count,
      ),
    );
  }
  for (
    const [key, accounts, more] of [
      ["full1", 1, []],
      ["small1", 1, []],
      ["full2", 2, []],
      ["small2", 2, []],
      ["full1", 1, ["--boot", "none"]],
    ] as const
  ) {
    rows.push(
      await measure(
        {
          label: `mesh-reconcile run${more.length ? ` ${more.join(" ")}` : ""} (${
            key.startsWith("full") ? "full" : "small"
          } registry)`,
          kind: "reconcile",
          entries: counts[key]!,
          accounts,
          peer: PEER[accounts],
          ...(more.length ? {} : { probes: PROBES[accounts] }),
        },
        run(files[key], ...more),
        runs,
        timeFile,
      ),
    );
  }
  rows.push(
    await measure(
      {
        label: "mesh-reconcile check-registry (parse only)",
        kind: "parse",
        entries: counts.full1!,
        accounts: 1,
      },
      reconcileArgv("check-registry", files.full1),
      runs,
      timeFile,
    ),
  );

  // 4. Report.
  const full = rows.find((r) =>
    r.kind === "reconcile" && r.accounts === 1 && r.entries === counts.full1
  )!;
  const podmanVersion = (await exec(["podman", "--version"])).stdout.trim();
  const header = [
    `# mesh-reconcile benchmark, ${started.toISOString()}`,
    "",
    `Machine: ${Deno.hostname()}, ${navigator.hardwareConcurrency} cores, Linux ${Deno.osRelease()}, ` +
    `deno ${Deno.version.deno}, ${podmanVersion}.`,
    `Fixtures: ${containers.length} containers (label ${LABEL}), ${ports.length} helper sockets, ` +
    `account ${ACCOUNT}. Registries: full = ${machineEntries} adopted + ${entries.length} bench = ` +
    `${counts.full1} entries; small = ${counts.small1} entries.`,
    `Observed by the full run: ${JSON.stringify(full.lastJson?.observed ?? {})}.`,
    "",
  ].join("\n");
  const notes = [
    "",
    "Wall / peer uses the medians of the clock column (the `%e` column has 10 ms resolution).",
    "Peak RSS is `%M` of the whole tree's largest process (for mesh-reconcile: deno itself).",
    "Peer subprocesses: the commands it runs; mesh-reconcile: `subprocesses` from its JSON.",
  ].join("\n");
  const findings = rows.filter((r) => r.kind === "reconcile" && r.lastJson).map((r) => {
    const j = r.lastJson!;
    const sample = j.findings.slice(0, 3).map((f) =>
      `${f.check} ${f.direction ?? ""} ${f.subject}: ${f.detail}`
    );
    return `- ${r.label}, ${r.accounts} account(s): exit ${j.exitCode}, ${j.findings.length} findings${
      sample.length ? `, e.g.\n  - ${sample.join("\n  - ")}` : ""
    }; sources: ${
      j.sources.map((s) => `${s.source}${s.account ? `@${s.account}` : ""}=${s.state}`).join(", ")
    }`;
  });
  const markdown = `${header}\n${table(rows)}\n${notes}\n\nLast run of each registry:\n\n${
    findings.join("\n")
  }\n`;
  console.log(markdown);
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  await Deno.writeTextFile(`${OUT_DIR}/reconcile-${stamp}.md`, markdown);
  await Deno.writeTextFile(
    `${OUT_DIR}/reconcile-${stamp}.json`,
    JSON.stringify(
      rows.map((r) => ({
        ...r,
        samples: r.samples.map(({ wallS, rssKiB, clockMs, cpuS, code }) => ({
          wallS,
          rssKiB,
          clockMs,
          cpuS,
          code,
        })),
      })),
      null,
      2,
    ),
  );
  log(`wrote ${OUT_DIR}/reconcile-${stamp}.md and .json`);
}

const onSignal = () => {
  if (interrupt.signal.aborted) return log("interrupted again; still cleaning up");
  log("interrupted; stopping and cleaning up");
  interrupt.abort(new Error("interrupted"));
};
Deno.addSignalListener("SIGINT", onSignal);
Deno.addSignalListener("SIGTERM", onSignal);
let failed = false;
try {
  await main();
} catch (error) {
  failed = true;
  log(`FAILED: ${error instanceof Error ? error.message : error}`);
} finally {
  await cleanup();
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
}
if (failed) Deno.exit(interrupt.signal.aborted ? 130 : 1);
