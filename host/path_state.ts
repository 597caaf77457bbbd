/**
 * What is at a path, read without following a symlink, and the temporary file a write of a path
 * uses: what the path appliers (resources/fs.ts, resources/file/ and resources/directory/) and
 * the apply's recovery of an interrupted creation (./apply.ts) both read.
 *
 * @module
 */

import { basename, dirname, join } from "../lib/path.ts";
import { messageOf } from "../lib/atomic.ts";
import { ResourceError } from "./applier.ts";

/** What is at a path now. */
export type PathState =
  | { kind: "absent" }
  | { kind: "symlink"; target: string }
  | { kind: "other"; what: string }
  | { kind: "directory"; mode: number; uid: number; gid: number }
  | { kind: "file"; mode: number; uid: number; gid: number; size: number; content?: Uint8Array };

/**
 * Reads what is at `path` without following a symlink (and its content when `readContent` is
 * given and the size matches: a file of another size differs without reading it).
 *
 * Synchronous underneath: one `lstat` and at most one read of a local file, where an
 * asynchronous call per path only left the thread idle between them (an apply converges one
 * resource after the other and has nothing else to do meanwhile).
 */
export function observePath(
  path: string,
  readContent?: { size: number },
): Promise<PathState> {
  try {
    return Promise.resolve(observePathSync(path, readContent));
  } catch (error) {
    return Promise.reject(error);
  }
}

function observePathSync(path: string, readContent?: { size: number }): PathState {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kind: "absent" };
    if (error instanceof Deno.errors.NotADirectory) {
      return { kind: "other", what: "below something that is not a directory" };
    }
    throw new ResourceError(`Cannot read "${path}": ${messageOf(error)}`, { cause: error });
  }
  if (info.isSymlink) {
    let target = "?";
    try {
      target = Deno.readLinkSync(path);
    } catch { /* gone meanwhile */ }
    return { kind: "symlink", target };
  }
  const ids = { mode: (info.mode ?? 0) & 0o7777, uid: info.uid ?? -1, gid: info.gid ?? -1 };
  if (info.isDirectory) return { kind: "directory", ...ids };
  if (!info.isFile) return { kind: "other", what: "neither a file nor a directory" };
  const state: PathState = { kind: "file", ...ids, size: info.size };
  if (readContent && readContent.size === info.size) {
    try {
      state.content = Deno.readFileSync(path);
    } catch (error) {
      throw new ResourceError(`Cannot read "${path}": ${messageOf(error)}`, { cause: error });
    }
  }
  return state;
}

/**
 * The temporary file a write of `path` uses: `.<name>.mesh-tmp` in the same directory (the same
 * filesystem, so the rename is atomic).
 */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}${TEMP_SUFFIX}`);
}

/** The suffix of the temporary files of this host. */
export const TEMP_SUFFIX = ".mesh-tmp";
