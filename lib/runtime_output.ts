/**
 * The container runtimes' outputs that mesh reads, one reader for the host and mesh-reconcile:
 * `podman container inspect` / `docker container inspect` (the host's container applier,
 * resources/container/applier.ts, and reconcile's boot view, reconcile/observe/boot.ts),
 * `podman ps --all --format json` and `docker inspect` (reconcile/observe/containers.ts). Their
 * schemas are in ./runtime_schemas.ts. Each output is checked first by the validator generated
 * from its zod schema (./runtime_validators.js, made by scripts/validators.ts: one rule, written
 * once); what it refuses is handed to the zod schema itself (loaded then), which has the last word
 * and says what is wrong. A validator accepts exactly what its schema accepts
 * (tests/lib/runtime_output_test.ts over seeded mutations), so an output read without zod is read
 * as with it: the readers use only the schema's fields. A record (labels, docker's ports) is read
 * whole either way, an own `__proto__` key included (podman allows a label of that name; JSON.parse
 * makes it an own key): the schemas' records check and keep it as any other key, where zod's own
 * skips it unchecked (./runtime_schemas.ts `OwnKeysRecord`).
 *
 * @module
 */

import { isContainerInspect, isDockerInspect, isPodmanPs } from "./runtime_validators.js";

export { isContainerInspect, isDockerInspect, isPodmanPs };

/** The outputs, by name, for {@linkcode checkOutput}. */
export type RuntimeOutput = "podman ps" | "docker inspect" | "container inspect";

const PLAIN: Record<RuntimeOutput, (data: unknown) => boolean> = {
  "podman ps": isPodmanPs,
  "docker inspect": isDockerInspect,
  "container inspect": isContainerInspect,
};

/**
 * `data` as its reader may use it: checked without zod when it has the expected shape, else
 * asked of the zod schema (loaded then), which has the last word.
 *
 * @returns the data to read: `data` itself, or what the schema made of it.
 * @throws {Error} with the schema's first problem when the schema refuses it too.
 */
export async function checkOutput<T>(what: RuntimeOutput, data: unknown): Promise<T> {
  if (PLAIN[what](data)) return data as T;
  const { RUNTIME_SCHEMAS } = await import("./runtime_schemas.ts");
  const parsed = RUNTIME_SCHEMAS[what].safeParse(data);
  if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? "unexpected shape");
  return parsed.data as T;
}
