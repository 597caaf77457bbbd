/**
 * One reconcile run: observe everything the registry can be compared with, compare, and build
 * the result. Observing never changes anything; writing the stamp and the textfile is left to
 * {@linkcode ./outputs.ts}.
 *
 * @module
 */

import { spawnCount } from "../lib/command.ts";
import { messageOf } from "../lib/atomic.ts";
import type { Registry } from "./registry.ts";
import { compare } from "./compare.ts";
import type { CompareOptions, Finding, Observation } from "./finding.ts";
import { DEFAULT_TIMEOUT_MS, type StartedObservation, startObserving } from "./observe/start.ts";
import { observeSockets } from "./observe/sockets.ts";
import { observeProxy, probeAddress, type ServedAddress } from "./observe/proxy.ts";
import type { TlsRequest } from "./observe/tls_port.ts";
import type { SourceStatus } from "./observe/source.ts";
import { repoSeenAfter } from "./compare_repo.ts";
import type { RepoCheckOptions } from "./repo_check.ts";
import type { SeenByRepo } from "./repo_seen.ts";
import { observeRepo } from "./observe/repo.ts";
import { observeTimers, type TimerRequest, timerRequests } from "./observe/timers.ts";
import { type BootRequest, bootRequest, observeBoot } from "./observe/boot.ts";
import type { BackupRequest } from "./observe/backup.ts";

import { BOOT_VIEWS, type BootView, NO_PROXY } from "./options.ts";

export { BOOT_VIEWS, type BootView, NO_PROXY, type StartedObservation, startObserving };

/**
 * The source a run with `--boot none` reports, so text and JSON say the boot view was not checked.
 *
 * @example Whether a run's sources say the boot view was left out
 * ```ts
 * import { NO_BOOT_SOURCE, type SourceStatus } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const bootSkipped = (sources: SourceStatus[]) =>
 *   sources.some((s) => s.source === NO_BOOT_SOURCE.source && s.method === NO_BOOT_SOURCE.method);
 * assert(bootSkipped([
 *   { source: "sockets", state: "observed", method: "read /proc/net/tcp", detail: "4 listening" },
 *   NO_BOOT_SOURCE,
 * ]));
 * assert.equal(NO_BOOT_SOURCE.state, "absent");
 * ```
 */
export const NO_BOOT_SOURCE: SourceStatus = {
  source: "boot",
  state: "absent",
  method: "--boot none",
  detail: "what a reboot would produce is not checked",
};

/** Options for {@linkcode observe}. */
export interface ObserveOptions {
  /** Caddy admin API address (`localhost:2019`), or {@linkcode NO_PROXY}. */
  caddyAdmin: string;
  /** Per-command and per-request time limit in milliseconds; default 30 000. */
  timeoutMs?: number;
  /** Container runtimes to ask; default podman and docker. */
  runtimes?: ("podman" | "docker")[];
  /** PEM files of private roots trusted besides the system's store (the registry's `roots`). */
  roots?: readonly string[];
  /** The system's store of roots (default: found as `./observe/trust.ts` says). */
  systemStore?: string;
  /** The TLS ports to probe (the registry's `tls`); none when absent. */
  tls?: readonly TlsRequest[];
  /** Only probe these addresses (default: every declared one that is served). */
  probe?: (address: ServedAddress) => boolean;
  /** Timers to ask about (one `systemctl show` per manager); none asked when absent. */
  timers?: TimerRequest[];
  /**
   * What the next boot would produce; not observed when absent; `"none"`: not observed, and
   * said as {@linkcode NO_BOOT_SOURCE}.
   */
  boot?: BootRequest | "none";
  /** The deployment repository's checkout (`run --repo`); not observed when absent. */
  repoDir?: string;
  /** The registry's backup, whose snapshots are read (`backup`); not observed when absent. */
  backup?: BackupRequest;
  /**
   * The accounts and containers, already being asked ({@linkcode startObserving}, for the same
   * accounts, `timeoutMs` and `runtimes`); started here when absent.
   */
  started?: StartedObservation;
}

