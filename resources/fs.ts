/**
 * What the `directory` and `file` appliers (./directory/applier.ts, ./file/applier.ts) share: the
 * same on every system. Content, mode, owner and group are maintained on every apply, not only
 * set at creation. A symlink found at a declared path is never followed: the resource fails
 * naming it.
 *
 * A path that exists before this source first applies it is taken over: its original (a file's
 * content, mode, owner and group; a directory's mode, owner and group) is saved in the state
 * directory and journaled before anything is changed, and put back when the resource leaves
 * (`restored`). When the original cannot be saved (a full disk), the resource fails and nothing
 * is overwritten.
 *
 * @module
 */

import { basename, dirname, join } from "../lib/path.ts";
import { messageOf } from "../lib/atomic.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import { unifiedDiff } from "../lib/diff.ts";
import type { Directory } from "./directory/schema.ts";
import type { File } from "./file/schema.ts";
import {
  type ApplyContext,
  type Converged,
  type Ids,
  type Plan,
  type Prepared,
  type RemovalPlan,
  ResourceError,
} from "../host/applier.ts";
import { observePath, type PathState, TEMP_SUFFIX, tempPathFor } from "../host/path_state.ts";
import type { FootprintEntry, Original } from "../host/store.ts";
import type { z } from "zod";

type DirectoryResource = z.output<typeof Directory>;
type FileResource = z.output<typeof File>;

/**
 * `lchown` of Node's `fs/promises`, loaded only when an owner or group is changed: that module
 * brings Node's whole file system layer (~10 MiB and ~30 ms at start-up) to every apply otherwise.
 */
export async function lchown(path: string, uid: number, gid: number): Promise<void> {
  const fs = await import("node:fs/promises");
  await fs.lchown(path, uid, gid);
}

/** The cache key prefix under which a run remembers the temporary files of a directory. */
export const TEMPS = "fs:temps\0";

/**
 * Whether a temporary file of this host (see {@linkcode tempPathFor}) may stand beside `path`:
 * its directory is listed once per run (a killed write is the only way one is left) instead of
 * trying to remove one beside every file, which almost never exists. Unknown (the directory
 * cannot be listed) counts as yes.
 */
export function mayHaveTemp(path: string, context: ApplyContext): boolean {
  const temps = tempsIn(dirname(path), context);
  // The usual directory holds none: the name is not even built.
  return temps === null || (temps.size > 0 && temps.has(basename(tempPathFor(path))));
}

/** The temporary files of this host in `dir` when the run first listed it; null: not listable. */
export function tempsIn(dir: string, context: ApplyContext): Set<string> | null {
  let temps = context.cache.get(TEMPS + dir) as Set<string> | null | undefined;
  if (temps === undefined) {
    temps = new Set();
    try {
      for (const e of Deno.readDirSync(dir)) {
        if (e.name.endsWith(TEMP_SUFFIX)) temps.add(e.name);
      }
    } catch {
      temps = null;
    }
    context.cache.set(TEMPS + dir, temps);
  }
  return temps;
}

/**
 * The id an owner or group is declared as (a number, or a name looked up in `context.ids`).
 * In a dry run, a name not found while an earlier action or package of the run would change
 * something ({@linkcode Ids.pending}) may be that step's doing: it is said in `notes` and left
 * unresolved (undefined) instead.
 *
 * @throws {ResourceError} `Owner "name" does not exist on this machine` (or `Group`) otherwise.
 */
export function resolveId(
  kind: "owner" | "group",
  name: string | undefined,
  context: ApplyContext,
  notes: string[],
): number | undefined {
  if (name === undefined) return undefined;
  if (/^\d+$/.test(name)) return Number(name);
  const ids: Ids = context.ids;
  const id = (kind === "owner" ? ids.users : ids.groups).get(name);
  if (id !== undefined) return id;
  const pending = context.dryRun ? ids.pending : undefined;
  if (pending !== undefined) {
    const of = pending.source === context.store.source ? "" : ` of source "${pending.source}"`;
    notes.push(
      `${kind} "${name}" does not exist yet: resource "${pending.id}" (${pending.type})${of} ` +
        `declared before it would run in the apply and may create it`,
    );
    return undefined;
  }
  throw new ResourceError(
    `${kind === "owner" ? "Owner" : "Group"} "${name}" does not exist on this machine`,
  );
}

