/**
 * The system contract: what a system is (its name, how it is recognised, its appliers and what it
 * refuses), what a host entry point passes in, and the one check, at start, that the machine is
 * the system this host was built for. A host is pinned to one system by which entry point was
 * built (`systems/<system>/main.ts`, which imports its own `systems/<system>/mod.ts`); the system
 * is detected once at start and passed in, never re-guessed. systems/ holds each system (what
 * differs, and its entry point) and imports this; host/ never imports systems/.
 *
 * @module
 */

import type { Appliers } from "./applier.ts";
import type { ResourceType } from "../lib/declaration.ts";
import type { SystemName } from "../lib/system_names.ts";

export { SYSTEM_NAMES, type SystemName } from "../lib/system_names.ts";

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

/**
 * A system named now and loaded when a command runs: its appliers are not loaded for the
 * program's help.
 */
export interface LazySystem {
  name: SystemName;
  /** Loads the system (a dynamic `import()` of a static specifier, so a bundle carries it). */
  load: () => Promise<System>;
}

/** What a host entry point passes in. */
export interface HostBuild {
  /** The system this host was built for, or how to load it. */
  system: System | LazySystem;
  /** The embedded bundle's text, when this host carries one. */
  bundle?: string;
  /** Where /etc/os-release is read (tests only point this elsewhere). */
  osRelease?: string;
}

/** A host build with its system loaded: what the commands are given. */
export type LoadedBuild = HostBuild & { system: System };
