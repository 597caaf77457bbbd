/**
 * Convergent apply of a declaration: refuse what this system cannot apply, remove what left the
 * declaration (removal first), converge each resource in order and stop at the first failure,
 * save the footprint whatever happened, and record known-good after a clean apply only.
 *
 * @module
 */

import { join } from "node:path";
import { readAccounts, readGroups } from "../lib/accounts.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import type { Applier, ApplyContext, Change } from "./applier.ts";
import {
  type Declaration,
  declarationDigest,
  DeclarationError,
  parse,
  parseTrusted,
  type Resource,
  type ResourceType,
  subjectOf,
} from "./declaration.ts";
import { Store } from "./store.ts";
import type { System } from "../systems/mod.ts";
import { observePath, tempPathFor } from "./resources/fs.ts";

/** The file beside the store holding the version that last completed a clean apply. */
export const KNOWN_GOOD_FILE = "known-good";
/** The launcher's consecutive-failure counter, cleared when a reconcile completes. */
export const FAILURES_FILE = "failures";

/** One resource's change. */
export interface ResourceChange {
  id: string;
  type: ResourceType;
  change: Change;
}

/** One problem: where (a resource id, or a JSON path for a refused input) and what. */
export interface ApplyProblem {
  id?: string;
  path?: string;
  message: string;
}

/**
 * The apply result (DESIGN.md, "Apply result"). `refused`: nothing was applied (invalid input,
 * or a shape this system cannot apply). `failed`: accepted and partly applied; `applied` of
 * `total` says how much ("3 of 8" and "0 of 8" are different machines).
 */
