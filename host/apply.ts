/**
 * Convergent apply of declarations from named sources, each on its own footprint: refuse what
 * this system cannot apply and what another source holds, remove what left the source's
 * declaration (removal first), converge each resource in order and stop at the first failure,
 * save the footprint whatever happened, and record known-good after a clean apply only.
 *
 * @module
 */

import { basename, dirname, join } from "../lib/path.ts";
import { readAccounts, readGroups } from "../lib/accounts.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import {
  type Applier,
  type ApplyContext,
  type Change,
  type Converged,
  FORGET,
  type Ids,
  type Prepared,
} from "./applier.ts";
import type { Declaration, Resource, ResourceType } from "../lib/declaration.ts";
import {
  declarationDigest,
  DeclarationError,
  parseValid,
  subjectOf,
} from "../lib/declaration_base.ts";
import {
  type FootprintEntry,
  isInside,
  type Locations,
  type Migration,
  realLocation,
  type SourceName,
  type SourceOrigin,
  Store,
} from "./store.ts";
import { isPathType, type Subject, SUBJECTS } from "../resources/subjects.ts";
import type { System } from "./system.ts";
import { observePath, tempPathFor } from "./path_state.ts";

/** The file beside the store holding the version that last completed a clean apply. */
export const KNOWN_GOOD_FILE = "known-good";
/** The launcher's consecutive-failure counter, cleared when a reconcile completes. */
export const FAILURES_FILE = "failures";

/** One resource's change. */
export interface ResourceChange {
  id: string;
  type: ResourceType;
  change: Change;
  /** Dry runs only: what would change, for people (see `Converged.detail`). */
  detail?: string;
}

/** One problem: where (a resource id, or a JSON path for a refused input) and what. */
export interface ApplyProblem {
  id?: string;
  path?: string;
  message: string;
}

/**
 * The apply result of one source (docs/design.md, "Apply result"). `refused`: nothing of the source
 * was applied (invalid input, a shape this system cannot apply, a subject another source holds).
 * `failed`: accepted and partly applied; `applied` of `total` says how much ("3 of 8" and "0 of
 * 8" are different machines).
 */
export interface ApplyResult {
  /** The source the result is about: `bundle`, `link`, `local` or a local declaration's name. */
  source: SourceName;
  outcome: "applied" | "refused" | "failed";
  /** Resources of the declaration converged (created, updated or unchanged). */
  applied: number;
  /** Resources in the declaration. */
  total: number;
  changes: ResourceChange[];
  problems: ApplyProblem[];
  /** sha256 of the declaration's bytes, `sha256:<hex>`. */
  declaration: string;
  /** Present and true when nothing was changed because `--dry-run` asked so. */
  dryRun?: boolean;
}

/**
 * One source's declaration as a run is given it: parsed, or refused before (its problems).
 * A source refused before keeps its footprint untouched and gives none of it up.
 */
export interface SourceInput {
  name: SourceName;
  origin: SourceOrigin;
  /** The file it was read from, when it is one. */
  file?: string;
  /** sha256 of the declaration's bytes. */
  digest: string;
  /** The declaration; absent when `refused` says why it was not read. */
  declaration?: Declaration;
  refused?: ApplyProblem[];
}

/** Options for {@linkcode applySources}. */
export interface RunOptions {
  system: System;
  /** The state directory (store, journal, originals, known-good, failures). */
  stateDir: string;
  /** Change nothing; say what would change. */
  dryRun?: boolean;
  /** How a store of format 1 gives its records a source; asked only when one is read. */
  migration?: () => Promise<Migration>;
  /**
   * Every local declaration was read from this directory: a source last applied from a file in
   * it (origin `declarations`) that is gone now, and not among the inputs, is applied empty in
   * this run, so its footprint is removed.
   */
  departedFrom?: string;
  /**
   * Sources applied only when the store already holds them: the link keeps the bundle of a node
   * that took it (its first `reconcile` raised it), and never begins it on a node that did not (a
   * node joining a mesh must not raise a second substrate). Read under the store's lock.
   */
  heldOnly?: readonly SourceName[];
  /**
   * An operator's move (`apply --take-from SOURCE`): a subject this source holds, and a source of
   * this run declares with the same type, moves to that source (its record keeps whether this host
   * created it and its original) instead of refusing the run. The source keeps what no input of
   * this run declares.
   */
  takeFrom?: SourceName;
  /**
   * Wait for the state directory's lock with the thread blocked (`Store.load`'s `blockingLock`):
   * a one-shot command (`apply`) has nothing else to do meanwhile; the link never sets it.
   */
  blockingLock?: boolean;
}

/**
 * The most resources prepared together before their effects are made visible: enough to overlap
 * the syncs of a directory's files, few enough that a failure discards little.
 */
const GROUP_SIZE = 32;

/** The declaration a removed local declaration is applied as: nothing. */
const EMPTY_DECLARATION = '{"version":1,"resources":[]}';

/** Options for {@linkcode applyDeclaration}. */
export interface ApplyOptions extends RunOptions {
  /** The declaration's digest, for the result. */
  digest: string;
  /** The host version recorded as known-good after a clean apply. */
  version: string;
  /** The source applied (default `local`). */
  source?: SourceName;
  /** Where the source comes from (default `command`). */
  origin?: SourceOrigin;
  /** The file it was read from. */
  file?: string;
}

