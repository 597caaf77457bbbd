/**
 * What the next boot would produce, observed read-only: for each account, every container it has
 * (running or not) with its restart policy, the service units its manager would start at boot
 * (and what they run), the units podman's quadlet generator would create, and which unit runs
 * each declared daemon. {@linkcode ../compare_boot.ts} turns this into the third direction.
 *
 * Per manager, the subprocesses are a fixed handful, however many entries: `podman ps --all
 * --format json` and one `podman container inspect` of all of them (docker: `docker ps --all
 * --quiet` and one `docker inspect`), `systemctl list-unit-files --type=service --no-legend`, ONE
 * `systemctl show` naming every unit needed, and the quadlet generator's dry run.
 *
 * Formats read:
 * - `podman container inspect` (podman 4.3: an array of objects with `Name`, `State.Status`,
 *   `HostConfig.RestartPolicy.Name` (`""`, `no`, `always`, `on-failure`, `unless-stopped`),
 *   `Config.Labels`; a container run by a systemd unit carries the label `PODMAN_SYSTEMD_UNIT`,
 *   which podman sets from the unit's environment; asked for just these, one JSON object a line,
 *   with `--format` {@linkcode PODMAN_INSPECT_FORMAT}); `docker inspect` (Docker Engine API
 *   ContainerJSON: `Name` with a leading `/`, `State.Status`, `HostConfig.RestartPolicy.Name`).
 * - `systemctl list-unit-files` and `systemctl show` (see lib/systemd.ts); `ExecStart=` as `show`
 *   prints it (`{ path=... ; argv[]=... ; ... }`).
 * - The quadlet generator's dry run (podman >= 4.4, podman-systemd.unit(5); format from podman's
 *   cmd/quadlet/main.go): for each unit it would generate, a line `---/NAME.service---` and the
 *   unit's text; debug and errors go to stderr as `quadlet-generator[PID]: ...`. It exits 1 when a
 *   file could not be converted and still prints the others. Debian 12's podman 4.3.1 ships no
 *   quadlet (`dpkg -L podman` lists no generator): there this source is `absent`, and the quadlet
 *   files found on disk, which nothing reads, are named in its detail.
 *
 * Only systemd is read. On a machine not booted with it (sd_booted(3)) the `boot-units` sources
 * are `failed`, not `absent`: another init may start things at boot, and it is not read. Where
 * that init is OpenRC (`/run/openrc`, its RC_SVCDIR, is a directory) the detail says so first,
 * "boot view: not checked (OpenRC)": its runlevels are not compared with the registry.
 * - `/proc/PID/cgroup` (cgroups(7)) of the processes holding a daemon's ports.
 *
 * @module
 */

import { basename } from "../../lib/path.ts";
import type { z } from "zod";
import type { Account } from "../../lib/accounts.ts";
import { findProgram } from "../../lib/accounts.ts";
import { formatArgv, run } from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import type { Registry } from "../registry.ts";
import { asAccount, neverUsedPodman, rootlessEnv } from "./containers.ts";
import type { Listener } from "./sockets.ts";
import type { SourceStatus } from "./source.ts";
import { checkOutput } from "../../lib/runtime_output.ts";
import { compareNames } from "./name_order.ts";
import type { ContainerInspect } from "../../lib/runtime_schemas.ts";
import {
  isOneOf,
  type Manager,
  managerOf,
  parseExecProperty,
  parseProcCgroup,
  parseShow,
  parseUnitFiles,
  splitCommandLine,
  SYSTEMCTL_ENV,
  systemctlArgv,
  UNIT_FILE_STATES,
  userManagerState,
} from "../../lib/systemd.ts";
import { type Booted, openrcBooted, sdBooted } from "../../lib/init_system.ts";

/** The properties read for every unit the boot view needs, in one `systemctl show` call. */
export const BOOT_PROPERTIES = [
  "Id",
  "LoadState",
  "UnitFileState",
  "WantedBy",
  "RequiredBy",
  "TriggeredBy",
  "ExecStart",
];

/** Restart policies as podman and docker name them; `""` is podman's "none given". */
export const RESTART_POLICIES = ["", "no", "always", "on-failure", "unless-stopped"] as const;

