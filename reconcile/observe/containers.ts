/**
 * Containers, asked per account (running ones, and the leftovers that exist without running): there is no global view, so every account listed in
 * the registry is asked separately, each runtime once (podman, and docker where its daemon
 * answers). Rootless accounts are asked as that account.
 *
 * Formats read: `podman ps --all --format json` (podman 4.x: an array of objects with `Names`,
 * `Image`, `Labels`, `Ports[{host_ip, host_port, container_port, range, protocol}]`, `State`,
 * `ExitCode`); `docker inspect` (Docker Engine API ContainerJSON: `Name`, `Config.Image`,
 * `Config.Labels`, `NetworkSettings.Ports{"80/tcp": [{HostIp, HostPort}]}`, `State.Status`,
 * `State.ExitCode`).
 *
 * @module
 */

import type { z } from "zod";
import { type Account, findProgram } from "../../lib/accounts.ts";
import { formatArgv, run } from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import type { SourceStatus } from "./source.ts";
import { checkOutput } from "../../lib/runtime_output.ts";
import type { DockerInspect, PodmanPs } from "../../lib/runtime_schemas.ts";

/** A host port a container publishes. */
export interface PublishedPort {
  /** Host address the port is bound to (`""` or `0.0.0.0` for all). */
  hostIp: string;
  hostPort: number;
  containerPort: number;
  /** `tcp`, `udp` or `sctp`. */
  protocol: string;
}

/** A running container as its runtime reports it. */
export interface ObservedContainer {
  /** The account whose runtime runs it. */
  account: string;
  runtime: "podman" | "docker";
  name: string;
  id: string;
  image: string;
  labels: Record<string, string>;
  ports: PublishedPort[];
}

/**
 * A container that exists and does not run: `created` (never started: what a reboot leaves of
 * a `--rm` container), `exited`, `paused`, `stopped`, ... in its runtime's words. Its ports are
 * configured, not published: nothing forwards them.
 */
export interface LeftoverContainer extends ObservedContainer {
  /** The runtime's state word, lowercase (`created`, `exited`, `paused`, ...). */
  state: string;
  /** The exit code, for an `exited` container. */
  exitCode?: number;
}

/** What {@linkcode observeContainers} found, and how each runtime answered per account. */
export interface ContainerObservation {
  /** Running containers. */
  containers: ObservedContainer[];
  /** Containers that exist and do not run. */
  leftovers: LeftoverContainer[];
  sources: SourceStatus[];
  /**
   * Per account whose podman answered `podman ps --all`: the id of every container it listed,
   * running or not, in its order. The boot view inspects these rather than listing them again.
   */
  podmanIds?: Record<string, string[]>;
}

/** A leftover's state in words: `created`, `exited with code 137`, `paused`. */
export function leftoverState(c: LeftoverContainer): string {
  return c.state === "exited" && c.exitCode !== undefined
    ? `exited with code ${c.exitCode}`
    : c.state;
}

/** Options for {@linkcode observeContainers}. */
export interface ObserveContainersOptions {
  /** `/etc/passwd` accounts (read once by the caller). */
  passwd: Map<string, Account>;
  /** Runtimes to ask; default both. */
  runtimes?: ("podman" | "docker")[];
  /** Per-command time limit in milliseconds; default 60 000. */
  timeoutMs?: number;
}

/**
 * Asks each account's runtimes which containers run. Never throws for a runtime that cannot
 * be asked: that is a `failed` source (the run cannot be clean), while a runtime this machine
 * does not have is `absent` with the reason.
 */
export async function observeContainers(
  accounts: string[],
  options: ObserveContainersOptions,
): Promise<ContainerObservation> {
  const runtimes = options.runtimes ?? ["podman", "docker"];
  const timeoutMs = options.timeoutMs ?? 60_000;
  const results = await Promise.all(
    accounts.flatMap((account) =>
      runtimes.map((runtime) =>
        runtime === "podman"
          ? askPodman(account, options.passwd, timeoutMs)
          : askDocker(account, options.passwd, timeoutMs)
      )
    ),
  );
  return {
    containers: results.flatMap((r) => r.containers),
    leftovers: results.flatMap((r) => r.leftovers),
    sources: results.flatMap((r) => r.sources),
    podmanIds: Object.assign({}, ...results.map((r) => r.podmanIds ?? {})),
  };
}

