/**
 * The footprint store: what this host applied, and whether it created it. JSON under the state
 * directory (`store.json`), written atomically (temp file, fsync, rename, fsync of the
 * directory) and saved even when an apply fails part way.
 *
 * Creation is journaled before it happens (`journal`, one JSON line per intent, fdatasync'd),
 * so a host killed between creating something and saving the store still knows, at its next
 * start, that it created it; the journal is folded into the store and cleared once the store is
 * saved. A store that exists but cannot be read stops the host: it is never treated as empty,
 * since an empty footprint would make the host forget what it must remove.
 *
 * @module
 */

import { z } from "zod";
import { join } from "node:path";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";

/** One thing in the footprint. */
export const FootprintEntry = z.strictObject({
  id: z.string(),
  type: z.enum(["directory", "file", "service", "package", "container", "action"]),
  /** What it is on the machine: a path, unit, package, container name, or the action's id. */
  subject: z.string(),
  /** Whether this host created it (only what it created is ever removed). */
  created: z.boolean(),
  /** When this host last changed it (created or updated it), ISO 8601. */
  applied: z.string(),
});
/** One footprint entry. */
export type FootprintEntry = z.output<typeof FootprintEntry>;

const StoreFile = z.strictObject({
  version: z.literal(1),
  /** In the order they were applied. */
  resources: z.array(FootprintEntry),
});

const Intent = z.strictObject({
  id: z.string(),
  type: FootprintEntry.shape.type,
  subject: z.string(),
});