/**
 * Why `system` cannot apply `resource`, or undefined when it can.
 */
export function refusal(system: System, type: ResourceType): string | undefined {
  const named = system.refuses[type];
  if (named !== undefined) {
    const can = Object.keys(system.appliers).filter((t) =>
      system.refuses[t as ResourceType] === undefined
    );
    return `${system.name} refuses ${type} resources: ${named} (it applies ${can.join(", ")})`;
  }
  if (system.appliers[type] === undefined) {
    const can = Object.keys(system.appliers).join(", ");
    return `this ${system.name} host has no ${type} applier yet (it applies: ${can})`;
  }
  return undefined;
}

/**
 * Applies one source's `declaration` (see {@linkcode applySources}).
 *
 * @throws {StoreError} when the store exists and cannot be read, or cannot be written.
 */
export async function applyDeclaration(
  declaration: Declaration,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const [result] = await applySources([{
    name: options.source ?? "local",
    origin: options.origin ?? "command",
    ...(options.file !== undefined ? { file: options.file } : {}),
    digest: options.digest,
    declaration,
  }], options);
  return result!;
}

/**
 * What a resource is about, in the space where two sources can collide (resources/subjects.ts; no
 * actions): a path by its real location ({@linkcode realLocation}), so that one file reached by
 * two paths is one.
 */
function spaceKey(type: ResourceType, subject: string, locations: Locations): string | undefined {
  const { space }: Subject = SUBJECTS[type];
  if (space === undefined) return undefined; // an action's subject is its id, its source's own
  return `${space}\0${space === "path" ? realLocation(subject, locations) : subject}`;
}

/**
 * Applies several sources in one run, on one state directory under one lock, in the order
 * given. An apply run is a value computed before it acts: first the run's plan
 * ({@linkcode RunPlan}, decided from the inputs, the footprint and the machine as read, changing
 * nothing), then each accepted source's steps at its turn (its removals, then its resources),
 * each step planned from what the machine is when its turn comes (after the steps before it) and
 * then executed. A dry run computes the same plans and stops there: what it says is what the
 * apply does. Each source is refused or applied as a whole, on its own footprint:
 *
 * - refused when its input was, when this system cannot apply a type it declares, when it
 *   declares something inside the state directory, when two of its resources name one path by
 *   its real location (through a symlinked or bind-mounted directory), when it declares a
 *   subject (path, unit, package, container name) that another source holds (its record says so)
 *   or that a source earlier in this run declares, or when an applier's `admit` says a resource
 *   cannot be applied: nothing of it is applied, and its footprint is untouched. A path is
 *   compared by its real location ({@linkcode realLocation}): one file reached by two paths is
 *   one subject;
 * - a subject held by a source of this run that no longer declares it, and declared by another
 *   source of this run, is moved to that source (its record keeps whether this host created it
 *   and its original): never removed and made again;
 * - otherwise it removes what it applied and no longer declares (removal first; a path that a
 *   record still held, of this source or another, names by another path is forgotten, never
 *   removed through its alias), then converges each resource in order and stops at its first
 *   failure.
 *
 * The footprint is saved whatever happened. Never throws for a resource that fails (that is the
 * result); throws only when the host itself cannot work.
 *
 * @returns one result per source, in the order applied: with `departedFrom`, the sources of
 *   removed local declarations first, then the inputs in the order given.
 * @throws {StoreError} when the store exists and cannot be read, or cannot be written.
 */
