/**
 * The `directory` applier, the same on every system: a directory's mode (and owner and group
 * when declared) maintained on every apply, not only set at creation; what it shares with the
 * `file` applier (taking over a path that existed before, putting it back, removal) is in
 * ../fs.ts.
 *
 * @module
 */

import type { z } from "zod";
import { messageOf } from "../../lib/atomic.ts";
import { type Applier, type ApplyContext, ResourceError } from "../../host/applier.ts";
import { observePath, type PathState } from "../../host/path_state.ts";
import type { Original } from "../../host/store.ts";
import type { Directory } from "./schema.ts";
import {
  attributeChanges,
  attributesOf,
  deferred,
  ensureParents,
  holdAttributes,
  type PathActPlan,
  type PathPlan,
  type PathRemovalPlan,
  pathSteps,
  planPathRemoval,
  prepare,
  removePath,
  takeOver,
  type Want,
} from "../fs.ts";

type DirectoryResource = z.output<typeof Directory>;

/** Plans a `directory` resource. */
export function planDirectory(
  resource: DirectoryResource,
  state: PathState,
  context: ApplyContext,
): { plan: PathPlan; want: Want } {
  const { want, known, notes } = prepare(resource, state, context);
  if (state.kind === "absent") {
    return {
      want,
      plan: {
        result: {
          change: "created",
          created: true,
          detail: [`new directory, ${attributesOf(want)}`, ...notes].join("\n"),
        },
        takeOver: false,
        create: true,
        write: false,
        attributes: true,
      },
    };
  }
  const dir = state as Extract<PathState, { kind: "directory" }>;
  // An owner not there yet (a dry run's note) is one to set: the path is not owned by it.
  const changes = [...attributeChanges(dir, want), ...notes];
  return {
    want,
    plan: {
      result: {
        change: changes.length > 0 ? "updated" : "unchanged",
        created: known?.created ?? false,
        ...(changes.length > 0 ? { detail: changes.join("\n") } : {}),
      },
      takeOver: known === undefined,
      create: false,
      write: false,
      attributes: changes.length > 0,
    },
  };
}

/** The `directory` applier: plan, then (unless a dry run) exactly that plan. */
export const directoryApplier: Applier<
  DirectoryResource,
  PathState,
  PathActPlan<PathState>,
  PathRemovalPlan
> = {
  observe(resource) {
    return observePath(resource.path);
  },
  plan(resource, state, context) {
    const { plan, want } = planDirectory(resource, state, context);
    return Promise.resolve({ ...plan, steps: pathSteps(plan, "directory"), want, observed: state });
  },
  async act(resource, plan, context) {
    const { want, observed: state } = plan;
    const { detail: _, ...result } = plan.result;
    let original: Original | undefined;
    if (plan.takeOver) {
      original = await takeOver(
        resource,
        state as Extract<PathState, { kind: "directory" }>,
        context,
      );
    }
    if (plan.create) {
      await context.store.intend({ id: resource.id, type: "directory", subject: resource.path });
      ensureParents(resource.path, context);
      try {
        Deno.mkdirSync(resource.path, { mode: want.mode & 0o777 });
      } catch (error) {
        throw new ResourceError(
          `Cannot create directory "${resource.path}": ${messageOf(error)}`,
          { cause: error },
        );
      }
      await holdAttributes(resource.path, { mode: -1, uid: -1, gid: -1 }, want, context);
    } else if (plan.attributes) {
      await holdAttributes(
        resource.path,
        state as Extract<PathState, { kind: "directory" }>,
        want,
        context,
      );
    }
    return { ...result, ...(original ? { original } : {}) };
  },
  prepare(resource, plan, context) {
    if (context.dryRun || plan.takeOver) return undefined;
    if (!plan.create) {
      return deferred(() => this.act(resource, plan, context), !plan.attributes);
    }
    // Journaled now, durable with the rest of its group; made (in order) only after.
    context.store.journal({ id: resource.id, type: "directory", subject: resource.path });
    const { detail: _, ...result } = plan.result;
    return {
      ready: () => context.store.durable(),
      async commit() {
        ensureParents(resource.path, context);
        try {
          Deno.mkdirSync(resource.path, { mode: plan.want.mode & 0o777 });
        } catch (error) {
          throw new ResourceError(
            `Cannot create directory "${resource.path}": ${messageOf(error)}`,
            { cause: error },
          );
        }
        await holdAttributes(resource.path, { mode: -1, uid: -1, gid: -1 }, plan.want, context);
        return result;
      },
      discard() {},
    };
  },
  planRemoval: (entry, context) => planPathRemoval(entry, "directory", context),
  remove: (entry, plan, context) => removePath(entry, plan, context),
};
