/**
 * `container`: a container from an image pinned by digest, on the runtime the machine has.
 *
 * The runtime is detected once per process (host/platform.ts), by asking each one something only a working runtime
 * can answer: `docker info --format '{{.ServerVersion}}'` and
 * `podman info --format '{{.Version.Version}}'` (one probe cannot find both: podman has no
 * `ServerVersion`). When both answer, docker is used (its daemon brings containers back at boot
 * without another unit having to be enabled). When neither answers, the resource fails naming both and what each said; a
 * failed detection is not kept, so a runtime installed later in the same process is found.
 *
 * A container is identified by the label `mesh.declaration=sha256:<hex>`, the digest of its
 * resource's canonical JSON (keys sorted), beside `mesh.id=<resource id>`. Comparing what the
 * runtime reports field by field cannot be done reliably (a runtime normalises, defaults and
 * reorders what it is given), so the label is the comparison, and any change is a replacement:
 * a container's configuration is fixed when it is created. A container without the label was
 * not created by this host and is never touched: the resource fails naming it. After creating
 * or starting a container the host reads it back: running, its label, restart policy
 * {@linkcode RESTART_POLICY} (`always`), and still running (not restarted) a moment later. Running is not working,
 * but a container that is not running has certainly failed.
 *
 * The plan ({@linkcode ContainerPlan}) is decided from one inspect: nothing, create, start (or
 * unpause), or replace, saying why from what the runtime shows (the image's digest, declared
 * environment variables by name, the label); a dry run stops there.
 *
 * Removal (the resource left the declaration) takes only a container carrying the label and the
 * footprint entry's `mesh.id`; one already gone is `removed`; any other is `forgotten`.
 *
 * Stopping (to replace or remove) is `stop` then `rm -f`: docker's `rm -f` alone kills with
 * SIGKILL, where `stop` gives the container its stop timeout to shut down cleanly on both.
 * Environment values are passed as `-e NAME=value` and are redacted (`NAME=***`) in messages.
 *
 * @module
 */

import type { z } from "zod";
import {
  CommandError,
  type CommandOutput,
  formatArgv,
  outputTail,
  run,
} from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import { checkOutput } from "../../lib/runtime_output.ts";
import type { ContainerInspect } from "../../lib/runtime_schemas.ts";
import { isLoopback, manifestMissing, splitPinned } from "../../lib/registry_manifest.ts";
import {
  type Applier,
  type ApplyContext,
  type Plan,
  type RemovalPlan,
  ResourceError,
} from "../../host/applier.ts";
import type { Container } from "./schema.ts";
import { declarationDigest } from "../../lib/declaration_base.ts";

/** A `container` resource. */
export type ContainerResource = z.output<typeof Container>;

/** The label carrying the digest of the declaration a container was created from. */
export const DECLARATION_LABEL = "mesh.declaration";
/** The label carrying the id of the resource a container was created for. */
export const ID_LABEL = "mesh.id";
/**
 * The restart policy every container is created with: `always`, the one policy both runtimes
 * bring back at boot. podman 4.3's `podman-restart.service` (`podman start --all --filter
 * restart-policy=always`) starts only `always` containers, where docker's daemon starts `always`
 * and `unless-stopped` alike. A container stopped by hand is started again by the next reconcile
 * either way (it is declared running), so `unless-stopped` bought nothing. A container created
 * with another policy (by an earlier host: `unless-stopped`) is replaced once.
 */
export const RESTART_POLICY = "always";
/** How long a container created or started must stay up before it counts as running. */
export const SETTLE_MS = 1000;
/** How long a runtime command (run, start, stop, rm, inspect) may take. */
export const RUNTIME_TIMEOUT_MS = 10 * 60_000;

const PINNED = /^[^\s@]+@sha256:[0-9a-f]{64}$/;

export { containerRuntime, PROBE_TIMEOUT_MS, type Runtime } from "../../host/platform.ts";
import { containerRuntime, PROBE_TIMEOUT_MS, type Runtime } from "../../host/platform.ts";

