/**
 * Whether this node joined a mesh rather than raised one: `STATE/joined`.
 *
 * The carried bundle is a first node's substrate (Debian's: the store and the broker). A node that
 * is not its mesh's first must never raise a second one, whatever command an operator runs on it
 * later. So the fact is recorded once, durably, in the host's state directory, when the link first
 * connects to a broker on a node whose store does not hold source `bundle` (a first node that took
 * its bundle and then links to its own mesh is not "joined"), or when `reconcile --no-bundle`
 * applies on such a node. From then on `reconcile` (and its dry run) leaves the carried bundle out
 * and keeps the node's own sources (its local declarations and the link's kept declaration), and
 * `bundle` says why it shows no plan. An operator undoes it by removing the file.
 *
 * The file is written atomically (temporary file, fsync, rename), mode 0600; one that exists and
 * cannot be read is a {@linkcode StoreError} (the program stops, exit 3), never taken as absent.
 *
 * @module
 */

import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { join } from "../lib/path.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import { makeStateDir, Store, StoreError } from "./store.ts";

/** The file's name under the state directory. */
export const JOINED_FILE = "joined";

/** What `STATE/joined` holds. */
export interface Joined {
  /** Its format: 1. */
  joined: 1;
  /** When it was recorded (ISO 8601, UTC). */
  at: string;
  /** What recorded it: the link's first connection, or `reconcile --no-bundle`. */
  by: "link" | "reconcile --no-bundle";
  /** The broker the link connected to, its credential masked (by `link` only). */
  broker?: string;
}

/** The largest `joined` record read, in bytes (this host writes a few hundred). */
const JOINED_MAX_BYTES = 64 * 1024;

/**
 * Reads `STATE/joined`.
 *
 * @returns undefined when there is none (the node did not join a mesh).
 * @throws {StoreError} when it exists and cannot be read, or is not a record this host wrote.
 */
export async function readJoined(stateDir: string): Promise<Joined | undefined> {
  const path = join(stateDir, JOINED_FILE);
  let text: string;
  try {
    text = await readRegularTextFile(path, { maxBytes: JOINED_MAX_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new StoreError(`Cannot read "${path}": ${messageOf(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StoreError(`Cannot read "${path}": it is not JSON (${messageOf(error)})`);
  }
  const v = value as Partial<Joined> | null;
  if (
    v === null || typeof v !== "object" || v.joined !== 1 || typeof v.at !== "string" ||
    (v.by !== "link" && v.by !== "reconcile --no-bundle") ||
    (v.broker !== undefined && typeof v.broker !== "string")
  ) {
    throw new StoreError(
      `Cannot read "${path}": it is not what this host records there ` +
        `({"joined": 1, "at": TIME, "by": "link" | "reconcile --no-bundle"})`,
    );
  }
  return v as Joined;
}

/**
 * Records that this node joined a mesh, unless it is recorded already or the node took its
 * bundle (its store holds source `bundle`: a first node).
 *
 * @returns the record now in place, or undefined when the node is a first node.
 * @throws {StoreError} when the store or the file cannot be read, or the file cannot be written.
 */
export async function recordJoined(
  stateDir: string,
  by: Joined["by"],
  broker?: string,
): Promise<Joined | undefined> {
  const already = await readJoined(stateDir);
  if (already !== undefined) return already;
  if (await tookBundle(stateDir)) return undefined;
  const record: Joined = {
    joined: 1,
    at: new Date().toISOString(),
    by,
    ...(broker !== undefined ? { broker } : {}),
  };
  const path = join(stateDir, JOINED_FILE);
  try {
    await makeStateDir(stateDir);
    await writeFileAtomic(path, JSON.stringify(record) + "\n", { mode: 0o600 });
  } catch (error) {
    throw new StoreError(`Cannot record that this node joined a mesh: ${messageOf(error)}`);
  }
  return record;
}

/** Whether the store holds source `bundle` (the node took its bundle: a first node). */
async function tookBundle(stateDir: string): Promise<boolean> {
  const store = await Store.load(stateDir, {
    readOnly: true,
    migration: () => Promise.resolve({ claims: [] }),
  });
  try {
    return store.sources().has("bundle") || store.entries().some((e) => e.source === "bundle");
  } finally {
    store.close();
  }
}

/**
 * Why the carried bundle is left alone on a joined node, and how to undo it, in one sentence.
 */
export function joinedText(joined: Joined, stateDir: string): string {
  return `this node joined a mesh (recorded ${joined.at} by ${joined.by}${
    joined.broker ? `, broker ${joined.broker}` : ""
  }, in "${join(stateDir, JOINED_FILE)}"), so the carried bundle, a first node's, is never ` +
    `applied here; to take it after all, remove that file and run mesh-host reconcile`;
}