export function refuseNonTarget(path: string, state: PathState, want: "file" | "directory"): void {
  if (state.kind === "symlink") {
    throw new ResourceError(
      `"${path}" is a symlink (to "${state.target}"); a declared path is never followed`,
    );
  }
  if (state.kind === "other") throw new ResourceError(`"${path}" is ${state.what}, not a ${want}`);
  if (state.kind !== "absent" && state.kind !== want) {
    throw new ResourceError(`"${path}" is a ${state.kind}, not a ${want}`);
  }
}

export function ensureParents(path: string, context: ApplyContext): void {
  if (context.dryRun) return;
  try {
    Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new ResourceError(`Cannot create the directories above "${path}": ${messageOf(error)}`, {
      cause: error,
    });
  }
}

export async function holdAttributes(
  path: string,
  state: { mode: number; uid: number; gid: number },
  want: { mode: number; uid?: number; gid?: number },
  context: ApplyContext,
): Promise<boolean> {
  const chown = (want.uid !== undefined && want.uid !== state.uid) ||
    (want.gid !== undefined && want.gid !== state.gid);
  const chmod = want.mode !== state.mode;
  if (context.dryRun || (!chown && !chmod)) return chown || chmod;
  try {
    // Owner first: chown clears setuid/setgid bits, which chmod then sets as declared.
    if (chown) await lchown(path, want.uid ?? state.uid, want.gid ?? state.gid);
    Deno.chmodSync(path, want.mode);
  } catch (error) {
    throw new ResourceError(`Cannot set mode or owner of "${path}": ${messageOf(error)}`, {
      cause: error,
    });
  }
  return true;
}

/**
 * What both path appliers start from: the path is not a symlink or the other kind, the
 * attributes wanted (mode, and owner and group resolved to ids when declared), what the
 * footprint knows of the resource, and (a dry run only) an owner or group not there yet that an
 * earlier step may create, said in `notes` (one line each).
 */
export function prepare(
  resource: DirectoryResource | FileResource,
  state: PathState,
  context: ApplyContext,
) {
  refuseNonTarget(resource.path, state, resource.type);
  const notes: string[] = [];
  const want = {
    mode: parseInt(resource.mode, 8),
    uid: resolveId("owner", resource.owner, context, notes),
    gid: resolveId("group", resource.group, context, notes),
  };
  return { want, known: context.store.find(resource.id, resource.type, resource.path), notes };
}

/**
 * What a path applier will do to one resource, decided from the observation alone (read-only:
 * judging may read a file for a dry run's diff, never write). A dry run stops at the plan; an
 * apply executes exactly its steps, in this order: take over (save the original), create or
 * replace, hold mode and owner.
 */
export interface PathPlan {
  /** What the apply reports (and the dry run says, with its detail). */
  result: Converged;
  /** Save the original before anything changes: the path exists and this source never held it. */
  takeOver: boolean;
  /** Make it (a directory, or a file where nothing is). */
  create: boolean;
  /** Replace the file's content (written beside it, then renamed). */
  write: boolean;
  /** Set mode, owner or group. */
  attributes: boolean;
}

export type Want = { mode: number; uid?: number; gid?: number };

/** What a path applier's `act` is given: the plan, its steps, and what it was judged on. */
export type PathActPlan<S> = PathPlan & Plan & { want: Want; observed: S };

/** The steps of a path plan, in the order `act` takes them. */
export function pathSteps(plan: PathPlan, kind: "file" | "directory"): string[] {
  return [
    ...(plan.takeOver ? ["save the original"] : []),
    ...(plan.create ? [`create the ${kind}`] : []),
    ...(plan.write ? ["replace the content"] : []),
    ...(plan.attributes ? ["set mode and owner"] : []),
  ];
}

/**
 * A plan with nothing durable to prepare: all of it happens at its turn; `inert` when that is
 * nothing at all (see {@linkcode Prepared.inert}).
 */
export function deferred(act: () => Promise<Converged>, inert: boolean): Prepared {
  return { ready: () => Promise.resolve(), commit: act, discard() {}, inert };
}

/**
 * Saves what `resource.path` is before this source first changes it, and journals the takeover,
 * both durably; a dry run saves nothing.
 *
 * @throws {ResourceError} "Cannot take over ..." when the original cannot be read or saved:
 *   nothing has been changed then.
 */