/** argv (and environment) that runs `argv` as `account`: directly for root or oneself. */
export function asAccount(
  account: Account,
  argv: string[],
  env: Record<string, string> = {},
): string[] {
  const self = Deno.uid();
  const all = { HOME: account.home, ...env };
  if (account.uid === self) {
    return ["env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
  }
  return [
    "runuser",
    "-u",
    account.name,
    "--",
    "env",
    ...Object.entries(all).map(([k, v]) => `${k}=${v}`),
    ...argv,
  ];
}

/** A rootless runtime finds its state through the account's runtime directory, where there is one. */
export function rootlessEnv(account: Account): Record<string, string> {
  if (account.uid === 0) return {};
  const dir = `/run/user/${account.uid}`;
  try {
    if (Deno.statSync(dir).isDirectory) return { XDG_RUNTIME_DIR: dir };
  } catch { /* no session directory: podman then uses its own fallback */ }
  return {};
}

async function askPodman(
  accountName: string,
  passwd: Map<string, Account>,
  timeoutMs: number,
): Promise<ContainerObservation> {
  const method = "podman ps --all --format json";
  const status = (state: SourceStatus["state"], detail: string): SourceStatus => ({
    source: "podman",
    account: accountName,
    state,
    method,
    detail,
  });
  if (findProgram("podman") === undefined) {
    return {
      containers: [],
      leftovers: [],
      sources: [status("absent", "podman is not installed (not on PATH)")],
    };
  }
  const account = passwd.get(accountName);
  if (account === undefined) {
    return {
      containers: [],
      leftovers: [],
      sources: [status("failed", `account "${accountName}" does not exist in /etc/passwd`)],
    };
  }
  const unused = account.uid === 0 ? undefined : neverUsedPodman(account);
  if (unused !== undefined) {
    // Asking would create podman's state and leave a pause process behind for this account:
    // observing must not change the machine, and an account with no storage runs nothing.
    return {
      containers: [],
      leftovers: [],
      sources: [{
        ...status("observed", `0 running: the account has never used podman (${unused})`),
        method: `stat ${unused}`,
      }],
    };
  }
  const argv = asAccount(
    account,
    ["podman", "ps", "--all", "--format", "json"],
    rootlessEnv(account),
  );
  try {
    const out = await run(argv, { timeoutMs });
    // podman can exit 0 and still say something went wrong (e.g. no subuid range): keep it.
    const said = out.stderr.split("\n").filter((l) => /level=(error|fatal)/.test(l))
      .map((l) => /msg="((?:[^"\\]|\\.)*)"/.exec(l)?.[1] ?? l.trim());
    const data = JSON.parse(out.stdout || "[]");
    let listed: z.output<typeof PodmanPs>;
    try {
      listed = await checkOutput("podman ps", data);
    } catch (error) {
      throw new Error(`unexpected output of ${formatArgv(argv)}: ${messageOf(error)}`);
    }
    const all = listed
      .map((c): LeftoverContainer => ({
        account: accountName,
        runtime: "podman",
        name: c.Names[0]!,
        id: c.Id,
        image: c.Image,
        labels: c.Labels ?? {},
        ports: (c.Ports ?? []).flatMap((p) =>
          Array.from({ length: Math.max(1, p.range ?? 1) }, (_, i) => ({
            hostIp: p.host_ip,
            hostPort: p.host_port + i,
            containerPort: p.container_port + i,
            protocol: p.protocol,
          }))
        ),
        state: c.State.toLowerCase(),
        ...(c.State === "exited" && c.ExitCode !== undefined ? { exitCode: c.ExitCode } : {}),
      }));
    const { containers, leftovers } = splitRunning(all);
    return {
      containers,
      leftovers,
      podmanIds: { [accountName]: all.map((c) => c.id) },
      sources: [
        status(
          "observed",
          `${containers.length} running${leftovers.length > 0 ? `, ${leftovers.length} not` : ""}${
            said.length > 0 ? `; podman said: ${said.join("; ")}` : ""
          }`,
        ),
      ],
    };
  } catch (error) {
    return { containers: [], leftovers: [], sources: [status("failed", messageOf(error))] };
  }
}

/** Running containers (without their state) and leftovers. */
function splitRunning(all: LeftoverContainer[]): Omit<ContainerObservation, "sources"> {
  const containers: ObservedContainer[] = [];
  const leftovers: LeftoverContainer[] = [];
  for (const c of all) {
    if (c.state === "running") {
      const { state: _state, exitCode: _code, ...running } = c;
      containers.push(running);
    } else leftovers.push(c);
  }
  return { containers, leftovers };
}

/**
 * The places a rootless podman keeps its state; when none exists (and no system-wide
 * `rootless_storage_path` moves it), the account has never used podman and runs no container.
 * Returns the paths checked, or `undefined` when podman must be asked.
 */
