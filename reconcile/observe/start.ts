/**
 * The first step of observing, started on its own: `/etc/passwd` and each account's containers
 * (`podman ps --all --format json` per account). `mesh-reconcile run` starts it as soon as its
 * input is accepted (the arguments, the registry, the output paths), before the modules that
 * compare and render are loaded, so the first podman call, the start of the run's longest chain
 * (`podman ps`, then the boot view's `podman container inspect` of what it listed), runs while
 * they load. Nothing here asks anything the registry did not ask for: the accounts are the
 * registry's.
 *
 * @module
 */

import { type Account, readAccounts } from "../../lib/accounts.ts";
import { spawnCount } from "../../lib/command.ts";
import { type ContainerObservation, observeContainers } from "./containers.ts";

/** The per-command time limit when none is given, in milliseconds (as `observe`'s). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** An observation started by {@linkcode startObserving}, to be finished by `observe` (../run.ts). */
export interface StartedObservation {
  /** The accounts whose containers are being asked about, in the order given. */
  accounts: readonly string[];
  /** When observation started, ISO 8601. */
  time: string;
  /** How many subprocesses this process had spawned before (lib/command.ts `spawnCount`). */
  spawnedBefore: number;
  /** The accounts of `/etc/passwd`; rejects when it cannot be read (then nothing was asked). */
  passwd: Promise<Map<string, Account>>;
  /**
   * Each account's containers ({@linkcode observeContainers}: never rejects for a runtime that
   * cannot be asked); rejects only as `passwd` does, and then nothing was asked.
   */
  containers: Promise<ContainerObservation>;
}

/** Options for {@linkcode startObserving}. */
export interface StartObservingOptions {
  /** Per-command time limit in milliseconds; default {@linkcode DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Container runtimes to ask; default podman and docker. */
  runtimes?: ("podman" | "docker")[];
}

/**
 * Reads `/etc/passwd` and starts asking each of `accounts`' container runtimes (the subprocesses
 * are spawned as soon as the caller next awaits). Never throws: a `/etc/passwd` that cannot be
 * read is a rejection of `passwd` and `containers`, which `observe` reports as the `accounts`
 * source.
 */
export function startObserving(
  accounts: readonly string[],
  options: StartObservingOptions = {},
): StartedObservation {
  const time = new Date().toISOString();
  const spawnedBefore = spawnCount();
  const passwd = readAccounts();
  // readAccounts reads synchronously and resolves at once: the runtimes are asked (spawned) in
  // the microtask that follows, before anything the caller awaits next (a module it loads).
  const containers = passwd.then((p) =>
    observeContainers([...accounts], {
      passwd: p,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      ...(options.runtimes ? { runtimes: options.runtimes } : {}),
    })
  );
  // Awaited by observe; until then a rejection must not count as unhandled.
  passwd.catch(() => {});
  containers.catch(() => {});
  return { accounts, time, spawnedBefore, passwd, containers };
}
