/**
 * The applier interface: one per resource type and system, in three separate parts. `observe`
 * reads the machine and never changes it; `plan` decides, from that observation alone and
 * read-only, what will be done (a {@linkcode Plan}: the result and the steps); `act` executes
 * exactly that plan. A dry run stops at the plan, so what it says would change is what the apply
 * does: both are the same plan.
 *
 * @module
 */

import type { Declaration, Resource, ResourceType } from "../lib/declaration.ts";
import type { FootprintEntry, Intent, Original, SourceName } from "./store.ts";

/**
 * What applying did to one resource (docs/design.md, "Apply result"). `restored`: a resource that
 * left its source's declaration had taken over something that existed before, and that original
 * (content, mode, owner) was put back.
 */
export type Change = "created" | "updated" | "unchanged" | "removed" | "restored" | "forgotten";

/**
 * The footprint as one source's appliers see it: look-ups and journaled creations are that
 * source's, and takeovers save their originals in the state directory.
 */
export interface SourceFootprint {
  /** The source being applied. */
  readonly source: SourceName;
  /** The entry for this resource in this source's footprint. */
  find(id: string, type: FootprintEntry["type"], subject: string): FootprintEntry | undefined;
  /**
   * Journals, durably, that this source is about to create `subject`.
   *
   * @throws {StoreError} when the journal cannot be written.
   */
  intend(intent: Omit<Intent, "source">): Promise<void>;
  /**
   * Journals that this source is about to create `subject`, not yet durably: nothing it
   * announces may appear before a later {@linkcode SourceFootprint.durable} resolves.
   *
   * @throws {StoreError} when the journal cannot be written.
   */
  journal(intent: Omit<Intent, "source">): void;
  /**
   * Makes every intent journaled so far durable; callers waiting together share one fdatasync.
   *
   * @throws {StoreError} when the journal cannot be synced.
   */
  durable(): Promise<void>;
  /**
   * Saves what a path held before it is taken over; returns the copy's name.
   *
   * @throws {StoreError} when it cannot be saved (nothing may then be overwritten).
   */
  saveOriginal(subject: string, content: Uint8Array): Promise<string>;
  /**
   * Reads a saved original's copy.
   *
   * @throws {StoreError} when it cannot be read.
   */
  readOriginal(copy: string): Promise<Uint8Array>;
}

/**
 * Accounts and groups of the machine, name to id: read when an apply begins, and read again after
 * each step that can change them (an `action` or a `package` that changed something), so that an
 * owner created earlier in the same declaration is found by the paths declared after it.
 */
export interface Ids {
  users: Map<string, number>;
  groups: Map<string, number>;
  /**
   * A dry run only: the first resource of this run that can change accounts (an `action`, a
   * `package`) and whose plan would change something. A dry run does not run it, so an owner or
   * group it would create is not there to read: a path declared after it names it as such
   * rather than fail.
   */
  pending?: { source: SourceName; id: string; type: ResourceType };
}

/** What every applier is given. */
export interface ApplyContext {
  /**
   * A dry run: the apply stops at each resource's plan, so nothing is changed. Plans read it to
   * say more for people (a diff), and `remove` to change nothing.
   */
  dryRun: boolean;
  /** This source's footprint: creations are journaled there before they happen. */
  store: SourceFootprint;
  ids: Ids;
  /** The whole declaration being applied: an applier may observe all of its type at once. */
  declaration: Declaration;
  /**
   * Paths written (created or replaced) so far in this apply, e.g. a unit file, so that a later
   * resource can react (a service applier reloads its manager after a unit file changed).
   */
  written: Set<string>;
  /** Scratch space for one apply, per applier (e.g. one `systemctl show` for every unit). */
  cache: Map<string, unknown>;
}

/** The outcome of converging one resource. */
export interface Converged {
  change: Exclude<Change, "removed" | "restored" | "forgotten">;
  /** Whether this host created the thing (now or before). */
  created: boolean;
  /** What the path was before this host first applied it, saved now (a takeover). */
  original?: Original;
  /**
   * What would change, for people (a unified diff, `mode 0666 -> 0644`, `state inactive ->
   * running`, a package to install and whether the package manager knows it, a container to
   * create or replace and why): set by a plan, reported by a dry run only. Several lines at
   * most a few KiB.
   */
  detail?: string;
}

/** A resource that could not be converged; the message names the cause. */
export class ResourceError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ResourceError";
  }
}

/**
 * What an applier will do to one resource, decided from its observation alone. Each applier
 * extends it with the typed steps its `act` executes (a discriminated union or a record of
 * steps); these two fields are common to all.
 */
