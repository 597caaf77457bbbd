/**
 * The platform of this machine, detected **once per process** by this one module, with the
 * evidence: which service manager runs it and which container runtime answers. The appliers
 * (service, container, action `in`), `mesh-host inventory` and the builder all ask here, so they
 * cannot disagree.
 *
 * - Service manager: lib/init_system.ts's one rule, which mesh-reconcile reads too (systemd by
 *   sd_booted(3), OpenRC by its softlevel file).
 * - Container runtime, by asking each one something only a working runtime can answer:
 *   `docker info --format '{{.ServerVersion}}'` and `podman info --format '{{.Version.Version}}'`
 *   (one probe cannot find both: podman has no `ServerVersion`). When both answer, docker is
 *   used: its daemon brings the host's `always` containers back at boot by itself, where podman
 *   needs `podman-restart.service` enabled.
 *
 * An answer is kept for the process; a detection that failed (could not look, or no runtime
 * answered) is not kept, so a runtime installed later in the same process is found.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import { CommandError, run } from "../lib/command.ts";
import { ResourceError } from "./applier.ts";
import { InitDetectionError, type ManagerDetection, serviceManagerAt } from "../lib/init_system.ts";

export type { ManagerDetection, ServiceManager } from "../lib/init_system.ts";

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

/** How long a runtime probe may take before it counts as not answering. */
export const PROBE_TIMEOUT_MS = 30_000;
/** The container runtime this process uses. */
export interface Runtime {
  /** The program: `docker` or `podman`. */
  program: "docker" | "podman";
  /** The version it answered with. */
  version: string;
  /** Why this one: what each probe said. */
  why: string;
}

const PROBES: { program: Runtime["program"]; argv: string[] }[] = [
  { program: "docker", argv: ["docker", "info", "--format", "{{.ServerVersion}}"] },
  { program: "podman", argv: ["podman", "info", "--format", "{{.Version.Version}}"] },
];

let runtimeDetection: Promise<Runtime> | undefined;

/**
 * The container runtime of this machine, detected once per process (a failed detection is not
 * kept: the next call asks again).
 *
 * @throws {ResourceError} when neither docker nor podman answers, naming both and what each said.
 */
export function containerRuntime(): Promise<Runtime> {
  runtimeDetection ??= detectRuntime().catch((error) => {
    runtimeDetection = undefined;
    throw error;
  });
  return runtimeDetection;
}

async function detectRuntime(): Promise<Runtime> {
  probed.containers++;
  const said = await Promise.all(PROBES.map(async (probe) => {
    try {
      const out = await run(probe.argv, { allowFailure: true, timeoutMs: PROBE_TIMEOUT_MS });
      const text = out.stdout.trim();
      // Read what it says: exit 0 with something that is not a version is not an answer.
      if (out.code === 0 && /^\d+(\.\d+)*([-+~.][\w.+~-]*)?$/.test(text)) {
        return { program: probe.program, version: text, answered: true as const };
      }
      const why = out.code === 0
        ? `answered ${JSON.stringify(text.slice(0, 200))}, which is not a version`
        : new CommandError(out.argv, out).message;
      return { program: probe.program, said: why, answered: false as const };
    } catch (error) {
      return { program: probe.program, said: messageOf(error), answered: false as const };
    }
  }));
  const answered = said.filter((s) => s.answered);
  const first = answered[0];
  if (first === undefined) {
    throw new ResourceError(
      `No container runtime answers: ${
        said.map((s) => `${s.program}: ${s.answered ? s.version : s.said}`).join("; ")
      }`,
    );
  }
  const others = said.filter((s) => s !== first).map((s) =>
    s.answered
      ? `${s.program} ${s.version} answered too; docker is preferred because its daemon brings ` +
        `containers with restart policy always back at boot by itself, where podman needs ` +
        `podman-restart.service enabled`
      : `${s.program} did not answer (${s.said})`
  );
  return {
    program: first.program,
    version: first.version,
    why: [`${first.program} ${first.version} answered`, ...others].join("; "),
  };
}

const probed = { service: 0, containers: 0 };

/** How many times this process probed each part of the platform (tests: "detected once"). */
export function probeCounts(): Readonly<{ service: number; containers: number }> {
  return { ...probed };
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