export async function applySources(
  given: SourceInput[],
  options: RunOptions,
): Promise<ApplyResult[]> {
  const inputs = [...given];
  const dryRun = options.dryRun ?? false;
  /** The directories this run read the identity of, before it changed anything. */
  const locations: Locations = new Map();
  const early = new Map<string, ApplyProblem[]>();
  for (const input of inputs) {
    const refused = refusedBeforeReading(input, options, locations);
    if (refused.length > 0) early.set(input.name, refused);
  }
  if (options.departedFrom === undefined && inputs.every((i) => early.has(i.name))) {
    return inputs.map((i) => refusedResult(i, early.get(i.name)!, dryRun));
  }

  const store = await Store.load(options.stateDir, {
    create: !dryRun,
    readOnly: dryRun,
    exists: async (intent) => {
      if (intent.type === "file" && !dryRun) {
        // A creation that was killed may have left its temporary file: it is this host's own.
        await Deno.remove(tempPathFor(intent.subject)).catch(() => {});
      }
      // Only a path can be checked here. A package or a container is never taken to exist from
      // a journaled intent alone (a failed install is not an install); their appliers know
      // their own: packages are never removed, and containers are removed by their label.
      return isPathType(intent.type)
        ? (await observePath(intent.subject)).kind !== "absent"
        : false;
    },
    ...(options.migration ? { migration: options.migration } : {}),
    ...(options.blockingLock ? { blockingLock: true } : {}),
  });
  const results = new Map<string, ApplyResult>();
  try {
    if (options.heldOnly !== undefined) {
      // Held: the store knows the source, or holds a record of it.
      const held = new Set([...store.sources().keys(), ...store.entries().map((e) => e.source)]);
      for (let i = inputs.length - 1; i >= 0; i--) {
        const name = inputs[i]!.name;
        if (options.heldOnly.includes(name) && !held.has(name)) inputs.splice(i, 1);
      }
    }
    // A local declaration whose file was removed: its source is applied empty, first.
    if (options.departedFrom !== undefined) {
      inputs.unshift(...await departed(inputs, store, options));
    }
    // Read again after each action or package that changed something (see readIds).
    const ids = await readIds({ users: new Map(), groups: new Map() });
    const run = await planRun(inputs, { store, locations, early, ids, options });
    for (const source of run.sources) {
      if ("refused" in source) {
        results.set(source.input.name, refusedResult(source.input, source.refused, dryRun));
      }
    }
    // Every move is made before any source's removals: a subject moving to a later source is
    // never removed by an earlier one.
    if (!dryRun) {
      for (const { entry, id, subject, to } of run.moves) {
        store.rekey(entry, { source: to, id, subject });
      }
    }
    for (const source of run.sources) {
      if ("refused" in source) continue;
      const { input, context } = source;
      results.set(
        input.name,
        await applyOne(input, store, context, { plan: run, system: options.system }),
      );
      if (dryRun) continue;
      const held = store.entries().some((e) => e.source === input.name);
      if (!held && context.declaration.resources.length === 0) store.forgetSource(input.name);
      else {
        const before = store.sources().get(input.name);
        store.noteSource(input.name, {
          origin: input.origin,
          ...(input.file !== undefined ? { file: input.file } : {}),
          declaration: input.digest,
          applied: before?.declaration === input.digest ? before.applied : new Date().toISOString(),
        });
      }
    }
  } finally {
    if (dryRun) store.close();
    else {
      try {
        await store.save();
      } finally {
        store.release();
      }
    }
  }
  return inputs.map((i) => results.get(i.name)!);
}

/**
 * A run's plan, decided before anything of the run is done: each source refused (and why) or
 * accepted (its context), and the footprint entries that move from one source to another.
 * Each accepted source's steps are planned at its turn (see {@linkcode applyOne}).
 */
export interface RunPlan {
  /** Every source of the run, in the order applied. */
  sources: SourcePlan[];
  /** Subjects held by a source that gives them up, taken by a source that declares them. */
  moves: { entry: FootprintEntry; to: SourceName; id: string; subject: string }[];
  /** Entries the plans so far forget (a dry run leaves them in the store): they hold nothing. */
  dropped: Set<FootprintEntry>;
}

/** One source of a {@linkcode RunPlan}. */
export type SourcePlan =
  | { input: SourceInput; refused: ApplyProblem[] }
  | { input: SourceInput; context: ApplyContext };

/** What refuses a source before its footprint is read: its input, this system, the state dir. */
function refusedBeforeReading(
  input: SourceInput,
  options: RunOptions,
  locations: Locations,
): ApplyProblem[] {
  if (input.declaration === undefined) return input.refused ?? [{ message: "No declaration" }];
  const own = options.stateDir.replace(/\/+$/, "");
  const refused: ApplyProblem[] = [];
  for (const r of input.declaration.resources) {
    const why = refusal(options.system, r.type);
    if (why !== undefined) refused.push({ id: r.id, message: why });
    // The state directory itself may be declared (its mode held, as the Debian bundle does);
    // nothing inside it, which only the host writes.
    const path = isPathType(r.type) ? subjectOf(r) : undefined;
    const inside = path !== undefined &&
      (path.startsWith(`${own}/`) || (path === own && r.type === "file"));
    // Or reached another way (a symlinked or bind-mounted directory), by real location.
    const alias = path !== undefined && !inside && isInside(path, own, locations);
    if (inside || alias) {
      refused.push({
        id: r.id,
        message: `"${path}" is inside this host's state directory "${own}"${
          alias ? " (reached through another path)" : ""
        }, which only the host writes`,
      });
    }
  }
  refused.push(...aliasedPaths(input.name, input.declaration.resources, locations));
  return refused;
}

/** A refused source's result: nothing of it applied. */
function refusedResult(input: SourceInput, problems: ApplyProblem[], dryRun: boolean): ApplyResult {
  return {
    source: input.name,
    outcome: "refused",
    applied: 0,
    total: input.declaration?.resources.length ?? 0,
    changes: [],
    problems,
    declaration: input.digest,
    ...(dryRun ? { dryRun: true } : {}),
  };
}

/** The sources of local declarations whose file is gone, each as an empty declaration. */
async function departed(
  inputs: readonly SourceInput[],
  store: Store,
  options: RunOptions,
): Promise<SourceInput[]> {
  const gone: SourceInput[] = [];
  for (const [name, info] of store.sources()) {
    if (info.origin !== "declarations" || inputs.some((i) => i.name === name)) continue;
    const file = info.file ?? join(options.stateDir, `${name}.json`);
    if (await Deno.lstat(file).then(() => true, () => false)) continue;
    gone.push({
      name,
      origin: "declarations",
      file,
      digest: await declarationDigest(EMPTY_DECLARATION),
      declaration: { version: 1, resources: [] },
    });
  }
  return gone;
}

