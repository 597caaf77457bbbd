/**
 * Systems: what differs between the machines a host is built for, one folder each
 * (systems/<system>/mod.ts: how it is recognised, its appliers, what it refuses; beside it its
 * package applier and its host's entry point, main.ts), and here what a one-file host must know
 * of each. The contract they implement is host/system.ts; host/ never imports systems/.
 *
 * @module
 */

import type { SystemName } from "../host/system.ts";

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
