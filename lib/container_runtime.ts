/**
 * The container runtime of this machine, detected **once per process**, by asking each one
 * something only a working runtime can answer: `docker info --format '{{.ServerVersion}}'` and
 * `podman info --format '{{.Version.Version}}'` (one probe cannot find both: podman has no
 * `ServerVersion`). When both answer, docker is used: its daemon brings the host's `always`
 * containers back at boot by itself, where podman needs `podman-restart.service` enabled.
 *
 * The host (host/platform.ts: its appliers and `mesh-host inventory`) and the builder both ask
 * here, so they cannot disagree. An answer is kept for the process; a detection that failed
 * (could not look, or no runtime answered) is not kept, so a runtime installed later in the same
 * process is found.
 *
 * @module
 */

import { messageOf } from "./atomic.ts";
import { CommandError, run } from "./command.ts";

/** How long a runtime probe may take before it counts as not answering, in milliseconds. */
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

/** Neither docker nor podman answered; the message names both and what each said. */
export class NoContainerRuntimeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoContainerRuntimeError";
  }
}

const PROBES: { program: Runtime["program"]; argv: string[] }[] = [
  { program: "docker", argv: ["docker", "info", "--format", "{{.ServerVersion}}"] },
  { program: "podman", argv: ["podman", "info", "--format", "{{.Version.Version}}"] },
];

let runtimeDetection: Promise<Runtime> | undefined;
let probes = 0;

/**
 * The container runtime of this machine, detected once per process (a failed detection is not
 * kept: the next call asks again).
 *
 * @throws {NoContainerRuntimeError} when neither docker nor podman answers.
 */
export function containerRuntime(): Promise<Runtime> {
  runtimeDetection ??= detectRuntime().catch((error) => {
    runtimeDetection = undefined;
    throw error;
  });
  return runtimeDetection;
}

/** How many times this process probed for a container runtime (tests: "detected once"). */
export function runtimeProbeCount(): number {
  return probes;
}

async function detectRuntime(): Promise<Runtime> {
  probes++;
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
    throw new NoContainerRuntimeError(
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