/** What the runtime says about one container. */
export interface ContainerState {
  id: string;
  name: string;
  /** Running, not paused, not between restarts. */
  running: boolean;
  /** The runtime's own word for the state (`running`, `exited`, `created`, `paused`, ...). */
  status: string;
  paused: boolean;
  restarting: boolean;
  restartCount: number;
  exitCode: number | undefined;
  /** The runtime's error for the last start, when it has one. */
  error: string;
  labels: Record<string, string>;
  restartPolicy: string;
  image: string;
  /** `Config.Env`: `NAME=value`, the image's own and the declared ones. */
  env: string[];
}

/**
 * Inspects the containers named `names` in one call: `podman container inspect` / `docker
 * container inspect` (podman 4.x; Docker Engine API ContainerJSON), read through
 * lib/runtime_output.ts, the reader mesh-reconcile's boot view shares (the schema
 * `ContainerInspect` of lib/runtime_schemas.ts says which fields must be there). A name with no
 * container is absent from the map; that is read from what the runtime says ("no such
 * container"), never from the exit code alone.
 *
 * @throws {ResourceError} when the runtime fails in another way, or answers with something that
 *   is not that shape ("Cannot read what ... answered (the schema's first problem): ...").
 */
export async function inspectContainers(
  runtime: Runtime,
  names: readonly string[],
): Promise<Map<string, ContainerState>> {
  const found = new Map<string, ContainerState>();
  if (names.length === 0) return found;
  const argv = [runtime.program, "container", "inspect", ...names];
  let out: CommandOutput;
  try {
    out = await run(argv, { allowFailure: true, timeoutMs: RUNTIME_TIMEOUT_MS });
  } catch (error) {
    throw new ResourceError(`Cannot inspect containers: ${messageOf(error)}`, { cause: error });
  }
  let raw: z.output<typeof ContainerInspect> = [];
  const text = out.stdout.trim();
  if (text !== "") {
    try {
      raw = await checkOutput("container inspect", JSON.parse(text));
    } catch (error) {
      throw new ResourceError(
        `Cannot read what ${formatArgv(argv)} answered (${messageOf(error)}): ${
          text.slice(0, 500)
        }`,
      );
    }
  }
  const wanted = new Set(names);
  const ids: string[] = [];
  for (const c of raw) {
    const name = c.Name.replace(/^\//, "");
    ids.push(c.Id ?? "");
    // `inspect x` also matches a container whose id starts with x: only the name counts.
    if (!wanted.has(name)) continue;
    const state = c.State;
    const paused = state.Paused === true;
    const restarting = state.Restarting === true;
    found.set(name, {
      id: c.Id ?? name,
      name,
      running: state.Running === true && !paused && !restarting,
      status: state.Status,
      paused,
      restarting,
      restartCount: c.RestartCount ?? 0,
      exitCode: state.ExitCode,
      error: state.Error ?? "",
      labels: c.Config.Labels ?? {},
      restartPolicy: c.HostConfig.RestartPolicy?.Name ?? "",
      image: c.Config.Image ?? "",
      env: c.Config.Env ?? [],
    });
  }
  if (out.code !== 0) {
    const stderr = out.stderr.toLowerCase();
    for (const name of names) {
      if (found.has(name)) continue;
      const said = stderr.includes("no such container") && stderr.includes(name.toLowerCase());
      const byIdPrefix = ids.some((id) => id.startsWith(name));
      if (!said && !byIdPrefix) {
        throw new ResourceError(
          `Cannot tell whether container "${name}" exists: ${new CommandError(argv, out).message}`,
        );
      }
    }
  }
  return found;
}

/** The canonical JSON of a value: object keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value).sort().filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** The `mesh.declaration` label's value for `resource`: `sha256:<hex>` of its canonical JSON. */
export async function containerDigest(resource: ContainerResource): Promise<string> {
  return await declarationDigest(canonicalJson(resource));
}

/** The `run` argv that creates `resource`, labelled with `digest`. */
export function runArgv(runtime: Runtime, resource: ContainerResource, digest: string): string[] {
  const argv = [
    runtime.program,
    "run",
    "-d",
    "--name",
    resource.name,
    "--restart",
    RESTART_POLICY,
    "--label",
    `${DECLARATION_LABEL}=${digest}`,
    "--label",
    `${ID_LABEL}=${resource.id}`,
  ];
  for (const key of Object.keys(resource.env ?? {}).sort()) {
    argv.push("-e", `${key}=${resource.env![key]}`);
  }
  for (const port of resource.ports ?? []) argv.push("-p", port);
  for (const volume of resource.volumes ?? []) argv.push("-v", volume);
  argv.push(...(resource.args ?? []), resource.image, ...(resource.command ?? []));
  return argv;
}

/** `argv` with every `-e NAME=value` shown as `NAME=***`. */
function redact(argv: string[]): string[] {
  return argv.map((a, i) => (argv[i - 1] === "-e" ? a.replace(/=.*$/s, "=***") : a));
}

/**
 * Runs a runtime command; its failure is a {@linkcode CommandError} (argv redacted, exit code,
 * signal, stderr tail).
 */
async function runtimeCommand(argv: string[]): Promise<CommandOutput> {
  try {
    return await run(argv, { timeoutMs: RUNTIME_TIMEOUT_MS });
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    throw new CommandError(redact(argv), {
      code: error.code,
      signal: error.signal,
      stderr: error.stderrTail,
      ...(error.cause !== undefined ? { cause: error.cause } : {}),
    });
  }
}

/** What `observe` saw: the runtime and the container, when there is one. */
export interface ContainerObservation {
  runtime: Runtime;
  state: ContainerState | undefined;
}

const CACHE_KEY = "container.inspect";

/** The per-apply cache: which names were asked about, and what was found. */
interface Seen {
  asked: Set<string>;
  states: Map<string, ContainerState>;
}

function describe(state: ContainerState): string {
  const parts = [`status ${state.status}`];
  if (state.exitCode !== undefined && !state.running) parts.push(`exit code ${state.exitCode}`);
  if (state.restartCount > 0) parts.push(`restarted ${state.restartCount} times`);
  if (state.error) parts.push(`error: ${state.error}`);
  return parts.join(", ");
}

async function logsTail(runtime: Runtime, id: string): Promise<string> {
  const out = await run([runtime.program, "logs", "--tail", "20", id], {
    allowFailure: true,
    timeoutMs: PROBE_TIMEOUT_MS,
  }).catch(() => undefined);
  const text = `${out?.stdout ?? ""}${out?.stderr ?? ""}`.trim();
  return text ? `; its last output: ${outputTail(text)}` : "";
}

/**
 * Reads back the container named `name` after it was created or started: it must be running,
 * carry `digest`, have restart policy {@linkcode RESTART_POLICY}, and still be running without having
 * been restarted after {@linkcode SETTLE_MS}.
 */
async function readBack(
  runtime: Runtime,
  name: string,
  digest: string,
): Promise<{ ok: true; state: ContainerState } | { ok: false; why: string; id?: string }> {
  let baseline: number | undefined;
  const started = Date.now();
  for (;;) {
    const state = (await inspectContainers(runtime, [name])).get(name);
    if (state === undefined) return { ok: false, why: "it does not exist" };
    if (state.labels[DECLARATION_LABEL] !== digest) {
      return {
        ok: false,
        id: state.id,
        why: `it does not carry the label ${DECLARATION_LABEL}=${digest} ` +
          `(it carries ${JSON.stringify(state.labels[DECLARATION_LABEL] ?? null)})`,
      };
    }
    if (state.restartPolicy !== RESTART_POLICY) {
      return {
        ok: false,
        id: state.id,
        why: `its restart policy is "${state.restartPolicy}", not "${RESTART_POLICY}" ` +
          `(do its args set one?)`,
      };
    }
    baseline ??= state.restartCount;
    if (!state.running || state.restartCount > baseline) {
      return {
        ok: false,
        id: state.id,
        why: `it is not running (${describe(state)})${await logsTail(runtime, state.id)}`,
      };
    }
    if (Date.now() - started >= SETTLE_MS) return { ok: true, state };
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stopAndRemove(runtime: Runtime, id: string): Promise<void> {
  await runtimeCommand([runtime.program, "stop", id]);
  await runtimeCommand([runtime.program, "rm", "-f", id]);
}

async function create(
  resource: ContainerResource,
  runtime: Runtime,
  digest: string,
  context: ApplyContext,
): Promise<ContainerState> {
  await context.store.intend({ id: resource.id, type: "container", subject: resource.name });
  try {
    await runtimeCommand(runArgv(runtime, resource, digest));
  } catch (error) {
    // A failed start can leave the container created: this host's own (it carries this
    // digest and did not exist before), and not recorded, so it goes.
    const left = (await inspectContainers(runtime, [resource.name]).catch(() => undefined))
      ?.get(resource.name);
    if (left !== undefined && left.labels[DECLARATION_LABEL] === digest) {
      await run([runtime.program, "rm", "-f", left.id], { allowFailure: true });
    }
    throw new ResourceError(
      `Cannot create container "${resource.name}" from ${resource.image}: ${messageOf(error)}`,
      { cause: error },
    );
  }
  const back = await readBack(runtime, resource.name, digest);
  if (!back.ok) {
    // Not recorded in the footprint (the resource failed), so it does not stay behind.
    if (back.id !== undefined) {
      await run([runtime.program, "rm", "-f", back.id], { allowFailure: true });
    }
    throw new ResourceError(
      `Container "${resource.name}" was created from ${resource.image} but ${back.why}; ` +
        `it was removed again`,
    );
  }
  return back.state;
}

/**
 * What the container applier will do, decided from one inspect (read-only): nothing, create,
 * start (or unpause) the container this host created from this very declaration, or replace one
 * created from another declaration (and why).
 */
export type ContainerPlan =
  & Plan
  & (
    | { kind: "nothing" }
    | { kind: "create"; runtime: Runtime; digest: string }
    | {
      kind: "start";
      runtime: Runtime;
      digest: string;
      verb: "start" | "unpause";
      /** The container as inspected. */
      state: ContainerState;
    }
    | {
      kind: "replace";
      runtime: Runtime;
      digest: string;
      /** The container as inspected, to be stopped and removed. */
      state: ContainerState;
      /** Why, for people: what differs that can be read from the runtime. */
      why: string[];
    }
  );

/** The digest part of an image reference, `sha256:<hex>`, or the reference when it has none. */
function imageDigest(image: string): string {
  const at = image.lastIndexOf("@");
  return at === -1 ? image : image.slice(at + 1);
}

/**
 * Why a container created from another declaration is replaced: what the runtime shows that
 * differs from the declaration (the image's digest, declared environment variables: by name
 * only, values are never shown), and the label that says the declaration changed either way.
 */
function replaceReasons(
  resource: ContainerResource,
  state: ContainerState,
  label: string,
  digest: string,
): string[] {
  const why: string[] = [];
  if (state.image !== "" && imageDigest(state.image) !== imageDigest(resource.image)) {
    why.push(`image ${state.image} -> ${resource.image}`);
  }
  const has = new Set(state.env);
  const env = Object.keys(resource.env ?? {}).sort().filter((k) =>
    !has.has(`${k}=${resource.env![k]}`)
  );
  if (env.length > 0) why.push(`environment ${env.join(", ")} changed (values not shown)`);
  why.push(
    `it was created from another declaration (${DECLARATION_LABEL}=${label}, declared ${digest})`,
  );
  return why;
}

/** How long asking a registry for one image's manifest may take. */
export const MANIFEST_TIMEOUT_MS = 60_000;

/**
 * Why `image` cannot be had, or undefined when it can: it is in the runtime's image store
 * (`podman image exists`, `docker image inspect`), or its registry answers for its manifest,
 * asked through the runtime itself so that its registries.conf (insecure registries, mirrors) is
 * honoured: `podman manifest inspect` (podman 4.3 answers a single image's manifest with "Treating
 * single images as manifest lists is not implemented", which is the registry's answer that it
 * holds it, read as such; "manifest unknown" is that it does not), `docker manifest inspect`.
 * With no runtime (the Debian bundle installs podman itself), the registry is asked over HTTP(S)
 * directly ({@linkcode manifestMissing}): plain HTTP for a loopback registry or when
 * `/etc/containers/registries.conf` (or `CONTAINERS_REGISTRIES_CONF`, as podman reads it) or a file
 * of `registries.conf.d` marks it `insecure`, else HTTPS; mirrors are not consulted then.
 *
 * @returns a clause saying why (the runtime's or the registry's own words), or undefined.
 */
export async function imageMissing(
  runtime: Runtime | undefined,
  image: string,
): Promise<string | undefined> {
  if (runtime === undefined) {
    const ref = splitPinned(image);
    // As `deno task hosts` asks: a loopback registry over plain HTTP, as podman and docker do.
    const insecure = ref !== undefined &&
      (isLoopback(ref.registry) || await insecureRegistry(ref.registry));
    const why = await manifestMissing(image, {
      plainHttp: insecure,
      timeoutMs: MANIFEST_TIMEOUT_MS,
    });
    return why === undefined ? undefined : `no container runtime answers, and ${why}`;
  }
  const local = runtime.program === "podman"
    ? [runtime.program, "image", "exists", image]
    : [runtime.program, "image", "inspect", "--format", "{{.Id}}", image];
  try {
    const out = await run(local, { allowFailure: true, timeoutMs: PROBE_TIMEOUT_MS });
    if (out.code === 0) return undefined;
  } catch { /* not answered: the registry is asked below, and its answer is the verdict */ }
  const argv = [runtime.program, "manifest", "inspect", image];
  let out: CommandOutput;
  try {
    out = await run(argv, { allowFailure: true, timeoutMs: MANIFEST_TIMEOUT_MS });
  } catch (error) {
    return `it is not in ${runtime.program}'s image store, and its registry could not be asked: ${
      messageOf(error)
    }`;
  }
  if (out.code === 0) return undefined;
  if (
    runtime.program === "podman" &&
    out.stderr.includes("Treating single images as manifest lists is not implemented")
  ) return undefined;
  const said = outputTail(out.stderr) || `exit code ${out.code}`;
  return /manifest unknown/i.test(out.stderr)
    ? `it is not in ${runtime.program}'s image store and its registry does not hold it (${
      formatArgv(argv)
    }: ${said})`
    : `it is not in ${runtime.program}'s image store and its registry did not answer for it (${
      formatArgv(argv)
    }: ${said})`;
}

/**
 * {@linkcode imageMissing} asked once per image per source (the container and action appliers'
 * `admit` share the answer through the apply's cache).
 */
export function imageMissingOnce(
  runtime: Runtime | undefined,
  image: string,
  context: ApplyContext,
): Promise<string | undefined> {
  let asked = context.cache.get(IMAGES_KEY) as Map<string, Promise<string | undefined>> | undefined;
  if (asked === undefined) context.cache.set(IMAGES_KEY, asked = new Map());
  let why = asked.get(image);
  if (why === undefined) asked.set(image, why = imageMissing(runtime, image));
  return why;
}

const IMAGES_KEY = "container.images";

/** Whether containers' registries.conf (or a file of registries.conf.d) marks `registry` insecure. */
async function insecureRegistry(registry: string): Promise<boolean> {
  // podman's own order: CONTAINERS_REGISTRIES_CONF replaces the system file when set.
  const files = [Deno.env.get("CONTAINERS_REGISTRIES_CONF") || "/etc/containers/registries.conf"];
  try {
    for await (const e of Deno.readDir("/etc/containers/registries.conf.d")) {
      if (e.isFile && e.name.endsWith(".conf")) {
        files.push(`/etc/containers/registries.conf.d/${e.name}`);
      }
    }
  } catch { /* none */ }
  for (const file of files) {
    const text = await Deno.readTextFile(file).catch(() => "");
    for (const block of text.split(/^\s*\[\[/m).slice(1)) {
      if (!block.startsWith("registry]]")) continue;
      const location = /^\s*location\s*=\s*"([^"]*)"/m.exec(block)?.[1];
      if (location === registry && /^\s*insecure\s*=\s*true\b/m.test(block)) return true;
    }
  }
  return false;
}

/** What removing a container's footprint entry will do: `id`, the container `remove` stops. */
interface ContainerRemovalPlan extends RemovalPlan {
  id?: string;
}

/** The `container` applier (docker or podman, whichever the machine has). */
export const containerApplier: Applier<
  ContainerResource,
  ContainerObservation,
  ContainerPlan,
  ContainerRemovalPlan
> = {
  async observe(resource, context) {
    const runtime = await containerRuntime();
    let seen = context.cache.get(CACHE_KEY) as Seen | undefined;
    if (seen === undefined || !seen.asked.has(resource.name)) {
      // One inspect for every container the declaration names.
      const names = context.declaration.resources.flatMap((r) =>
        r.type === "container" ? [r.name] : []
      );
      if (!names.includes(resource.name)) names.push(resource.name);
      seen = { asked: new Set(names), states: await inspectContainers(runtime, names) };
      context.cache.set(CACHE_KEY, seen);
    }
    return { runtime, state: seen.states.get(resource.name) };
  },

  /**
   * Every pinned image of the source can be had, asked before anything of it is applied
   * ({@linkcode imageMissing}, each distinct image once, side by side); a container already
   * running from this very declaration is not asked about (its image is in the store).
   */
  async admit(resources, context) {
    const runtime = await containerRuntime().catch(() => undefined);
    let states = new Map<string, ContainerState>();
    if (runtime !== undefined) {
      const names = resources.map((r) => r.name);
      try {
        states = await inspectContainers(runtime, names);
        // The same one inspect `observe` makes for the declaration: kept for it.
        context.cache.set(CACHE_KEY, { asked: new Set(names), states } satisfies Seen);
      } catch { /* observe asks again, and fails the resource with the reason */ }
    }
    const wanted: { resource: ContainerResource; why: Promise<string | undefined> }[] = [];
    for (const resource of resources) {
      if (!PINNED.test(resource.image)) continue; // its plan refuses it, naming why
      const state = states.get(resource.name);
      if (
        state !== undefined && state.running &&
        state.labels[DECLARATION_LABEL] === await containerDigest(resource)
      ) continue;
      wanted.push({ resource, why: imageMissingOnce(runtime, resource.image, context) });
    }
    const problems: { id: string; message: string }[] = [];
    for (const { resource, why } of wanted) {
      const said = await why;
      if (said !== undefined) {
        problems.push({
          id: resource.id,
          message:
            `Cannot have image ${resource.image} for container "${resource.name}": ${said}; ` +
            `nothing of this source was applied`,
        });
      }
    }
    return problems;
  },

  async plan(resource, { runtime, state }): Promise<ContainerPlan> {
    if (!PINNED.test(resource.image)) {
      throw new ResourceError(
        `Image "${resource.image}" is not pinned by digest (name@sha256:<64 hex digits>)`,
      );
    }
    const digest = await containerDigest(resource);
    if (state === undefined) {
      return {
        kind: "create",
        runtime,
        digest,
        steps: [`create container ${resource.name}`],
        result: {
          change: "created",
          created: true,
          detail: `create container "${resource.name}" from ${resource.image} (${runtime.program})`,
        },
      };
    }
    const label = state.labels[DECLARATION_LABEL];
    if (label === undefined) {
      throw new ResourceError(
        `Container "${resource.name}" (${
          state.id.slice(0, 12)
        }) exists and was not created by this host: it has no ${DECLARATION_LABEL} label. ` +
          `It is left untouched; remove or rename it by hand, or declare another name`,
      );
    }
    if (label === digest && state.restartPolicy === RESTART_POLICY) {
      if (state.running) {
        return { kind: "nothing", steps: [], result: { change: "unchanged", created: true } };
      }
      if (state.status === "dead" || state.status === "removing") {
        throw new ResourceError(
          `Container "${resource.name}" cannot be started: ${describe(state)}`,
        );
      }
      const verb = state.paused ? "unpause" as const : "start" as const;
      return {
        kind: "start",
        runtime,
        digest,
        verb,
        state,
        steps: [`${verb} container ${resource.name}`],
        result: {
          change: "updated",
          created: true,
          detail: `${verb} container "${resource.name}" (now: ${describe(state)})`,
        },
      };
    }
    // Created by a host from another declaration (or its restart policy was changed): there is
    // no in-place update, so it is replaced.
    const why = label !== digest
      ? replaceReasons(resource, state, label, digest)
      : [`its restart policy is ${state.restartPolicy}, not ${RESTART_POLICY}`];
    return {
      kind: "replace",
      runtime,
      digest,
      state,
      why,
      steps: [`remove container ${resource.name}`, `create container ${resource.name}`],
      result: {
        change: "updated",
        created: true,
        detail: `replace container "${resource.name}": ${why.join("; ")}`,
      },
    };
  },

  async act(resource, plan, context) {
    const { detail: _, ...result } = plan.result;
    if (plan.kind === "nothing") return result;
    const { runtime, digest } = plan;
    // What this apply changes is kept in the observation cache, so it stays true.
    const states = (context.cache.get(CACHE_KEY) as Seen | undefined)?.states;
    const remember = (s: ContainerState) => states?.set(resource.name, s);
    if (plan.kind === "create") {
      remember(await create(resource, runtime, digest, context));
      return result;
    }
    const state = plan.state;
    if (plan.kind === "start") {
      try {
        await runtimeCommand([runtime.program, plan.verb, state.id]);
      } catch (error) {
        throw new ResourceError(
          `Cannot start container "${resource.name}" (was: ${describe(state)}): ${
            messageOf(error)
          }`,
          { cause: error },
        );
      }
      const back = await readBack(runtime, resource.name, digest);
      if (!back.ok) {
        throw new ResourceError(`Container "${resource.name}" was started but ${back.why}`);
      }
      remember(back.state);
      return result;
    }
    try {
      await stopAndRemove(runtime, state.id);
    } catch (error) {
      throw new ResourceError(
        `Cannot remove container "${resource.name}" to replace it: ${messageOf(error)}`,
        { cause: error },
      );
    }
    states?.delete(resource.name);
    try {
      remember(await create(resource, runtime, digest, context));
    } catch (error) {
      throw new ResourceError(
        `Replacing container "${resource.name}": the old one (${
          state.id.slice(0, 12)
        }) was removed, and then: ${messageOf(error)}`,
        { cause: error },
      );
    }
    return result;
  },

  async planRemoval(entry) {
    if (!entry.created) return { change: "forgotten", act: false };
    const runtime = await containerRuntime();
    const state = (await inspectContainers(runtime, [entry.subject])).get(entry.subject);
    if (state === undefined) return { change: "removed", act: false };
    // Only what carries this host's label, for this very resource, was created by it.
    if (state.labels[DECLARATION_LABEL] === undefined || state.labels[ID_LABEL] !== entry.id) {
      return { change: "forgotten", act: false };
    }
    return { change: "removed", act: true, id: state.id };
  },

  async remove(entry, plan) {
    if (plan.id === undefined) return plan.change;
    const runtime = await containerRuntime();
    try {
      await stopAndRemove(runtime, plan.id);
    } catch (error) {
      const still = (await inspectContainers(runtime, [entry.subject])).get(entry.subject);
      if (still === undefined) return "removed"; // gone meanwhile
      throw new ResourceError(`Cannot remove container "${entry.subject}": ${messageOf(error)}`, {
        cause: error,
      });
    }
    return "removed";
  },
};