export interface ApplyResult {
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

/** Options for {@linkcode applyDeclaration}. */
export interface ApplyOptions {
  system: System;
  /** The state directory (store, journal, known-good, failures). */
  stateDir: string;
  /** The declaration's digest, for the result. */
  digest: string;
  /** Change nothing; say what would change. */
  dryRun?: boolean;
  /** The host version recorded as known-good after a clean apply. */
  version: string;
}

/**
 * Why `system` cannot apply `resource`, or undefined when it can.
 */
export function refusal(system: System, type: ResourceType): string | undefined {
  const named = system.refuses[type];
  if (named !== undefined) return `${system.name} refuses ${type} resources: ${named}`;
  if (system.appliers[type] === undefined) {
    const can = Object.keys(system.appliers).join(", ");
    return `this ${system.name} host has no ${type} applier yet (it applies: ${can})`;
  }
  return undefined;
}

/**
 * Applies `declaration`. Never throws for a resource that fails (that is the result);
 * throws only when the host itself cannot work.
 *
 * @throws {StoreError} when the store exists and cannot be read, or cannot be written.
 */
export async function applyDeclaration(
  declaration: Declaration,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const total = declaration.resources.length;
  const base = { declaration: options.digest, ...(options.dryRun ? { dryRun: true } : {}) };
  const refused: ApplyProblem[] = [];
  const own = options.stateDir.replace(/\/+$/, "");
  for (const r of declaration.resources) {
    const why = refusal(options.system, r.type);
    if (why !== undefined) refused.push({ id: r.id, message: why });
    // The state directory itself may be declared (its mode held, as the Debian bundle does);
    // nothing inside it, which only the host writes.
    const inside = (r.type === "file" || r.type === "directory") &&
      (r.path.startsWith(`${own}/`) || (r.path === own && r.type === "file"));
    if (inside) {
      refused.push({
        id: r.id,
        message:
          `"${r.path}" is inside this host's state directory "${own}", which only the host writes`,
      });
    }
  }
  if (refused.length > 0) {
    return { outcome: "refused", applied: 0, total, changes: [], problems: refused, ...base };
  }

  const store = await Store.load(options.stateDir, {
    create: !options.dryRun,
    readOnly: options.dryRun,
    exists: async (intent) => {
      if (intent.type === "file" && !options.dryRun) {
        // A creation that was killed may have left its temporary file: it is this host's own.
        await Deno.remove(tempPathFor(intent.subject)).catch(() => {});
      }
      // Only a path can be checked here. A package or a container is never taken to exist from
      // a journaled intent alone (a failed install is not an install); their appliers know
      // their own: packages are never removed, and containers are removed by their label.
      return intent.type === "file" || intent.type === "directory"
        ? (await observePath(intent.subject)).kind !== "absent"
        : false;
    },
  });
  const context: ApplyContext = {
    dryRun: options.dryRun ?? false,
    store,
    ids: { users: new Map(), groups: new Map() },
    declaration,
    written: new Set(),
    cache: new Map(),
  };
  const changes: ResourceChange[] = [];
  const problems: ApplyProblem[] = [];
  let applied = 0;
  try {
    const accounts = await readAccounts();
    for (const a of accounts.values()) context.ids.users.set(a.name, a.uid);
    context.ids.groups = await readGroups();

    // Removal first: what this host applied and is no longer declared.
    const declared = new Set(declaration.resources.map((r) => key(r.id, r.type, subjectOf(r))));
    const leaving = store.entries().filter((e) => !declared.has(key(e.id, e.type, e.subject)))
      .reverse();
    for (const entry of leaving) {
      // Renamed, not leaving: the same thing is declared under an id the footprint lacks. It
      // keeps its entry (and whether this host created it) instead of being removed and made
      // again, which a directory holding declared files could not even be.
      const renamed = declaration.resources.find((r) =>
        r.type === entry.type && subjectOf(r) === entry.subject &&
        !store.find(r.id, r.type, subjectOf(r))
      );
      if (renamed !== undefined) {
        if (!context.dryRun) store.rekey(entry, renamed.id);
        continue;
      }
      const applier = options.system.appliers[entry.type] as Applier | undefined;
      if (applier === undefined) {
        // Its applier is not in this build: leave it in the footprint, untouched.
        problems.push({
          id: entry.id,
          message: `Cannot remove ${entry.type} "${entry.subject}": ${
            refusal(options.system, entry.type)
          }`,
        });
        return { outcome: "failed", applied, total, changes, problems, ...base };
      }
      try {
        const change = await applier.remove(entry, context);
        changes.push({ id: entry.id, type: entry.type, change });
        if (!context.dryRun) store.drop(entry);
      } catch (error) {
        problems.push({ id: entry.id, message: messageOf(error) });
        return { outcome: "failed", applied, total, changes, problems, ...base };
      }
    }

    // Then every declared resource, in order; later ones may depend on earlier ones.
    for (const resource of declaration.resources) {
      const applier = options.system.appliers[resource.type] as Applier<Resource> | undefined;
      try {
        const observed = await applier!.observe(resource, context);
        const result = await applier!.apply(resource, observed, context);
        changes.push({ id: resource.id, type: resource.type, change: result.change });
        if (!context.dryRun) {
          const known = store.find(resource.id, resource.type, subjectOf(resource));
          store.record({
            id: resource.id,
            type: resource.type,
            subject: subjectOf(resource),
            created: result.created,
            applied: result.change === "unchanged" && known
              ? known.applied
              : new Date().toISOString(),
          });
        }
        applied++;
      } catch (error) {
        problems.push({ id: resource.id, message: messageOf(error) });
        return { outcome: "failed", applied, total, changes, problems, ...base };
      }
    }
    return { outcome: "applied", applied, total, changes, problems, ...base };
  } finally {
    if (context.dryRun) store.close();
    else {
      try {
        await store.save();
      } finally {
        store.release();
      }
    }
  }
}

/**
 * Records `version` as known-good beside the store (one bare line) and clears the launcher's
 * failure counter, together: called after a clean apply only.
 *
 * @throws {Error} when either cannot be written.
 */
export async function recordKnownGood(stateDir: string, version: string): Promise<void> {
  const path = join(stateDir, KNOWN_GOOD_FILE);
  const current = await Deno.readTextFile(path).catch(() => undefined);
  if (current !== `${version}\n`) await writeFileAtomic(path, `${version}\n`, { mode: 0o644 });
  await Deno.remove(join(stateDir, FAILURES_FILE)).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
}

function key(id: string, type: string, subject: string): string {
  return `${id}\0${type}\0${subject}`;
}

/**
 * Parses a declaration from its bytes and applies it: the one path `mesh-host apply` takes.
 * An invalid declaration is a `refused` result carrying every problem, and nothing is touched
 * (the state directory is not even created).
 *
 * @param trusted whether `action` resources are allowed (a local file: yes; the link: no).
 * @throws {StoreError} as {@linkcode applyDeclaration}.
 */
export async function applyBytes(
  bytes: Uint8Array,
  options: Omit<ApplyOptions, "digest"> & { trusted: boolean },
): Promise<ApplyResult> {
  const digest = await declarationDigest(bytes);
  let declaration: Declaration;
  try {
    declaration = options.trusted ? parseTrusted(bytes) : parse(bytes);
  } catch (error) {
    if (!(error instanceof DeclarationError)) throw error;
    return {
      outcome: "refused",
      applied: 0,
      total: 0,
      changes: [],
      problems: error.problems.map((p) => ({
        ...(p.id ? { id: p.id } : {}),
        path: p.path,
        message: p.message,
      })),
      declaration: digest,
      ...(options.dryRun ? { dryRun: true } : {}),
    };
  }
  return await applyDeclaration(declaration, { ...options, digest });
}