/**
 * Decides the run (changing nothing): which sources are refused and why (`early`: before the
 * footprint was read; then a subject another source holds or declares first; then what an
 * applier's `admit` refuses), and which footprint entries move to another source.
 */
async function planRun(
  inputs: readonly SourceInput[],
  run: {
    store: Store;
    locations: Locations;
    early: ReadonlyMap<string, ApplyProblem[]>;
    ids: Ids;
    options: RunOptions;
  },
): Promise<RunPlan> {
  const { store, locations, options } = run;
  const plan: RunPlan = { sources: [], moves: [], dropped: new Set() };
  const accepted = inputs.filter((i) => !run.early.has(i.name));
  // Who holds each subject now, and what each source of this run declares.
  const holders = new Map<string, FootprintEntry>();
  for (const e of store.entries()) {
    const k = spaceKey(e.type, e.subject, locations);
    if (k !== undefined && !holders.has(k)) holders.set(k, e);
  }
  const declares = new Map<string, Set<string>>();
  for (const input of accepted) {
    const keys = new Set<string>();
    for (const r of input.declaration!.resources) {
      const k = spaceKey(r.type, subjectOf(r), locations);
      if (k !== undefined) keys.add(k);
    }
    declares.set(input.name, keys);
  }
  // Sources that gave up nothing: refused before reading, or by this system. A refused source
  // keeps what it holds.
  const givesUp = (source: string, k: string) => {
    const keys = declares.get(source);
    return keys !== undefined && !keys.has(k);
  };
  /** Each subject declared by a source accepted in this run: the source, and its path. */
  const claimed = new Map<string, { source: SourceName; subject: string }>();
  for (const input of inputs) {
    const early = run.early.get(input.name);
    if (early !== undefined) {
      plan.sources.push({ input, refused: early });
      continue;
    }
    const declaration = input.declaration!;
    const conflicts: ApplyProblem[] = [];
    const moves: RunPlan["moves"] = [];
    for (const r of declaration.resources) {
      const subject = subjectOf(r);
      const k = spaceKey(r.type, subject, locations);
      if (k === undefined) continue;
      const holder = holders.get(k);
      const first = claimed.get(k);
      if (holder !== undefined && holder.source !== input.name) {
        const movable = givesUp(holder.source, k) || holder.source === options.takeFrom;
        if (movable && holder.type === r.type && first === undefined) {
          moves.push({ entry: holder, to: input.name, id: r.id, subject });
        } else {
          conflicts.push({
            id: r.id,
            message:
              `Cannot apply ${SUBJECTS[r.type].what} "${subject}" in source "${input.name}": ` +
              `source "${holder.source}" holds it (its resource "${holder.id}"${
                alias(subject, holder.subject)
              }); the whole source "${input.name}" is refused`,
          });
        }
      } else if (first !== undefined && first.source !== input.name) {
        conflicts.push({
          id: r.id,
          message:
            `Cannot apply ${SUBJECTS[r.type].what} "${subject}" in source "${input.name}": ` +
            `source "${first.source}" declares it too${
              first.subject === subject ? "" : ` (as "${first.subject}": one path reached by two)`
            } and was applied first in this run; the whole source "${input.name}" is refused`,
        });
      }
    }
    if (conflicts.length > 0) {
      plan.sources.push({ input, refused: conflicts });
      continue;
    }
    for (const r of declaration.resources) {
      const k = spaceKey(r.type, subjectOf(r), locations);
      if (k !== undefined) claimed.set(k, { source: input.name, subject: subjectOf(r) });
    }
    for (const move of moves) {
      // It takes the path as the source declares it: the same thing, named as it is now.
      holders.set(spaceKey(move.entry.type, move.entry.subject, locations)!, {
        ...move.entry,
        source: input.name,
        id: move.id,
        subject: move.subject,
      });
    }
    plan.moves.push(...moves);
    plan.sources.push({
      input,
      context: contextOf(input, declaration, store, options.dryRun ?? false, run.ids),
    });
  }
  // What can be known before anything is done (every pinned image can be had): a problem
  // refuses the whole source, its footprint untouched.
  for (const [i, source] of plan.sources.entries()) {
    if ("refused" in source) continue;
    const inadmissible = await admit(source.context.declaration, source.context, options.system);
    if (inadmissible.length > 0) plan.sources[i] = { input: source.input, refused: inadmissible };
  }
  return plan;
}

/** The context one source's resources are observed, planned and applied in. */
function contextOf(
  input: SourceInput,
  declaration: Declaration,
  store: Store,
  dryRun: boolean,
  ids: Ids,
): ApplyContext {
  const source = input.name;
  return {
    dryRun,
    store: {
      source,
      find: (id, type, subject) => store.find(source, id, type, subject),
      intend: (intent) => store.intend({ ...intent, source }),
      journal: (intent) => store.journal({ ...intent, source }),
      durable: () => store.durable(),
      saveOriginal: (subject, content) => store.saveOriginal(subject, content),
      readOriginal: (copy) => store.readOriginal(copy),
    },
    ids,
    declaration,
    written: new Set(),
    cache: new Map(),
  };
}

/**
 * Asks each applier that can (its `admit`) about the source's resources of its type at once,
 * before anything of the run is done. Every problem is returned, in declaration order.
 */
