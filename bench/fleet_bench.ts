/**
 * The fleet bench: N simulated nodes in one process, one push of a changed module to all of them,
 * timed until the control plane's status shows all N `ok`.
 *
 * Run from the repository root: `deno task bench:fleet [--nodes N] [--files K] [--runs R]`
 * (N default 1,000; K files in the module, default 5; R timed pushes, default 3). Needs PostgreSQL
 * (trust auth, user postgres) at 127.0.0.1:5432 and RabbitMQ at 127.0.0.1:5672 (guest/guest, an
 * administrator) with its management API on 15672, able to hold N more connections
 * (`scripts/bootstrap.sh` starts it with ~20,000 file handles).
 *
 * What it sets up (and removes again, also on failure or Ctrl-C), named `meshbench...` with one
 * random id per run:
 * - a database made by `mesh-control migrate`, a broker vhost with the topology made by
 *   `mesh-control broker setup`, a signing key (0600) and its public key for the nodes;
 * - module `fleet` (`mesh-control module add`): a directory and K files under /mesh-fleet;
 * - N nodes enrolled as `mesh-control node enroll` enrolls them (its own functions, in-process:
 *   the inventory row, then the node's own broker account, queue and binding, made by
 *   createNodeAccount), each assigned `fleet`;
 * - `mesh-control ingest`, running as its own process;
 * - the N nodes: each runs the link's own code (host/link.ts runLink) with its own broker account
 *   and connection, its own state directory and its own root, in this one process: receive,
 *   verify the signature, apply (host/apply.ts with the real directory and file appliers, moved
 *   under the node's root: bench/fleet_rooted.ts), journal the report, publish it with confirms.
 *
 * What it measures: a first push (warm-up) until all N are `ok`; then R rounds of: the module
 * changed (one file's content), `mesh-control push --behind` as its own process, the time until
 * every node's last report is of the new generation, applied (polled every 50 ms), confirmed by
 * `mesh-control status --json` (all N `ok`, none behind). Per round: where the CPU went (this
 * process: the nodes; push; ingest; the broker; PostgreSQL) and the machine's idle share; memory:
 * this process's RSS per simulated node, the broker's RSS and PostgreSQL's PSS. Last line:
 * `fleet: N nodes, push to all reported X s` (the median round).
 *
 * Prints Markdown on stdout (progress on stderr) and writes it with the samples as JSON to
 * `bench/out/fleet-<time>.{md,json}`.
 *
 * @module
 */

import { cleanup, log, undos } from "./cleanup.ts";
import { FLEET_PREFIX, rootedSystem } from "./fleet_rooted.ts";
import { exec as execWith, type ExecOptions, type Timed } from "./exec.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const OUT_DIR = `${ROOT}bench/out`;
const PG_SERVER = "postgres://postgres@127.0.0.1:5432";
const BROKER_HOSTPORT = "127.0.0.1:5672";
const BROKER_API = "http://127.0.0.1:15672";
const ADMIN = "guest:guest";

const RUN_ID = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const VHOST = `meshbench-fleet-${RUN_ID}`;
const DATABASE = `meshbench_${RUN_ID}_fleet`;
const ADMIN_AMQP = `amqp://${ADMIN}@${BROKER_HOSTPORT}/${VHOST}`;
const ADMIN_API = `http://${ADMIN}@${BROKER_API.replace(/^http:\/\//, "")}`;
const DATABASE_URL = `${PG_SERVER}/${DATABASE}`;

interface Args {
  nodes: number;
  files: number;
  runs: number;
  /** Enrolments and link starts in flight at once. */
  concurrency: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { nodes: 1000, files: 5, runs: 3, concurrency: 16 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const key = {
      "--nodes": "nodes",
      "--files": "files",
      "--runs": "runs",
      "--concurrency": "concurrency",
    }[
      flag
    ] as keyof Args | undefined;
    const value = Number(argv[++i]);
    if (key === undefined || !Number.isInteger(value) || value < 1) {
      throw new Error(
        `Cannot read the arguments: "${flag} ${
          argv[i] ?? ""
        }" (--nodes N, --files K, --runs R, --concurrency C; each a whole number >= 1)`,
      );
    }
    args[key] = value;
  }
  return args;
}

