/**
 * The footprint store: what this host applied, for which source, and whether it created it. JSON
 * under the state directory (`store.json`), written atomically (temp file, fsync, rename, fsync
 * of the directory) and saved even when an apply fails part way.
 *
 * Every record belongs to one source (`bundle`, `link`, `local`, or a local declaration's name):
 * applying a source removes only what that source applied and no longer declares. A store of
 * format 1 (written before sources existed) is read and migrated in memory, every record given a
 * source by {@linkcode Migration}; it is written as format 2 at the next save.
 *
 * Creation is journaled before it happens (`journal`, one JSON line per intent, fdatasync'd),
 * so a host killed between creating something and saving the store still knows, at its next
 * start, that it created it; the journal is folded into the store and cleared once the store is
 * saved. A store that exists but cannot be read stops the host: it is never treated as empty,
 * since an empty footprint would make the host forget what it must remove.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage } from "../lib/text_bounds.ts";
import type { z } from "zod";
import { dirname, join, resolve } from "../lib/path.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { readRegularFile, readRegularTextFile } from "../lib/regular_file.ts";
import type * as schema from "./store_schema.ts";
import { isStoreFile } from "./store_validators.js";

/** A source's name. */
export type SourceName = z.output<typeof schema.SourceName>;
/** What a path was before this host took it over. */
export type Original = z.output<typeof schema.Original>;
/** One footprint entry. */
export type FootprintEntry = z.output<typeof schema.FootprintEntry>;
/** Where a source's declaration comes from. */
export type SourceOrigin = z.output<typeof schema.SourceOrigin>;
/** What the store knows of one source. */
export type SourceInfo = z.output<typeof schema.SourceInfo>;
/** A creation about to happen, journaled. */
export type Intent = z.output<typeof schema.Intent>;
/** A record of a store of format 1. */
type EntryV1 = z.output<typeof schema.EntryV1>;
/** A store file of format 2. */
type StoreFileV2 = z.output<typeof schema.StoreFile>;

/**
 * Creates a state directory (mode 0700) and its missing parents (mode 0755): others must be able
 * to pass through a parent such as /var/lib/mesh (mesh-reconcile's stamp server reads
 * /var/lib/mesh/reconcile as a dynamic user), while the host's own state stays root's.
 *
 * @throws {Deno.errors.PermissionDenied} (or another file system error) when it cannot.
 */
export async function makeStateDir(dir: string): Promise<void> {
  await Deno.mkdir(dirname(dir), { recursive: true, mode: 0o755 });
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
}

/**
 * How the records of a format 1 store (one footprint, no sources) are given a source when it is
 * loaded: a record that a source declares now (same type and subject) goes to that source (the
 * first in `claims` order that declares it); any other goes to `feeder`, the source that fed the
 * state directory.
 */
export interface Migration {
  /** Each source's declared `type\0subject` keys, in order of precedence. */
  claims: { source: SourceName; subjects: ReadonlySet<string> }[];
  /** The source of records no source declares now, when it is known. */
  feeder?: SourceName;
  /**
   * Otherwise: this source when it claims any record of the store (it fed the directory), else
   * `local`.
   */
  feederIfClaimed?: SourceName;
}

/**
 * The key a migration claim is looked up by: the type, and for a path its identity
 * ({@linkcode realLocation}: a record and a declaration naming one file by two paths match).
 */
export function claimKey(type: string, subject: string, locations?: Locations): string {
  const what = type === "file" || type === "directory" ? realLocation(subject, locations) : subject;
  return `${type}\0${what}`;
}

/**
 * Directories' identities already read in one run (a directory path as written to its identity,
 * see {@linkcode realLocation}): each directory is read once however many paths it holds. It also
 * remembers, under keys no path has, each directory's real parent (`..` + identity), each path's
 * identity (`=` + path) and each answer of {@linkcode isInside} (`<` + directory + NUL + parent).
 */
export type Locations = Map<string, string>;

