/**
 * Listening TCP sockets, IPv4 and IPv6, decoded from `/proc/net/tcp` and `/proc/net/tcp6`
 * (format: the kernel's `tcp4_seq_show` / `tcp6_seq_show`, documented in
 * Documentation/networking/proc_net_tcp.rst: `sl local_address rem_address st ... uid timeout
 * inode`, addresses as hex words in host byte order, port as big-endian hex, state `0A` LISTEN).
 * The owning process is found by matching the socket inode against `/proc/<pid>/fd/*` links.
 *
 * @module
 */

import type { Account } from "../../lib/accounts.ts";
import { messageOf } from "../../lib/atomic.ts";
import type { SourceStatus } from "./source.ts";

/** A process holding a socket open. */
export interface SocketProcess {
  pid: number;
  /** `/proc/<pid>/comm`. */
  command: string;
  /** Effective uid (`/proc/<pid>/status`, `Uid:` second field); absent when it exited meanwhile. */
  uid?: number;
  /** Its account name, where `/etc/passwd` has one. */
  user?: string;
}

/** One listening TCP socket. */
export interface Listener {
  family: 4 | 6;
  /** Local address as text: `0.0.0.0`, `127.0.0.1`, `::`, `::1`, ... */
  address: string;
  port: number;
  /** The socket's owner uid, and its account name where `/etc/passwd` has one. */
  uid: number;
  user?: string;
  inode: number;
  /** Processes holding it; empty when none could be found (e.g. a kernel socket). */
  processes: SocketProcess[];
}

/** What {@linkcode observeSockets} found. */
export interface SocketObservation {
  listeners: Listener[];
  sources: SourceStatus[];
}

const TCP_LISTEN = "0A";

/** Options for {@linkcode observeSockets}. */
export interface ObserveSocketsOptions {
  passwd: Map<string, Account>;
  /** Root of the proc filesystem; default `/proc`. */
  proc?: string;
}

/**
 * Reads every listening TCP socket. `/proc/net/tcp` must be readable (else the source fails);
 * `/proc/net/tcp6` missing means the kernel has no IPv6, which is said, not failed.
 */
export async function observeSockets(options: ObserveSocketsOptions): Promise<SocketObservation> {
  const proc = options.proc ?? "/proc";
  const sources: SourceStatus[] = [];
  const listeners: Listener[] = [];
  // Account names by uid, the first account of each uid (as a search of /etc/passwd finds it).
  const nameOf = new Map<number, string>();
  for (const a of options.passwd.values()) if (!nameOf.has(a.uid)) nameOf.set(a.uid, a.name);
  for (const family of [4, 6] as const) {
    const file = `${proc}/net/${family === 4 ? "tcp" : "tcp6"}`;
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (error) {
      if (family === 6 && error instanceof Deno.errors.NotFound) {
        sources.push({
          source: "sockets",
          state: "absent",
          method: `read ${file}`,
          detail: "the kernel has no IPv6 (no tcp6 table)",
        });
        continue;
      }
      sources.push({
        source: "sockets",
        state: "failed",
        method: `read ${file}`,
        detail: `Cannot read "${file}": ${messageOf(error)}`,
      });
      return { listeners: [], sources };
    }
    let found: Listener[];
    try {
      found = parseProcNetTcp(text, family);
    } catch (error) {
      sources.push({
        source: "sockets",
        state: "failed",
        method: `read ${file}`,
        detail: messageOf(error),
      });
      return { listeners: [], sources };
    }
    for (const l of found) {
      const user = nameOf.get(l.uid);
      if (user !== undefined) l.user = user;
    }
    listeners.push(...found);
    sources.push({
      source: "sockets",
      state: "observed",
      method: `read ${file}`,
      detail: `${found.length} listening`,
    });
  }
  const owners = socketOwners(proc, new Set(listeners.map((l) => l.inode)));
  for (const l of listeners) {
    l.processes = owners.get(l.inode) ?? [];
    for (const p of l.processes) {
      const user = p.uid === undefined ? undefined : nameOf.get(p.uid);
      if (user !== undefined) p.user = user;
    }
  }
  return { listeners, sources };
}

/**
 * Parses the text of `/proc/net/tcp` (family 4) or `/proc/net/tcp6` (family 6) and returns the
 * sockets in state LISTEN (without owners).
 *
 * @throws {Error} when a line is not of the kernel's format.
 */
