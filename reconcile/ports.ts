/**
 * The port table: the registry is it. `port next` finds the lowest port in a range that no
 * entry claims and nothing uses: no listening TCP socket, IPv4 or IPv6 (`/proc/net/tcp`,
 * `/proc/net/tcp6`, through the sockets observer), and no port a container publishes in one of
 * the registry's accounts (a published port may have no socket holding it when the runtime
 * forwards it with firewall rules). UDP is not considered: the registry's ports are TCP.
 *
 * @module
 */

import { readAccounts } from "../lib/accounts.ts";
import { messageOf } from "../lib/atomic.ts";
import type { Registry } from "./registry.ts";
import { observeContainers } from "./observe/containers.ts";
import { observeSockets } from "./observe/sockets.ts";
import type { SourceStatus } from "./observe/source.ts";

/** The range `port next` searches when none is given: 8000-8999. */
export const DEFAULT_PORT_RANGE = { first: 8000, last: 8999 } as const;

/** An inclusive range of TCP ports. */
export interface PortRange {
  first: number;
  last: number;
}

/**
 * Reads `A-B` (inclusive; `A <= B`; both 1-65535).
 *
 * @throws {Error} naming the text and what is wrong with it.
 */
export function parsePortRange(text: string): PortRange {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text.trim());
  if (!m) throw new Error(`Cannot read port range "${text}": expected A-B, e.g. 8000-8999`);
  const [first, last] = [Number(m[1]), Number(m[2])];
  if (first < 1 || last > 65535) {
    throw new Error(`Cannot read port range "${text}": ports are 1 to 65535`);
  }
  if (first > last) {
    throw new Error(`Cannot read port range "${text}": ${first} is above ${last}`);
  }
  return { first, last };
}

/** The lowest port of `range` in neither set; `undefined` when every port is taken. */
export function lowestFree(
  range: PortRange,
  taken: { claimed: ReadonlySet<number>; used: ReadonlySet<number> },
): number | undefined {
  for (let p = range.first; p <= range.last; p++) {
    if (!taken.claimed.has(p) && !taken.used.has(p)) return p;
  }
  return undefined;
}

/** What {@linkcode nextPort} found. */
export interface NextPort {
  /** The port; absent when none is free (or a source failed). */
  port?: number;
  range: PortRange;
  /** Ports of the range claimed by entries. */
  claimed: number[];
  /** Ports of the range in use (listening, or published by a container). */
  used: number[];
  sources: SourceStatus[];
}

/**
 * Finds the lowest port of `range` no entry of `registry` claims and nothing uses. Looks, and
 * changes nothing. When a source cannot be asked, no port is given (its `sources` say which):
 * a port is free only when it was seen to be.
 */
export async function nextPort(
  registry: Registry,
  options: { range?: PortRange; timeoutMs?: number } = {},
): Promise<NextPort> {
  const range = options.range ?? DEFAULT_PORT_RANGE;
  const inRange = (p: number) => p >= range.first && p <= range.last;
  const claimed = new Set(Object.values(registry.services).flatMap((e) => e.port ?? []));
  let passwd;
  try {
    passwd = await readAccounts();
  } catch (error) {
    return {
      range,
      claimed: [],
      used: [],
      sources: [{
        source: "accounts",
        state: "failed",
        method: "read /etc/passwd",
        detail: messageOf(error),
      }],
    };
  }
  const [sockets, containers] = await Promise.all([
    observeSockets({ passwd }),
    observeContainers(registry.accounts, { passwd, timeoutMs: options.timeoutMs ?? 30_000 }),
  ]);
  const used = new Set([
    ...sockets.listeners.map((l) => l.port),
    ...containers.containers.flatMap((c) =>
      c.ports.filter((p) => p.protocol === "tcp").map((p) => p.hostPort)
    ),
  ]);
  const sources = [...sockets.sources, ...containers.sources];
  const sort = (s: Set<number>) => [...s].filter(inRange).sort((a, b) => a - b);
  const out: NextPort = { range, claimed: sort(claimed), used: sort(used), sources };
  if (sources.some((s) => s.state === "failed")) return out;
  const port = lowestFree(range, { claimed, used });
  if (port !== undefined) out.port = port;
  return out;
}
