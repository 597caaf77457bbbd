/**
 * The zod schemas of the container runtimes' outputs that `run` reads: loaded only when the
 * plain checks of reconcile/observe/runtime_output.ts refuse an output, to have the last word
 * and say what is wrong.
 *
 * @module
 */

import { z } from "zod";

/** `podman ps --all --format json` (podman 4.x), the fields containers.ts reads. */
export const PodmanPs = z.array(z.object({
  Id: z.string(),
  Names: z.array(z.string()).min(1),
  Image: z.string(),
  Labels: z.record(z.string(), z.string()).nullish(),
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

/** `docker inspect` (Docker Engine API ContainerJSON), the fields containers.ts reads. */
export const DockerInspect = z.array(z.object({
  Id: z.string(),
  Name: z.string(),
  Config: z.object({ Image: z.string(), Labels: z.record(z.string(), z.string()).nullish() }),
  State: z.object({ Status: z.string(), ExitCode: z.number().int().optional() }),
  NetworkSettings: z.object({
    Ports: z.record(
      z.string(),
      z.array(z.object({ HostIp: z.string(), HostPort: z.string() })).nullable(),
    ).nullish(),
  }),
}));

/** `podman container inspect` / `docker inspect`, the fields boot.ts reads. */
export const BootInspect = z.array(z.object({
  Name: z.string(),
  State: z.object({ Status: z.string() }),
  HostConfig: z.object({ RestartPolicy: z.object({ Name: z.string() }).nullish() }),
  Config: z.object({ Labels: z.record(z.string(), z.string()).nullish() }),
}));

/** The schemas by output (reconcile/observe/runtime_output.ts `RuntimeOutput`). */
export const RUNTIME_SCHEMAS = {
  "podman ps": PodmanPs,
  "docker inspect": DockerInspect,
  "boot inspect": BootInspect,
} as const;