/**
 * Observes the machine: containers of each of `accounts`, listening sockets, the proxy's served
 * addresses, a probe of each served address `options.probe` selects, the timers and boot view
 * asked for, and the deployment repository with `repoDir`: everything the check table of
 * `./compare.ts` compares. Never throws for a source that cannot be asked; that source is
 * `failed` in `sources`.
 *
 * @example The containers running for two accounts
 * ```ts
 * import { observe } from "../mod.ts";
 *
 * // Observes this machine (podman, docker, /proc, Caddy's admin API): type-checked, not run here.
 * async function runningContainers(): Promise<string[]> {
 *   const observation = await observe(["root", "alice"], {
 *     caddyAdmin: "localhost:2019",
 *     timeoutMs: 30_000,
 *   });
 *   const failed = observation.sources.filter((s) => s.state === "failed");
 *   if (failed.length > 0) {
 *     throw new Error(`Cannot observe ${failed.map((s) => s.source).join(", ")}`);
 *   }
 *   return observation.containers.map((c) => `${c.account}/${c.name}`);
 * }
 * ```
 */
export async function observe(accounts: string[], options: ObserveOptions): Promise<Observation> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = options.started ?? startObserving(accounts, {
    timeoutMs,
    ...(options.runtimes ? { runtimes: options.runtimes } : {}),
  });
  if (started.accounts.join("\n") !== accounts.join("\n")) {
    throw new Error(
      `Cannot observe accounts ${accounts.join(", ")}: the observation started was for ` +
        `${started.accounts.join(", ")}`,
    );
  }
  const time = started.time;
  // The repository is observed alongside the machine (it asks git only, never throws).
  const repo = options.repoDir === undefined
    ? undefined
    : observeRepo(options.repoDir, { timeoutMs: options.timeoutMs });
  // So are the backup's snapshots (restic only; never throws).
  const backupAsked = options.backup;
  const backup = backupAsked === undefined
    ? undefined
    : import("./observe/backup.ts").then((m) => m.observeBackup(backupAsked, { timeoutMs }));
  let passwd;
  try {
    passwd = await started.passwd;
  } catch (error) {
    const sources: SourceStatus[] = [{
      source: "accounts",
      state: "failed",
      method: "read /etc/passwd",
      detail: messageOf(error),
    }];
    const repoObserved = await repo;
    const backupObserved = await backup;
    return {
      time,
      containers: [],
      listeners: [],
      addresses: [],
      probes: [],
      sources: [
        ...sources,
        ...(options.boot === "none" ? [{ ...NO_BOOT_SOURCE }] : []),
        ...repoObserved?.sources ?? [],
        ...backupObserved?.sources ?? [],
      ],
      ...(repoObserved ? { repo: repoObserved } : {}),
      ...(backupObserved?.backup ? { backup: backupObserved.backup } : {}),
    };
  }
  const bootAsked = options.boot === "none" ? undefined : options.boot;
  // Each source starts as soon as what it needs is there: the timers need nothing, the boot view
  // the containers (their ids; the sockets, for the daemons' processes, it awaits itself after
  // asking about the containers), the probes the proxy.
  const containersAsked = started.containers;
  const socketsAsked = observeSockets({ passwd });
  const timersAsked = options.timers && observeTimers(options.timers, { passwd, timeoutMs });
  const bootObserved = bootAsked &&
    containersAsked.then((containers) =>
      observeBoot(bootAsked, {
        passwd,
        timeoutMs,
        listeners: socketsAsked.then((sockets) => sockets.listeners),
        runtimes: options.runtimes,
        ...(containers.podmanIds ? { podmanIds: containers.podmanIds } : {}),
      })
    );
  // Awaited below; until then a rejection must not count as unhandled.
  for (const pending of [timersAsked, bootObserved]) pending?.catch(() => {});
  const [containers, sockets, proxy] = await Promise.all([
    containersAsked,
    socketsAsked,
    options.caddyAdmin === NO_PROXY
      ? Promise.resolve({
        addresses: [],
        sources: [{
          source: "caddy",
          state: "absent" as const,
          method: "--caddy-admin none",
          detail: "this machine runs no reverse proxy",
        }],
      })
      : observeProxy(options.caddyAdmin, { timeoutMs }),
  ]);
  const wanted = proxy.addresses.filter(options.probe ?? (() => true));
  // The trusted roots are read once, and only when a served chain is to be judged.
  const tlsAsked = options.tls ?? [];
  const trust = wanted.some((a) => a.tls) || tlsAsked.length > 0
    ? await import("./observe/trust.ts").then((m) =>
      m.observeTrust(options.roots ?? [], {
        ...(options.systemStore !== undefined ? { systemStore: options.systemStore } : {}),
      })
    )
    : undefined;
  const now = Date.now();
  const judged = { timeoutMs, now, ...(trust?.store ? { trust: trust.store } : {}) };
  const tlsPort = tlsAsked.length > 0 ? await import("./observe/tls_port.ts") : undefined;
  const [probes, tlsProbes, timers, boot] = await Promise.all([
    mapLimit(wanted, 8, (a) => probeAddress(a, judged)),
    tlsPort &&
    mapLimit(
      [...tlsAsked],
      8,
      (r) => tlsPort.probeTlsPort(r, tlsPort.tlsTarget(r.port, sockets.listeners), judged),
    ),
    timersAsked,
    bootObserved,
  ]);
  const repoObserved = await repo;
  const backupObserved = await backup;
  return {
    time,
    containers: containers.containers,
    leftovers: containers.leftovers,
    listeners: sockets.listeners,
    addresses: proxy.addresses,
    probes,
    ...(tlsProbes ? { tlsProbes } : {}),
    sources: [
      ...containers.sources,
      ...sockets.sources,
      ...proxy.sources,
      ...trust?.sources ?? [],
      ...timers?.sources ?? [],
      ...boot?.sources ?? [],
      ...(options.boot === "none" ? [{ ...NO_BOOT_SOURCE }] : []),
      ...repoObserved?.sources ?? [],
      ...backupObserved?.sources ?? [],
    ],
    ...(timers ? { timers: timers.timers } : {}),
    ...(boot ? { boot: boot.boot } : {}),
    ...(repoObserved ? { repo: repoObserved } : {}),
    ...(backupObserved?.backup ? { backup: backupObserved.backup } : {}),
  };
}