export async function takeOver(
  resource: DirectoryResource | FileResource,
  state: Extract<PathState, { kind: "file" | "directory" }>,
  context: ApplyContext,
): Promise<Original | undefined> {
  if (context.dryRun) return undefined;
  const ids = { mode: state.mode, uid: state.uid, gid: state.gid };
  let original: Original;
  try {
    if (state.kind === "file") {
      // Found a regular file by its lstat; read as one (a FIFO put there since is refused).
      const content = await readRegularFile(resource.path, { maxBytes: Number.MAX_SAFE_INTEGER });
      const copy = await context.store.saveOriginal(resource.path, content);
      original = { kind: "file", ...ids, copy };
    } else original = { kind: "directory", ...ids };
    await context.store.intend({
      id: resource.id,
      type: resource.type,
      subject: resource.path,
      original,
    });
  } catch (error) {
    throw new ResourceError(
      `Cannot take over "${resource.path}": its original could not be saved, so nothing was ` +
        `changed (${messageOf(error)})`,
      { cause: error },
    );
  }
  return original;
}

/**
 * Puts back what a taken-over path was, as planned by {@linkcode planPathRemoval}: a file's saved
 * content, mode, owner and group; a directory's mode, owner and group (made again when it is
 * gone).
 *
 * @throws {ResourceError} when it cannot be written.
 */
async function restore(
  path: string,
  original: Original,
  context: ApplyContext,
): Promise<void> {
  const want = { mode: original.mode, uid: original.uid, gid: original.gid };
  if (original.kind === "file") {
    const bytes = await context.store.readOriginal(original.copy);
    await writeReplacing(path, bytes, want);
    return;
  }
  try {
    await Deno.mkdir(path, { recursive: true, mode: 0o700 });
    await lchown(path, original.uid, original.gid);
    await Deno.chmod(path, original.mode);
  } catch (error) {
    throw new ResourceError(
      `Cannot restore the original directory "${path}": ${messageOf(error)}`,
      { cause: error },
    );
  }
}

/** How a temporary file is written: owner and group kept from `previous` when not declared. */
interface TempOptions {
  previous?: { uid: number; gid: number };
  /** Whether a temporary file may be left at the name (default: yes). */
  temp?: boolean;
}

/**
 * Writes `bytes` to a temporary file beside `path` with the mode and owner already set, syncs
 * it, and renames it over `path`. Owner and group not declared are kept from `options.previous`.
 * With `options.before` (the creation's journal entry being synced), the rename waits for it;
 * when it fails nothing is renamed and its error is thrown.
 */
export async function writeReplacing(
  path: string,
  bytes: Uint8Array,
  want: { mode: number; uid?: number; gid?: number },
  options: TempOptions & { before?: Promise<void> } = {},
): Promise<void> {
  let temp: string;
  try {
    let synced: Promise<void>;
    ({ temp, synced } = beginTemp(path, bytes, want, options));
    await synced;
  } catch (error) {
    await options.before?.catch(() => {});
    throw error;
  }
  try {
    await options.before;
  } catch (error) {
    removeQuietly(temp);
    throw error;
  }
  renameInto(temp, path);
}

/**
 * Writes `bytes` to the temporary file of `path` (see {@linkcode tempPathFor}) and begins its
 * sync; `synced` resolves once it is on disk with its mode and owner set (owner and group not
 * declared are kept from `options.previous`). Nothing is visible under `path` yet.
 *
 * @throws {ResourceError} "Cannot write ..." (thrown, or `synced` rejects) when it cannot; the
 *   temporary file is removed then.
 */
