/**
 * `action` (trusted input only): a command, and the verify that is both its idempotency check
 * and its read-back. The host does not know what the action does ("is the database there?"),
 * so only the declaration can ask whether it is already done.
 *
 * Verify runs first: exit 0 means satisfied and the command does not run (`unchanged`).
 * Otherwise the command runs, then verify runs again: an action whose command exits 0 while
 * verify still fails has not done what it was declared to do, and fails with both outputs. A
 * command that fails fails the resource with its argv, exit code (or signal) and output tails.
 * A verify that cannot be run at all (no such program, killed by its timeout) is not an answer:
 * the resource fails rather than run the command on a guess.
 *
 * `in` runs both inside the named container (`<runtime> exec NAME argv`, on the runtime
 * detected for containers); a container that does not exist or is not running fails naming it.
 *
 * Observing runs verify; the plan ({@linkcode ActionPlan}) is what it said: nothing, or run the
 * command and verify again. A dry run stops at the plan, so it runs verify only. Verify is
 * TRUSTED TO BE READ-ONLY: the host cannot check that it changes nothing, and runs it in a dry
 * run and on every apply. The command never runs in a dry run. An action creates nothing the host owns (`created` is false) and leaving the
 * declaration makes it `forgotten`: what it did stays.
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
import { type Applier, type ApplyContext, type Plan, ResourceError } from "../../host/applier.ts";
import type { Action } from "./schema.ts";
import {
  containerRuntime,
  type ContainerState,
  imageMissingOnce,
  inspectContainers,
} from "../container/applier.ts";
import { pinnedReferences } from "../../lib/registry_manifest.ts";

/** An `action` resource. */
export type ActionResource = z.output<typeof Action>;

/** How long an action's command may run before it is killed and the resource fails. */
export const COMMAND_TIMEOUT_MS = 30 * 60_000;
/** How long a verify may run before it is killed and the resource fails. */
export const VERIFY_TIMEOUT_MS = 5 * 60_000;

/** What verify said. */
type Verdict =
  | { kind: "satisfied"; out: CommandOutput }
  | { kind: "unsatisfied"; out: CommandOutput }
  /** It could not be run, or was killed: no answer. */
  | { kind: "unknown"; error: unknown };

/** What `observe` saw. */
export type ActionObservation =
  | { kind: "verified"; verdict: Verdict }
  /** The container of `in` does not exist, or is not running. */
  | { kind: "no-container"; container: string; state?: ContainerState };

/** The argv that runs `argv` for `resource`: inside its container, or as it is. */
async function argvFor(resource: ActionResource, argv: string[]): Promise<string[]> {
  if (resource.in === undefined) return argv;
  const runtime = await containerRuntime();
  return [runtime.program, "exec", resource.in, ...argv];
}

async function verify(resource: ActionResource): Promise<Verdict> {
  const argv = await argvFor(resource, resource.verify);
  try {
    const out = await run(argv, { allowFailure: true, timeoutMs: VERIFY_TIMEOUT_MS });
    if (resource.in !== undefined && notRunInside(out)) {
      // The runtime could not start it in the container: no answer, as on the host.
      return { kind: "unknown", error: new CommandError(argv, out) };
    }
    return { kind: out.code === 0 ? "satisfied" : "unsatisfied", out };
  } catch (error) {
    return { kind: "unknown", error };
  }
}

/**
 * Whether `exec` says the runtime itself failed (125: the runtime's error, e.g. the container is
 * gone; 126/127 with the OCI runtime's "exec failed": the program cannot be run in there), as
 * opposed to the program running and exiting with that code. Read from what it says: a program
 * exiting 127 on its own does not say "exec failed".
 */
function notRunInside(out: CommandOutput): boolean {
  if (out.code === 125) return true;
  return (out.code === 126 || out.code === 127) && /exec failed|OCI runtime/i.test(out.stderr);
}

function tail(text: string): string {
  return outputTail(text) || "(empty)";
}

function outputs(what: string, out: CommandOutput): string {
  return `${what} stdout: ${tail(out.stdout)}\n${what} stderr: ${tail(out.stderr)}`;
}

/** Whether a container named `name` is declared before `resource` (a dry run has not made it). */
function declaredBefore(name: string, resource: ActionResource, context: ApplyContext): boolean {
  for (const r of context.declaration.resources) {
    if (r === resource || r.id === resource.id) return false;
    if (r.type === "container" && r.name === name) return true;
  }
  return false;
}

/**
 * What the action applier will do, as verify said when observed: nothing (it passes), or run
 * the command and verify again.
 */
export type ActionPlan =
  & Plan
  & (
    | { kind: "nothing" }
    /** Run `argv` (inside the container when `in` is declared), then verify again. */
    | { kind: "run"; argv: string[] }
    /**
     * A dry run only: the container it runs in is declared earlier and not made yet; once it
     * is, verify decides.
     */
    | { kind: "after-container"; container: string }
  );

