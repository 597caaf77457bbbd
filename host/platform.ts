/**
 * The platform of this machine, detected **once per process** by this one module, with the
 * evidence: which service manager runs it and which container runtime answers. The appliers
 * (service, container, action `in`), `mesh-host inventory` and the builder all ask here, so they
 * cannot disagree.
 *
 * - Service manager, by the tests the managers themselves use: systemd when
 *   `/run/systemd/system` is a directory (sd_booted(3): "checks whether the directory
 *   /run/systemd/system/ exists"; systemd creates it at boot, so a systemctl binary on disk or a
 *   systemd installed but not running does not pass); OpenRC when `/run/openrc/softlevel` exists
 *   (openrc-run.sh refuses to run a service without it: "You are attempting to run an openrc
 *   service on a system which openrc did not boot"; the directory alone proves nothing, since a
 *   plain `rc-status` creates it). systemd is asked first, as sd_booted is the stronger test.
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

import { join } from "../lib/path.ts";
import { messageOf } from "../lib/atomic.ts";
import { CommandError, run } from "../lib/command.ts";
import { ResourceError } from "./applier.ts";

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
 * directory). Does not cache: {@linkcode serviceManager} asks once per process.
 */
export async function detectServiceManager(root = "/"): Promise<ManagerDetection> {
  probed.service++;
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
