/**
 * The `file` applier, the same on every system: a regular file's content, mode (and owner and
 * group when declared) maintained on every apply. It is written to a temporary file in the same
 * directory with its mode (and owner) already set, then renamed into place, so no reader sees
 * partial content or a wider mode; what it shares with the `directory` applier (taking over a
 * path that existed before, putting it back, removal) is in ../fs.ts.
 *
 * @module
 */

import type { z } from "zod";
import { basename, dirname } from "../../lib/path.ts";
import type { Applier, ApplyContext } from "../../host/applier.ts";
import { observePath, type PathState, tempPathFor } from "../../host/path_state.ts";
import type { Original } from "../../host/store.ts";
import type { File } from "./schema.ts";
import {
  attributeChanges,
  attributesOf,
  beginTemp,
  contentDiff,
  deferred,
  ensureParents,
  equalBytes,
  holdAttributes,
  mayHaveTemp,
  type PathActPlan,
  type PathPlan,
  type PathRemovalPlan,
  pathSteps,
  planPathRemoval,
  prepare,
  readForDiff,
  removePath,
  removeQuietly,
  renameInto,
  takeOver,
  TEMPS,
  tempsIn,
  type Want,
  writeReplacing,
} from "../fs.ts";

type FileResource = z.output<typeof File>;

/** Plans a `file` resource. */
export async function planFile(
  resource: FileResource,
  observed: PathState & { bytes: Uint8Array },
  context: ApplyContext,
): Promise<{ plan: PathPlan; want: Want }> {
  const { bytes, ...state } = observed;
  const { want, known, notes } = prepare(resource, state, context);
  if (state.kind === "absent") {
    return {
      want,
      plan: {
        result: {
          change: "created",
          created: true,
          ...(context.dryRun
            ? {
              detail: [
                `new file, ${bytes.length} bytes, ${attributesOf(want)}`,
                ...notes,
                contentDiff(resource.path, new Uint8Array(), bytes, [want.mode]),
              ].join("\n"),
            }
            : {}),
        },
        takeOver: false,
        create: true,
        write: false,
        attributes: false,
      },
    };
  }
  const file = state as Extract<PathState, { kind: "file" }>;
  const same = file.content !== undefined && equalBytes(file.content, bytes);
  const changes = [...attributeChanges(file, want), ...notes];
  const base = { takeOver: known === undefined, create: false };
  if (!same) {
    return {
      want,
      plan: {
        ...base,
        result: {
          change: "updated",
          created: known?.created ?? false,
          ...(context.dryRun
            ? {
              detail: [
                ...changes,
                contentDiff(
                  resource.path,
                  await readForDiff(resource.path, file.size),
                  bytes,
                  [file.mode, want.mode],
                ),
              ].join("\n"),
            }
            : {}),
        },
        write: true, // written with its mode and owner already set
        attributes: false,
      },
    };
  }
  return {
    want,
    plan: {
      ...base,
      result: {
        change: changes.length > 0 ? "updated" : "unchanged",
        created: known?.created ?? false,
        ...(changes.length > 0 ? { detail: changes.join("\n") } : {}),
      },
      write: false,
      attributes: changes.length > 0,
    },
  };
}

/** The `file` applier: plan, then (unless a dry run) exactly that plan. */
export const fileApplier: Applier<
  FileResource,
  PathState & { bytes: Uint8Array },
  PathActPlan<PathState & { bytes: Uint8Array }>,
  PathRemovalPlan
> = {
  async observe(resource) {
    const bytes = ENCODER.encode(resource.content);
    return { ...(await observePath(resource.path, { size: bytes.length })), bytes };
  },
  async plan(resource, observed, context) {
    const { plan, want } = await planFile(resource, observed, context);
    // Bookkeeping, not an effect: a later service resource reloads its manager for this file,
    // in a dry run too.
    if (plan.create || plan.write) context.written.add(resource.path);
    return { ...plan, steps: pathSteps(plan, "file"), want, observed };
  },
  async act(resource, plan, context) {
    const { want, observed } = plan;
    const { detail: _, ...result } = plan.result;
    const { bytes, ...state } = observed;
    const file = state as Extract<PathState, { kind: "file" }>;
    let original: Original | undefined;
    if (plan.takeOver) original = await takeOver(resource, file, context);
    if (plan.create) {
      // Journaled before the file appears under its name (the rename), not before its temporary
      // file is written: the journal's sync and the file's run together.
      const journaled = context.store.intend({
        id: resource.id,
        type: "file",
        subject: resource.path,
      });
      journaled.catch(() => {}); // awaited below; a rejection is never left unhandled meanwhile
      try {
        ensureParents(resource.path, context);
      } catch (error) {
        await journaled.catch(() => {});
        throw error;
      }
      await writeReplacing(resource.path, bytes, want, {
        temp: mayHaveTemp(resource.path, context),
        before: journaled,
      });
    } else if (plan.write) {
      await writeReplacing(resource.path, bytes, want, {
        previous: file,
        temp: mayHaveTemp(resource.path, context),
      });
    } else {
      // A write killed before its rename leaves the host's temporary file: consume it.
      if (mayHaveTemp(resource.path, context)) removeQuietly(tempPathFor(resource.path));
      if (plan.attributes) await holdAttributes(resource.path, file, want, context);
    }
    return { ...result, ...(original ? { original } : {}) };
  },
  prepare(resource, plan, context) {
    if (context.dryRun || plan.takeOver) return undefined;
    if (!plan.create && !plan.write) {
      // Its act consumes a temporary file left beside it, or sets mode or owner: anything else
      // changes nothing.
      const inert = !plan.attributes && !mayHaveTemp(resource.path, context);
      return deferred(() => this.act(resource, plan, context), inert);
    }
    // Its directory must be there: making it now would be visible before its turn.
    const dir = dirname(resource.path);
    const temps = tempsIn(dir, context);
    if (temps === null) {
      context.cache.delete(TEMPS + dir); // listed again once an earlier resource made it
      return undefined;
    }
    const { want, observed } = plan;
    const { detail: _, ...result } = plan.result;
    const { bytes, ...state } = observed;
    // Journaled before its temporary file is made (a kill leaves no temporary file the journal
    // does not name), durable with the rest of its group before the rename.
    if (plan.create) {
      context.store.journal({ id: resource.id, type: "file", subject: resource.path });
    }
    const { temp, synced } = beginTemp(resource.path, bytes, want, {
      ...(plan.create ? {} : { previous: state as Extract<PathState, { kind: "file" }> }),
      temp: temps.size > 0 && temps.has(basename(tempPathFor(resource.path))),
    });
    synced.catch(() => {}); // awaited by ready; a rejection is never left unhandled meanwhile
    return {
      async ready() {
        const [written, journaled] = await Promise.allSettled([
          synced,
          plan.create ? context.store.durable() : undefined,
        ]);
        if (written.status === "rejected") throw written.reason;
        if (journaled.status === "rejected") {
          removeQuietly(temp);
          throw journaled.reason;
        }
      },
      commit() {
        renameInto(temp, resource.path);
        return Promise.resolve(result);
      },
      discard() {
        removeQuietly(temp);
      },
    };
  },
  planRemoval: (entry, context) => planPathRemoval(entry, "file", context),
  remove: (entry, plan, context) => removePath(entry, plan, context),
};

const ENCODER = new TextEncoder();