/** The `action` applier. */
export const actionApplier: Applier<ActionResource, ActionObservation, ActionPlan> = {
  /**
   * Every image an action's command or verify names pinned by digest (`podman run REF ...`, as
   * the Debian bundle's schema step runs mesh-control) can be had, asked before anything of the
   * source is applied, as for a container ({@linkcode imageMissingOnce}).
   */
  async admit(resources, context) {
    const named = resources.flatMap((r) =>
      pinnedReferences([...r.command, ...r.verify].join("\n")).map((image) => ({ r, image }))
    );
    if (named.length === 0) return [];
    const runtime = await containerRuntime().catch(() => undefined);
    const problems: { id: string; message: string }[] = [];
    for (const { r, image } of named) {
      const said = await imageMissingOnce(runtime, image, context);
      if (said !== undefined) {
        problems.push({
          id: r.id,
          message: `Cannot have image ${image}, which action "${r.id}" runs: ${said}; ` +
            `nothing of this source was applied`,
        });
      }
    }
    return problems;
  },

  async observe(resource) {
    if (resource.in !== undefined) {
      const runtime = await containerRuntime();
      const state = (await inspectContainers(runtime, [resource.in])).get(resource.in);
      if (state === undefined || !state.running) {
        return { kind: "no-container", container: resource.in, ...(state ? { state } : {}) };
      }
    }
    // Verify is trusted to be read-only: observing runs it.
    return { kind: "verified", verdict: await verify(resource) };
  },

  async plan(resource, observed, context): Promise<ActionPlan> {
    if (observed.kind === "no-container") {
      // In a dry run, a container declared earlier has not been made yet: the action would run
      // if its verify then fails (in an apply it was made, and observed).
      if (context.dryRun && declaredBefore(observed.container, resource, context)) {
        return {
          kind: "after-container",
          container: observed.container,
          steps: [`verify, then run if it fails, once container "${observed.container}" runs`],
          result: {
            change: "updated",
            created: false,
            detail: `container "${observed.container}" would be created first; then run ` +
              `${JSON.stringify(resource.command)} in it unless verify ` +
              `${JSON.stringify(resource.verify)} passes there`,
          },
        };
      }
      const why = observed.state === undefined
        ? "does not exist"
        : `is not running (status ${observed.state.status})`;
      throw new ResourceError(
        `Container "${observed.container}", which this action runs in, ${why}`,
      );
    }
    const first = observed.verdict;
    if (first.kind === "unknown") {
      throw new ResourceError(`Verify could not be run: ${messageOf(first.error)}`, {
        cause: first.error,
      });
    }
    if (first.kind === "satisfied") {
      return { kind: "nothing", steps: [], result: { change: "unchanged", created: false } };
    }
    const argv = await argvFor(resource, resource.command);
    return {
      kind: "run",
      argv,
      steps: [`run ${formatArgv(argv)}`, "verify again"],
      result: {
        change: "updated",
        created: false,
        detail: `run ${JSON.stringify(resource.command)}${
          resource.in ? ` in container "${resource.in}"` : ""
        }: verify ${JSON.stringify(resource.verify)} does not pass now (exit ${first.out.code})`,
      },
    };
  },

  async act(resource, plan) {
    const { detail: _, ...result } = plan.result;
    if (plan.kind === "nothing") return result;
    if (plan.kind === "after-container") {
      // Planned in a dry run only, which never acts.
      throw new ResourceError(
        `Container "${plan.container}", which this action runs in, was not observed running`,
      );
    }
    const argv = plan.argv;
    let done: CommandOutput;
    try {
      done = await run(argv, { allowFailure: true, timeoutMs: COMMAND_TIMEOUT_MS });
    } catch (error) {
      // Could not be started, or killed (by its timeout or otherwise).
      throw new ResourceError(`The command failed: ${messageOf(error)}`, { cause: error });
    }
    if (done.code !== 0) {
      const error = new CommandError(argv, done);
      // The error carries argv, exit code and the stderr tail; stdout is added.
      throw new ResourceError(
        `The command failed: ${error.message}\ncommand stdout: ${tail(done.stdout)}`,
        { cause: error },
      );
    }
    const second = await verify(resource);
    if (second.kind === "satisfied") return result;
    const verifyArgv = await argvFor(resource, resource.verify);
    const said = second.kind === "unknown"
      ? `verify could not be run: ${messageOf(second.error)}`
      : `verify ${formatArgv(verifyArgv)} still exits ${second.out.code}\n${
        outputs("verify", second.out)
      }`;
    throw new ResourceError(
      `Command ${formatArgv(argv)} exited 0 but the action is not done: ${said}\n${
        outputs("command", done)
      }`,
    );
  },
  // No planRemoval: leaving the declaration, it is forgotten. What an action did stays; the host
  // owns nothing of it.
};
