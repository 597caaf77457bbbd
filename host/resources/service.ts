/**
 * `service`: delegates to the applier of the service manager that runs this machine, detected
 * once per process by the tests the managers themselves use:
 *
 * - systemd: `/run/systemd/system` is a directory (sd_booted(3): "checks whether the directory
 *   /run/systemd/system/ exists"); systemd creates it at boot, so a systemctl binary on disk or a
 *   systemd installed but not running does not pass;
 * - OpenRC: `/run/openrc/softlevel` exists (openrc-run.sh refuses to run a service without it:
 *   "You are attempting to run an openrc service on a system which openrc did not boot"; the
 *   directory alone proves nothing, since a plain `rc-status` creates it).
 *
 * systemd is asked first, as sd_booted is the stronger test. When neither passes, every service
 * resource fails saying so and naming both tests; removal needs no manager (a service leaving
 * the declaration is always "forgotten").
 *
 * @module
 */

import { join } from "node:path";
import { messageOf } from "../../lib/atomic.ts";
import { type Applier, ResourceError } from "../applier.ts";
import { type ServiceResource, systemdServiceApplier, type UnitState } from "./service_systemd.ts";
import { type OpenrcObserved, openrcServiceApplier } from "./service_openrc.ts";

export type { ServiceResource } from "./service_systemd.ts";

/** The service managers a host can drive. */
export type ServiceManager = "systemd" | "openrc";

/** Which manager runs the machine, and the evidence. */
export interface ManagerDetection {
  /** Undefined when neither runs. */
  manager: ServiceManager | undefined;
  /** What was found, in words. */
  reason: string;
}

async function kindAt(path: string): Promise<"directory" | "other" | "absent"> {
  try {
    return (await Deno.stat(path)).isDirectory ? "directory" : "other";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return "absent";
    }
    throw new ResourceError(`Cannot tell which service manager runs: ${path}: ${messageOf(error)}`);
  }
}

/**
 * Detects which service manager runs the machine whose root is `root` (tests point it at a
 * directory). Does not cache: {@linkcode serviceApplier} asks once per process.
 */
export async function detectServiceManager(root = "/"): Promise<ManagerDetection> {
  const systemd = join(root, "run/systemd/system");
  const softlevel = join(root, "run/openrc/softlevel");
  const sd = await kindAt(systemd);
  if (sd === "directory") {
    return { manager: "systemd", reason: `${systemd} is a directory: systemd booted this machine` };
  }
  const rc = await kindAt(softlevel);
  if (rc !== "absent") {
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

let detection: Promise<ManagerDetection> | undefined;

/** The manager of this machine, detected once per process. */
export function serviceManager(): Promise<ManagerDetection> {
  detection ??= detectServiceManager().catch((error) => {
    detection = undefined; // a detection that could not look is not kept
    throw error;
  });
  return detection;
}

/** What the delegate observed, and which delegate it was. */
export type ServiceObserved =
  | { manager: "systemd"; observed: UnitState }
  | { manager: "openrc"; observed: OpenrcObserved };

async function managerOrFail(): Promise<ServiceManager> {
  const found = await serviceManager();
  if (found.manager === undefined) throw new ResourceError(found.reason);
  return found.manager;
}

/** The `service` applier: systemd or OpenRC, whichever runs this machine. */
export const serviceApplier: Applier<ServiceResource, ServiceObserved> = {
  async observe(resource, context) {
    const manager = await managerOrFail();
    return manager === "systemd"
      ? { manager, observed: await systemdServiceApplier.observe(resource, context) }
      : { manager, observed: await openrcServiceApplier.observe(resource, context) };
  },
  async apply(resource, observed, context) {
    return observed.manager === "systemd"
      ? await systemdServiceApplier.apply(resource, observed.observed, context)
      : await openrcServiceApplier.apply(resource, observed.observed, context);
  },
  remove() {
    // Both managers leave a service leaving the declaration as it is: "forgotten", never
    // "removed" (its unit file or init script, if this host wrote it, is a file resource).
    return Promise.resolve("forgotten");
  },
};