/** Where podman's quadlet generator is installed (podman >= 4.4), system-wide and per user. */
export const QUADLET_GENERATORS = {
  system: [
    "/usr/lib/systemd/system-generators/podman-system-generator",
    "/lib/systemd/system-generators/podman-system-generator",
    "/usr/libexec/podman/quadlet",
  ],
  user: [
    "/usr/lib/systemd/user-generators/podman-user-generator",
    "/lib/systemd/user-generators/podman-user-generator",
    "/usr/libexec/podman/quadlet",
  ],
};

/** What the boot view is asked about, derived from the registry ({@linkcode bootRequest}). */
export interface BootRequest {
  /** Accounts whose containers are asked about (the registry's `accounts`). */
  accounts: string[];
  /** Each `daemon` entry: its declared `unit`, or its ports (to find the unit that runs it). */
  daemons: { entry: string; unit?: string; ports: number[] }[];
}

/** A container, running or not, and what could bring it back. */
export interface BootContainer {
  account: string;
  runtime: "podman" | "docker";
  name: string;
  /** `State.Status`: running, exited, created, ... */
  state: string;
  /** `HostConfig.RestartPolicy.Name`, one of {@linkcode RESTART_POLICIES}. */
  restart: string;
  /** The `PODMAN_SYSTEMD_UNIT` label: the unit that ran it. */
  systemdUnit?: string;
}

/** A unit of one account's manager, as `systemctl show` printed it. */
export interface BootUnit {
  /** The account whose manager was asked (`root`: the system manager). */
  account: string;
  /** The name asked. */
  unit: string;
  id: string;
  load: string;
  unitFile: string;
  wantedBy: string[];
  requiredBy: string[];
  triggeredBy: string[];
  /** `ExecStart=` commands, one argv each. */
  execStart: string[][];
}

/** A unit podman's quadlet generator would create (from its dry run). */
export interface QuadletUnit {
  account: string;
  /** The generated unit's name, e.g. `web.service`. */
  unit: string;
  /** The container it runs (`--name` with `%N`, `%n`, `%p`, `%i` resolved), if it runs one. */
  container?: string;
  /** `[Install]` `WantedBy=` and `RequiredBy=`: what the generator links it into. */
  wantedBy: string[];
}

/** Which unit runs a declared daemon, and how that was found. */
export interface DaemonUnit {
  entry: string;
  /** The unit, when one was declared or found. */
  unit?: string;
  /** The account whose manager has the unit (`root`: the system manager). */
  account: string;
  /** How it was found, or why none was. */
  how: string;
}

/** Everything the boot comparison reads. */
export interface BootObservation {
  containers: BootContainer[];
  units: BootUnit[];
  quadlet: QuadletUnit[];
  daemons: DaemonUnit[];
  /** Per account: whether its manager starts at boot (root: systemd is init; others: linger). */
  startsAtBoot: Record<string, boolean>;
  /** Per account: the `systemctl list-unit-files` states of its service units. */
  unitFiles: Record<string, Record<string, string>>;
}

/** Options for {@linkcode observeBoot}. */
export interface ObserveBootOptions {
  passwd: Map<string, Account>;
  /**
   * Listening sockets (from the sockets observer), to find the processes of daemons; may be
   * still coming: the containers are asked about meanwhile.
   */
  listeners: Listener[] | Promise<Listener[]>;
  /** Runtimes to ask; default podman and docker. */
  runtimes?: ("podman" | "docker")[];
  /**
   * Per account, the ids of every podman container, as the containers source's `podman ps --all`
   * listed them (`ContainerObservation.podmanIds`): those are inspected without
   * listing them again (one podman subprocess less per account). An account not in it is
   * listed here with `podman ps --all --quiet`.
   */
  podmanIds?: Record<string, string[]>;
  /** Per-command time limit in milliseconds; default 60 000. */
  timeoutMs?: number;
  /** Prefix of `/run`, `/var/lib`, `/proc` and `/etc` paths looked at (tests). */
  root?: string;
}

/** The boot view's request for `registry`. */
export function bootRequest(registry: Registry): BootRequest {
  const daemons: BootRequest["daemons"] = [];
  for (const [entry, e] of Object.entries(registry.services)) {
    if (e.kind !== "daemon") continue;
    daemons.push({
      entry,
      ...("unit" in e && typeof e.unit === "string" ? { unit: e.unit } : {}),
      ports: e.port ?? [],
    });
  }
  return { accounts: registry.accounts, daemons };
}