async function admit(
  declaration: Declaration,
  context: ApplyContext,
  system: System,
): Promise<ApplyProblem[]> {
  const problems: ApplyProblem[] = [];
  const types = [...new Set(declaration.resources.map((r) => r.type))];
  for (const type of types) {
    const applier = system.appliers[type] as Applier | undefined;
    if (applier?.admit === undefined) continue;
    const of = declaration.resources.filter((r) => r.type === type);
    problems.push(...await applier.admit(of, context));
  }
  const order = new Map(declaration.resources.map((r, i) => [r.id, i]));
  return problems.sort((a, b) => (order.get(a.id ?? "") ?? 0) - (order.get(b.id ?? "") ?? 0));
}

/**
 * One step of a source's removal, decided from its footprint and the real locations of paths as
 * the machine is at its turn: `rename`, the same thing declared under an id or path the
 * footprint lacks (its record is kept, under the declared name); `forget`, a path another record
 * still holds under another name (the record goes, the thing stays); `remove`, its applier plans
 * and executes the removal; `stop`, no applier of its type in this build (the apply stops there,
 * the record kept).
 */
export type RemovalStep =
  | { step: "rename"; entry: FootprintEntry; id: string; subject: string }
  | { step: "forget"; entry: FootprintEntry }
  | { step: "remove"; entry: FootprintEntry; applier: Applier }
  | { step: "stop"; entry: FootprintEntry; message: string };

/**
 * Plans a source's removals (changing nothing): what it applied and no longer declares, last
 * applied first and never a directory before what it holds.
 */
function planRemovals(
  source: SourceName,
  declaration: Declaration,
  store: Store,
  run: { plan: RunPlan; system: System },
): RemovalStep[] {
  const declared = new Set(declaration.resources.map((r) => key(r.id, r.type, subjectOf(r))));
  const moved = new Set(run.plan.moves.map((m) => m.entry));
  const leaving = store.entries().filter((e) =>
    e.source === source && !moved.has(e) && !declared.has(key(e.id, e.type, e.subject))
  ).reverse();
  // Last applied first, and never a directory before what it holds (a record moved in from
  // another source keeps its older place in the order).
  const ordered: FootprintEntry[] = [];
  for (const e of leaving) {
    const i = ordered.findIndex((o) =>
      o.type === "directory" && isPathType(e.type) &&
      e.subject.startsWith(`${o.subject}/`)
    );
    if (i === -1) ordered.push(e);
    else ordered.splice(i, 0, e);
  }
  // Paths compared by their real location as the machine is now (an earlier source of this run
  // may have changed it): read again for this source's removals, each path once.
  const now: Locations = new Map();
  const leavingNow = new Set(ordered);
  /** The declared paths by real location, in declaration order. */
  let declaredAt: Map<string, Resource[]> | undefined;
  /** The declared resources a record leaving is renamed to, by key. */
  const renamedTo = new Set<string>();
  /** The real locations records renamed here hold. */
  const renamedAt = new Set<string>();
  /** The real locations every record that stays holds (of any source). */
  let held: Set<string> | undefined;
  const steps: RemovalStep[] = [];
  for (const entry of ordered) {
    // Renamed, not leaving: the same thing is declared under an id the footprint lacks, or under
    // another path to it (a symlinked parent directory). It keeps its entry (and whether this
    // host created it, and its original) instead of being removed and made again, which a
    // directory holding declared files could not even be.
    const here = isPathType(entry.type) ? realLocation(entry.subject, now) : undefined;
    if (here !== undefined && declaredAt === undefined) {
      declaredAt = new Map();
      for (const r of declaration.resources) {
        if (!isPathType(r.type)) continue;
        const at = realLocation(subjectOf(r), now);
        declaredAt.set(at, [...declaredAt.get(at) ?? [], r]);
      }
    }
    const renamed = (here !== undefined ? declaredAt!.get(here) ?? [] : declaration.resources)
      .find((r) =>
        r.type === entry.type && (here !== undefined || subjectOf(r) === entry.subject) &&
        !store.find(source, r.id, r.type, subjectOf(r)) &&
        !renamedTo.has(key(r.id, r.type, subjectOf(r)))
      );
    if (renamed !== undefined) {
      steps.push({ step: "rename", entry, id: renamed.id, subject: subjectOf(renamed) });
      renamedTo.add(key(renamed.id, renamed.type, subjectOf(renamed)));
      if (here !== undefined) renamedAt.add(here);
      continue;
    }
    // Another record still holds this path under another name (of another source, or of this
    // one and declared still, or renamed above): removing or restoring it here would delete,
    // through the alias, what that record holds. The record is forgotten; the thing stays.
    if (here !== undefined && held === undefined) {
      held = new Set();
      for (const e of store.entries()) {
        if (leavingNow.has(e) || run.plan.dropped.has(e) || !isPathType(e.type)) continue;
        held.add(realLocation(e.subject, now));
      }
    }
    if (here !== undefined && (held!.has(here) || renamedAt.has(here))) {
      steps.push({ step: "forget", entry });
      run.plan.dropped.add(entry);
      continue;
    }
    const applier = run.system.appliers[entry.type] as Applier | undefined;
    if (applier === undefined) {
      const why = refusal(run.system, entry.type);
      steps.push({
        step: "stop",
        entry,
        message: `Cannot remove ${entry.type} "${entry.subject}": ${why}`,
      });
      break;
    }
    steps.push({ step: "remove", entry, applier });
  }
  return steps;
}

