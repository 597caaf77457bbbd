/**
 * The platform of this machine, detected **once per process** by this one module, with the
 * evidence: which service manager runs it and which container runtime answers. The appliers
 * (service, container, action `in`) and `mesh-host inventory` all ask here, so they cannot
 * disagree (the builder asks lib/container_runtime.ts, this module's source for the runtime).
 *
 * - Service manager: lib/init_system.ts's one rule, which mesh-reconcile reads too (systemd by
 *   sd_booted(3), OpenRC by its softlevel file).
 * - Container runtime: lib/container_runtime.ts's one detection, which the builder asks too
 *   (docker or podman, whichever answers; docker when both do).
 *
 * An answer is kept for the process; a detection that failed (could not look, or no runtime
 * answered) is not kept, so a runtime installed later in the same process is found.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import {
  containerRuntime as detectContainerRuntime,
  NoContainerRuntimeError,
  type Runtime,
  runtimeProbeCount,
} from "../lib/container_runtime.ts";
import { ResourceError } from "./applier.ts";
import { InitDetectionError, type ManagerDetection, serviceManagerAt } from "../lib/init_system.ts";

export type { ManagerDetection, ServiceManager } from "../lib/init_system.ts";
export { PROBE_TIMEOUT_MS, type Runtime } from "../lib/container_runtime.ts";

const probed = { service: 0 };

/**
 * Detects which service manager runs the machine whose root is `root` (tests point it at a
 * directory), by lib/init_system.ts's one rule. Does not cache: {@linkcode serviceManager} asks
 * once per process.
 *
 * @throws {ResourceError} when a path can be neither read nor found missing.
 */
export function detectServiceManager(root = "/"): Promise<ManagerDetection> {
  probed.service++;
  try {
    return Promise.resolve(serviceManagerAt(root));
  } catch (error) {
    if (error instanceof InitDetectionError) {
      return Promise.reject(new ResourceError(error.message, { cause: error }));
    }
    throw error;
  }
}

let managerDetection: Promise<ManagerDetection> | undefined;

/** The manager of this machine, detected once per process. */
export function serviceManager(): Promise<ManagerDetection> {
  managerDetection ??= detectServiceManager().catch((error) => {
    managerDetection = undefined; // a detection that could not look is not kept
    throw error;
  });
  return managerDetection;
}

/**
 * The container runtime of this machine, detected once per process by lib/container_runtime.ts
 * (the builder asks there too; a failed detection is not kept).
 *
 * @throws {ResourceError} when neither docker nor podman answers, naming both and what each said.
 */
export function containerRuntime(): Promise<Runtime> {
  return detectContainerRuntime().catch((error) => {
    throw error instanceof NoContainerRuntimeError
      ? new ResourceError(error.message, { cause: error })
      : error;
  });
}

/** How many times this process probed each part of the platform (tests: "detected once"). */
export function probeCounts(): Readonly<{ service: number; containers: number }> {
  return { service: probed.service, containers: runtimeProbeCount() };
}

/** The platform: what the appliers, `inventory` and the builder use, with the evidence. */
export interface Platform {
  service: ManagerDetection;
  containers:
    | { runtime: Runtime; reason: string }
    | { runtime: undefined; reason: string };
}

/**
 * The platform of this machine: the one answer of this process (see the module's text).
 *
 * @throws {ResourceError} when the service manager cannot be looked for at all (a path that
 *   cannot be read); no container runtime answering is an answer, not an error.
 */
export async function detectPlatform(): Promise<Platform> {
  const [service, containers] = await Promise.all([
    serviceManager(),
    containerRuntime().then(
      (runtime) => ({ runtime, reason: runtime.why }),
      (error) => ({ runtime: undefined, reason: messageOf(error) }),
    ),
  ]);
  return { service, containers };
}

/** The platform for people: one line each, the answer and its evidence. */
export function formatPlatform(platform: Platform): string {
  const c = platform.containers;
  return `service manager   ${platform.service.manager ?? "none"}: ${platform.service.reason}\n` +
    `container runtime ${
      c.runtime ? `${c.runtime.program} ${c.runtime.version}` : "none"
    }: ${c.reason}\n`;
}