/**
 * The identity of the file or directory at the absolute `path`: the one place where the host
 * decides that two paths name one thing (ownership, removal, moves between sources, a store of
 * format 1's migration). Two paths have the same identity when they lead to the same directory
 * entry, whatever way they are written: symlinked parent directories, `..` (resolved as the
 * kernel does, after the symlink before it), repeated `/`, `.` and trailing `/` segments, and a
 * directory reached through a bind mount (the same device and inode).
 *
 * The identity is `DEV:INO/NAME...`: the device and inode of the deepest existing directory
 * above the path (symlinks followed, by `stat`), then the names below it as written. The last
 * name is never followed (a declared path that is a symlink is refused by its applier, never
 * written through). It is a key to compare, not a path to show. A directory that cannot be read
 * (permission denied, a symlink loop) counts as missing: the names below its parent are kept.
 *
 * Reads the file system (one `stat` per directory not in `locations`); never writes.
 */
export function realLocation(path: string, locations: Locations = new Map()): string {
  // Each path is worked out once per `locations` (a run names a path several times: its store's
  // record, its declaration, the aliasing check), remembered under a key no directory has.
  const memo = `=${path}`;
  const known = locations.get(memo);
  if (known !== undefined) return known;
  let identity: string;
  const cut = plainCut(path);
  if (cut !== undefined) {
    // Written plainly: the directory above is the text before the last `/`, as segmentsOf and
    // directoryIdentity would spell it, so its remembered identity is looked up without a split.
    const dir = cut === 0 ? "/" : path.slice(0, cut);
    const above = locations.get(dir) ?? directoryIdentity(segmentsOf(dir), locations);
    identity = `${above}/${path.slice(cut + 1)}`;
  } else {
    const segments = segmentsOf(path);
    identity = segments.length === 0
      ? directoryIdentity([], locations)
      : `${directoryIdentity(segments.slice(0, -1), locations)}/${segments.at(-1)}`;
  }
  locations.set(memo, identity);
  return identity;
}

/**
 * The index of the last `/` of `path` when the path is written plainly (absolute, not `/` itself,
 * no empty, `.` or `..` name, no trailing `/`), else undefined.
 */
function plainCut(path: string): number | undefined {
  if (path.length < 2 || path.charCodeAt(0) !== 47 || NOT_PLAIN.test(path)) return undefined;
  return path.lastIndexOf("/");
}
const NOT_PLAIN = /\/\/|\/\.\.?(?:\/|$)|\/$/;

/**
 * Whether the absolute `path` lies inside the directory `dir` by real location (see
 * {@linkcode realLocation}): the deepest existing directory above `path` is `dir` or below it,
 * its real parents read by `stat` of `..` (so a symlinked directory, or a bind mount of `dir` or
 * of a directory below it, is seen). False when `dir` does not exist. `locations` also remembers
 * each directory's real parent.
 */
export function isInside(path: string, dir: string, locations: Locations = new Map()): boolean {
  // The answer depends on the directory above `path` alone: worked out once per directory (the
  // files of one directory share it), remembered under a key no directory has.
  const cut = plainCut(path);
  const memo = cut === undefined ? undefined : `<${dir}\0${path.slice(0, cut)}`;
  if (memo !== undefined) {
    const known = locations.get(memo);
    if (known !== undefined) return known === "1";
  }
  const inside = insideByParents(path, dir, locations);
  if (memo !== undefined) locations.set(memo, inside ? "1" : "0");
  return inside;
}

/** {@linkcode isInside} worked out: the real parents of the directory above `path`, walked up. */
function insideByParents(path: string, dir: string, locations: Locations): boolean {
  const target = directoryIdentity(segmentsOf(dir), locations);
  if (target.includes("/")) return false; // it does not exist: nothing is inside it
  let segments = segmentsOf(path).slice(0, -1);
  let identity = directoryIdentity(segments, locations);
  while (identity.includes("/") && segments.length > 0) {
    segments = segments.slice(0, -1);
    identity = directoryIdentity(segments, locations);
  }
  let at = `/${segments.join("/")}`;
  for (;;) {
    if (identity === target) return true;
    const known = locations.get(`..${identity}`);
    let parent = known;
    if (parent === undefined) {
      try {
        const info = Deno.statSync(`${at}/..`);
        parent = `${info.dev}:${info.ino}`;
      } catch {
        parent = identity; // cannot go up: taken as the top
      }
      locations.set(`..${identity}`, parent);
    }
    if (parent === identity) return false; // the root is its own parent
    identity = parent;
    at = at === "/" ? "/.." : `${at}/..`;
  }
}

