/**
 * The anti-join: what the registry says should exist against what was observed, both ways,
 * per check. Pure: it takes the observation and returns findings, and never asks anything.
 *
 * @module
 */

import { formatDuration } from "../lib/duration.ts";
import type { Registry } from "./registry.ts";
import {
  type LeftoverContainer,
  leftoverState,
  type ObservedContainer,
} from "./observe/containers.ts";
import type { Listener } from "./observe/sockets.ts";
import { type AddressProbe, ANY_HOST, type ServedAddress } from "./observe/proxy.ts";
import type { SourceStatus } from "./observe/source.ts";
import type { ObservedTimer } from "./observe/timers.ts";
import type { BootObservation } from "./observe/boot.ts";
import { compareTimers } from "./compare_timers.ts";
import { compareBoot } from "./compare_boot.ts";

/** The checks a finding can come from. */
export type Check =
  | "container"
  // a container that exists and does not run, which no entry claims
  | "leftover"
  | "port"
  | "address"
  | "redirect"
  | "certificate"
  // the deployment repository (./compare_repo.ts); a served route unlike the rendered one
  // (./compare_route.ts)
  | "repo"
  | "route"
  // a batch entry's timer (./compare_timers.ts); what the next boot would produce
  // (./compare_boot.ts)
  | "timer"
  | "boot";

/** Which side of the anti-join a finding is on. */
export type Direction = "missing" | "rogue";

/** One difference between the registry and the machine (DESIGN.md, "Reconcile result"). */
export interface Finding {
  check: Check;
  /** `missing`: declared and not there (or not healthy); `rogue`: there and not declared. */
  direction: Direction;
  /** The registry entry it belongs to; absent for rogue findings, which no entry claims. */
  service?: string;
  /** What the finding is about: a container (`account/name`), a port, an address. */
  subject: string;
  /** One sentence for people. */
  detail: string;
}

/** Everything observed, with how each source answered. */
export interface Observation {
  /** When the observation started, ISO 8601. */
  time: string;
  containers: ObservedContainer[];
  /** Containers that exist and do not run (absent: not observed, e.g. by `init`). */
  leftovers?: LeftoverContainer[];
  listeners: Listener[];
  /** Served addresses; only meaningful when the `caddy` source was observed. */
  addresses: ServedAddress[];
  /** One probe per declared served address. */
  probes: AddressProbe[];
  sources: SourceStatus[];
  /** The declared timers, when asked (`timers` sources); absent: timers are not compared. */
  timers?: ObservedTimer[];
  /** What the next boot would produce, when asked; absent: boot is not compared. */
  boot?: BootObservation;
}

/** Options for {@linkcode compare}. */
export interface CompareOptions {
  /** Certificates expiring within this many milliseconds are findings. */
  certWarnMs: number;
  /** "Now" for certificate expiry, in ms since the epoch. */
  now: number;
}

/**
 * Compares `registry` with `observation`. A check whose source failed is not compared (its
 * absence of data is not evidence); the caller reports the failed source instead.
 */