/** The store's file name under the state directory. */
export const STORE_FILE = "store.json";
/** The lock file under the state directory: one host at a time applies. */
export const LOCK_FILE = "lock";
/** The creation journal's file name under the state directory. */
export const JOURNAL_FILE = "journal";

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
  /** By `id\0type\0subject`, in the order things were first applied (a Map keeps it). */
  #entries: Map<string, FootprintEntry>;
  /** Whether anything differs from what was loaded: a no-op apply writes nothing. */
  #dirty = false;
  #journal: Deno.FsFile | undefined;
  /** The exclusive lock on the state directory, held from load to save or close. */
  #lock: Deno.FsFile | undefined;
  /** Creations journaled by this process and not yet recorded (a resource may fail after one). */
  #pending: z.output<typeof Intent>[] = [];
  #exists: (intent: z.output<typeof Intent>) => Promise<boolean> = () => Promise.resolve(true);

  private constructor(dir: string, entries: FootprintEntry[]) {
    this.dir = dir;
    this.#entries = new Map(entries.map((e) => [keyOf(e), e]));
  }

  /** The store file's path. */
  get path(): string {
    return join(this.dir, STORE_FILE);
  }

  /**
   * Loads the store of `dir`. A missing store is an empty footprint (a host that never applied);
   * a missing directory is created when `create` is set. A journal left by a host that was killed
   * is folded in: an intent whose subject now exists was created by this host.
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
      exists?: (intent: z.output<typeof Intent>) => Promise<boolean>;
    } = {},
  ): Promise<Store> {
    const path = join(dir, STORE_FILE);
    if (options.readOnly) {
      const missing = await Deno.stat(dir).then(
        () => false,
        (e) => e instanceof Deno.errors.NotFound,
      );
      if (missing) return new Store(dir, []);
    }
    try {
      const info = await Deno.stat(dir);
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
        await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
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
        lock = await Deno.open(join(dir, LOCK_FILE), { write: true, create: true, mode: 0o600 });
        await lock.lock(true);
      } catch (cause) {
        lock?.close();
        throw new StoreError(`Cannot lock state directory "${dir}": ${messageOf(cause)}`, {
          cause,
        });
      }
      // A save killed before its rename leaves the store's temporary files: this host's own.
      for await (const e of Deno.readDir(dir)) {
        if (e.name.startsWith(`.${STORE_FILE}.`) && e.name.endsWith(".tmp")) {
          await Deno.remove(join(dir, e.name)).catch(() => {});
        }
      }
    }
    let entries: FootprintEntry[] = [];
    try {
      let text: string | undefined;
      try {
        text = await Deno.readTextFile(path);
      } catch (error) {
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
        const parsed = StoreFile.safeParse(data);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw new StoreError(
            `Cannot read store "${path}": ${
              issue.path.join(".") || "(document)"
            }: ${issue.message}; it is kept as it is`,
          );
        }
        entries = parsed.data.resources;
      }
    } catch (error) {
      lock?.close(); // a store that cannot be read is not held
      throw error;
    }
    const store = new Store(dir, entries);
    store.#lock = lock;
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
    exists: (intent: z.output<typeof Intent>) => Promise<boolean>,
    readOnly: boolean,
  ): Promise<void> {
    const path = join(this.dir, JOURNAL_FILE);
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw new StoreError(`Cannot read journal "${path}": ${messageOf(error)}`, { cause: error });
    }
    let changed = false;
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      let intent;
      try {
        intent = Intent.parse(JSON.parse(line));
      } catch {
        continue; // a line torn by the kill: its creation had not started
      }
      if (this.find(intent.id, intent.type, intent.subject)) continue;
      if (!(await exists(intent))) continue;
      this.#entries.set(keyOf(intent), {
        ...intent,
        created: true,
        applied: new Date().toISOString(),
      });
      changed = true;
      this.#dirty = true;
    }
    if (readOnly) return; // folded in memory only: a dry run writes nothing
    if (changed) await this.save();
    else await Deno.remove(path).catch(() => {});
  }

  /** The footprint, in the order things were applied. */
  entries(): readonly FootprintEntry[] {
    return [...this.#entries.values()];
  }

  /** The entry for this resource, if the footprint has it. */
  find(id: string, type: FootprintEntry["type"], subject: string): FootprintEntry | undefined {
    return this.#entries.get(keyOf({ id, type, subject }));
  }

  /** Records (or refreshes) an entry. `created` is sticky: once created by this host, always. */
  record(entry: FootprintEntry): void {
    const key = keyOf(entry);
    const known = this.#entries.get(key);
    const next = known ? { ...entry, created: entry.created || known.created } : entry;
    if (known && known.created === next.created && known.applied === next.applied) return;
    this.#entries.set(key, next);
    this.#dirty = true;
  }

  /**
   * Moves an entry to a new id, keeping its place in the order and whether this host created
   * it: a resource renamed in the declaration is still the same thing on the machine.
   */
  rekey(entry: FootprintEntry, id: string): void {
    const old = keyOf(entry);
    if (!this.#entries.has(old)) return;
    const moved = { ...entry, id };
    this.#entries = new Map(
      [...this.#entries].map(([k, e]) => k === old ? [keyOf(moved), moved] : [k, e]),
    );
    this.#dirty = true;
  }

  /** Drops an entry (after it was removed or forgotten). */
  drop(entry: FootprintEntry): void {
    if (this.#entries.delete(keyOf(entry))) this.#dirty = true;
  }

  /**
   * Journals, durably, that this host is about to create `subject`, before it does.
   *
   * @throws {StoreError} when the journal cannot be written.
   */
  async intend(intent: z.output<typeof Intent>): Promise<void> {
    this.#pending.push(intent);
    try {
      this.#journal ??= await Deno.open(join(this.dir, JOURNAL_FILE), {
        append: true,
        create: true,
        mode: 0o600,
      });
      const bytes = new TextEncoder().encode(JSON.stringify(intent) + "\n");
      let written = 0;
      while (written < bytes.length) written += await this.#journal.write(bytes.subarray(written));
      await this.#journal.syncData();
    } catch (cause) {
      throw new StoreError(
        `Cannot write journal "${join(this.dir, JOURNAL_FILE)}": ${messageOf(cause)}`,
        { cause },
      );
    }
  }

  /**
   * Saves the footprint atomically, then clears the journal it now includes.
   *
   * @throws {StoreError} "Cannot write store ..." when it cannot be saved (the old store stays).
   */
  async save(): Promise<void> {
    // A resource that failed after creating something (a directory made, then its owner could
    // not be set) was never recorded: what its journaled creation left is still this host's.
    for (const intent of this.#pending) {
      if (this.find(intent.id, intent.type, intent.subject)) continue;
      if (!(await this.#exists(intent))) continue;
      this.#entries.set(keyOf(intent), {
        ...intent,
        created: true,
        applied: new Date().toISOString(),
      });
      this.#dirty = true;
    }
    this.#pending = [];
    if (!this.#dirty && this.#journal === undefined) return; // nothing changed: nothing written
    const data = JSON.stringify({ version: 1, resources: [...this.#entries.values()] }, null, 1) +
      "\n";
    try {
      await writeFileAtomic(this.path, data, { mode: 0o600 });
    } catch (cause) {
      throw new StoreError(`Cannot write store "${this.path}": ${messageOf(cause)}`, { cause });
    }
    this.#dirty = false;
    this.#journal?.close();
    this.#journal = undefined;
    await Deno.remove(join(this.dir, JOURNAL_FILE)).catch(() => {});
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

function keyOf(e: { id: string; type: string; subject: string }): string {
  return `${e.id}\0${e.type}\0${e.subject}`;
}