/**
 * The names of the absolute `path`, without empty and `.` ones. `..` goes up from where the kernel
 * is after the symlinks before it: the prefix up to the last `..` is resolved whole (realpath); a
 * prefix that does not exist leads nowhere the kernel could follow, and is read as written.
 */
function segmentsOf(path: string): string[] {
  const segments = path.split("/").filter((s) => s !== "" && s !== ".");
  const up = segments.lastIndexOf("..");
  if (up === -1) return segments;
  const prefix = `/${segments.slice(0, up + 1).join("/")}`;
  let real: string;
  try {
    real = Deno.realPathSync(prefix);
  } catch {
    real = resolve(prefix);
  }
  return segmentsOf(join(real, ...segments.slice(up + 1)));
}

/** The identity of the directory at `/` + `segments` (see {@linkcode realLocation}). */
function directoryIdentity(segments: string[], locations: Locations): string {
  const dir = `/${segments.join("/")}`;
  const known = locations.get(dir);
  if (known !== undefined) return known;
  let identity: string | undefined;
  try {
    const info = Deno.statSync(dir);
    if (info.isDirectory) identity = `${info.dev}:${info.ino}`;
  } catch { /* missing, or not readable: the names below its parent */ }
  if (identity === undefined) {
    identity = segments.length === 0
      ? "/"
      : `${directoryIdentity(segments.slice(0, -1), locations)}/${segments.at(-1)}`;
  }
  locations.set(dir, identity);
  return identity;
}

/** The store's file name under the state directory. */
export const STORE_FILE = "store.json";
/** The lock file under the state directory: one host at a time applies. */
export const LOCK_FILE = "lock";
/** The creation journal's file name under the state directory. */
export const JOURNAL_FILE = "journal";
/** The directory under the state directory holding copies of what was taken over. */
export const ORIGINALS_DIR = "originals";
/**
 * The largest store (and journal) read, in bytes: records name what was applied, never its
 * content (a declaration is at most 64 MiB, its store far less).
 */
export const MAX_STORE_BYTES = 64 * 1024 * 1024;

/** A store that exists and cannot be read, or cannot be written. */
export class StoreError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StoreError";
  }
}

/** The footprint, loaded from and saved to one state directory. */
export class Store {
  readonly dir: string;
  /** By `source\0id\0type\0subject`, in the order things were first applied (a Map keeps it). */
  #entries: Map<string, FootprintEntry>;
  #sources: Map<SourceName, SourceInfo>;
  /** Whether anything differs from what was loaded: a no-op apply writes nothing. */
  #dirty = false;
  /** The format the file was read in (1: migrated in memory, written as 2 at the next save). */
  readonly format: 1 | 2;
  #journal: Deno.FsFile | undefined;
  /** The exclusive lock on the state directory, held from load to save or close. */
  #lock: Deno.FsFile | undefined;
  /** Creations journaled by this process and not yet recorded (a resource may fail after one). */
  #pending: (Intent & { source: SourceName })[] = [];
  /** Intents appended to the journal by this process, and how many of them are durable. */
  #appended = 0;
  #syncedTo = 0;
  /**
   * Whether a journal write failed: its line may have been cut short (a full disk writes part of
   * it), so the next line starts with a newline of its own instead of continuing the torn one.
   */
  #torn = false;
  /** The journal's sync in flight, and how many intents it covers. */
  #syncing: { upTo: number; done: Promise<void> } | undefined;
  #exists: (intent: Intent) => Promise<boolean> = () => Promise.resolve(true);
  #feeder: SourceName = "local";

  private constructor(
    dir: string,
    entries: FootprintEntry[],
    sources: Map<SourceName, SourceInfo>,
    format: 1 | 2,
  ) {
    this.dir = dir;
    this.#entries = new Map(entries.map((e) => [keyOf(e), e]));
    this.#sources = sources;
    this.format = format;
  }