export interface Plan {
  /**
   * What the apply reports and the dry run says: its `detail` is the dry run's text (set in a
   * dry run; an apply may leave it out).
   */
  result: Converged;
  /**
   * The steps `act` takes, in order, each said in a few words (`systemctl enable`,
   * `apt-get install hello`, `replace container web: its image changed`); empty when nothing
   * is to be done. A dry run and the apply that follows it have the same steps.
   */
  steps: string[];
}

/**
 * An `act` split in two (see {@linkcode Applier.prepare}): the durable work, begun and not yet
 * visible, and the visible effect, made later and in declaration order.
 */
export interface Prepared {
  /**
   * Waits until the preparation is durable (a temporary file written and fsync'd, the creation's
   * journal entry fdatasync'd). Still nothing is visible.
   *
   * @throws {ResourceError} (or a StoreError) when it could not be prepared; its own leftovers
   *   (a temporary file) are removed before it rejects.
   */
  ready(): Promise<void>;
  /**
   * Makes the effect visible (a rename, a `mkdir`), only after `ready` resolved; returns what
   * `act` would have returned.
   *
   * @throws {ResourceError} when it cannot; nothing of it is left then.
   */
  commit(): Promise<Converged>;
  /** Undoes the preparation (removes a temporary file), when an earlier resource failed. */
  discard(): void;
  /**
   * True when `commit` changes nothing on the machine (the resource is already as declared, and
   * nothing of this host's stands beside it to consume): it still commits in its turn, but no
   * later resource of its group need be kept from observing its path.
   */
  inert?: boolean;
}

/** Converges resources of one type. */
export interface Applier<
  R extends Resource = Resource,
  O = unknown,
  P extends Plan = Plan,
  Q extends RemovalPlan = RemovalPlan,
> {
  /** Reads the machine's state for `resource`. Never changes anything. */
  observe(resource: R, context: ApplyContext): Promise<O>;
  /**
   * Decides what `act` will do, from what `observe` saw. Changes nothing on the machine (it may
   * read more, e.g. a file for a dry run's diff, or whether a package archive has a name); its
   * only writes are the apply's own bookkeeping in `context` (`written`, `cache`), so that later
   * resources of a dry run are planned as the apply would plan them.
   *
   * @throws {ResourceError} naming the cause when the resource cannot be converged: a dry run
   *   then fails as the apply would, before anything is done.
   */
  plan(resource: R, observed: O, context: ApplyContext): Promise<P>;
  /**
   * Executes exactly `plan` (never a dry run): its steps, in order, reading back what they did.
   * Returns the plan's result without its detail (and with the original a takeover saved).
   *
   * @throws {ResourceError} (or a CommandError) naming the cause when a step fails.
   */
  act(resource: R, plan: P, context: ApplyContext): Promise<Converged>;
  /**
   * Optional: begins executing `plan` (never a dry run) without changing anything visible, so
   * that several resources' durable work (temporary files' fsync, journal entries' fdatasync)
   * overlaps while their visible effects still happen one after the other, in order. Returns
   * undefined when this plan cannot be split (then `act` executes it), e.g. a takeover, or a path
   * whose directory does not exist yet. Executing a prepared plan is `ready`, then `commit`: the
   * same steps `act` takes.
   *
   * @throws {ResourceError} (or a StoreError) naming the cause when it cannot be begun; nothing
   *   is left then.
   */
  prepare?(resource: R, plan: P, context: ApplyContext): Prepared | undefined;
  /**
   * Optional: what can be known, read-only, about every resource of this type in a source before
   * anything of that source is applied (removals included). Each problem returned refuses the
   * whole source, in a dry run and in the apply alike: nothing of it is applied and its footprint
   * is untouched. The container applier asks here whether every pinned image can be had, so that
   * a bundle is not applied up to its first missing image and stopped there.
   *
   * @returns one problem per resource that cannot be applied (its id and why); empty when all can.
   */
  admit?(resources: R[], context: ApplyContext): Promise<{ id: string; message: string }[]>;
  /**
   * Optional: decides, read-only, what removing a footprint entry that is no longer declared will
   * do, from what is there now: what this host created is `removed` (already gone: `removed`,
   * with nothing to do); what it took over is put back as it was when the original was saved
   * (`restored`), or else left (`forgotten`). A dry run stops here; the apply executes the plan
   * with `remove`. Without it, an entry leaving the declaration is `forgotten`: the thing is left
   * as it is (an action's effects, a service, a package).
   *
   * @throws {ResourceError} naming the cause when it cannot be removed (what stands there now is
   *   something else than the original to put back).
   */
  planRemoval?(entry: FootprintEntry, context: ApplyContext): Promise<Q>;
  /**
   * Executes exactly a plan of `planRemoval` (never a dry run; only when its `act` is true).
   * Returns the change made: `forgotten` when the machine changed since the plan so that it is not
   * this host's to remove any more (a directory that holds something now).
   *
   * @throws {ResourceError} naming the cause when a step fails.
   */
  remove?(entry: FootprintEntry, plan: Q, context: ApplyContext): Promise<RemovalPlan["change"]>;
}