export function beginTemp(
  path: string,
  bytes: Uint8Array,
  want: { mode: number; uid?: number; gid?: number },
  options: TempOptions = {},
): { temp: string; synced: Promise<void> } {
  const { previous } = options;
  const temp = tempPathFor(path);
  const failed = (error: unknown, file?: Deno.FsFile) => {
    try {
      file?.close();
    } catch { /* closed */ }
    removeQuietly(temp);
    return new ResourceError(`Cannot write "${path}": ${messageOf(error)}`, { cause: error });
  };
  // The temporary name is the same for every write of this file, so one left by a host killed
  // before its rename is consumed by the next write. It is removed, never opened: a symlink
  // planted at that name must not be followed (creating it exclusively never follows one; one
  // that appeared since its directory was listed is removed then).
  if (options.temp !== false) removeQuietly(temp);
  // Synchronous calls on a local file, but the sync itself: it waits on the disk, and the
  // creation's journal entry (and other files' syncs) run meanwhile.
  let file: Deno.FsFile | undefined;
  try {
    const create = () => Deno.openSync(temp, { write: true, createNew: true, mode: 0o600 });
    try {
      file = create();
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      removeQuietly(temp);
      file = create();
    }
    let written = 0;
    while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
  } catch (error) {
    throw failed(error, file);
  }
  const open = file;
  const synced = (async () => {
    try {
      await open.sync();
      open.close();
    } catch (error) {
      throw failed(error, open);
    }
    try {
      const uid = want.uid ?? previous?.uid;
      const gid = want.gid ?? previous?.gid;
      if (uid !== undefined || gid !== undefined) Deno.chownSync(temp, uid ?? null, gid ?? null);
      Deno.chmodSync(temp, want.mode);
    } catch (error) {
      throw failed(error);
    }
  })();
  return { temp, synced };
}

/**
 * Renames a synced temporary file over `path`.
 *
 * @throws {ResourceError} "Cannot write ..." when it cannot; the temporary file is removed then.
 */
export function renameInto(temp: string, path: string): void {
  try {
    Deno.renameSync(temp, path);
  } catch (error) {
    removeQuietly(temp);
    throw new ResourceError(`Cannot write "${path}": ${messageOf(error)}`, { cause: error });
  }
}

export function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch { /* gone, or never made */ }
}

/**
 * The cache key under which an apply remembers the paths its removals plan to remove, so that a
 * directory's plan counts what is planned to leave it before (a dry run removes nothing).
 */
const PLANNED_REMOVALS = "fs:planned-removals";

/** What removing a path's footprint entry will do (see {@linkcode planPathRemoval}). */
export interface PathRemovalPlan extends RemovalPlan {
  /** The path was there, as this host made it, when planned: `remove` deletes it. */
  present: boolean;
  /** A file's entry: a temporary file a killed write left beside it is deleted first. */
  temp: boolean;
}

/**
 * Decides what removing a path's footprint entry does: what this host created is removed
 * (`removed` also when it is gone already), unless something else stands there now, or a
 * directory still holds what no removal planned before it takes away (`forgotten`: not this
 * host's to remove); what it took over is put back (`restored`) when its original was saved,
 * else left (`forgotten`).
 *
 * @throws {ResourceError} when a taken-over path is now something else than its original.
 */
export async function planPathRemoval(
  entry: FootprintEntry,
  kind: "file" | "directory",
  context: ApplyContext,
): Promise<PathRemovalPlan> {
  const path = entry.subject;
  // A temporary file a killed write left beside it is this host's own, created or not.
  const temp = kind === "file" && (await observePath(tempPathFor(path))).kind !== "absent";
  const plan = (change: PathRemovalPlan["change"], present = false): PathRemovalPlan => ({
    change,
    act: temp || present || change === "restored",
    present,
    temp,
  });
  const planned = (context.cache.get(PLANNED_REMOVALS) ?? new Set<string>()) as Set<string>;
  context.cache.set(PLANNED_REMOVALS, planned);
  if (temp) planned.add(tempPathFor(path));
  const state = await observePath(path);
  if (!entry.created) {
    // Taken over: put back as it was, when it was saved; else left as it is.
    if (entry.original === undefined) return plan("forgotten");
    if (state.kind !== "absent" && state.kind !== entry.original.kind) {
      throw new ResourceError(
        `Cannot restore the original ${entry.original.kind} "${path}": it is now ${
          state.kind === "symlink" ? `a symlink to "${state.target}"` : `a ${state.kind}`
        }`,
      );
    }
    return plan("restored");
  }
  if (state.kind === "absent") return plan("removed");
  if (state.kind !== kind) return plan("forgotten"); // something else stands there now: not ours
  if (kind === "directory") {
    // It holds what this host does not own (what it owns was planned to leave first).
    for await (const e of Deno.readDir(path)) {
      if (!planned.has(join(path, e.name))) return plan("forgotten");
    }
  }
  planned.add(path);
  return plan("removed", true);
}

/**
 * Executes a plan of {@linkcode planPathRemoval}.
 *
 * @returns the change made: `forgotten` when a directory to remove holds something now.
 * @throws {ResourceError} when the path cannot be removed or restored.
 */