export function neverUsedPodman(account: Account): string | undefined {
  const exists = (p: string) => {
    try {
      Deno.statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  try {
    if (
      /^\s*rootless_storage_path\s*=/m.test(Deno.readTextFileSync("/etc/containers/storage.conf"))
    ) {
      return undefined;
    }
  } catch { /* no system storage.conf: the defaults apply */ }
  const places = [
    `${account.home}/.local/share/containers`,
    `${account.home}/.config/containers`,
    `/tmp/containers-user-${account.uid}`,
    `/run/user/${account.uid}/containers`,
  ];
  return places.some(exists) ? undefined : places.join(", ");
}

async function askDocker(
  accountName: string,
  passwd: Map<string, Account>,
  timeoutMs: number,
): Promise<ContainerObservation> {
  const status = (state: SourceStatus["state"], method: string, detail: string): SourceStatus => ({
    source: "docker",
    account: accountName,
    state,
    method,
    detail,
  });
  if (findProgram("docker") === undefined) {
    return {
      containers: [],
      leftovers: [],
      sources: [status("absent", "docker ps", "docker is not installed (not on PATH)")],
    };
  }
  const account = passwd.get(accountName);
  if (account === undefined) {
    return {
      containers: [],
      leftovers: [],
      sources: [
        status("failed", "docker ps", `account "${accountName}" does not exist in /etc/passwd`),
      ],
    };
  }
  // The daemon answers on a socket; where the socket is not there, no daemon can answer.
  const configured = account.uid === 0 ? Deno.env.get("DOCKER_HOST") : undefined;
  const host = configured ??
    (account.uid === 0
      ? "unix:///var/run/docker.sock"
      : `unix:///run/user/${account.uid}/docker.sock`);
  if (host.startsWith("unix://")) {
    const socket = host.slice("unix://".length);
    try {
      if (!Deno.statSync(socket).isSocket) {
        return {
          containers: [],
          leftovers: [],
          sources: [status("absent", `stat ${socket}`, `${socket} is not a socket`)],
        };
      }
    } catch {
      return {
        containers: [],
        leftovers: [],
        sources: [status("absent", `stat ${socket}`, `no docker daemon socket at ${socket}`)],
      };
    }
  }
  const env = { DOCKER_HOST: host };
  const psArgv = asAccount(account, ["docker", "ps", "--all", "--quiet", "--no-trunc"], env);
  try {
    const ps = await run(psArgv, { timeoutMs });
    const ids = ps.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
    if (ids.length === 0) {
      return {
        containers: [],
        leftovers: [],
        sources: [status("observed", formatArgv(psArgv), "0 running")],
      };
    }
    const inspectArgv = asAccount(account, ["docker", "inspect", ...ids], env);
    const inspect = await run(inspectArgv, { timeoutMs });
    const { containers, leftovers } = splitRunning(
      await parseDockerInspectAll(inspect.stdout, accountName),
    );
    return {
      containers,
      leftovers,
      sources: [
        status(
          "observed",
          "docker ps --all; docker inspect",
          `${containers.length} running${leftovers.length > 0 ? `, ${leftovers.length} not` : ""}`,
        ),
      ],
    };
  } catch (error) {
    // A socket nobody answers is a daemon that should be there (its containers may still run:
    // containerd-shim outlives a killed dockerd), so it is failed, never absent.
    return {
      containers: [],
      leftovers: [],
      sources: [status("failed", formatArgv(psArgv), messageOf(error))],
    };
  }
}

/**
 * Parses `docker inspect` output (Docker Engine API ContainerJSON array) into running
 * containers of `account`.
 *
 * @throws {Error} when the output is not that shape.
 */
export async function parseDockerInspect(
  text: string,
  account: string,
): Promise<ObservedContainer[]> {
  return splitRunning(await parseDockerInspectAll(text, account)).containers;
}

/**
 * Parses `docker inspect` output into every container of `account`, with its state.
 *
 * @throws {Error} when the output is not that shape.
 */
export async function parseDockerInspectAll(
  text: string,
  account: string,
): Promise<LeftoverContainer[]> {
  const data = JSON.parse(text);
  let inspected: z.output<typeof DockerInspect>;
  try {
    inspected = await checkOutput("docker inspect", data);
  } catch (error) {
    throw new Error(`Cannot read docker inspect output: ${messageOf(error)}`);
  }
  return inspected.map((c) => ({
    account,
    runtime: "docker" as const,
    name: c.Name.replace(/^\//, ""),
    id: c.Id,
    image: c.Config.Image,
    labels: c.Config.Labels ?? {},
    ports: Object.entries(c.NetworkSettings.Ports ?? {}).flatMap(([key, bindings]) => {
      const [port, protocol] = key.split("/");
      return (bindings ?? []).map((b) => ({
        hostIp: b.HostIp,
        hostPort: Number(b.HostPort),
        containerPort: Number(port),
        protocol: protocol ?? "tcp",
      }));
    }),
    state: c.State.Status.toLowerCase(),
    ...(c.State.Status === "exited" && c.State.ExitCode !== undefined
      ? { exitCode: c.State.ExitCode }
      : {}),
  }));
}
