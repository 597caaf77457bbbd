/**
 * The zod schemas of the container runtimes' outputs that the host's container applier
 * (resources/container/applier.ts) and mesh-reconcile's observers (reconcile/observe/containers.ts,
 * boot.ts) read: loaded only when the generated checks of lib/runtime_output.ts refuse an output,
 * to have the last word and say what is wrong.
 *
 * @module
 */

import { z } from "zod";

/**
 * zod's record (`z.record`), but an own `__proto__` key (JSON.parse makes one: podman allows a
 * label of that name) is read as any other key: its key and value checked, and kept in its place
 * in the value, as data. zod's own record skips it unchecked (copying it onto the plain object it
 * builds would set that object's prototype), so the schema would accept what the generated
 * validator (which checks it as any other key) refuses, and return the labels without it when the
 * validator's reader returns them with it. Its JSON Schema is the record's: the validator is the
 * same. Built with zod's core API for schema types (`z.core.$constructor`, its `_zod.parse`);
 * tests/lib/runtime_output_test.ts holds it to the validator, a `__proto__` label both ways.
 */
const OwnKeysRecord = z.core.$constructor(
  "OwnKeysRecord",
  (inst: z.ZodRecord, def: z.core.$ZodRecordDef) => {
    z.ZodRecord.init(inst, def);
    const parse = inst._zod.parse;
    inst._zod.parse = (payload, ctx) => {
      const input = payload.value as Record<string, unknown>;
      const result = parse(payload, ctx);
      if (!z.core.util.isPlainObject(input) || !Object.hasOwn(input, "__proto__")) return result;
      if (result instanceof Promise) throw new z.core.$ZodAsyncError();
      const read = (schema: z.core.$ZodType, value: unknown) => {
        const out = schema._zod.run({ value, issues: [] }, ctx) as z.core.ParsePayload;
        if (out instanceof Promise) throw new z.core.$ZodAsyncError();
        payload.issues.push(...z.core.util.prefixIssues("__proto__", out.issues));
        return out;
      };
      if (read(def.keyType, "__proto__").issues.length > 0) return payload;
      const value = read(def.valueType, input.__proto__);
      // Each key in the input's place, the own `__proto__` defined (not assigned) among them.
      const made = payload.value as Record<string, unknown>;
      const kept: Record<string, unknown> = {};
      for (const key of Object.keys(input)) {
        if (key === "__proto__") {
          Object.defineProperty(kept, key, {
            value: value.value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else if (Object.hasOwn(made, key)) kept[key] = made[key];
      }
      payload.value = kept;
      return payload;
    };
  },
);

/** `z.record(z.string(), value)` that reads an own `__proto__` key ({@linkcode OwnKeysRecord}). */
function record<V extends z.ZodType>(value: V): z.ZodRecord<z.ZodString, V> {
  const def = { type: "record" as const, keyType: z.string(), valueType: value };
  return new OwnKeysRecord(def) as z.ZodRecord<z.ZodString, V>;
}

/** `podman ps --all --format json` (podman 4.x), the fields reconcile's containers.ts reads. */
export const PodmanPs = z.array(z.object({
  Id: z.string(),
  Names: z.array(z.string()).min(1),
  Image: z.string(),
  Labels: record(z.string()).nullish(),
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
  Config: z.object({ Image: z.string(), Labels: record(z.string()).nullish() }),
  State: z.object({ Status: z.string(), ExitCode: z.number().int().optional() }),
  NetworkSettings: z.object({
    Ports: record(
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
    Labels: record(z.string()).nullish(),
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
