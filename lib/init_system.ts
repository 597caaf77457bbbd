/**
 * Which init booted this machine, by the tests the managers themselves use: the one rule every
 * program reads (mesh-host's service applier and inventory through host/platform.ts,
 * mesh-reconcile's timer and boot observers and its batch commands).
 *
 * - systemd: `/run/systemd/system` is a directory (sd_booted(3): "checks whether the directory
 *   /run/systemd/system/ exists"; systemd creates it at boot, so a systemctl binary on disk or a
 *   systemd installed but not running does not pass).
 * - OpenRC: `/run/openrc/softlevel` exists (openrc-run.sh refuses to run a service without it:
 *   "You are attempting to run an openrc service on a system which openrc did not boot"; the
 *   directory `/run/openrc` alone proves nothing, since a plain `rc-status` creates it).
 *
 * systemd is asked first, as sd_booted is the stronger test. `root` prefixes both paths (tests
 * point it at a directory). Reads the file system (one `stat` each); never writes.
 *
 * @module
 */

import { messageOf } from "./atomic.ts";

/** The service managers mesh drives. */
export type ServiceManager = "systemd" | "openrc";

/** Whether one init booted this machine, and how that was found. */
export interface Booted {
  booted: boolean;
  /** Why, in one sentence. */
  reason: string;
  /** How it was asked (for a source's `method`): `stat PATH`. */
  method: string;
}

/** Which manager runs the machine, and the evidence. */
export interface ManagerDetection {
  /** Undefined when neither runs. */
  manager: ServiceManager | undefined;
  /** What was found, in words. */
  reason: string;
}

/** A path that could not be looked at (not missing: permission denied, an I/O error). */
export class InitDetectionError extends Error {
  override name = "InitDetectionError";
}

type Kind = "directory" | "other" | "absent";

/** @throws {InitDetectionError} when `path` can be neither read nor found missing. */
function kindAt(path: string): Kind {
  try {
    return Deno.statSync(path).isDirectory ? "directory" : "other";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return "absent";
    }
    throw new InitDetectionError(
      `Cannot tell which init booted this machine: ${path}: ${messageOf(error)}`,
    );
  }
}

/** `/run/systemd/system` under `root`. */
function systemdPath(root: string): string {
  return `${root.replace(/\/+$/, "")}/run/systemd/system`;
}

/** `/run/openrc/softlevel` under `root`. */
function softlevelPath(root: string): string {
  return `${root.replace(/\/+$/, "")}/run/openrc/softlevel`;
}

/**
 * Whether the init that `test` recognises booted the machine, by a look at `path`: a path that
 * cannot be looked at counts as not booted, its error said in the reason (an observer reports
 * what it could not read).
 */
function bootedBy(path: string, test: (kind: Kind) => { booted: boolean; reason: string }): Booted {
  const method = `stat ${path}`;
  try {
    return { ...test(kindAt(path)), method };
  } catch (error) {
    return { booted: false, reason: messageOf(error), method };
  }
}

/** sd_booted(3): whether systemd booted the machine. */
export function sdBooted(root = ""): Booted {
  const path = systemdPath(root);
  return bootedBy(
    path,
    (kind) =>
      kind === "directory" ? { booted: true, reason: `${path} is a directory (sd_booted(3))` } : {
        booted: false,
        reason: `this machine is not booted with systemd: ${path} ${
          kind === "absent" ? "does not exist" : "is not a directory"
        } (sd_booted(3))`,
      },
  );
}

/** Whether OpenRC booted the machine: its `softlevel` file exists. */
export function openrcBooted(root = ""): Booted {
  const path = softlevelPath(root);
  return bootedBy(
    path,
    (kind) =>
      kind === "absent"
        ? { booted: false, reason: `${path} does not exist: OpenRC did not boot this machine` }
        : { booted: true, reason: `${path} exists: OpenRC booted this machine` },
  );
}

/**
 * Which service manager runs the machine whose root is `root`: systemd (sd_booted), else OpenRC
 * (its softlevel), else none, with the evidence. Does not cache (host/platform.ts asks once per
 * process).
 *
 * @throws {InitDetectionError} when a path can be neither read nor found missing: a manager is
 *   never guessed.
 */
export function serviceManagerAt(root = "/"): ManagerDetection {
  const systemd = systemdPath(root);
  const softlevel = softlevelPath(root);
  const sd = kindAt(systemd);
  if (sd === "directory") {
    return { manager: "systemd", reason: `${systemd} is a directory: systemd booted this machine` };
  }
  if (kindAt(softlevel) !== "absent") {
    return { manager: "openrc", reason: `${softlevel} exists: OpenRC booted this machine` };
  }
  return {
    manager: undefined,
    reason:
      `Neither systemd nor OpenRC runs this machine: ${systemd} is ${
        sd === "absent" ? "absent" : "not a directory"
      } (systemd's own test, sd_booted) and ${softlevel} does not exist (OpenRC's own test of ` +
      `having booted), so no service can be applied`,
  };
}
