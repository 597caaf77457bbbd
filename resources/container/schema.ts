/**
 * The `container` resource type's schema: a container from an image pinned by digest. Its
 * applier is ./applier.ts.
 *
 * @module
 */

import { z } from "zod";
import { Arg, ContainerName, Id } from "../../lib/resource_fields.ts";
import { record } from "../../lib/zod_record.ts";

/** `container`: a container from an image pinned by digest; any change is a replacement. */
export const Container = z.strictObject({
  id: Id,
  type: z.literal("container"),
  name: ContainerName,
  image: z.string().regex(
    /^[^\s@]+@sha256:[0-9a-f]{64}$/u,
    "Must be pinned by digest: name@sha256:<64 hex digits>",
  ),
  /**
   * Environment variables by name. One named `__proto__` (podman passes it on; JSON.parse makes
   * it an own key) is data as any other, not skipped unchecked as by zod's own record
   * (lib/zod_record.ts).
   */
  env: record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/u, "Must be an environment variable name"),
    Arg,
  )
    .optional(),
  ports: z.array(
    z.string().regex(
      /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?\d{1,5}:\d{1,5}(\/(tcp|udp))?$/u,
      'Must be "[address:]hostPort:containerPort[/tcp|/udp]"',
    ),
  ).optional(),
  volumes: z.array(Arg.min(1)).optional(),
  args: z.array(Arg).optional(),
  command: z.array(Arg).optional(),
});
