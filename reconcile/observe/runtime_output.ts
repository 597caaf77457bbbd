/**
 * The container runtimes' outputs that `run` reads, checked without zod: `podman ps --all
 * --format json`, `docker inspect` (containers.ts) and the boot view's `podman container
 * inspect` / `docker inspect` (boot.ts). Each plain check answers only whether an output has
 * the shape its reader needs; what it refuses is handed to the zod schema of
 * reconcile/observe/runtime_schemas.ts (loaded then), which has the last word and says what is
 * wrong. The checks accept nothing the schemas refuse (tests/reconcile/runtime_output_test.ts),
 * so an output read without zod is read as with it: the readers use only the fields checked.
 *
 * @module
 */

type Raw = Record<string, unknown>;

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** zod's `z.number().int()`: a finite, safe whole number. */
function isInt(value: unknown): value is number {
  return Number.isSafeInteger(value);
}

function isStringMap(value: unknown): boolean {
  return isObject(value) && Object.values(value).every((v) => typeof v === "string");
}

const nullish = (value: unknown, ok: (v: unknown) => boolean) =>
  value === null || value === undefined || ok(value);

function isPodmanPort(p: unknown): boolean {
  return isObject(p) && typeof p.host_ip === "string" && isInt(p.host_port) &&
    isInt(p.container_port) && (p.range === undefined || isInt(p.range)) &&
    typeof p.protocol === "string";
}

function isPodmanPsEntry(c: unknown): boolean {
  return isObject(c) && typeof c.Id === "string" && Array.isArray(c.Names) &&
    c.Names.length >= 1 && c.Names.every((n) => typeof n === "string") &&
    typeof c.Image === "string" && nullish(c.Labels, isStringMap) &&
    nullish(c.Ports, (ports) => Array.isArray(ports) && ports.every(isPodmanPort)) &&
    typeof c.State === "string" && (c.ExitCode === undefined || isInt(c.ExitCode));
}

/** Whether `data` (parsed JSON) is `podman ps --format json` output as containers.ts reads it. */
export function isPodmanPs(data: unknown): boolean {
  return Array.isArray(data) && data.every(isPodmanPsEntry);
}

function isDockerBinding(b: unknown): boolean {
  return isObject(b) && typeof b.HostIp === "string" && typeof b.HostPort === "string";
}

function isDockerPorts(ports: unknown): boolean {
  return isObject(ports) &&
    Object.values(ports).every((b) => b === null || (Array.isArray(b) && b.every(isDockerBinding)));
}

function isDockerInspectEntry(c: unknown): boolean {
  if (!isObject(c) || typeof c.Id !== "string" || typeof c.Name !== "string") return false;
  const { Config: config, State: state, NetworkSettings: net } = c;
  return isObject(config) && typeof config.Image === "string" &&
    nullish(config.Labels, isStringMap) && isObject(state) &&
    typeof state.Status === "string" && (state.ExitCode === undefined || isInt(state.ExitCode)) &&
    isObject(net) && nullish(net.Ports, isDockerPorts);
}

/** Whether `data` is `docker inspect` output as containers.ts reads it. */
export function isDockerInspect(data: unknown): boolean {
  return Array.isArray(data) && data.every(isDockerInspectEntry);
}

function isBootInspectEntry(c: unknown): boolean {
  if (!isObject(c) || typeof c.Name !== "string") return false;
  const { State: state, HostConfig: host, Config: config } = c;
  return isObject(state) && typeof state.Status === "string" && isObject(host) &&
    nullish(host.RestartPolicy, (r) => isObject(r) && typeof r.Name === "string") &&
    isObject(config) && nullish(config.Labels, isStringMap);
}

/** Whether `data` is `podman container inspect` / `docker inspect` output as boot.ts reads it. */
export function isBootInspect(data: unknown): boolean {
  return Array.isArray(data) && data.every(isBootInspectEntry);
}

/** The outputs, by name, for {@linkcode checkOutput}. */
export type RuntimeOutput = "podman ps" | "docker inspect" | "boot inspect";

const PLAIN: Record<RuntimeOutput, (data: unknown) => boolean> = {
  "podman ps": isPodmanPs,
  "docker inspect": isDockerInspect,
  "boot inspect": isBootInspect,
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