// ---------------------------------------------------------------------------------------------
// Commands and the broker's API

const interrupt = new AbortController();

/** Runs `argv` to its end; a non-zero exit is an error carrying argv, the code and stderr's tail. */
/** A command run from the repository root, timed, stopped with the bench (bench/exec.ts). */
const exec = (argv: string[], options: Omit<ExecOptions, "signal"> = {}): Promise<Timed> =>
  execWith(argv, { ...options, signal: interrupt.signal });

const control = (...args: string[]) => [
  Deno.execPath(),
  "run",
  "-A",
  "--quiet",
  `${ROOT}control/main.ts`,
  ...args,
];

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${BROKER_API}${path}`, {
    method,
    headers: {
      authorization: `Basic ${btoa(ADMIN)}`,
      "content-type": "application/json",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response;
}

// ---------------------------------------------------------------------------------------------
// The processes' CPU and memory, from /proc (proc(5))

const TICKS = 100; // USER_HZ: clock ticks a second (`getconf CLK_TCK`)

/** utime + stime (+ cutime + cstime when `children`) of `pid`, in seconds; 0 when it is gone. */
function cpuOf(pid: number, children = false): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // Fields after the command name (which may hold spaces), from field 3 on.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(f[11]) + Number(f[12]) +
      (children ? Number(f[13]) + Number(f[14]) : 0);
    return ticks / TICKS;
  } catch {
    return 0;
  }
}

/** A `/proc/<pid>/status` or `smaps_rollup` field in kB, as MiB; 0 when it is gone. */
function kbField(path: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(Deno.readTextFileSync(path));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

function pidsOf(name: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${e.name}/comm`).trim() === name) pids.push(Number(e.name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The postmaster: the postgres process whose parent is not a postgres process. */
function postmaster(): number {
  const pids = pidsOf("postgres");
  for (const pid of pids) {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!pids.includes(ppid)) return pid;
  }
  throw new Error("Cannot find PostgreSQL's postmaster in /proc");
}

/** The machine's busy and total CPU time, in seconds (proc(5), /proc/stat's `cpu` line). */
function machineCpu(): { busy: number; total: number } {
  const line = Deno.readTextFileSync("/proc/stat").split("\n")[0]!;
  const v = line.split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = v[3]! + v[4]!;
  return { busy: (total - idle) / TICKS, total: total / TICKS };
}

interface CpuSample {
  nodes: number;
  ingest: number;
  broker: number;
  database: number;
  busy: number;
  total: number;
}

function cpuSample(ingestPid: number): CpuSample {
  const pm = postmaster();
  const db = pidsOf("postgres").reduce((s, pid) => s + cpuOf(pid, pid === pm), 0);
  const m = machineCpu();
  return {
    nodes: cpuOf(Deno.pid),
    ingest: cpuOf(ingestPid),
    broker: pidsOf("beam.smp").reduce((s, pid) => s + cpuOf(pid), 0),
    database: db,
    busy: m.busy,
    total: m.total,
  };
}

interface Memory {
  /** This process's RSS, MiB. */
  bench: number;
  /** The broker's RSS, MiB. */
  broker: number;
  /** PostgreSQL's processes' PSS summed, MiB. */
  database: number;
}

function memory(): Memory {
  return {
    bench: kbField("/proc/self/status", "VmRSS"),
    broker: pidsOf("beam.smp").reduce((s, pid) => s + kbField(`/proc/${pid}/status`, "VmRSS"), 0),
    database: pidsOf("postgres").reduce(
      (s, pid) => s + kbField(`/proc/${pid}/smaps_rollup`, "Pss"),
      0,
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// The module

function fleetModule(files: number, round: number): string {
  const resources: Record<string, unknown>[] = [
    { id: "fleet-root", type: "directory", path: FLEET_PREFIX, mode: "0755" },
    { id: "fleet-dir", type: "directory", path: `${FLEET_PREFIX}/etc`, mode: "0755" },
  ];
  for (let k = 1; k <= files; k++) {
    // Round r changes file 1 only: one changed file a push, the others unchanged.
    const r = k === 1 ? round : 0;
    resources.push({
      id: `fleet-f${k}`,
      type: "file",
      path: `${FLEET_PREFIX}/etc/f${k}.conf`,
      content: `# fleet file ${k}, round ${r}, managed by mesh\n` +
        Array.from({ length: 4 }, (_, j) => `setting_${j} = fleet-${k}-${j}-${r}\n`).join(""),
      mode: "0644",
    });
  }
  return JSON.stringify({ version: 1, resources }, null, 2);
}

// ---------------------------------------------------------------------------------------------
// The run

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        interrupt.signal.throwIfAborted();
        await fn(items[next++]!);
      }
    }),
  );
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const fmt = (n: number, digits = 2) => n.toFixed(digits);

