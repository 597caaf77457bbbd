/**
 * Adoption: a starting registry written from the live machine, so that a new user starts from
 * zero drift and edits from there. Every entry carries `note: adopted` until a person says why
 * it exists.
 *
 * @module
 */

import { Document } from "yaml";
import type { Observation } from "./finding.ts";
import { ANY_HOST } from "./observe/proxy.ts";
import { parseRegistry } from "./registry.ts";
import { compareNames } from "./observe/name_order.ts";

/** The note every adopted entry carries. */
export const ADOPTED = "adopted";

/** Options for {@linkcode adoptRegistry}. */
export interface AdoptOptions {
  /** The accounts whose containers were asked about (written as `accounts`). */
  accounts: string[];
  /** Host name for the header comment. */
  hostname?: string;
  /**
   * Ports held by a running container's own processes, by container id: a container on the
   * host's network publishes nothing, so its listeners are its own only through their cgroup
   * ({@linkcode observeContainerListeners}). Adopted as the container's ports, not as daemons
   * (a daemon in a container's cgroup runs in no service, and `run`'s boot check says so).
   */
  containerListeners?: ReadonlyMap<string, readonly number[]>;
}

/**
 * The container id `text` (a `/proc/PID/cgroup`) places its process in, among `ids` (full
 * container ids): a path segment that is the id, `libpod-ID`, `libpod-ID.scope`,
 * `docker-ID.scope` or `libpod-conmon-ID` is not one (that is the monitor, not the container).
 */
export function containerOfCgroup(text: string, ids: readonly string[]): string | undefined {
  const known = new Set(ids);
  for (const line of text.split("\n")) {
    const path = line.slice(line.indexOf(":", line.indexOf(":") + 1) + 1);
    for (const segment of path.split("/").reverse()) {
      const id = /^(?:libpod-|docker-)?([0-9a-f]{64})(?:\.scope)?$/.exec(segment)?.[1];
      if (id !== undefined && known.has(id)) return id;
    }
  }
  return undefined;
}

/**
 * Which listening ports of `observation` are held by the processes of a running container
 * (read from each holder's `PROC/PID/cgroup`), by container id, for
 * {@linkcode AdoptOptions.containerListeners}. A process whose cgroup cannot be read (it exited
 * meanwhile) is left to be adopted as a daemon.
 */
export async function observeContainerListeners(
  observation: Observation,
  proc = "/proc",
): Promise<Map<string, number[]>> {
  const ids = observation.containers.map((c) => c.id);
  const found = new Map<string, number[]>();
  if (ids.length === 0) return found;
  for (const l of observation.listeners) {
    for (const p of l.processes) {
      const text = await Deno.readTextFile(`${proc}/${p.pid}/cgroup`).catch(() => "");
      const id = containerOfCgroup(text, ids);
      if (id === undefined) continue;
      const ports = found.get(id) ?? [];
      if (!ports.includes(l.port)) ports.push(l.port);
      found.set(id, ports);
      break;
    }
  }
  return found;
}

/**
 * Writes the registry text that makes `observation` clean: one `service` per running
 * container (with its published ports, and those its processes listen on, when given), one `daemon` per process holding other listening
 * ports, one `site` per served address (with `redirect` where it redirects).
 *
 * @throws {Error} when the observation has a failed source: adopting half a machine would
 *   write a registry that calls the other half rogue.
 *
 * @example A starting registry for a machine running one container and sshd
 * ```ts
 * import { adoptRegistry, type Observation, parseRegistry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const observation: Observation = {
 *   time: "2026-12-06T12:00:00.000Z",
 *   containers: [{
 *     account: "root",
 *     runtime: "podman",
 *     name: "shop",
 *     id: "4f1c0d2e",
 *     image: "localhost/shop:1.4",
 *     labels: {},
 *     ports: [{ hostIp: "", hostPort: 8080, containerPort: 80, protocol: "tcp" }],
 *   }],
 *   listeners: [{
 *     family: 4,
 *     address: "0.0.0.0",
 *     port: 22,
 *     uid: 0,
 *     user: "root",
 *     inode: 18211,
 *     processes: [{ pid: 712, command: "sshd", uid: 0, user: "root" }],
 *   }],
 *   addresses: [],
 *   probes: [],
 *   sources: [
 *     {
 *       source: "podman",
 *       account: "root",
 *       state: "observed",
 *       method: "podman ps --all --format json",
 *       detail: "1 running",
 *     },
 *     {
 *       source: "sockets",
 *       state: "observed",
 *       method: "read /proc/net/tcp",
 *       detail: "1 listening",
 *     },
 *     {
 *       source: "caddy",
 *       state: "absent",
 *       method: "--caddy-admin none",
 *       detail: "this machine runs no reverse proxy",
 *     },
 *   ],
 * };
 * const text = adoptRegistry(observation, { accounts: ["root"], hostname: "web1" });
 * assert.match(text, /^# Registry adopted from web1 at 2026-12-06T12:00:00.000Z/);
 * assert.deepEqual(parseRegistry(text).services, {
 *   shop: { kind: "service", user: "root", container: "shop", port: [8080], note: "adopted" },
 *   sshd: { kind: "daemon", user: "root", port: [22], note: "adopted" },
 * });
 * ```
 */
