/**
 * `service`: delegates to the applier of the service manager that runs this machine, detected
 * once per process by host/platform.ts with lib/init_system.ts's rule (systemd by sd_booted(3),
 * OpenRC by its softlevel file).
 *
 * systemd is asked first, as sd_booted is the stronger test. When neither passes, every service
 * resource fails saying so and naming both tests; removal needs no manager (a service leaving
 * the declaration is always "forgotten"). Only the detected manager's applier is loaded.
 *
 * @module
 */

import { type Applier, ResourceError } from "../../host/applier.ts";
import type { ServiceResource, SystemdPlan, UnitState } from "./systemd.ts";
import type { OpenrcObserved, OpenrcPlan } from "./openrc.ts";

export type { ServiceResource } from "./systemd.ts";

export {
  detectServiceManager,
  type ManagerDetection,
  type ServiceManager,
  serviceManager,
} from "../../host/platform.ts";
import { serviceManager } from "../../host/platform.ts";
import type { ServiceManager } from "../../host/platform.ts";

/** What the delegate observed, and which delegate it was. */
export type ServiceObserved =
  | { manager: "systemd"; observed: UnitState }
  | { manager: "openrc"; observed: OpenrcObserved };

async function managerOrFail(): Promise<ServiceManager> {
  const found = await serviceManager();
  if (found.manager === undefined) throw new ResourceError(found.reason);
  return found.manager;
}

/** The systemd applier, loaded when systemd runs this machine. */
async function systemd() {
  return (await import("./systemd.ts")).systemdServiceApplier;
}

/** The OpenRC applier, loaded when OpenRC runs this machine. */
async function openrc() {
  return (await import("./openrc.ts")).openrcServiceApplier;
}

/** What the delegate planned, and which delegate it was. */
export type ServicePlan =
  | (SystemdPlan & { manager: "systemd" })
  | (OpenrcPlan & { manager: "openrc" });

/** The `service` applier: systemd or OpenRC, whichever runs this machine. */
export const serviceApplier: Applier<ServiceResource, ServiceObserved, ServicePlan> = {
  async observe(resource, context) {
    const manager = await managerOrFail();
    return manager === "systemd"
      ? { manager, observed: await (await systemd()).observe(resource, context) }
      : { manager, observed: await (await openrc()).observe(resource, context) };
  },
  async plan(resource, observed, context): Promise<ServicePlan> {
    return observed.manager === "systemd"
      ? {
        manager: "systemd",
        ...await (await systemd()).plan(resource, observed.observed, context),
      }
      : {
        manager: "openrc",
        ...await (await openrc()).plan(resource, observed.observed, context),
      };
  },
  async act(resource, plan, context) {
    return plan.manager === "systemd"
      ? await (await systemd()).act(resource, plan, context)
      : await (await openrc()).act(resource, plan, context);
  },
  // No planRemoval: leaving the declaration, it is forgotten. Both managers leave a service leaving
  // the declaration as it is: "forgotten", never "removed" (its unit file or init script, if this
  // host wrote it, is a file resource).
};