/**
 * The Go template `podman container inspect --format` is given: per container, one line holding a
 * JSON object of only the fields {@linkcode parseInspect} reads, each printed by podman's `json`
 * (so any value is quoted as JSON; a nil restart policy or label map prints `null`). About 160
 * bytes a container instead of ~11 KiB of the whole inspect document, which podman need not
 * encode nor this program decode.
 */
export const PODMAN_INSPECT_FORMAT = '{"Name":{{json .Name}},' +
  '"State":{"Status":{{json .State.Status}}},' +
  '"HostConfig":{"RestartPolicy":{{json .HostConfig.RestartPolicy}}},' +
  '"Config":{"Labels":{{json .Config.Labels}}}}';

/**
 * The output of `podman container inspect --format` {@linkcode PODMAN_INSPECT_FORMAT}, one JSON
 * object a line, as the JSON array {@linkcode parseInspect} reads.
 */
export function inspectLinesAsArray(text: string): string {
  return `[${text.split("\n").filter((l) => l.trim() !== "").join(",")}]`;
}

/**
 * Parses `podman container inspect` or `docker inspect` output into containers of `of.account`,
 * as `of.runtime` reports them.
 *
 * @throws {Error} when it is not that shape, or names a restart policy not in
 *   {@linkcode RESTART_POLICIES} (an unknown word is not guessed at).
 */