export function compare(
  registry: Registry,
  observation: Observation,
  options: CompareOptions,
): Finding[] {
  const findings: Finding[] = [];
  const failed = (source: string, account?: string) =>
    observation.sources.some((s) =>
      s.source === source && s.state === "failed" &&
      (account === undefined || s.account === account)
    );
  const entries = Object.entries(registry.services);

  // Containers, per account.
  const claimed = new Map<string, string>();
  for (const [name, entry] of entries) {
    if (!("container" in entry) || entry.container === undefined || entry.user === undefined) {
      continue;
    }
    claimed.set(`${entry.user}/${entry.container}`, name);
    if (entry.kind === "batch") continue; // runs only while its job does: graded by its timer
    if (failed("podman", entry.user) || failed("docker", entry.user)) continue;
    const running = observation.containers.some((c) =>
      c.account === entry.user && c.name === entry.container
    );
    if (!running) {
      const there = observation.leftovers?.find((c) =>
        c.account === entry.user && c.name === entry.container
      );
      findings.push({
        check: "container",
        direction: "missing",
        service: name,
        subject: `${entry.user}/${entry.container}`,
        detail: `container "${entry.container}" of account ${entry.user} is not running${
          there ? ` (it exists: ${leftoverState(there)})` : ""
        }`,
      });
    }
  }
  for (const c of observation.leftovers ?? []) {
    if (claimed.has(`${c.account}/${c.name}`)) continue;
    findings.push({
      check: "leftover",
      direction: "rogue",
      subject: `${c.account}/${c.name}`,
      detail: `container "${c.name}" (${c.image}, ${c.runtime}) of account ${c.account} ` +
        `exists and is not running (${leftoverState(c)}), and no entry claims it: remove it, ` +
        `or declare it`,
    });
  }
  for (const c of observation.containers) {
    if (claimed.has(`${c.account}/${c.name}`)) continue;
    findings.push({
      check: "container",
      direction: "rogue",
      subject: `${c.account}/${c.name}`,
      detail:
        `container "${c.name}" (${c.image}, ${c.runtime}) runs in account ${c.account} and no entry claims it`,
    });
  }

  // Ports: listening sockets and published container ports, matched to containers through the
  // runtime's port map.
  if (!failed("sockets")) {
    const listening = new Map<number, { listeners: Listener[]; containers: ObservedContainer[] }>();
    const at = (port: number) => {
      let v = listening.get(port);
      if (!v) listening.set(port, v = { listeners: [], containers: [] });
      return v;
    };
    for (const l of observation.listeners) at(l.port).listeners.push(l);
    for (const c of observation.containers) {
      for (const p of c.ports) if (p.protocol === "tcp") at(p.hostPort).containers.push(c);
    }
    const owner = new Map<number, string>();
    for (const [name, entry] of entries) {
      for (const port of entry.port ?? []) {
        owner.set(port, name);
        const seen = listening.get(port);
        if (!seen) {
          findings.push({
            check: "port",
            direction: "missing",
            service: name,
            subject: String(port),
            detail: `port ${port} is not listening`,
          });
          continue;
        }
        if (entry.kind === "daemon" && entry.user !== undefined) {
          const f = daemonOwnerFinding(name, entry.user, port, seen.listeners);
          if (f) findings.push(f);
        }
        const container = "container" in entry ? entry.container : undefined;
        if (
          container !== undefined && seen.containers.length > 0 &&
          !seen.containers.some((c) => c.name === container && c.account === entry.user)
        ) {
          findings.push({
            check: "port",
            direction: "missing",
            service: name,
            subject: String(port),
            detail: `port ${port} is published by ${
              seen.containers.map((c) => `container "${c.name}" of account ${c.account}`).join(", ")
            }, not by "${container}"`,
          });
        }
      }
    }
    for (const [port, seen] of [...listening].sort((a, b) => a[0] - b[0])) {
      if (owner.has(port)) continue;
      findings.push({
        check: "port",
        direction: "rogue",
        subject: String(port),
        detail: `port ${port} listens (${
          describeHolders(seen.listeners, seen.containers)
        }) and no entry claims it`,
      });
    }
  }

  // Web addresses, certificates and redirects.
  if (!failed("caddy")) {
    const served = new Map<string, ServedAddress>();
    for (const a of observation.addresses) if (!served.has(a.host)) served.set(a.host, a);
    const declared = new Map<string, string>();
    for (const [name, entry] of entries) {
      for (const address of entry.web ?? []) {
        declared.set(address, name);
        const s = served.get(address);
        if (!s) {
          findings.push({
            check: "address",
            direction: "missing",
            service: name,
            subject: address,
            detail: `${
              address === ANY_HOST ? "a catch-all route" : address
            } is not served by the proxy`,
          });
          continue;
        }
        const probe = observation.probes.find((p) => p.host === address);
        if (probe === undefined || address === ANY_HOST || address.startsWith("*.")) continue;
        if (probe.error !== undefined) {
          findings.push({
            check: s.tls ? "certificate" : "address",
            direction: "missing",
            service: name,
            subject: address,
            detail:
              `${address} is configured but does not answer at ${probe.target}: ${probe.error}`,
          });
          continue;
        }
        if (s.tls && probe.certificate) findings.push(...certificateFindings(name, probe, options));
        if (entry.kind === "site" && entry.redirect !== undefined) {
          const f = redirectFinding(name, probe, entry.redirect, s.tls);
          if (f) findings.push(f);
        }
      }
    }
    for (const [host, s] of served) {
      if (declared.has(host)) continue;
      findings.push({
        check: "address",
        direction: "rogue",
        subject: host,
        detail: `${
          host === ANY_HOST ? "a catch-all route (any host name)" : host
        } is served (server ${s.server} on ${s.listen.join(", ")}) and no entry declares it`,
      });
    }
  }
  findings.push(...compareTimers(registry, observation), ...compareBoot(registry, observation));
  return findings;
}