/**
 * Applies one accepted source on its own footprint, step by step: its removals first (planned
 * by {@linkcode planRemovals}), then each declared resource in order; each step is observed and
 * planned at its turn, from the machine the steps before it left. A dry run stops at each plan:
 * its result says what each step would change, and nothing is.
 */
async function applyOne(
  input: SourceInput,
  store: Store,
  context: ApplyContext,
  run: { plan: RunPlan; system: System },
): Promise<ApplyResult> {
  const source = input.name;
  const declaration = context.declaration;
  const dryRun = context.dryRun;
  const changes: ResourceChange[] = [];
  const problems: ApplyProblem[] = [];
  // The keys in the order the result has always been printed in (the link's line, --json).
  const end = (outcome: "applied" | "failed", applied: number): ApplyResult => ({
    outcome,
    applied,
    total: declaration.resources.length,
    changes,
    problems,
    source,
    declaration: input.digest,
    ...(dryRun ? { dryRun: true } : {}),
  });

  for (const step of planRemovals(source, declaration, store, run)) {
    const { entry } = step;
    if (step.step === "stop") {
      problems.push({ id: entry.id, message: step.message });
      return end("failed", 0);
    }
    if (step.step === "rename") {
      if (!dryRun) store.rekey(entry, { id: step.id, subject: step.subject });
      continue;
    }
    try {
      let change: Change = "forgotten";
      if (step.step === "remove") {
        const plan = await step.applier.planRemoval?.(entry, context) ?? FORGET;
        change = plan.change;
        if (!dryRun && plan.act) change = await step.applier.remove!(entry, plan, context);
      }
      changes.push({ id: entry.id, type: entry.type, change });
      if (!dryRun) store.drop(entry);
    } catch (error) {
      problems.push({ id: entry.id, message: messageOf(error) });
      return end("failed", 0);
    }
  }

  const converged = dryRun
    ? await planResources(declaration, context, run.system, changes)
    : await actResources(declaration, context, {
      system: run.system,
      record: (resource, result) => {
        changes.push({ id: resource.id, type: resource.type, change: result.change });
        recordIn(store, source, resource, result);
      },
    });
  if (converged.problem !== undefined) {
    problems.push(converged.problem);
    return end("failed", converged.applied);
  }
  return end("applied", converged.applied);
}

/** How far a source's resources got: how many converged, and the failure that stopped them. */
interface Converging {
  applied: number;
  problem?: ApplyProblem;
}

/**
 * A dry run's resources: each observed and planned in order, nothing executed; each plan's
 * change and detail pushed on `changes`. An account-changing resource that would change something
 * is noted as pending (`Ids.pending`), so that a path declared after it names the owner it would
 * create rather than fail.
 */
async function planResources(
  declaration: Declaration,
  context: ApplyContext,
  system: System,
  changes: ResourceChange[],
): Promise<Converging> {
  let applied = 0;
  for (const resource of declaration.resources) {
    const applier = system.appliers[resource.type] as Applier<Resource>;
    try {
      const plan = await applier.plan(resource, await applier.observe(resource, context), context);
      const { change, detail } = plan.result;
      changes.push({ id: resource.id, type: resource.type, change, ...(detail ? { detail } : {}) });
      if (changesAccounts(resource.type) && change !== "unchanged") {
        context.ids.pending ??= {
          source: context.store.source,
          id: resource.id,
          type: resource.type,
        };
      }
      applied++;
    } catch (error) {
      return { applied, problem: { id: resource.id, message: messageOf(error) } };
    }
  }
  return { applied };
}

/** Records a converged resource in its source's footprint, unless the record would stay as is. */
function recordIn(store: Store, source: SourceName, resource: Resource, result: Converged): void {
  const known = store.find(source, resource.id, resource.type, subjectOf(resource));
  // Unchanged and recorded so already (created kept, no original to add): the record would
  // stay as it is.
  const kept = known !== undefined && result.change === "unchanged" && !result.original &&
    (known.created || !result.created);
  if (kept) return;
  store.record({
    source,
    id: resource.id,
    type: resource.type,
    subject: subjectOf(resource),
    created: result.created,
    applied: result.change === "unchanged" && known ? known.applied : new Date().toISOString(),
    ...(result.original ? { original: result.original } : {}),
  });
}

/**
 * Converges every declared resource, in order (later ones may depend on earlier ones): each
 * observed, planned, then acted on. A resource whose applier can prepare its plan joins a group:
 * the group's durable work (temporary files fsync'd, journal entries made durable by one
 * fdatasync) runs together, then each effect is made visible in declaration order, stopping at
 * the first that failed (what follows it is discarded, never visible). Any other resource first
 * completes the group before it, so it sees the machine as a one-by-one apply would. After a
 * resource that can change accounts changed something, they are read again (an owner it made is
 * found by the paths after it).
 */