export async function removePath(
  entry: FootprintEntry,
  plan: PathRemovalPlan,
  context: ApplyContext,
): Promise<PathRemovalPlan["change"]> {
  if (plan.temp) await Deno.remove(tempPathFor(entry.subject)).catch(() => {});
  if (plan.change === "restored" && entry.original !== undefined) {
    await restore(entry.subject, entry.original, context);
  }
  if (!plan.present) return plan.change;
  try {
    await Deno.remove(entry.subject);
    return "removed";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "removed"; // gone meanwhile
    if (entry.type === "directory" && /not empty/i.test(messageOf(error))) {
      return "forgotten"; // it holds what this host does not own
    }
    throw new ResourceError(`Cannot remove ${entry.type} "${entry.subject}": ${messageOf(error)}`, {
      cause: error,
    });
  }
}

/** The largest file whose content a dry run diffs (1 MiB); larger ones are said to differ. */
const MAX_DIFF_BYTES = 1024 * 1024;
/** The most characters of one diff a dry run shows. */
const MAX_DIFF_CHARS = 8192;

const octal = (mode: number) => mode.toString(8).padStart(4, "0");

/** `mode 0644, owner 0, group 0` for what is declared (owner and group when declared). */
export function attributesOf(want: { mode: number; uid?: number; gid?: number }): string {
  return [
    `mode ${octal(want.mode)}`,
    ...(want.uid !== undefined ? [`owner ${want.uid}`] : []),
    ...(want.gid !== undefined ? [`group ${want.gid}`] : []),
  ].join(", ");
}

/** `mode 0666 -> 0644`, `owner 0 -> 65534`, `group ...`: what a dry run would change. */
export function attributeChanges(
  state: { mode: number; uid: number; gid: number },
  want: { mode: number; uid?: number; gid?: number },
): string[] {
  const lines: string[] = [];
  if (state.mode !== want.mode) lines.push(`mode ${octal(state.mode)} -> ${octal(want.mode)}`);
  if (want.uid !== undefined && want.uid !== state.uid) {
    lines.push(`owner ${state.uid} -> ${want.uid}`);
  }
  if (want.gid !== undefined && want.gid !== state.gid) {
    lines.push(`group ${state.gid} -> ${want.gid}`);
  }
  return lines;
}

/** The current content of `path` for a diff (read-only), or undefined when too large. */
export async function readForDiff(path: string, size: number): Promise<Uint8Array | undefined> {
  if (size > MAX_DIFF_BYTES) return undefined;
  try {
    return await readRegularFile(path, { maxBytes: MAX_DIFF_BYTES });
  } catch {
    return undefined;
  }
}

/**
 * A dry run's content change: a unified diff, capped; never for a file whose mode (before or
 * after) gives group and others nothing (0600 or stricter: it may hold a secret), nor for one
 * too large, nor for bytes that are not text.
 */
export function contentDiff(
  path: string,
  before: Uint8Array | undefined,
  after: Uint8Array,
  modes: number[],
): string {
  const sizes = `${before?.length ?? "?"} -> ${after.length} bytes`;
  if (modes.some((m) => (m & 0o077) === 0)) {
    return `content differs (${sizes}; not shown: mode 0600 or stricter)`;
  }
  if (before === undefined || after.length > MAX_DIFF_BYTES) {
    return `content differs (${sizes}; too large to show)`;
  }
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let a: string;
  let b: string;
  try {
    a = decoder.decode(before);
    b = decoder.decode(after);
  } catch {
    return `content differs (${sizes}; not text)`;
  }
  return unifiedDiff(a, b, {
    from: `${path} (now)`,
    to: `${path} (declared)`,
    maxChars: MAX_DIFF_CHARS,
  });
}

/**
 * Whether `a` and `b` hold the same bytes: compared four at a time where both are aligned to four
 * bytes (a file read, a string encoded), byte by byte otherwise and for the tail.
 */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let i = 0;
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0) {
    const words = a.length >> 2;
    const x = new Int32Array(a.buffer, a.byteOffset, words);
    const y = new Int32Array(b.buffer, b.byteOffset, words);
    for (let w = 0; w < words; w++) if (x[w] !== y[w]) return false;
    i = words << 2;
  }
  for (; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
