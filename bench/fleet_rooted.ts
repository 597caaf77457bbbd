/**
 * A system whose directories and files live under a root directory: the fleet bench's simulated
 * nodes each apply to their own (`<root>/mesh-fleet/...`), in one process, with the real
 * appliers. Only paths under {@linkcode FLEET_PREFIX} are applied; anything else fails the
 * resource, so that a simulated node can never write this machine's own files.
 *
 * What moves: the applier is given the resource with its path under the root, and removes a
 * footprint entry's subject under the root; the footprint (the store) keeps the declared path, as
 * a real node's does. Nothing of the host's apply run, store, link or report changes.
 *
 * @module
 */

import {
  type Applier,
  type ApplyContext,
  type Plan,
  type RemovalPlan,
  ResourceError,
  type SourceFootprint,
} from "../host/applier.ts";
import type { Resource } from "../lib/declaration.ts";
import type { FootprintEntry } from "../host/store.ts";
import { directoryApplier } from "../resources/directory/applier.ts";
import { fileApplier } from "../resources/file/applier.ts";
import type { System } from "../host/system.ts";

/** Every path a fleet module declares is under this one, which no machine has. */
export const FLEET_PREFIX = "/mesh-fleet";

type PathResource = Extract<Resource, { type: "directory" | "file" }>;

/**
 * `system` with its directory and file appliers moved under `root` (an absolute directory that
 * exists), and every other type refused.
 *
 * @throws {ResourceError} from an applier, for a path outside {@linkcode FLEET_PREFIX}.
 */
export function rootedSystem(system: System, root: string): System {
  const inside = (path: string): string => {
    if (path !== FLEET_PREFIX && !path.startsWith(`${FLEET_PREFIX}/`)) {
      throw new ResourceError(
        `Cannot apply "${path}" on a simulated node: only paths under ${FLEET_PREFIX} are applied`,
      );
    }
    return root + path;
  };
  const declared = (subject: string): string =>
    subject.startsWith(`${root}/`) ? subject.slice(root.length) : subject;
  // The store sees the declared paths; only the machine sees them under the root.
  const footprint = (store: SourceFootprint): SourceFootprint => ({
    source: store.source,
    find: (id, type, subject) => store.find(id, type, declared(subject)),
    intend: (intent) => store.intend({ ...intent, subject: declared(intent.subject) }),
    journal: (intent) => store.journal({ ...intent, subject: declared(intent.subject) }),
    durable: () => store.durable(),
    saveOriginal: (subject, content) => store.saveOriginal(declared(subject), content),
    readOriginal: (copy) => store.readOriginal(copy),
  });
  // One context and one moved resource per original, so that an applier sees the same objects
  // across observe, plan and act (its caches are keyed by them).
  const contexts = new WeakMap<ApplyContext, ApplyContext>();
  const ctx = (context: ApplyContext): ApplyContext => {
    let moved = contexts.get(context);
    if (moved === undefined) {
      moved = { ...context, store: footprint(context.store) };
      contexts.set(context, moved);
    }
    return moved;
  };
  const resources = new WeakMap<PathResource, PathResource>();
  const res = <R extends PathResource>(resource: R): R => {
    let moved = resources.get(resource);
    if (moved === undefined) {
      moved = { ...resource, path: inside(resource.path) };
      resources.set(resource, moved);
    }
    return moved as R;
  };
  // Typed per resource: the directory applier and the file applier each keep their own
  // observation and plan types.
  const wrap = <R extends PathResource, O, P extends Plan, Q extends RemovalPlan>(
    applier: Applier<R, O, P, Q>,
  ): Applier<R, O, P, Q> => ({
    observe: (r, c) => Promise.resolve().then(() => applier.observe(res(r), ctx(c))),
    plan: (r, o, c) => applier.plan(res(r), o, ctx(c)),
    act: (r, p, c) => applier.act(res(r), p, ctx(c)),
    ...(applier.prepare
      ? { prepare: (r: R, p: P, c: ApplyContext) => applier.prepare!(res(r), p, ctx(c)) }
      : {}),
    planRemoval: (entry: FootprintEntry, c) =>
      applier.planRemoval!({ ...entry, subject: inside(entry.subject) }, ctx(c)),
    remove: (entry: FootprintEntry, q, c) =>
      applier.remove!({ ...entry, subject: inside(entry.subject) }, q, ctx(c)),
  });
  return {
    name: system.name,
    matches: system.matches,
    appliers: {
      directory: wrap(directoryApplier),
      file: wrap(fileApplier),
    },
    refuses: {},
  };
}
