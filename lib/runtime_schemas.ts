/**
 * The zod schemas of the container runtimes' outputs that the host's container applier
 * (resources/container/applier.ts) and mesh-reconcile's observers (reconcile/observe/containers.ts,
 * boot.ts) read: loaded only when the generated checks of lib/runtime_output.ts refuse an output,
 * to have the last word and say what is wrong.
 *
 * @module
 */

import { z } from "zod";
import { record } from "./zod_record.ts";

/** `podman ps --all --format json` (podman 4.x), the fields reconcile's containers.ts reads. */
export const PodmanPs = z.array(z.object({
  Id: z.string(),
  Names: z.array(z.string()).min(1),
  Image: z.string(),
  Labels: record(z.string(), z.string()).nullish(),
  Ports: z.array(z.object({
    host_ip: z.string(),
    host_port: z.number().int(),
    container_port: z.number().int(),
    range: z.number().int().optional(),
    protocol: z.string(),
  })).nullish(),
  State: z.string(),
  ExitCode: z.number().int().optional(),
}));

/**
 * `docker inspect` (Docker Engine API ContainerJSON), the fields reconcile's containers.ts reads
 * to list a docker's containers with their published ports.
 */
export const DockerInspect = z.array(z.object({
  Id: z.string(),
  Name: z.string(),
  Config: z.object({ Image: z.string(), Labels: record(z.string(), z.string()).nullish() }),
  State: z.object({ Status: z.string(), ExitCode: z.number().int().optional() }),
  NetworkSettings: z.object({
    Ports: record(
      z.string(),
      z.array(z.object({ HostIp: z.string(), HostPort: z.string() })).nullable(),
    ).nullish(),
  }),
}));

/**
 * `podman container inspect` (podman 4.x) / `docker container inspect` (Docker Engine API
 * ContainerJSON), the fields the host's container applier and reconcile's boot view read: `Name`
 * (docker's with a leading `/`), `State.Status` and the restart policy's and labels' objects are
 * in every runtime's answer; what only the host reads (`Id`, `RestartCount`, the state's flags, exit
 * code and error, `Config.Image`, `Config.Env`) may be absent (the boot view asks podman for its
 * fields only: reconcile/observe/boot.ts `PODMAN_INSPECT_FORMAT`).
 */
export const ContainerInspect = z.array(z.object({
  Id: z.string().optional(),
  Name: z.string(),
  RestartCount: z.number().int().optional(),
  State: z.object({
    Status: z.string(),
    Running: z.boolean().optional(),
    Paused: z.boolean().optional(),
    Restarting: z.boolean().optional(),
    ExitCode: z.number().int().optional(),
    Error: z.string().optional(),
  }),
  HostConfig: z.object({ RestartPolicy: z.object({ Name: z.string() }).nullish() }),
  Config: z.object({
    Labels: record(z.string(), z.string()).nullish(),
    Image: z.string().optional(),
    Env: z.array(z.string()).nullish(),
  }),
}));

/** The schemas by output (lib/runtime_output.ts `RuntimeOutput`). */
export const RUNTIME_SCHEMAS = {
  "podman ps": PodmanPs,
  "docker inspect": DockerInspect,
  "container inspect": ContainerInspect,
} as const;