/**
 * What removing one footprint entry will do, decided by {@linkcode Applier.planRemoval}; an
 * applier extends it with what its `remove` needs (a container's id).
 */
export interface RemovalPlan {
  change: "removed" | "restored" | "forgotten";
  /** Whether `remove` has anything to do on the machine (false: already gone, or left as is). */
  act: boolean;
}

/** The plan of an entry whose applier has no `planRemoval`: the thing is left as it is. */
export const FORGET: RemovalPlan = { change: "forgotten", act: false };

/** The appliers of one system, by resource type; a type without one is refused by that system. */
export type Appliers = { [T in ResourceType]?: Applier<Extract<Resource, { type: T }>, unknown> };

/** An applier reached for a type its system refuses: a bug, said loudly rather than a value. */
export class UnsupportedError extends Error {
  constructor(type: ResourceType, system: string, why: string) {
    super(
      `Unsupported: ${system} cannot apply ${type} resources (${why}); this applier must never be reached`,
    );
    this.name = "UnsupportedError";
  }
}

/**
 * The applier a partial host carries for a type it refuses: every method throws
 * {@linkcode UnsupportedError}, so "unreachable" fails loudly if it ever stops being true.
 */
export function unsupportedApplier(type: ResourceType, system: string, why: string): Applier {
  const fail = (): never => {
    throw new UnsupportedError(type, system, why);
  };
  return {
    observe: () => Promise.resolve().then(fail),
    plan: () => Promise.resolve().then(fail),
    act: () => Promise.resolve().then(fail),
    planRemoval: () => Promise.resolve().then(fail),
    remove: () => Promise.resolve().then(fail),
  };
}

/**
 * The appliers a partial host carries for the types `refuses` names (type: why), each an
 * {@linkcode unsupportedApplier}: the refusals written once, as the system's `refuses` (what
 * apply checks before anything is applied) and as these.
 */
export function refusedAppliers(
  system: string,
  refuses: Readonly<Partial<Record<ResourceType, string>>>,
): Appliers {
  const appliers: Record<string, Applier> = {};
  for (const [type, why] of Object.entries(refuses)) {
    if (why !== undefined) appliers[type] = unsupportedApplier(type as ResourceType, system, why);
  }
  return appliers;
}

/**
 * An applier whose module is loaded when one of its methods is first called: a dynamic import of
 * a static specifier, so a bundled or compiled host still carries it, while an apply whose
 * declaration never names its type does not load it. It has no `prepare` (only the path appliers
 * have one, and they are loaded with the host); its `admit` is the module's, when it has one. A module that fails to load fails every call.
 */
export function lazyApplier<R extends Resource, O, P extends Plan, Q extends RemovalPlan>(
  load: () => Promise<Applier<R, O, P, Q>>,
): Applier<R, O, P, Q> {
  let loading: Promise<Applier<R, O, P, Q>> | undefined;
  const applier = () => loading ??= load();
  return {
    observe: async (resource, context) => await (await applier()).observe(resource, context),
    plan: async (resource, observed, context) =>
      await (await applier()).plan(resource, observed, context),
    act: async (resource, plan, context) => await (await applier()).act(resource, plan, context),
    // Forwarded whether or not the module has them: without one, the entry is forgotten.
    planRemoval: async (entry, context) => {
      const loaded = await applier();
      return loaded.planRemoval === undefined
        ? FORGET as Q
        : await loaded.planRemoval(entry, context);
    },
    remove: async (entry, plan, context) => {
      const loaded = await applier();
      return loaded.remove === undefined ? plan.change : await loaded.remove(entry, plan, context);
    },
    // Forwarded whether or not the module has one (it is not loaded yet to tell).
    admit: async (resources, context) => {
      const loaded = await applier();
      return loaded.admit === undefined ? [] : await loaded.admit(resources, context);
    },
  };
}