interface Round {
  round: number;
  generation: number;
  /** Connections lost (and made again by the links) during the round. */
  lost: number;
  /** push --behind started, to every node's report in the database (s). */
  reportedS: number;
  /** push --behind's own run (s). */
  pushS: number;
  /** To status --json answering all N ok (s). */
  statusS: number;
  cpu: Record<string, number>;
  idleShare: number;
}

async function main(): Promise<void> {
  const args = parseArgs(Deno.args);
  const started = new Date();
  const load = Deno.loadavg()[0]!;
  log(`load at the start ${load} (uptime's 1-minute average); ${args.nodes} nodes`);

  // The broker must hold N more connections than it has.
  const overview = await (await api("GET", "/api/nodes")).json() as {
    sockets_total: number;
    sockets_used: number;
    fd_total: number;
  }[];
  const broker = overview[0];
  if (broker === undefined) throw new Error("Cannot read the broker's nodes from its API");
  if (broker.sockets_total - broker.sockets_used < args.nodes + 20) {
    throw new Error(
      `Cannot run ${args.nodes} nodes: the broker holds ${broker.sockets_total} sockets (${broker.sockets_used} used); start it with more file handles (scripts/bootstrap.sh does: ~20,000)`,
    );
  }

  const dir = await Deno.makeTempDir({ prefix: "meshbench-fleet-" });
  undos.push({ what: `${dir} removed`, run: () => Deno.remove(dir, { recursive: true }) });

  // The database and the vhost.
  const postgres = (await import("postgres")).default;
  undos.push({
    what: `database ${DATABASE} dropped`,
    run: async () => {
      const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`drop database if exists ${DATABASE} with (force)`);
      } finally {
        await admin.end({ timeout: 1 });
      }
    },
  });
  await exec(control("migrate", "--database", DATABASE_URL));
  undos.push({
    what: `broker vhost ${VHOST} deleted`,
    run: async () => {
      // The management API gives up on a vhost of thousands of queues (seen with 5,000): then
      // rabbitmqctl, which waits for it.
      const r = await api("DELETE", `/api/vhosts/${encodeURIComponent(VHOST)}`).catch((e) =>
        e as Error
      );
      if (!(r instanceof Error)) await r.body?.cancel();
      if (r instanceof Error || (r.status !== 204 && r.status !== 404)) {
        log(
          `the API did not delete ${VHOST} (${
            r instanceof Error ? r.message : r.status
          }); rabbitmqctl`,
        );
        await exec(["rabbitmqctl", "-q", "delete_vhost", VHOST]);
      }
    },
  });
  for (
    const [method, path, body] of [
      ["PUT", `/api/vhosts/${encodeURIComponent(VHOST)}`, {}],
      ["PUT", `/api/permissions/${encodeURIComponent(VHOST)}/guest`, {
        configure: ".*",
        write: ".*",
        read: ".*",
      }],
    ] as const
  ) {
    const r = await api(method, path, body);
    await r.body?.cancel();
    if (r.status !== 201 && r.status !== 204) throw new Error(`${method} ${path}: ${r.status}`);
  }
  const env: Record<string, string> = {
    MESH_DATABASE_URL: DATABASE_URL,
    MESH_BROKER_URL: ADMIN_AMQP,
    MESH_BROKER_API_URL: ADMIN_API,
    MESH_SIGNING_KEY: `${dir}/signing.key`,
  };
  await exec(control("broker", "setup"), { env });

  // Control's key pair: the private key signs every push, the nodes verify with the public one.
  if (!(await Deno.stat("/usr/bin/time").catch(() => undefined))) {
    throw new Error("Cannot measure push's CPU: /usr/bin/time is missing (apt-get install time)");
  }
  const { generateSigningKey, readControlKey } = await import("../lib/signing.ts");
  const signing = await generateSigningKey();
  await Deno.writeTextFile(env.MESH_SIGNING_KEY!, signing.privatePem, { mode: 0o600 });
  const publicKeyFile = `${dir}/control.pub`;
  await Deno.writeTextFile(publicKeyFile, signing.publicPem, { mode: 0o644 });
  const controlKey = await readControlKey(publicKeyFile);

  const moduleFile = `${dir}/fleet.json`;
  await Deno.writeTextFile(moduleFile, fleetModule(args.files, 0));
  await exec(control("module", "add", moduleFile), { env });

  // The nodes, enrolled as `node enroll` does.
  const names = Array.from(
    { length: args.nodes },
    (_, i) => `fleet${RUN_ID}-${String(i + 1).padStart(5, "0")}`,
  );
  undos.push({
    what: `${args.nodes} broker accounts deleted`,
    run: async () => {
      const r = await api("POST", "/api/users/bulk-delete", { users: names });
      await r.body?.cancel();
      if (r.status !== 204) throw new Error(`bulk-delete answered ${r.status}`);
    },
  });
  const { connectDatabase } = await import("../control/db.ts");
  const sql = await connectDatabase(DATABASE_URL, { max: 4 });
  undos.push({ what: "database pool closed", run: () => sql.end({ timeout: 1 }) });
  const { insertNode, assignModule } = await import("../control/inventory.ts");
  const { createNodeAccount } = await import("../control/broker_admin.ts");
  const endpoints = { amqp: ADMIN_AMQP, api: ADMIN_API };
  const urls = new Map<string, string>();
  const memBefore = memory();
  let t = performance.now();
  await pool(names, args.concurrency, async (name) => {
    await sql.begin(async (tx) => {
      await insertNode(tx, name, "debian", { kind: "server" });
      const account = await createNodeAccount(endpoints, name, { queueType: "classic" });
      urls.set(name, account.url);
    });
    await assignModule(sql, name, "fleet");
  });
  log(`${args.nodes} nodes enrolled and assigned in ${fmt((performance.now() - t) / 1000)} s`);

  // The ingest, as its own process.
  // Its stderr to a file (a pipe nobody reads would stop it once full), shown when a round fails.
  const ingestLog = `${dir}/ingest.log`;
  const ingestErr = await Deno.open(ingestLog, { write: true, create: true, truncate: true });
  const ingest = new Deno.Command(control("ingest")[0]!, {
    args: control("ingest").slice(1),
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const ingestLogged = ingest.stderr.pipeTo(ingestErr.writable).catch(() => {});
  undos.push({
    what: "mesh-control ingest stopped",
    run: async () => {
      try {
        ingest.kill("SIGTERM");
      } catch {
        // already gone
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), 10_000));
      if (await Promise.race([ingest.status, late]) === "late") ingest.kill("SIGKILL");
      clearTimeout(timer);
      await ingest.status;
      await ingestLogged;
    },
  });
  const ingestTail = async () =>
    (await Deno.readTextFile(ingestLog).catch(() => "")).trim().split("\n").slice(-5).join("\n");

  // The nodes: the link's own code, each with its own account, state directory and root.
  const { runLink } = await import("../host/link.ts");
  const { debian } = await import("../systems/debian/mod.ts");
  const { VERSION } = await import("../host/version.ts");
  const stop = new AbortController();
  const links: Promise<unknown>[] = [];
  const connected = new Set<string>();
  let retries = 0;
  let firstRetry: string | undefined;
  let lost = 0;
  let firstLost: string | undefined;
  const problems: string[] = [];
  const reports = new Map<string, { generation: number; outcome: string }>();
  undos.push({
    what: `${args.nodes} links stopped`,
    run: async () => {
      stop.abort();
      // A link whose broker went away may wait long on its connection's close (seen with 5,000):
      // the run ends all the same, saying so.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), 30_000));
      const ended = await Promise.race([Promise.allSettled(links), late]);
      clearTimeout(timer);
      if (ended === "late") throw new Error("some links had not stopped after 30 s; left to exit");
    },
  });
  t = performance.now();
  await pool(names, args.concurrency, async (name) => {
    const nodeDir = `${dir}/nodes/${name}`;
    await Deno.mkdir(`${nodeDir}/root`, { recursive: true });
    const before = connected.size;
    links.push(
      runLink({
        system: rootedSystem(debian, `${nodeDir}/root`),
        broker: urls.get(name)!,
        node: name,
        controlKey: { path: publicKeyFile, key: controlKey },
        stateDir: `${nodeDir}/state`,
        version: VERSION,
        every: 24 * 3600_000,
        retry: 1000,
        signal: stop.signal,
        onApplied: (report) => {
          reports.set(name, { generation: report.generation, outcome: report.outcome });
          if (report.outcome !== "applied" && problems.length < 5) {
            problems.push(`${name}: ${report.outcome}: ${report.problems[0]?.message}`);
          }
        },
        onNews: (line) => {
          if (line.startsWith("connected to ")) connected.add(name);
          else if (/^Cannot connect to broker .*; retrying in \d+ s$/.test(line)) {
            // A connect the broker did not answer in time, retried as a node retries: counted.
            retries++;
            if (firstRetry === undefined) firstRetry = line;
          } else if (
            /^the broker (went away|closed the connection)|^cannot send reports now/.test(line)
          ) {
            // Lost and made again by the link itself (its pushes are delivered again): counted.
            lost++;
            if (firstLost === undefined) firstLost = `${name}: ${line}`;
          } else if (!line.startsWith("no declaration") && !line.startsWith("recorded that")) {
            if (problems.length < 5) problems.push(`${name}: ${line}`);
          }
        },
      }).catch((error) => {
        if (problems.length < 5) problems.push(`${name}: ${error}`);
      }),
    );
    // Started one after another as a fleet would come up; wait for this one's connection.
    while (connected.size === before && !connected.has(name)) {
      if (problems.length > 0) throw new Error(`A node failed to start: ${problems.join("; ")}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  const connectBy = performance.now() + 60_000 + args.nodes * 20;
  while (connected.size < args.nodes) {
    if (problems.length > 0) throw new Error(`A node failed to start: ${problems.join("; ")}`);
    if (performance.now() > connectBy) {
      throw new Error(
        `Only ${connected.size} of ${args.nodes} links connected; not: ${
          names.filter((n) => !connected.has(n)).slice(0, 5).join(", ")
        }`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const memConnected = memory();
  const connectS = (performance.now() - t) / 1000;
  log(
    `${args.nodes} links connected in ${fmt(connectS)} s${
      retries ? `; ${retries} connects retried, the first: ${firstRetry}` : ""
    }`,
  );
  // What N idle links cost this process: their loops waking between pushes.
  await new Promise((r) => setTimeout(r, 2000));
  const idle0 = { cpu: cpuOf(Deno.pid), at: performance.now() };
  await new Promise((r) => setTimeout(r, 5000));
  const idleShare = (cpuOf(Deno.pid) - idle0.cpu) / ((performance.now() - idle0.at) / 1000);
  log(`${args.nodes} idle links: ${fmt(idleShare * 100, 1)} % of a core`);

  const everyReported = async (generation: number): Promise<number> => {
    // Each node's last report, as ingest's triggers keep it (what status reads).
    const [row] = await sql`
      select count(*)::int as n from last_reports
      where generation = ${generation} and outcome = 'applied'`;
    return row!.n as number;
  };

  // One round: change the module (after round 0), push --behind, wait for every report.
  const round = async (r: number, generation: number): Promise<Round> => {
    if (r > 0) {
      await Deno.writeTextFile(moduleFile, fleetModule(args.files, r));
      await exec(control("module", "add", moduleFile), { env });
    }
    const lost0 = lost;
    const cpu0 = cpuSample(ingest.pid);
    const t0 = performance.now();
    // push's CPU from its own rusage (time(1)'s %U %S), as it ends before the round does.
    const push = exec(
      ["/usr/bin/time", "-f", "push-rusage %U %S", ...control("push", "--behind")],
      { env },
    );
    let reportedS = 0;
    // A round that does not end says where it stands rather than waiting for ever.
    const deadline = t0 + 60_000 + args.nodes * 30;
    for (;;) {
      if (problems.length > 0) throw new Error(`Nodes said: ${problems.join("; ")}`);
      const n = await everyReported(generation);
      if (n === args.nodes) {
        reportedS = (performance.now() - t0) / 1000;
        break;
      }
      if (performance.now() > deadline) {
        const applied = names.filter((name) => reports.get(name)?.generation === generation);
        const missing = names.filter((name) => reports.get(name)?.generation !== generation);
        throw new Error(
          `Round ${r}: after ${
            fmt((performance.now() - t0) / 1000)
          } s, ${n} of ${args.nodes} reports of generation ${generation} are in the database; ${applied.length} nodes applied it; not applied: ${
            missing.slice(0, 5).map((m) => `${m} (${JSON.stringify(reports.get(m))})`).join(", ")
          }; ingest's stderr: ${await ingestTail() || "(nothing)"}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const pushed = await push;
    const pushS = pushed.ms / 1000;
    const pushedLine = pushed.stdout.trim().split("\n").pop() ?? "";
    if (!pushedLine.startsWith(`pushed to ${args.nodes} of ${args.nodes} nodes`)) {
      throw new Error(`push --behind did not push to every node: ${pushedLine}`);
    }
    const cpu1 = cpuSample(ingest.pid);
    const status = await exec(control("status", "--json"), { env }).catch((e) => e as Error);
    // status exits 1 when a node needs attention: its JSON says which.
    const text = status instanceof Error ? "" : status.stdout;
    const statusS = (performance.now() - t0) / 1000;
    const answer = text ? JSON.parse(text) : undefined;
    if (answer?.counts?.ok !== args.nodes || answer?.behind !== 0) {
      throw new Error(
        `status does not show all ${args.nodes} ok after generation ${generation}: ${
          status instanceof Error ? status.message : JSON.stringify(answer?.counts)
        }`,
      );
    }
    const d = (k: keyof CpuSample) => cpu1[k] - cpu0[k];
    const rusage = /^push-rusage ([\d.]+) ([\d.]+)$/m.exec(pushed.stderr);
    const pushCpu = rusage ? Number(rusage[1]) + Number(rusage[2]) : NaN;
    const cpu = {
      nodes: d("nodes"),
      ingest: d("ingest"),
      broker: d("broker"),
      database: d("database"),
      push: pushCpu,
      machine: d("busy"),
    };
    return {
      round: r,
      generation,
      lost: lost - lost0,
      reportedS,
      pushS,
      statusS,
      cpu,
      idleShare: 1 - d("busy") / d("total"),
    };
  };

  log("warm-up: the first push (generation 1) to every node");
  const warm = await round(0, 1);
  log(`warm-up: all ${args.nodes} reported in ${fmt(warm.reportedS)} s`);
  const rounds: Round[] = [];
  for (let r = 1; r <= args.runs; r++) {
    const one = await round(r, r + 1);
    log(
      `round ${r}: all ${args.nodes} reported generation ${one.generation} in ${
        fmt(one.reportedS)
      } s (push itself ${fmt(one.pushS)} s; status answered all ok at ${fmt(one.statusS)} s)`,
    );
    rounds.push(one);
  }
  const memAfter = memory();

  // Every node's files are on its disk as declared.
  const last = fleetModule(args.files, args.runs);
  const want = (JSON.parse(last).resources as { path: string; content?: string }[]).filter((r) =>
    r.content !== undefined
  );
  for (const name of names) {
    for (const f of want) {
      const got = await Deno.readTextFile(`${dir}/nodes/${name}/root${f.path}`);
      if (got !== f.content) throw new Error(`${name}: ${f.path} is not as declared`);
    }
  }

  const med = median(rounds.map((r) => r.reportedS));
  const perNode = (a: number, b: number) => (b - a) * 1024 / args.nodes;
  const cpuRows = ["nodes", "push", "ingest", "broker", "database", "machine"].map((k) => {
    const xs = rounds.map((r) => r.cpu[k]!);
    return `| ${k} | ${xs.map((x) => fmt(x)).join(" / ")} | ${
      fmt(median(xs) / median(rounds.map((r) => r.reportedS)) * 100, 0)
    } % of a core |`;
  });
  const md = [
    `# Fleet bench, ${started.toISOString()}`,
    "",
    `${args.nodes} simulated nodes in one process (the link's own code, each with its own broker account, queue, state directory and root), a module of 2 directories and ${args.files} files (one file changed a round), ${args.runs} timed rounds after a warm-up; load at the start ${load}; ${navigator.hardwareConcurrency} cores.`,
    "",
    "| round | generation | every report in the database (s) | push --behind's own run (s) | status --json all ok (s) | machine idle | connections lost |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...[warm, ...rounds].map((r) =>
      `| ${r.round === 0 ? "warm-up" : r.round} | ${r.generation} | ${fmt(r.reportedS)} | ${
        fmt(r.pushS)
      } | ${fmt(r.statusS)} | ${fmt(r.idleShare * 100, 0)} % | ${r.lost} |`
    ),
    ...(firstLost
      ? [
        "",
        `Connections lost and made again by the links: ${lost} in all; the first: ${firstLost}.`,
      ]
      : []),
    "",
    "CPU seconds during each timed round (push start to the last report in the database; push from its own rusage; the machine's is every process's):",
    "",
    "| who | CPU s per round | median share |",
    "| --- | --- | --- |",
    ...cpuRows,
    "",
    `The ${args.nodes} links connected in ${
      fmt(connectS)
    } s (${args.concurrency} at a time), ${retries} connects retried${
      firstRetry ? ` (the first: ${firstRetry})` : ""
    }. Idle, between pushes, the ${args.nodes} links cost this process ${
      fmt(idleShare * 100, 1)
    } % of a core (5 s measured).`,
    "",
    `Memory: this process ${fmt(memBefore.bench, 1)} MiB before the nodes, ${
      fmt(memConnected.bench, 1)
    } with all connected, ${fmt(memAfter.bench, 1)} after the rounds: ${
      fmt(perNode(memBefore.bench, memAfter.bench), 0)
    } KiB a simulated node. The broker (RSS) ${fmt(memBefore.broker, 1)} -> ${
      fmt(memAfter.broker, 1)
    } MiB: ${fmt(perNode(memBefore.broker, memAfter.broker), 0)} KiB a node. PostgreSQL (PSS) ${
      fmt(memBefore.database, 1)
    } -> ${fmt(memAfter.database, 1)} MiB.`,
    "",
    `fleet: ${args.nodes} nodes, push to all reported ${fmt(med)} s`,
  ].join("\n");
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  await Deno.writeTextFile(`${OUT_DIR}/fleet-${stamp}.md`, md + "\n");
  await Deno.writeTextFile(
    `${OUT_DIR}/fleet-${stamp}.json`,
    JSON.stringify(
      {
        args,
        load,
        connectS,
        retries,
        lost,
        warm,
        rounds,
        idleShare,
        memBefore,
        memConnected,
        memAfter,
      },
      null,
      2,
    ),
  );
  console.log(md);
}

if (import.meta.main) {
  const onSignal = () => {
    interrupt.abort();
    cleanup().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  let code = 0;
  try {
    await main();
  } catch (error) {
    log(`FAILED: ${error instanceof Error ? error.message : error}`);
    code = 1;
  }
  await cleanup();
  Deno.exit(code);
}