export async function parseInspect(
  text: string,
  of: { account: string; runtime: "podman" | "docker" },
): Promise<BootContainer[]> {
  const { account, runtime } = of;
  const data = JSON.parse(text || "[]");
  let inspected: z.output<typeof ContainerInspect>;
  try {
    inspected = await checkOutput("container inspect", data);
  } catch (error) {
    throw new Error(`Cannot read ${runtime} inspect output: ${messageOf(error)}`);
  }
  return inspected.map((c) => {
    const restart = c.HostConfig.RestartPolicy?.Name ?? "";
    if (!isOneOf(RESTART_POLICIES, restart)) {
      throw new Error(
        `${runtime} says container ${c.Name} has restart policy "${restart}", ` +
          `which this program does not know`,
      );
    }
    const unit = c.Config.Labels?.PODMAN_SYSTEMD_UNIT;
    return {
      account,
      runtime,
      name: c.Name.replace(/^\//, ""),
      state: c.State.Status,
      restart,
      ...(unit ? { systemdUnit: unit } : {}),
    };
  });
}

/**
 * Parses the quadlet generator's dry run (podman cmd/quadlet/main.go: `---PATH---` then the unit
 * text, per generated unit). Returns each generated unit with the container its `ExecStart=`
 * runs (`podman run --name NAME` / `--name=NAME`, specifiers `%N %n %p %i %%` resolved for the
 * unit's name; a name with any other specifier is left out) and its `[Install]` targets.
 */
export function parseQuadletDryRun(text: string, account: string): QuadletUnit[] {
  const out: QuadletUnit[] = [];
  const blocks = text.split(/^---(.+)---$/m);
  for (let i = 1; i < blocks.length; i += 2) {
    const unit = basename(blocks[i]!.trim());
    const sections = parseUnitText(blocks[i + 1] ?? "");
    const install = sections.get("Install") ?? new Map<string, string[]>();
    const wantedBy = [...(install.get("WantedBy") ?? []), ...(install.get("RequiredBy") ?? [])]
      .flatMap((v) => v.split(/\s+/)).filter(Boolean);
    const exec = sections.get("Service")?.get("ExecStart")?.at(-1);
    const container = exec === undefined ? undefined : containerOf(splitCommandLine(exec), unit);
    out.push({ account, unit, ...(container ? { container } : {}), wantedBy });
  }
  return out;
}

/** A unit file's text (systemd.syntax(7)): section to key to values, continuations joined. */
function parseUnitText(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = sections.get(section[1]!) ?? new Map();
      sections.set(section[1]!, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (eq <= 0 || current === undefined) continue;
    const key = line.slice(0, eq).trim();
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return sections;
}

/**
 * The container a podman or docker command runs or starts: `run ... --name NAME` (or
 * `--name=NAME`), or `start NAME`. Specifiers of `unit` are resolved; `undefined` when the command
 * runs no container of known name.
 */
export function containerOf(argv: string[], unit: string): string | undefined {
  const program = basename(argv[0] ?? "");
  if (program !== "podman" && program !== "docker") return undefined;
  const verb = argv.findIndex((a) => a === "run" || a === "start" || a === "create");
  if (verb < 0) return undefined;
  const rest = argv.slice(verb + 1);
  let name: string | undefined;
  if (argv[verb] === "start") {
    name = rest.find((a) => !a.startsWith("-"));
  } else {
    for (let i = 0; i < rest.length; i++) {
      const a = rest[i]!;
      if (a === "--name") name = rest[i + 1];
      else if (a.startsWith("--name=")) name = a.slice("--name=".length);
    }
  }
  if (name === undefined) return undefined;
  const resolved = resolveSpecifiers(name, unit);
  return resolved === undefined || resolved === "" ? undefined : resolved;
}

/** systemd.unit(5) specifiers of a unit name: `%n %N %p %i %%`; others cannot be resolved here. */
function resolveSpecifiers(value: string, unit: string): string | undefined {
  const dot = unit.lastIndexOf(".");
  const full = unit;
  const noSuffix = dot > 0 ? unit.slice(0, dot) : unit;
  const at = noSuffix.indexOf("@");
  const prefix = at >= 0 ? noSuffix.slice(0, at) : noSuffix;
  const instance = at >= 0 ? noSuffix.slice(at + 1) : "";
  let unresolved = false;
  const out = value.replace(/%(.)/g, (_, c: string) => {
    switch (c) {
      case "n":
        return full;
      case "N":
        return noSuffix;
      case "p":
        return prefix;
      case "i":
        return instance;
      case "%":
        return "%";
      default:
        unresolved = true;
        return "";
    }
  });
  return unresolved ? undefined : out;
}

/** The words a result carries when OpenRC runs and its boot view is not read. */
export const OPENRC_NOT_CHECKED = "boot view: not checked (OpenRC)";

/**
 * The `boot-units` detail on a machine not booted with systemd (sd_booted(3)): what a reboot would
 * produce there is up to another init (OpenRC runlevels, sysvinit, a daemon it starts), which this
 * program does not read. Where OpenRC booted the machine ({@linkcode openrcBooted}) it begins with
 * {@linkcode OPENRC_NOT_CHECKED}: its runlevels `boot` and `default` are not compared with the
 * registry. Names the way to run without the boot view.
 */
export function notBootedDetail(
  booted: { reason: string },
  init?: Booted,
): string {
  const openrc = init?.booted
    ? `${OPENRC_NOT_CHECKED}: ${init.reason}, and the services its runlevels boot and default ` +
      `would start are not compared with the registry; `
    : "";
  return `${openrc}${booted.reason}; mesh-reconcile reads what a reboot would produce from ` +
    `systemd only (another init, such as OpenRC or sysvinit, is not read): pass --boot none to ` +
    `run without the boot view`;
}

/**
 * Observes what the next boot would produce. Never throws: what cannot be asked is a `failed`
 * source (`boot-units`, `boot-podman`, `boot-docker`, `quadlet`, per account), what this machine
 * does not have is `absent` with the reason. A machine not booted with systemd makes every
 * `boot-units` source `failed` ({@linkcode notBootedDetail}): its init may bring things back and
 * is not read, so nothing can be said either way. A rootless account that does not linger on a
 * systemd machine is `absent`: nothing of it starts at boot.
 */
export async function observeBoot(
  request: BootRequest,
  options: ObserveBootOptions,
): Promise<{ boot: BootObservation; sources: SourceStatus[] }> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const runtimes = options.runtimes ?? ["podman", "docker"];
  const root = options.root ?? "";
  const sources: SourceStatus[] = [];
  const boot: BootObservation = {
    containers: [],
    units: [],
    quadlet: [],
    daemons: [],
    startsAtBoot: {},
    unitFiles: {},
  };
  const booted = sdBooted(options.root);
  const init = booted.booted ? undefined : openrcBooted(options.root);

  // Each account's containers first: asking needs nothing else, and it is the slow part (a
  // podman subprocess), so it runs while the daemons' units are found.
  const containersAsked = new Map(
    request.accounts.flatMap((name) => {
      const account = options.passwd.get(name);
      if (account === undefined) return [];
      const asked = Promise.all(
        runtimes.map((r) =>
          askContainers(r, account, {
            timeoutMs,
            ...(r === "podman" && options.podmanIds?.[name] !== undefined
              ? { ids: options.podmanIds[name] }
              : {}),
          })
        ),
      );
      return [[name, asked] as const];
    }),
  );

  // Which unit runs each daemon: declared, or found from the processes holding its ports.
  const byUid = new Map([...options.passwd.values()].map((a) => [a.uid, a.name]));
  // One read of a process's cgroup, however many daemons' ports it holds (a process holding
  // 200 ports was read 150 times, one daemon after the other).
  const cgroups = new Map<number, Promise<string>>();
  const cgroupOf = (pid: number) => {
    let text = cgroups.get(pid);
    if (text === undefined) {
      text = Deno.readTextFile(`${root}/proc/${pid}/cgroup`);
      text.catch(() => {}); // read by every daemon asking; unhandled only until then
      cgroups.set(pid, text);
    }
    return text;
  };
  const listeners = await options.listeners;
  boot.daemons.push(
    ...await Promise.all(
      request.daemons.map((d) => daemonUnit(d, { listeners, byUid, cgroupOf })),
    ),
  );

  // The managers to ask: every account's, and the system manager's for daemons.
  const accounts = [...new Set([...request.accounts, ...boot.daemons.map((d) => d.account)])];
  await Promise.all(accounts.map(async (name) => {
    const account = options.passwd.get(name);
    if (account === undefined) {
      for (const source of ["boot-units", ...runtimes.map((r) => `boot-${r}`)]) {
        sources.push({
          source,
          account: name,
          state: "failed",
          method: "read /etc/passwd",
          detail: `account "${name}" does not exist in /etc/passwd`,
        });
      }
      return;
    }
    const containers = await containersAsked.get(name) ?? [];
    for (const c of containers) {
      boot.containers.push(...c.containers);
      sources.push(c.source);
    }
    const manager = managerOf(account);
    const units = await askManager(manager, {
      booted,
      init,
      root,
      timeoutMs,
      labelled: boot.containers.filter((c) => c.account === name).flatMap((c) =>
        c.systemdUnit ? [c.systemdUnit] : []
      ),
      daemons: boot.daemons.filter((d) => d.account === name && d.unit).map((d) => d.unit!),
      runtimes,
    });
    boot.startsAtBoot[name] = units.startsAtBoot;
    boot.units.push(...units.units);
    boot.unitFiles[name] = units.unitFiles;
    sources.push(units.source);
    if (request.accounts.includes(name) && runtimes.includes("podman")) {
      const q = await askQuadlet(manager, account, { booted, root, timeoutMs });
      boot.quadlet.push(...q.units);
      sources.push(q.source);
    }
  }));
  sources.sort((a, b) =>
    compareNames(a.account ?? "", b.account ?? "") || compareNames(a.source, b.source)
  );
  return { boot, sources };
}

async function daemonUnit(
  d: BootRequest["daemons"][number],
  options: {
    listeners: Listener[];
    byUid: Map<number, string>;
    /** The text of `/proc/PID/cgroup` (read once per process). */
    cgroupOf: (pid: number) => Promise<string>;
  },
): Promise<DaemonUnit> {
  const { byUid } = options;
  if (d.unit !== undefined) {
    return { entry: d.entry, unit: d.unit, account: "root", how: `it declares unit ${d.unit}` };
  }
  const holders = options.listeners.filter((l) => d.ports.includes(l.port))
    .flatMap((l) => l.processes.map((p) => ({ port: l.port, ...p })));
  if (holders.length === 0) {
    return {
      entry: d.entry,
      account: "root",
      how: d.ports.length === 0
        ? "it declares neither a unit nor a port, so the unit that starts it cannot be found"
        : `no process holds its port${d.ports.length === 1 ? "" : "s"} ${
          d.ports.join(", ")
        } and it declares no unit, so the unit that starts it cannot be found`,
    };
  }
  const seen: string[] = [];
  for (const h of holders) {
    let text: string;
    try {
      text = await options.cgroupOf(h.pid);
    } catch (error) {
      seen.push(`${h.command}[${h.pid}]: /proc/${h.pid}/cgroup unreadable (${messageOf(error)})`);
      continue;
    }
    const where = parseProcCgroup(text);
    if (where.unit !== undefined) {
      const account = where.userManagerUid === undefined
        ? "root"
        : byUid.get(where.userManagerUid) ?? `uid-${where.userManagerUid}`;
      return {
        entry: d.entry,
        unit: where.unit,
        account,
        how: `${h.command}[${h.pid}], holding port ${h.port}, runs in ${where.unit}${
          account === "root" ? "" : ` of the user manager of ${account}`
        } (cgroup ${where.path})`,
      };
    }
    seen.push(
      `${h.command}[${h.pid}] holding port ${h.port} runs in no service (cgroup ${
        where.path || "unknown"
      })`,
    );
  }
  return { entry: d.entry, account: "root", how: [...new Set(seen)].join("; ") };
}

async function askContainers(
  runtime: "podman" | "docker",
  account: Account,
  ask: { timeoutMs: number; ids?: string[] },
): Promise<{ containers: BootContainer[]; source: SourceStatus }> {
  const { timeoutMs } = ask;
  const source = (state: SourceStatus["state"], method: string, detail: string) => ({
    containers: [],
    source: { source: `boot-${runtime}`, account: account.name, state, method, detail },
  });
  if (findProgram(runtime) === undefined) {
    return source("absent", `${runtime} ps --all`, `${runtime} is not installed (not on PATH)`);
  }
  let env: Record<string, string>;
  if (runtime === "podman") {
    const unused = account.uid === 0 ? undefined : neverUsedPodman(account);
    if (unused !== undefined) {
      return {
        containers: [],
        source: {
          source: "boot-podman",
          account: account.name,
          state: "observed",
          method: `stat ${unused}`,
          detail: "0 containers: the account has never used podman",
        },
      };
    }
    env = rootlessEnv(account);
  } else {
    const host = account.uid === 0
      ? Deno.env.get("DOCKER_HOST") ?? "unix:///var/run/docker.sock"
      : `unix:///run/user/${account.uid}/docker.sock`;
    if (host.startsWith("unix://")) {
      const socket = host.slice("unix://".length);
      let isSocket = false;
      try {
        isSocket = Deno.statSync(socket).isSocket === true;
      } catch { /* not there */ }
      if (!isSocket) {
        return source("absent", `stat ${socket}`, `no docker daemon socket at ${socket}`);
      }
    }
    env = { DOCKER_HOST: host };
  }
  const ps = asAccount(account, [runtime, "ps", "--all", "--quiet", "--no-trunc"], env);
  try {
    const ids = ask.ids ?? (await run(ps, { timeoutMs })).stdout.split("\n").map((s) => s.trim())
      .filter(Boolean);
    if (ids.length === 0) {
      return {
        containers: [],
        source: {
          source: `boot-${runtime}`,
          account: account.name,
          state: "observed",
          method: formatArgv(ps),
          detail: "0 containers",
        },
      };
    }
    const argv = asAccount(
      account,
      runtime === "podman"
        ? ["podman", "container", "inspect", "--format", PODMAN_INSPECT_FORMAT, ...ids]
        : ["docker", "inspect", ...ids],
      env,
    );
    const stdout = (await run(argv, { timeoutMs })).stdout;
    const containers = await parseInspect(
      runtime === "podman" ? inspectLinesAsArray(stdout) : stdout,
      {
        account: account.name,
        runtime,
      },
    );
    return {
      containers,
      source: {
        source: `boot-${runtime}`,
        account: account.name,
        state: "observed",
        method: `${runtime} ps --all; ${runtime} ${
          runtime === "podman" ? "container " : ""
        }inspect`,
        detail: `${containers.length} container${
          containers.length === 1 ? "" : "s"
        }, running or not`,
      },
    };
  } catch (error) {
    return source("failed", formatArgv(ps), messageOf(error));
  }
}

async function askManager(
  manager: Manager,
  ask: {
    booted: Booted;
    /** Whether OpenRC booted it, on a machine not booted with systemd. */
    init?: Booted;
    root: string;
    timeoutMs: number;
    labelled: string[];
    daemons: string[];
    runtimes: ("podman" | "docker")[];
  },
): Promise<
  {
    units: BootUnit[];
    unitFiles: Record<string, string>;
    startsAtBoot: boolean;
    source: SourceStatus;
  }
> {
  const none = (state: SourceStatus["state"], method: string, detail: string) => ({
    units: [],
    unitFiles: {},
    startsAtBoot: false,
    source: { source: "boot-units", account: manager.account, state, method, detail },
  });
  // Another init (OpenRC, sysvinit) may well start things at boot; it cannot be read here, so
  // this is not "nothing comes back" (absent) but "could not be asked" (failed).
  if (!ask.booted.booted) {
    return none("failed", ask.booted.method, notBootedDetail(ask.booted, ask.init));
  }
  if (manager.user) {
    const user = userManagerState(manager, ask.root);
    if (!user.lingers) {
      return none(
        "absent",
        `stat ${user.linger}`,
        `account ${manager.account} does not linger (no ${user.linger}): its user manager does ` +
          `not start at boot, so nothing of its starts at boot (loginctl enable-linger ` +
          `${manager.account})`,
      );
    }
    if (!user.running) {
      return none(
        "failed",
        `stat ${user.socket}`,
        `account ${manager.account} lingers but its user manager does not answer: ${user.socket} ` +
          `is not a socket`,
      );
    }
  }
  const listArgv = systemctlArgv(manager, [
    "list-unit-files",
    "--type=service",
    "--no-legend",
    "--no-pager",
  ]);
  let method = formatArgv(listArgv);
  try {
    const listed = parseUnitFiles(
      (await run(listArgv, { env: SYSTEMCTL_ENV, timeoutMs: ask.timeoutMs })).stdout,
    );
    const unknown = [...listed].filter(([, s]) => !isOneOf(UNIT_FILE_STATES, s));
    if (unknown.length > 0) {
      return none(
        "failed",
        method,
        `systemctl answered with a unit file state this program does not know, and it is not ` +
          `guessed at: ${unknown.map(([u, s]) => `${u}: "${s}"`).join("; ")}`,
      );
    }
    // What starts each installed runtime's containers at boot.
    const installed = (r: "podman" | "docker") =>
      ask.runtimes.includes(r) && findProgram(r) !== undefined;
    const restart = [
      ...(installed("podman") ? ["podman-restart.service"] : []),
      ...(installed("docker") ? ["docker.service"] : []),
    ];
    // Enabled services are read for what they run (a retired container's unit still enabled);
    // a template without an instance cannot be shown (it fails the whole call), nor run.
    const enabled = [...listed].filter(([, s]) => s === "enabled").map(([u]) => u);
    const names = [...new Set([...restart, ...ask.labelled, ...ask.daemons, ...enabled])]
      .filter((u) => !/@\.[a-z]+$/.test(u));
    const showArgv = systemctlArgv(manager, [
      "show",
      "-p",
      BOOT_PROPERTIES.join(","),
      "--",
      ...names,
    ]);
    method = `${method}; ${formatArgv(showArgv).slice(0, 200)}${
      formatArgv(showArgv).length > 200 ? "..." : ""
    }`;
    const blocks = parseShow(
      (await run(showArgv, { env: SYSTEMCTL_ENV, timeoutMs: ask.timeoutMs })).stdout,
      names,
    );
    const units = names.map((unit, i): BootUnit => {
      const b = blocks[i]!;
      const list = (k: string) => (b[k] ?? "").split(/\s+/).filter(Boolean);
      return {
        account: manager.account,
        unit,
        id: b.Id ?? "",
        load: b.LoadState ?? "",
        unitFile: b.UnitFileState ?? "",
        wantedBy: list("WantedBy"),
        requiredBy: list("RequiredBy"),
        triggeredBy: list("TriggeredBy"),
        execStart: parseExecProperty(b.ExecStart ?? ""),
      };
    });
    const odd = units.filter((u) =>
      !(u.unitFile === "" && u.load !== "loaded") && !isOneOf(UNIT_FILE_STATES, u.unitFile)
    );
    if (odd.length > 0) {
      return none(
        "failed",
        method,
        `systemctl answered with a unit file state this program does not know, and it is not ` +
          `guessed at: ${odd.map((u) => `${u.unit}: "${u.unitFile}"`).join("; ")}`,
      );
    }
    return {
      units,
      unitFiles: Object.fromEntries(listed),
      startsAtBoot: true,
      source: {
        source: "boot-units",
        account: manager.account,
        state: "observed",
        method,
        detail: `${listed.size} service unit files, ${enabled.length} enabled; ${names.length} ` +
          `units read in one call to the ${
            manager.user ? `user manager of ${manager.account}` : "system manager"
          }`,
      },
    };
  } catch (error) {
    return none("failed", method, messageOf(error));
  }
}

/** Quadlet source directories (podman-systemd.unit(5)), for naming files nothing reads. */
function quadletDirs(manager: Manager, root: string): string[] {
  return manager.user
    ? [
      `${root}${manager.home}/.config/containers/systemd`,
      `${root}/etc/containers/systemd/users`,
      `${root}/etc/containers/systemd/users/${manager.uid}`,
    ]
    : [`${root}/etc/containers/systemd`, `${root}/usr/share/containers/systemd`];
}

async function askQuadlet(
  manager: Manager,
  account: Account,
  ask: { booted: Booted; root: string; timeoutMs: number },
): Promise<{ units: QuadletUnit[]; source: SourceStatus }> {
  const none = (state: SourceStatus["state"], method: string, detail: string) => ({
    units: [],
    source: { source: "quadlet", account: manager.account, state, method, detail },
  });
  if (!ask.booted.booted) {
    return none("absent", ask.booted.method, `${ask.booted.reason}; generators run only under it`);
  }
  const candidates = manager.user ? QUADLET_GENERATORS.user : QUADLET_GENERATORS.system;
  const generator = candidates.find((p) => {
    try {
      return Deno.statSync(`${ask.root}${p}`).isFile;
    } catch {
      return false;
    }
  });
  if (generator === undefined) {
    const files: string[] = [];
    for (const dir of quadletDirs(manager, ask.root)) {
      try {
        for (const f of Deno.readDirSync(dir)) {
          if (/\.(container|volume|network|kube|image|pod|build)$/.test(f.name)) {
            files.push(`${dir}/${f.name}`);
          }
        }
      } catch { /* no such directory */ }
    }
    return none(
      "absent",
      `stat ${candidates.join(" ")}`,
      `no quadlet generator is installed (none of ${candidates.join(", ")}; podman gained ` +
        `quadlet in 4.4, and Debian 12's podman 4.3 has none)${
          files.length > 0
            ? `: ${files.length} quadlet file${
              files.length === 1 ? " is" : "s are"
            } read by nothing and create${files.length === 1 ? "s" : ""} nothing at boot: ${
              files.join(", ")
            }`
            : ""
        }`,
    );
  }
  const argv = manager.user
    ? asAccount(account, [generator, "--user", "--dryrun"], rootlessEnv(account))
    : [generator, "--dryrun"];
  const method = formatArgv(argv);
  try {
    const out = await run(argv, { allowFailure: true, timeoutMs: ask.timeoutMs });
    const units = parseQuadletDryRun(out.stdout, manager.account);
    const said = out.stderr.split("\n").map((l) => l.trim()).filter((l) =>
      l !== "" && !/Loading source (unit|drop-in) file|No files parsed|Starting quadlet/.test(l)
    );
    if (out.code !== 0 && units.length === 0 && said.length === 0) {
      return none("failed", method, `the generator exited with code ${out.code} and said nothing`);
    }
    return {
      units,
      source: {
        source: "quadlet",
        account: manager.account,
        state: "observed",
        method,
        detail: `${units.length} unit${units.length === 1 ? "" : "s"} would be generated${
          said.length > 0 ? `; the generator said: ${said.join(" / ").slice(0, 500)}` : ""
        }`,
      },
    };
  } catch (error) {
    return none("failed", method, messageOf(error));
  }
}