/** The TLS ports `registry` declares (each entry's `tls`), in registry order. */
export function tlsRequests(registry: Registry): TlsRequest[] {
  return Object.entries(registry.services).flatMap(([service, entry]) =>
    (entry.tls ?? []).map((t) => ({
      service,
      port: t.port,
      names: t.name,
      ...(t.starttls !== undefined ? { starttls: t.starttls } : {}),
    }))
  );
}

/** The backup `registry` names (`backup.restic`) with every declared state directory, if any. */
export function backupRequest(registry: Registry): BackupRequest | undefined {
  if (registry.backup === undefined) return undefined;
  const state = new Set(Object.values(registry.services).flatMap((e) => e.state ?? []));
  return {
    repository: registry.backup.restic.repository,
    passwordFile: registry.backup.restic.passwordFile,
    state: [...state].sort(),
  };
}

/** The verdict of a run. */
export type RunStatus = "clean" | "drift" | "unobservable";

/** A run's result (docs/design.md, "Reconcile result"); text and JSON are both rendered from it. */
export interface ReconcileResult {
  /** True only when every source was observed and nothing differs. */
  clean: boolean;
  status: RunStatus;
  /** 0 clean, 1 drift, 2 could not observe. */
  exitCode: 0 | 1 | 2;
  /** When observation started, ISO 8601. */
  time: string;
  /** The registry file compared. */
  registry: string;
  entries: number;
  findings: Finding[];
  sources: SourceStatus[];
  /** What was seen, in counts. */
  observed: { containers: number; listeners: number; ports: number; addresses: number };
  /** Subprocesses spawned by this run (grows with accounts, not with entries). */
  subprocesses: number;
  /** With `repo`: first sightings of upstream commits for the caller to keep (not in JSON). */
  repoSeen?: SeenByRepo;
}