export function adoptRegistry(observation: Observation, options: AdoptOptions): string {
  const failed = observation.sources.filter((s) => s.state === "failed");
  if (failed.length > 0) {
    throw new Error(
      `Cannot adopt this machine: could not observe ${
        failed.map((s) => `${s.account ? `${s.source}@${s.account}` : s.source} (${s.detail})`)
          .join("; ")
      }`,
    );
  }
  const names = new Set<string>();
  const unique = (wanted: string) => {
    const base = wanted.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[^A-Za-z0-9]+/, "") || "entry";
    let name = base;
    for (let i = 2; names.has(name); i++) name = `${base}-${i}`;
    names.add(name);
    return name;
  };
  const services: Record<string, Record<string, unknown>> = {};
  const claimed = new Set<number>();
  for (const c of [...observation.containers].sort((a, b) => compareNames(a.name, b.name))) {
    const ports = [
      ...new Set([
        ...c.ports.filter((p) => p.protocol === "tcp").map((p) => p.hostPort),
        ...(options.containerListeners?.get(c.id) ?? []),
      ]),
    ].filter((p) => !claimed.has(p)).sort((a, b) => a - b);
    ports.forEach((p) => claimed.add(p));
    services[unique(c.name)] = {
      kind: "service",
      user: c.account,
      container: c.name,
      ...(ports.length > 0 ? { port: ports.length === 1 ? ports[0] : ports } : {}),
      note: ADOPTED,
    };
  }
  const daemons = new Map<string, { user: string; account?: string; ports: Set<number> }>();
  for (const l of [...observation.listeners].sort((a, b) => a.port - b.port)) {
    if (claimed.has(l.port)) continue;
    const command = l.processes[0]?.command;
    // The account its process runs as, as `run` compares a daemon's user: the socket's owner
    // when a holder runs as it (a root master with workers), else the first holder's.
    const holders = l.processes.map((p) => p.user);
    const account = l.processes.length === 0 || holders.includes(l.user)
      ? l.user
      : holders.find((u) => u !== undefined);
    // A uid with no account name groups its sockets here, and is never written as a user: `run`
    // compares a user by its account, and `uid-105` names none.
    const user = account ?? `uid-${l.uid}`;
    const key = command ? `${command}\0${user}` : `port-${l.port}\0${user}`;
    const d = daemons.get(key) ??
      { user, ...(account !== undefined ? { account } : {}), ports: new Set<number>() };
    d.ports.add(l.port);
    daemons.set(key, d);
    claimed.add(l.port);
  }
  for (const [key, d] of daemons) {
    const ports = [...d.ports];
    services[unique(key.split("\0")[0]!)] = {
      kind: "daemon",
      ...(d.account !== undefined && /^[a-z_][a-z0-9_-]*\$?$/.test(d.account)
        ? { user: d.account }
        : {}),
      port: ports.length === 1 ? ports[0] : ports,
      note: key.startsWith("port-") ? `${ADOPTED}; no process was found holding it` : ADOPTED,
    };
  }
  const hosts = [...new Set(observation.addresses.map((a) => a.host))].sort();
  for (const host of hosts) {
    const probe = observation.probes.find((p) => p.host === host);
    const address = observation.addresses.find((a) => a.host === host)!;
    let redirect: string | undefined;
    if (
      probe && probe.error === undefined && probe.status !== undefined && probe.status >= 300 &&
      probe.status < 400 && probe.location !== undefined
    ) {
      redirect = new URL(probe.location, `${address.tls ? "https" : "http"}://${host}/`).href;
    }
    services[unique(host === ANY_HOST ? "catch-all" : host)] = {
      kind: "site",
      web: host,
      ...(redirect !== undefined ? { redirect } : {}),
      note: redirect !== undefined
        ? `${ADOPTED}; only redirects, and stays declared: a served redirect no entry declares is rogue`
        : ADOPTED,
    };
  }
  const doc = new Document({ version: 1, accounts: options.accounts, services });
  doc.commentBefore = [
    ` Registry adopted from ${
      options.hostname ?? "this machine"
    } at ${observation.time} by mesh-reconcile init.`,
    ` Every entry says "note: adopted": read each one, write why it exists, and stop and remove`,
    ` what should not be here. This file is the machine's port table; keep it outside any code`,
    ` checkout (a deployment may overwrite a checkout).`,
  ].join("\n");
  const text = doc.toString({ lineWidth: 0 });
  parseRegistry(text, "<adopted registry>"); // what adoption writes must be a valid registry
  return text;
}