async function actResources(
  declaration: Declaration,
  context: ApplyContext,
  options: { system: System; record: (resource: Resource, result: Converged) => void },
): Promise<Converging> {
  let applied = 0;
  const record = (resource: Resource, result: Converged) => {
    options.record(resource, result);
    applied++;
  };
  let group: { resource: Resource; prepared: Prepared }[] = [];
  // The paths of the group's members that change something (an inert member changes nothing: it
  // is kept apart from nothing) as the kernel resolves them (symlinked parent directories
  // followed: two names of one file must not be prepared side by side), and every directory above
  // them (a member's commit may create them: a path among them is not clear).
  const subjects = new Set<string>();
  const above = new Set<string>();
  const realParents = new Map<string, string>();
  /** Completes the group; the failing resource and its problem when one failed. */
  const complete = async (): Promise<ApplyProblem | undefined> => {
    const members = group;
    group = [];
    subjects.clear();
    above.clear();
    realParents.clear(); // what the group made may be a parent now
    const ready = await Promise.allSettled(members.map((m) => m.prepared.ready()));
    for (const [i, { resource, prepared }] of members.entries()) {
      const done = ready[i]!;
      let problem: ApplyProblem | undefined;
      if (done.status === "rejected") {
        problem = { id: resource.id, message: messageOf(done.reason) };
      } else {
        try {
          record(resource, await prepared.commit());
        } catch (error) {
          problem = { id: resource.id, message: messageOf(error) };
        }
      }
      if (problem !== undefined) {
        for (const later of members.slice(i + 1)) later.prepared.discard();
        return problem;
      }
    }
    return undefined;
  };
  for (const resource of declaration.resources) {
    const applier = options.system.appliers[resource.type] as Applier<Resource>;
    try {
      // Only a path that nothing of the group stands at, above or below (a path declared twice,
      // under another name through a symlink, a file declared where a later resource expects a
      // directory, a directory a member's creation makes as its parent) is observed while the
      // group is not visible yet: it observes its own path alone. Anything else (a service
      // reading its unit file, an action) sees the group done.
      const subject = subjectOf(resource);
      const path = isPathType(resource.type) && applier.prepare !== undefined;
      // While no member changes anything (a no-op's groups), every path is clear: none is
      // resolved.
      const real = path && subjects.size > 0 ? resolvedPath(subject, realParents) : undefined;
      const clear = path &&
        (real === undefined ||
          (!subjects.has(real) && !above.has(real) &&
            !ancestors(real).some((a) => subjects.has(a))));
      if (!clear && group.length > 0) {
        const failed = await complete();
        if (failed !== undefined) return { applied, problem: failed };
      }
      const plan = await applier.plan(resource, await applier.observe(resource, context), context);
      let prepared = applier.prepare?.(resource, plan, context);
      if (prepared === undefined && group.length > 0) {
        const failed = await complete();
        if (failed !== undefined) return { applied, problem: failed };
        // What it waited for may be there now (its directory).
        prepared = applier.prepare?.(resource, plan, context);
      }
      if (prepared !== undefined) {
        group.push({ resource, prepared });
        if (!prepared.inert) {
          const key = real ?? resolvedPath(subject, realParents);
          subjects.add(key);
          for (const a of ancestors(key)) above.add(a);
        }
        if (group.length >= GROUP_SIZE) {
          const failed = await complete();
          if (failed !== undefined) return { applied, problem: failed };
        }
        continue;
      }
      const done = await applier.act(resource, plan, context);
      record(resource, done);
      // It may have made an account or a group (useradd, a package's postinst): read them
      // again, so that a path declared after it finds its owner.
      if (changesAccounts(resource.type) && done.change !== "unchanged") {
        await readIds(context.ids);
      }
      // An action or a package may have made or replaced a directory (a symlink, say); a file or
      // directory resource never does (it refuses a symlink at its path, and a directory it makes
      // resolves as the path was written).
      if (!path) realParents.clear();
    } catch (error) {
      // Those before it come first: they were declared first.
      const failed = group.length > 0 ? await complete() : undefined;
      return { applied, problem: failed ?? { id: resource.id, message: messageOf(error) } };
    }
  }
  const failed = await complete();
  return failed !== undefined ? { applied, problem: failed } : { applied };
}

/**
 * Records `version` as known-good beside the store (one bare line) and clears the launcher's
 * failure counter, together: called after a clean apply only.
 *
 * @throws {Error} when either cannot be written.
 */
