/**
 * Ports against the registry (check `port`): the registry is the port table. Pure.
 *
 * What listens is a TCP socket in LISTEN (IPv4 or IPv6) or a port a running container publishes,
 * matched to its container through the runtime's port map. A declared port nothing listens on is
 * missing; so is one published by another container than the entry's, and a `daemon`'s port that
 * no process of its `user` holds (a root listener on a port declared as postgres's). A listening
 * port no entry claims is rogue, named with its process and account, or its container. Not
 * compared when the `sockets` source failed.
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import type { ObservedContainer } from "./observe/containers.ts";
import type { Listener } from "./observe/sockets.ts";

/** Check `port`: declared ports against listening sockets and published container ports. */
export function comparePorts(registry: Registry, observation: Observation): Finding[] {
  const findings: Finding[] = [];
  const entries = Object.entries(registry.services);
  const failed = observation.sources.some((s) => s.source === "sockets" && s.state === "failed");
  // Ports: listening sockets and published container ports, matched to containers through the
  // runtime's port map.
  if (!failed) {
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

  return findings;
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