/** Options for {@linkcode reconcile}. */
export interface ReconcileOptions extends ObserveOptions {
  /** Path of the registry, for the result. */
  registryPath: string;
  /** Certificates expiring within this many milliseconds are findings (default 14 days). */
  certWarnMs?: number;
  /** Also check the deployment repository (`--repo`; see `./repo_check.ts`). */
  repo?: RepoCheckOptions;
  /**
   * What the next boot would produce: `systemd` (default) observes it; `none` does not (no
   * subprocess for it, no `boot` finding) and reports {@linkcode NO_BOOT_SOURCE}.
   */
  bootView?: BootView;
}

/**
 * Observes the machine and compares it with `registry`.
 *
 * @example What `mesh-reconcile run` does, as a library call
 * ```ts
 * import { loadRegistry, reconcile, toText } from "../mod.ts";
 *
 * // Observes this machine (podman, sockets, Caddy, systemd): type-checked, not run here.
 * async function checkThisMachine(): Promise<0 | 1 | 2> {
 *   const path = "/var/lib/mesh/reconcile/registry.yaml";
 *   const registry = await loadRegistry(path);
 *   const result = await reconcile(registry, {
 *     registryPath: path,
 *     caddyAdmin: "localhost:2019",
 *     bootView: "systemd",
 *   });
 *   console.log(toText(result));
 *   return result.exitCode; // 0 clean, 1 drift, 2 could not observe
 * }
 * ```
 */
export async function reconcile(
  registry: Registry,
  options: ReconcileOptions,
): Promise<ReconcileResult> {
  const before = options.started?.spawnedBefore ?? spawnCount();
  const declared = new Set(Object.values(registry.services).flatMap((e) => e.web ?? []));
  const bootView = options.bootView ?? "systemd";
  if (!(BOOT_VIEWS as readonly string[]).includes(bootView)) {
    throw new Error(`Unknown boot view "${bootView}": one of ${BOOT_VIEWS.join(", ")}`);
  }
  const observation = await observe(registry.accounts, {
    ...options,
    probe: (a) => declared.has(a.host),
    ...(registry.roots ? { roots: registry.roots } : {}),
    tls: tlsRequests(registry),
    timers: timerRequests(registry),
    boot: bootView === "none" ? "none" : bootRequest(registry),
    ...(options.repo ? { repoDir: options.repo.dir } : {}),
    ...(registry.backup ? { backup: backupRequest(registry) } : {}),
  });
  const compareOptions: CompareOptions = {
    certWarnMs: options.certWarnMs ?? 14 * 86_400_000,
    now: Date.now(),
    ...(options.repo ? { repo: { behindMs: options.repo.behindMs, seen: options.repo.seen } } : {}),
  };
  const findings = compare(registry, observation, compareOptions);
  const result = buildResult(registry, observation, findings, {
    registryPath: options.registryPath,
    subprocesses: spawnCount() - before,
  });
  const seen = repoSeenAfter(observation, compareOptions);
  if (seen) result.repoSeen = seen;
  return result;
}

function buildResult(
  registry: Registry,
  observation: Observation,
  findings: Finding[],
  extra: { registryPath: string; subprocesses: number },
): ReconcileResult {
  const unobservable = observation.sources.some((s) => s.state === "failed");
  const status: RunStatus = unobservable ? "unobservable" : findings.length > 0 ? "drift" : "clean";
  const ports = new Set([
    ...observation.listeners.map((l) => l.port),
    ...observation.containers.flatMap((c) => c.ports.map((p) => p.hostPort)),
  ]);
  return {
    clean: status === "clean",
    status,
    exitCode: status === "clean" ? 0 : status === "drift" ? 1 : 2,
    time: observation.time,
    registry: extra.registryPath,
    entries: Object.keys(registry.services).length,
    findings,
    sources: observation.sources,
    observed: {
      containers: observation.containers.length,
      listeners: observation.listeners.length,
      ports: ports.size,
      addresses: new Set(observation.addresses.map((a) => a.host)).size,
    },
    subprocesses: extra.subprocesses,
  };
}

async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
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