export async function recordKnownGood(stateDir: string, version: string): Promise<void> {
  const path = join(stateDir, KNOWN_GOOD_FILE);
  let current: string | undefined;
  try {
    current = await readRegularTextFile(path, { maxBytes: 4096 });
  } catch { /* none yet, unreadable or not a regular file: written again */ }
  if (current !== `${version}\n`) await writeFileAtomic(path, `${version}\n`, { mode: 0o644 });
  try {
    Deno.removeSync(join(stateDir, FAILURES_FILE));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Whether a resource of `type` can create accounts or groups (an action, a package). */
function changesAccounts(type: ResourceType): boolean {
  const subject: Subject = SUBJECTS[type];
  return subject.changesAccounts === true;
}

/**
 * Reads the machine's accounts and groups into `ids` (its maps replaced in place: every source
 * of the run shares them). A machine without /etc/passwd or /etc/group (Android) has no account
 * a declaration can name: an owner named there is then "does not exist", and a declaration
 * naming none applies.
 *
 * @throws {Error} "Cannot read accounts ..." or "Cannot read groups ..." when a file that exists
 *   cannot be read.
 */
async function readIds(ids: Ids): Promise<Ids> {
  const accounts = await readAccounts(undefined, { missingIsEmpty: true });
  const groups = await readGroups(undefined, { missingIsEmpty: true });
  ids.users.clear();
  for (const a of accounts.values()) ids.users.set(a.name, a.uid);
  ids.groups.clear();
  for (const [name, gid] of groups) ids.groups.set(name, gid);
  return ids;
}

/**
 * `path` with the symlinks of its parent directories followed (the longest existing parent
 * resolved by `realpath`, the rest appended as written), the last component as written;
 * `parents` caches each parent's answer for one apply. A parent that cannot be resolved for
 * another reason than not existing is kept as written.
 */
function resolvedPath(path: string, parents: Map<string, string>): string {
  const parent = dirname(path);
  if (parent === path) return path;
  let real = parents.get(parent);
  if (real === undefined) {
    real = resolvedDirectory(parent);
    parents.set(parent, real);
  }
  return join(real, basename(path));
}

function resolvedDirectory(dir: string): string {
  try {
    return Deno.realPathSync(dir);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) return dir;
    const up = dirname(dir);
    return up === dir ? dir : join(resolvedDirectory(up), basename(dir));
  }
}

/**
 * What refuses a declaration that names one path twice by its real location (the same path as
 * written is refused when it is parsed): each later resource naming a path an earlier one names,
 * with both paths as written.
 */
function aliasedPaths(
  source: SourceName,
  resources: readonly Resource[],
  locations: Locations,
): ApplyProblem[] {
  const problems: ApplyProblem[] = [];
  const first = new Map<string, Resource & { path: string }>();
  for (const r of resources) {
    if (r.type !== "file" && r.type !== "directory") continue;
    const k = realLocation(r.path, locations);
    const earlier = first.get(k);
    if (earlier === undefined) first.set(k, r);
    else {
      problems.push({
        id: r.id,
        message: `Cannot apply path "${r.path}" in source "${source}": it is the path ` +
          `"${earlier.path}" of resource "${earlier.id}" reached another way (through a ` +
          `symlinked or bind-mounted directory); one thing is declared once, and the whole ` +
          `source "${source}" is refused`,
      });
    }
  }
  return problems;
}

/** `, as "/real/f": one path reached by two` when `held` names `subject` another way, else "". */
function alias(subject: string, held: string): string {
  return held === subject ? "" : `, as "${held}": one path reached by two`;
}

/** `/a/b/c` -> `/a/b`, `/a`, `/`. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let p = path, up = dirname(p); up !== p; p = up, up = dirname(p)) out.push(up);
  return out;
}

function key(id: string, type: string, subject: string): string {
  return `${id}\0${type}\0${subject}`;
}

/**
 * Parses a declaration from its bytes as source `name`: the declaration, or its problems (every
 * one, with its JSON path) as a refused input.
 *
 * @param trusted whether `action` resources are allowed (a local file: yes; the link: no).
 */
export async function readSource(
  bytes: Uint8Array,
  source: { name: SourceName; origin: SourceOrigin; file?: string; trusted: boolean },
): Promise<SourceInput> {
  // Hashed on a thread of Deno's while the declaration is parsed here.
  const digesting = declarationDigest(bytes);
  digesting.catch(() => {}); // awaited below; never left unhandled meanwhile
  const base = {
    name: source.name,
    origin: source.origin,
    ...(source.file !== undefined ? { file: source.file } : {}),
  };
  try {
    // A valid declaration is read without zod; the schema (loaded only then) judges the rest.
    const declaration = parseValid(bytes, { trusted: source.trusted }) ??
      await parseWithSchema(bytes, source.trusted);
    return { ...base, digest: await digesting, declaration };
  } catch (error) {
    if (!(error instanceof DeclarationError)) throw error;
    return {
      ...base,
      digest: await digesting,
      refused: error.problems.map((p) => ({
        ...(p.id ? { id: p.id } : {}),
        path: p.path,
        message: p.message,
      })),
    };
  }
}

/** The declaration's zod schema's answer (lib/declaration.ts, loaded when first asked). */
async function parseWithSchema(bytes: Uint8Array, trusted: boolean): Promise<Declaration> {
  const { parse, parseTrusted } = await import("../lib/declaration.ts");
  return trusted ? parseTrusted(bytes) : parse(bytes);
}

/**
 * Parses a declaration from its bytes and applies it as one source: the one path `mesh-host
 * apply` takes. An invalid declaration is a `refused` result carrying every problem, and nothing
 * is touched (the state directory is not even created).
 *
 * @param trusted whether `action` resources are allowed (a local file: yes; the link: no).
 * @throws {StoreError} as {@linkcode applySources}.
 */
export async function applyBytes(
  bytes: Uint8Array,
  options: Omit<ApplyOptions, "digest"> & { trusted: boolean },
): Promise<ApplyResult> {
  const input = await readSource(bytes, {
    name: options.source ?? "local",
    origin: options.origin ?? "command",
    ...(options.file !== undefined ? { file: options.file } : {}),
    trusted: options.trusted,
  });
  const [result] = await applySources([input], options);
  return result!;
}
