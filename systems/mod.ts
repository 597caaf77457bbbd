/**
 * Systems: what differs between the machines a host is built for. A host is pinned to one
 * system by which entry point was built (`host/<system>.ts`), through static imports; the
 * system is detected once at start and passed in, never re-guessed.
 *
 * @module
 */

import type { Appliers } from "../host/applier.ts";
import type { ResourceType } from "../host/declaration.ts";

/** The systems hosts are built for. */
export type SystemName = "debian" | "arch" | "alpine" | "android";

/** Every system a host exists for, in the order `host/main.ts` names them. */
export const SYSTEM_NAMES: readonly SystemName[] = ["arch", "alpine", "android", "debian"];

/**
 * What a one-file host (scripts/onefile.ts) must know of each system's machines: their C library
 * (a host for a system without glibc carries the glibc its Deno runtime links and starts the
 * runtime through it, scripts/carried_libc.ts; the others use the machine's own), and the POSIX
 * shell its first line names (Android has no /bin/sh: its shell is /system/bin/sh).
 */
export const SYSTEM_ONEFILE: Readonly<
  Record<SystemName, { libc: "glibc" | "musl" | "bionic"; shell: string }>
> = {
  arch: { libc: "glibc", shell: "/bin/sh" },
  alpine: { libc: "musl", shell: "/bin/sh" },
  android: { libc: "bionic", shell: "/system/bin/sh" },
  debian: { libc: "glibc", shell: "/bin/sh" },
};

/** `/etc/os-release` as read (format: os-release(5), `KEY=value` lines, values optionally quoted). */
export type OsRelease = Record<string, string>;

/** One system. */
export interface System {
  name: SystemName;
  /** Whether the machine described by `release` (undefined: no os-release) is this system. */
  matches(release: OsRelease | undefined, probe: { androidBuildProp: boolean }): boolean;
  /** The appliers this build has, by type. */
  appliers: Appliers;
  /**
   * Types this system refuses by name, with why (android, the partial host). A type that is
   * neither here nor in `appliers` is refused as not built yet.
   */
  refuses: Partial<Record<ResourceType, string>>;
}

/**
 * Parses os-release(5) text: `KEY=value` lines, values optionally in single or double quotes
 * with `\` escapes; comments and blank lines skipped.
 */
export function parseOsRelease(text: string): OsRelease {
  const out: OsRelease = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    let value = m[2]!;
    const q = value[0];
    if ((q === '"' || q === "'") && value.endsWith(q) && value.length >= 2) {
      value = value.slice(1, -1).replace(/\\(.)/g, "$1");
    }
    out[m[1]!] = value;
  }
  return out;
}

/** Describes a machine for messages: its PRETTY_NAME and ID, or that it has no os-release. */
export function describeMachine(release: OsRelease | undefined, androidBuildProp: boolean): string {
  if (release === undefined) {
    return androidBuildProp
      ? "Android (no /etc/os-release, /system/build.prop present)"
      : "a machine with no /etc/os-release";
  }
  return `${release.PRETTY_NAME ?? release.NAME ?? "an unnamed system"} (ID=${release.ID ?? "?"})`;
}

/** A host started on a machine other than the one it was built for. */
export class WrongSystemError extends Error {
  constructor(system: SystemName, machine: string) {
    super(`This machine is ${machine}, not ${system}: mesh-host-${system} refuses to run here`);
    this.name = "WrongSystemError";
  }
}

/**
 * Confirms, once, that the machine is the system this host was built for.
 *
 * @throws {WrongSystemError} naming both.
 */
export function confirmSystem(
  system: System,
  options: { osRelease?: string; androidBuildProp?: string } = {},
): Promise<void> {
  // Synchronous underneath: two small local files, and no thread of the pool taken for them.
  try {
    confirmSystemSync(system, options);
    return Promise.resolve();
  } catch (error) {
    return Promise.reject(error);
  }
}

function confirmSystemSync(
  system: System,
  options: { osRelease?: string; androidBuildProp?: string },
): void {
  let release: OsRelease | undefined;
  for (
    const path of options.osRelease
      ? [options.osRelease]
      : ["/etc/os-release", "/usr/lib/os-release"]
  ) {
    try {
      release = parseOsRelease(Deno.readTextFileSync(path));
      break;
    } catch { /* next */ }
  }
  let androidBuildProp = false;
  try {
    Deno.statSync(options.androidBuildProp ?? "/system/build.prop");
    androidBuildProp = true;
  } catch { /* not Android */ }
  if (!system.matches(release, { androidBuildProp })) {
    throw new WrongSystemError(system.name, describeMachine(release, androidBuildProp));
  }
}