export function parseProcNetTcp(text: string, family: 4 | 6): Listener[] {
  const lines = text.split("\n");
  if (!/^\s*sl\s+local_address/.test(lines[0] ?? "")) {
    throw new Error(
      `Cannot read the tcp${family === 6 ? "6" : ""} table: unexpected header "${lines[0]}"`,
    );
  }
  const out: Listener[] = [];
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    const f = line.trim().split(/\s+/);
    const [local, , state] = [f[1], f[2], f[3]];
    const uid = Number(f[7]);
    const inode = Number(f[9]);
    const m = /^([0-9A-F]+):([0-9A-F]{4})$/i.exec(local ?? "");
    if (!m || state === undefined || !Number.isInteger(uid) || !Number.isInteger(inode)) {
      throw new Error(`Cannot read the tcp table: malformed line "${line.trim()}"`);
    }
    if (state.toUpperCase() !== TCP_LISTEN) continue;
    out.push({
      family,
      address: family === 4 ? decodeIPv4(m[1]!) : decodeIPv6(m[1]!),
      port: parseInt(m[2]!, 16),
      uid,
      inode,
      processes: [],
    });
  }
  return out;
}

/** `0100007F` (host byte order on little-endian machines) to `127.0.0.1`. */
function decodeIPv4(hex: string): string {
  if (hex.length !== 8) throw new Error(`Cannot read IPv4 address "${hex}"`);
  return wordBytes(hex).join(".");
}

/** 32 hex digits, four 32-bit words in host byte order, to the compressed IPv6 text form. */
function decodeIPv6(hex: string): string {
  if (hex.length !== 32) throw new Error(`Cannot read IPv6 address "${hex}"`);
  const bytes: number[] = [];
  for (let w = 0; w < 4; w++) bytes.push(...wordBytes(hex.slice(w * 8, w * 8 + 8)));
  // IPv4-mapped ::ffff:a.b.c.d
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 255 && bytes[11] === 255) {
    return `::ffff:${bytes.slice(12).join(".")}`;
  }
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // Compress the longest run of zero groups (RFC 5952).
  let best = -1, bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hexes = groups.map((g) => g.toString(16));
  if (best < 0) return hexes.join(":");
  return `${hexes.slice(0, best).join(":")}::${hexes.slice(best + bestLen).join(":")}`;
}

/** A 32-bit word printed by the kernel in host byte order: reverse for little-endian. */
function wordBytes(word: string): number[] {
  const bytes = [0, 2, 4, 6].map((i) => parseInt(word.slice(i, i + 2), 16));
  return LITTLE_ENDIAN ? bytes.reverse() : bytes;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The effective uid of `pid` from `/proc/<pid>/status` (`Uid: real effective saved fs`). */
function effectiveUid(proc: string, pid: number): number | undefined {
  let text = "";
  try {
    text = Deno.readTextFileSync(`${proc}/${pid}/status`);
  } catch { /* exited meanwhile */ }
  const m = /^Uid:\s+\d+\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * Maps socket inodes to the processes holding them, by reading `/proc/<pid>/fd` links.
 *
 * Synchronously, on purpose: a busy machine has thousands of fds, and one asynchronous call per
 * link costs a round trip through Deno's blocking-call thread pool each (300-900 ms for ~2,500
 * links on 2 loaded cores, against 50-110 ms read in line). The links are in procfs, which
 * answers from memory; the subprocesses started before this runs (`podman ps`) go on meanwhile.
 */
function socketOwners(proc: string, inodes: Set<number>): Map<number, SocketProcess[]> {
  const owners = new Map<number, SocketProcess[]>();
  if (inodes.size === 0) return owners;
  const pids: number[] = [];
  for (const entry of Deno.readDirSync(proc)) {
    if (/^\d+$/.test(entry.name)) pids.push(Number(entry.name));
  }
  for (const pid of pids) {
    let command: string | undefined;
    let uid: number | undefined;
    try {
      for (const fd of Deno.readDirSync(`${proc}/${pid}/fd`)) {
        let target: string;
        try {
          target = Deno.readLinkSync(`${proc}/${pid}/fd/${fd.name}`);
        } catch (error) {
          // Refused: the kernel decides per process (ptrace access), so every other link of
          // this process would be refused too; not asked (each refusal is an error to build:
          // a process with hundreds of fds cost ~20 ms of CPU on the bench VM).
          if (error instanceof Deno.errors.PermissionDenied) break;
          continue; // closed meanwhile
        }
        // `socket:[INODE]`: a regular expression only for the links naming a listener's inode
        // (a few hundred of the thousands read).
        if (!target.startsWith("socket:[") || !target.endsWith("]")) continue;
        const digits = target.slice(8, -1);
        const inode = Number(digits);
        if (!inodes.has(inode) || !/^\d+$/.test(digits)) continue;
        if (command === undefined) {
          try {
            command = Deno.readTextFileSync(`${proc}/${pid}/comm`).trim();
          } catch {
            command = "?";
          }
        }
        uid ??= effectiveUid(proc, pid);
        const list = owners.get(inode) ?? [];
        if (!list.some((p) => p.pid === pid)) {
          list.push({ pid, command, ...(uid !== undefined ? { uid } : {}) });
        }
        owners.set(inode, list);
      }
    } catch {
      // The process exited while we looked, or its fds are not ours to read.
    }
  }
  return owners;
}