  /** The store file's path. */
  get path(): string {
    return join(this.dir, STORE_FILE);
  }

  /**
   * Loads the store of `dir`. A missing store is an empty footprint (a host that never applied);
   * a missing directory is created when `create` is set. A journal left by a host that was killed
   * is folded in: an intent whose subject now exists was created by this host. A store of format
   * 1 is migrated in memory by `migration` (by default every record goes to source `local`).
   *
   * @param exists tells whether a journaled subject exists on the machine now.
   * @throws {StoreError} "Cannot read store ..." when the file exists and is not a valid store,
   *   or the directory cannot be used.
   */
  static async load(
    dir: string,
    options: {
      create?: boolean;
      /** A missing directory is an empty footprint that is never saved (dry runs, `owned`). */
      readOnly?: boolean;
      exists?: (intent: Intent) => Promise<boolean>;
      /** How the records of a format 1 store get their source (asked only when one is read). */
      migration?: Migration | (() => Promise<Migration>);
      /**
       * Wait for the lock with the thread blocked: for a one-shot command, which has nothing
       * else to do meanwhile (an asynchronous wait takes a thread of Deno's pool, ~3 MiB of
       * peak RSS). Never for the link, which must keep answering its broker while it waits.
       */
      blockingLock?: boolean;
    } = {},
  ): Promise<Store> {
    const path = join(dir, STORE_FILE);
    if (options.readOnly) {
      let missing = false;
      try {
        Deno.statSync(dir);
      } catch (error) {
        missing = error instanceof Deno.errors.NotFound;
      }
      if (missing) return new Store(dir, [], new Map(), 2);
    }
    try {
      const info = Deno.statSync(dir);
      if (!info.isDirectory) {
        throw new StoreError(`Cannot use state directory "${dir}": it is not a directory`);
      }
    } catch (error) {
      if (error instanceof StoreError) throw error;
      if (!(error instanceof Deno.errors.NotFound) || !options.create) {
        throw new StoreError(`Cannot use state directory "${dir}": ${messageOf(error)}`, {
          cause: error,
        });
      }
      try {
        await makeStateDir(dir);
      } catch (cause) {
        throw new StoreError(`Cannot create state directory "${dir}": ${messageOf(cause)}`, {
          cause,
        });
      }
    }
    // One host at a time per state directory: two applies interleaving their saves would each
    // write a footprint missing the other's creations. A second one waits here.
    let lock: Deno.FsFile | undefined;
    if (!options.readOnly) {
      try {
        const lockOptions = { write: true, create: true, mode: 0o600 };
        if (options.blockingLock) {
          lock = Deno.openSync(join(dir, LOCK_FILE), lockOptions);
          lock.lockSync(true);
        } else {
          lock = await Deno.open(join(dir, LOCK_FILE), lockOptions);
          await lock.lock(true);
        }
      } catch (cause) {
        lock?.close();
        throw new StoreError(`Cannot lock state directory "${dir}": ${messageOf(cause)}`, {
          cause,
        });
      }
      // A save killed before its rename leaves the store's temporary files: this host's own.
      for (const e of Deno.readDirSync(dir)) {
        if (e.name.startsWith(`.${STORE_FILE}.`) && e.name.endsWith(".tmp")) {
          await Deno.remove(join(dir, e.name)).catch(() => {});
        }
      }
    }
    let feeder: SourceName = "local";
    let entries: FootprintEntry[] = [];
    let sources = new Map<SourceName, SourceInfo>();
    let format: 1 | 2 = 2;
    try {
      let text: string | undefined;
      try {
        text = await readRegularTextFile(path, { maxBytes: MAX_STORE_BYTES });
      } catch (error) {
        if (error instanceof StoreError) throw error;
        if (!(error instanceof Deno.errors.NotFound)) {
          throw new StoreError(`Cannot read store "${path}": ${messageOf(error)}`, {
            cause: error,
          });
        }
      }
      if (text !== undefined) {
        let data: unknown;
        try {
          data = JSON.parse(text);
        } catch (error) {
          throw new StoreError(
            `Cannot read store "${path}": not JSON (${messageOf(error)}); it is kept as it is`,
          );
        }
        // A valid store of format 2 is read without zod, by the validator generated from its
        // schema; the schema (loaded only then) reads a store of format 1 and says what is wrong
        // with an invalid one. A valid one is of its own shapes, a few levels deep (the validator
        // descends no further); anything else is bounded in depth before the schema reads it.
        const valid = validStoreFile(data);
        const deep = valid === undefined ? jsonTooDeep(text) : undefined;
        if (deep !== undefined) {
          throw new StoreError(
            `Cannot read store "${path}": ${jsonTooDeepMessage(deep)}; it is kept as it is`,
          );
        }
        const v1 = (data as { version?: unknown } | null)?.version === 1;
        const parsed = valid !== undefined
          ? { success: true as const, data: valid }
          : v1
          ? (await import("./store_schema.ts")).StoreFileV1.safeParse(data)
          : (await import("./store_schema.ts")).StoreFile.safeParse(data);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw new StoreError(
            `Cannot read store "${path}": ${
              issue.path.join(".") || "(document)"
            }: ${issue.message}; it is kept as it is`,
          );
        }
        if (parsed.data.version === 1) {
          format = 1;
          const how = typeof options.migration === "function"
            ? await options.migration()
            : options.migration;
          ({ entries, sources, feeder } = migrate(parsed.data.resources, how));
        } else {
          entries = parsed.data.resources;
          sources = new Map(Object.entries(parsed.data.sources));
        }
      }
    } catch (error) {
      lock?.close(); // a store that cannot be read is not held
      throw error;
    }
    const store = new Store(dir, entries, sources, format);
    store.#lock = lock;
    store.#feeder = feeder;
    if (format === 1) store.#dirty = true; // written in format 2 at the next save
    if (options.exists) store.#exists = options.exists;
    try {
      await store.#replayJournal(
        options.exists ?? (() => Promise.resolve(true)),
        options.readOnly ?? false,
      );
    } catch (error) {
      store.release();
      throw error;
    }
    return store;
  }

  async #replayJournal(
    exists: (intent: Intent) => Promise<boolean>,
    readOnly: boolean,
  ): Promise<void> {
    const path = join(this.dir, JOURNAL_FILE);
    let text: string;
    try {
      text = await readRegularTextFile(path, { maxBytes: MAX_STORE_BYTES });
    } catch (error) {
      if (error instanceof StoreError) throw error;
      if (error instanceof Deno.errors.NotFound) return;
      throw new StoreError(`Cannot read journal "${path}": ${messageOf(error)}`, { cause: error });
    }
    let changed = false;
    const { Intent } = await import("./store_schema.ts");
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      let intent;
      try {
        intent = Intent.parse(JSON.parse(line));
      } catch {
        continue; // a line torn by the kill: its creation had not started
      }
      // A journal written before sources existed belongs to the source that fed the directory.
      const full = { ...intent, source: intent.source ?? this.#feeder };
      if (this.find(full.source, full.id, full.type, full.subject)) continue;
      if (full.original === undefined && !(await exists(full))) continue;
      this.#entries.set(keyOf(full), entryOf(full));
      changed = true;
      this.#dirty = true;
    }
    if (readOnly) return; // folded in memory only: a dry run writes nothing
    if (changed || this.#dirty) await this.save();
    else await Deno.remove(path).catch(() => {});
  }

  /** The footprint, in the order things were applied. */
  entries(): readonly FootprintEntry[] {
    return [...this.#entries.values()];
  }

  /** The sources known to this store (those that applied something, or were applied empty). */
  sources(): ReadonlyMap<SourceName, SourceInfo> {
    return this.#sources;
  }

  /** Records that `name` was applied (its origin, file and declaration's digest). */
  noteSource(name: SourceName, info: SourceInfo): void {
    const known = this.#sources.get(name);
    if (
      known && known.origin === info.origin && known.file === info.file &&
      known.declaration === info.declaration
    ) return; // the same declaration again: nothing to write
    this.#sources.set(name, info);
    this.#dirty = true;
  }

  /** Forgets a source that holds nothing any more (a local declaration whose file was removed). */
  forgetSource(name: SourceName): void {
    if ([...this.#entries.values()].some((e) => e.source === name)) return;
    if (this.#sources.delete(name)) this.#dirty = true;
  }

  /** The entry for this resource of `source`, if the footprint has it. */
  find(
    source: SourceName,
    id: string,
    type: FootprintEntry["type"],
    subject: string,
  ): FootprintEntry | undefined {
    return this.#entries.get(keyOf({ source, id, type, subject }));
  }

  /**
   * Records (or refreshes) an entry. `created` is sticky: once created by this host, always; so
   * is `original`: what a path was before the host first applied it never changes.
   */
  record(entry: FootprintEntry): void {
    const key = keyOf(entry);
    const known = this.#entries.get(key);
    const original = known?.original ?? entry.original;
    const next: FootprintEntry = {
      ...entry,
      created: entry.created || (known?.created ?? false),
      ...(original ? { original } : {}),
    };
    if (
      known && known.created === next.created && known.applied === next.applied &&
      known.original === next.original
    ) return;
    this.#entries.set(key, next);
    this.#dirty = true;
  }

  /**
   * Moves an entry to a new id (a resource renamed in the declaration), a new source (a subject
   * that left one source and arrived in another in one run) or a new path as written (the same
   * thing named through another path, {@linkcode realLocation}), keeping its place in the order,
   * whether this host created it, and its original: it is still the same thing on the machine.
   */
  rekey(
    entry: FootprintEntry,
    to: { id?: string; source?: SourceName; subject?: string },
  ): void {
    const old = keyOf(entry);
    if (!this.#entries.has(old)) return;
    const moved = {
      ...entry,
      id: to.id ?? entry.id,
      source: to.source ?? entry.source,
      subject: to.subject ?? entry.subject,
    };
    const there = this.#entries.get(keyOf(moved));
    if (there !== undefined && there !== entry) {
      // The same resource already has its record (one thing held twice, as a store written before
      // paths were compared by their real location may hold it): one record, created if either
      // says so, the first original kept.
      this.#entries.delete(old);
      const original = there.original ?? entry.original;
      this.#entries.set(keyOf(moved), {
        ...there,
        created: there.created || entry.created,
        ...(original ? { original } : {}),
      });
      this.#dirty = true;
      return;
    }
    this.#entries = new Map(
      [...this.#entries].map(([k, e]) => k === old ? [keyOf(moved), moved] : [k, e]),
    );
    this.#dirty = true;
  }

  /** Drops an entry (after it was removed, restored or forgotten). */
  drop(entry: FootprintEntry): void {
    if (this.#entries.delete(keyOf(entry))) this.#dirty = true;
  }

  /**
   * Journals, durably, that this host is about to create `subject` for `source`, before it does,
   * or (with `original`) to take over a path whose original was saved, before it overwrites it.
   * The same as {@linkcode Store.journal} then {@linkcode Store.durable}.
   *
   * @throws {StoreError} when the journal cannot be written.
   */
  async intend(intent: Intent & { source: SourceName }): Promise<void> {
    this.journal(intent);
    await this.durable();
  }

  /**
   * Appends an intent to the journal without waiting for the disk: it is durable only once a
   * later {@linkcode Store.durable} resolves, and nothing it announces may appear before then.
   * An intent whose creation never happens is harmless: on replay (and at save) an intent of a
   * creation counts only when its subject exists.
   *
   * @throws {StoreError} when the journal cannot be written.
   */
  journal(intent: Intent & { source: SourceName }): void {
    this.#pending.push(intent);
    try {
      this.#journal ??= Deno.openSync(join(this.dir, JOURNAL_FILE), {
        append: true,
        create: true,
        mode: 0o600,
      });
      const line = JSON.stringify(intent) + "\n";
      const bytes = new TextEncoder().encode(this.#torn ? "\n" + line : line);
      let written = 0;
      while (written < bytes.length) written += this.#journal.writeSync(bytes.subarray(written));
      this.#torn = false;
      this.#appended++;
    } catch (cause) {
      if (this.#journal !== undefined) this.#torn = true;
      throw new StoreError(
        `Cannot write journal "${join(this.dir, JOURNAL_FILE)}": ${messageOf(cause)}`,
        { cause },
      );
    }
  }

  /**
   * Makes every intent journaled so far durable (fdatasync). Callers waiting together share one
   * sync: one started after their intents were appended covers them all (a group of creations
   * prepared together waits for one fdatasync, not one each).
   *
   * @throws {StoreError} when the journal cannot be synced.
   */
  async durable(): Promise<void> {
    const need = this.#appended;
    while (this.#syncedTo < need) {
      const running = this.#syncing;
      if (running !== undefined) {
        if (running.upTo >= need) return await running.done;
        await running.done.catch(() => {});
        continue;
      }
      const upTo = this.#appended;
      const journal = this.#journal!;
      const done = (async () => {
        try {
          await journal.syncData();
        } catch (cause) {
          throw new StoreError(
            `Cannot write journal "${join(this.dir, JOURNAL_FILE)}": ${messageOf(cause)}`,
            { cause },
          );
        } finally {
          this.#syncing = undefined;
        }
        this.#syncedTo = Math.max(this.#syncedTo, upTo);
      })();
      this.#syncing = { upTo, done };
      await done;
    }
  }

  /**
   * Saves a copy of `content` (what a path held before this host took it over) under
   * `originals/`, durably, and returns its name relative to the state directory. Called before
   * the path is overwritten; when it throws, nothing may be overwritten.
   *
   * @throws {StoreError} "Cannot save the original of ..." when it cannot be written (a full
   *   disk, a read-only state directory); no partial copy is left.
   */
  async saveOriginal(subject: string, content: Uint8Array): Promise<string> {
    const name = `${ORIGINALS_DIR}/${await sha256Hex(subject)}`;
    try {
      await Deno.mkdir(join(this.dir, ORIGINALS_DIR), { recursive: true, mode: 0o700 });
      await writeFileAtomic(join(this.dir, name), content, { mode: 0o600 });
    } catch (cause) {
      throw new StoreError(
        `Cannot save the original of "${subject}" in "${join(this.dir, name)}": ${
          messageOf(cause)
        }`,
        { cause },
      );
    }
    return name;
  }

  /**
   * Reads a saved original's copy.
   *
   * @throws {StoreError} when it cannot be read.
   */
  async readOriginal(copy: string): Promise<Uint8Array> {
    try {
      // A copy this host saved, of a file of any size: refused only if it is not a regular file.
      return await readRegularFile(join(this.dir, copy), { maxBytes: Number.MAX_SAFE_INTEGER });
    } catch (cause) {
      throw new StoreError(
        `Cannot read the saved original "${join(this.dir, copy)}": ${messageOf(cause)}`,
        { cause },
      );
    }
  }

  /**
   * Saves the footprint atomically, then clears the journal it now includes, and removes copies
   * of originals no record refers to any more (restored, or saved for a takeover that failed).
   *
   * @throws {StoreError} "Cannot write store ..." when it cannot be saved (the old store stays).
   */
  async save(): Promise<void> {
    // A resource that failed after creating something (a directory made, then its owner could
    // not be set) was never recorded: what its journaled creation left is still this host's.
    for (const intent of this.#pending) {
      if (this.find(intent.source, intent.id, intent.type, intent.subject)) continue;
      if (intent.original === undefined && !(await this.#exists(intent))) continue;
      this.#entries.set(keyOf(intent), entryOf(intent));
      this.#dirty = true;
    }
    this.#pending = [];
    if (!this.#dirty && this.#journal === undefined) return; // nothing changed: nothing written
    const data = JSON.stringify(
      {
        version: 2,
        sources: Object.fromEntries(this.#sources),
        resources: [...this.#entries.values()],
      },
      null,
      1,
    ) + "\n";
    try {
      await writeFileAtomic(this.path, data, { mode: 0o600 });
    } catch (cause) {
      throw new StoreError(`Cannot write store "${this.path}": ${messageOf(cause)}`, { cause });
    }
    this.#dirty = false;
    this.#journal?.close();
    this.#journal = undefined;
    this.#syncedTo = this.#appended; // folded into the store: nothing left to make durable
    await Deno.remove(join(this.dir, JOURNAL_FILE)).catch(() => {});
    await this.#collectOriginals();
  }

  async #collectOriginals(): Promise<void> {
    const kept = new Set<string>();
    for (const e of this.#entries.values()) {
      if (e.original?.kind === "file") kept.add(e.original.copy);
    }
    try {
      for await (const f of Deno.readDir(join(this.dir, ORIGINALS_DIR))) {
        const name = `${ORIGINALS_DIR}/${f.name}`;
        if (!kept.has(name)) await Deno.remove(join(this.dir, name)).catch(() => {});
      }
    } catch { /* no originals saved */ }
  }

  /** Releases the state directory's lock (after the last save). */
  release(): void {
    try {
      this.#lock?.close(); // closing the file releases its lock
    } catch { /* already closed */ }
    this.#lock = undefined;
  }

  /** Closes the journal without saving (dry runs), and releases the lock. */
  close(): void {
    this.#journal?.close();
    this.#journal = undefined;
    this.release();
  }
}

/**
 * Gives every record of a format 1 store its source (see {@linkcode Migration}); the sources it
 * names are noted with origin `command` for `local` and a name of their own otherwise.
 */
function migrate(
  records: EntryV1[],
  migration: Migration | undefined,
): { entries: FootprintEntry[]; sources: Map<SourceName, SourceInfo>; feeder: SourceName } {
  const locations: Locations = new Map();
  const claimOf = (r: { type: string; subject: string }) => {
    const key = claimKey(r.type, r.subject, locations);
    return migration?.claims.find((c) => c.subjects.has(key))?.source;
  };
  const fallback = migration?.feederIfClaimed;
  const feeder = migration?.feeder ??
    (fallback !== undefined && records.some((r) => claimOf(r) === fallback) ? fallback : "local");
  const entries = records.map((r): FootprintEntry => ({ source: claimOf(r) ?? feeder, ...r }));
  const sources = new Map<SourceName, SourceInfo>();
  for (const e of entries) {
    if (sources.has(e.source)) continue;
    sources.set(e.source, {
      origin: originOf(e.source),
      declaration: "sha256:unknown (migrated from store format 1)",
      applied: e.applied,
    });
  }
  return { entries, sources, feeder };
}

/**
 * `data` when it is a valid store file of format 2, by the validator generated from the zod schema
 * `StoreFile` (./store_validators.js, made by scripts/validators.ts from ./store_schema.ts: the
 * rules are written once, there), else undefined: then the schema, loaded only then, reads it or
 * says what is wrong. It accepts what the schema accepts (a source named `__proto__` neither: it is
 * not a source's name), and the schema returns the same values (it has no default, transform or
 * refinement); each object keeps its keys in the file's order, which is the schema's in every file
 * the store writes (tests/host/declaration_fast_test.ts).
 */
export function validStoreFile(data: unknown): StoreFileV2 | undefined {
  return isStoreFile(data) ? data as StoreFileV2 : undefined;
}

/** The origin a source's name implies when nothing else says it. */
function originOf(name: SourceName): SourceOrigin {
  return name === "bundle"
    ? "bundle"
    : name === "link"
    ? "link"
    : name === "local"
    ? "command"
    : "declarations";
}

/** The record a journaled intent leaves: a creation, or a takeover with its original. */
function entryOf(intent: Intent & { source: SourceName }): FootprintEntry {
  const { original, ...rest } = intent;
  return {
    ...rest,
    created: original === undefined,
    applied: new Date().toISOString(),
    ...(original ? { original } : {}),
  };
}

async function sha256Hex(text: string): Promise<string> {
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

function keyOf(e: { source: string; id: string; type: string; subject: string }): string {
  return `${e.source}\0${e.id}\0${e.type}\0${e.subject}`;
}