function certificateFindings(
  service: string,
  probe: AddressProbe,
  options: CompareOptions,
): Finding[] {
  const cert = probe.certificate!;
  const out: Finding[] = [];
  const base = {
    check: "certificate" as const,
    direction: "missing" as const,
    service,
    subject: probe.host,
  };
  if (!cert.coversName) {
    out.push({
      ...base,
      detail: `the certificate presented for ${probe.host} does not cover it (it names ${
        cert.subjectAltName || cert.subject || "nothing"
      })`,
    });
  }
  const starts = Date.parse(cert.notBefore) - options.now;
  if (starts > 0) {
    out.push({
      ...base,
      detail: `the certificate for ${probe.host} is not valid yet: its validity starts in ${
        formatDuration(starts)
      } (at ${cert.notBefore}), and a client refuses it until then`,
    });
  }
  const left = Date.parse(cert.notAfter) - options.now;
  if (left <= 0) {
    out.push({ ...base, detail: `the certificate for ${probe.host} expired at ${cert.notAfter}` });
  } else if (left <= options.certWarnMs) {
    out.push({
      ...base,
      detail: `the certificate for ${probe.host} expires in ${
        formatDuration(left)
      } (at ${cert.notAfter}), within the ${formatDuration(options.certWarnMs)} warning`,
    });
  }
  return out;
}

function redirectFinding(
  service: string,
  probe: AddressProbe,
  target: string,
  tls: boolean,
): Finding | undefined {
  const base = {
    check: "redirect" as const,
    direction: "missing" as const,
    service,
    subject: probe.host,
  };
  const status = probe.status ?? 0;
  if (status < 300 || status > 399 || probe.location === undefined) {
    return {
      ...base,
      detail: `${probe.host} answers ${status} instead of redirecting to ${target}`,
    };
  }
  const asked = `${tls ? "https" : "http"}://${probe.host}/`;
  let got: string;
  try {
    got = new URL(probe.location, asked).href;
  } catch {
    got = probe.location;
  }
  if (got !== new URL(target).href) {
    return { ...base, detail: `${probe.host} redirects to ${got}, not to ${target}` };
  }
  return undefined;
}

/**
 * A daemon declared to run as `user` must hold its port as that account: satisfied when any
 * process holding the port's sockets runs as `user` (a master and its workers may differ), or,
 * when no process was found, when the socket belongs to it.
 */
function daemonOwnerFinding(
  service: string,
  user: string,
  port: number,
  listeners: Listener[],
): Finding | undefined {
  if (listeners.length === 0) return undefined; // published by a container: compared elsewhere
  const owners = listeners.flatMap((l) =>
    l.processes.length > 0
      ? l.processes.map((p) => p.user ?? (p.uid === undefined ? undefined : `uid ${p.uid}`))
      : [l.user ?? `uid ${l.uid}`]
  );
  if (owners.includes(user)) return undefined;
  const holders = listeners.flatMap((l) =>
    l.processes.length > 0
      ? l.processes.map((p) =>
        `${p.command}[${p.pid}] as ${p.user ?? (p.uid === undefined ? "?" : `uid ${p.uid}`)}`
      )
      : [`a socket of ${l.user ?? `uid ${l.uid}`} (no process found)`]
  );
  return {
    check: "port",
    direction: "missing",
    service,
    subject: String(port),
    detail: `port ${port} is held by ${[...new Set(holders)].join(", ")}, not as ${user} ` +
      `(the entry's user)`,
  };
}

function describeHolders(listeners: Listener[], containers: ObservedContainer[]): string {
  const parts: string[] = [];
  for (const c of containers) parts.push(`container "${c.name}" of account ${c.account}`);
  const procs = new Map<string, Set<string>>();
  for (const l of listeners) {
    const who = `${
      l.processes.length > 0
        ? l.processes.map((p) => `${p.command}[${p.pid}]`).join(", ")
        : "no process found"
    } as ${l.user ?? `uid ${l.uid}`}`;
    const set = procs.get(who) ?? new Set();
    set.add(l.family === 6 ? `[${l.address}]` : l.address);
    procs.set(who, set);
  }
  for (const [who, addresses] of procs) parts.push(`${[...addresses].join(", ")}: ${who}`);
  return parts.join("; ");
}
