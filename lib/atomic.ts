/**
 * Atomic file replacement: write a temporary file in the same directory, fsync it, rename it over
 * the target, fsync the directory. A reader sees the old content or the new, never a part.
 *
 * @module
 */

import { basename, dirname, join } from "./path.ts";

// Kept in its own module so that a program's help loads no node: module (lib/cli_table.ts).
export { writeAll } from "./write.ts";

/** Options for {@linkcode writeFileAtomic}. */
export interface WriteAtomicOptions {
  /** File mode of the new file (e.g. `0o644`); it is set before the rename. Default `0o644`. */
  mode?: number;
}

/**
 * Replaces `path` with `data` atomically (temp file, fsync, rename, fsync of the directory).
 *
 * @param path the file to replace; its directory must exist.
 * @param data the whole new content (a string is written as UTF-8).
 * @throws {Error} "Cannot write "<path>": ..." when the directory is missing, is not writable,
 *   or any step fails; the temporary file is removed and the target is left as it was.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteAtomicOptions = {},
): Promise<void> {
  const dir = dirname(path);
  // A name of its own per write: two writers of one file (two overlapping runs) must not
  // share a temporary file. One left by a killed writer is `.<name>.<uuid>.tmp`, which the
  // owner of the directory may clear (the host's store does, under its lock).
  const temp = join(dir, `.${basename(path)}.${crypto.randomUUID()}.tmp`);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let file: Deno.FsFile | undefined;
  try {
    file = await Deno.open(temp, {
      write: true,
      createNew: true,
      mode: options.mode ?? 0o644,
    });
    await Deno.chmod(temp, options.mode ?? 0o644); // the umask narrowed it at creation
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
    file.close();
    file = undefined;
    await Deno.rename(temp, path);
  } catch (cause) {
    try {
      file?.close();
    } catch { /* already closed */ }
    await Deno.remove(temp).catch(() => {});
    throw new Error(`Cannot write "${path}": ${messageOf(cause)}`, { cause });
  }
  try {
    const d = await Deno.open(dir, { read: true });
    try {
      await d.sync();
    } finally {
      d.close();
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself has happened.
  }
}

/**
 * Checks that `path` could be written atomically later: its directory exists and is a directory.
 * Used to refuse bad output paths before any work is done.
 *
 * @throws {Error} "Cannot write "<path>": directory "<dir>" does not exist" (or is not a
 *   directory), or "... is a directory" when `path` itself is a directory.
 */
export async function assertWritablePath(path: string): Promise<void> {
  const dir = dirname(path);
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(dir);
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) {
      throw new Error(`Cannot write "${path}": directory "${dir}" does not exist`);
    }
    throw new Error(`Cannot write "${path}": ${messageOf(cause)}`, { cause });
  }
  if (!info.isDirectory) {
    throw new Error(`Cannot write "${path}": "${dir}" is not a directory`);
  }
  try {
    if ((await Deno.stat(path)).isDirectory) {
      throw new Error(`Cannot write "${path}": it is a directory`);
    }
  } catch (cause) {
    if (!(cause instanceof Deno.errors.NotFound)) throw cause;
  }
}

/** The message of an unknown thrown value. */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch and node:net wrap the real reason (ECONNREFUSED, ...) in `cause`.
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause && !error.message.includes(cause) ? `${error.message}: ${cause}` : error.message;
}

/**
 * What a path that is not a regular file is, in words ("a directory", "a FIFO", "a character
 * device", ...), from its `stat`.
 */
export function fileKindOf(info: Deno.FileInfo): string {
  if (info.isDirectory) return "a directory";
  if (info.isFifo) return "a FIFO";
  if (info.isCharDevice) return "a character device";
  if (info.isBlockDevice) return "a block device";
  if (info.isSocket) return "a socket";
  return info.isFile ? "a regular file" : "not a regular file";
}

/**
 * Reads a whole regular file of at most `limit` bytes. Anything else (a FIFO, whose open blocks
 * until a writer comes; a device that never ends; a directory) is refused before it is opened.
 *
 * Synchronous underneath (a local regular file: the calls leave nothing else to do meanwhile,
 * and an asynchronous one costs a thread of the pool), with the same errors.
 *
 * @throws {TypeError} saying what the path is when it is not a regular file (symlinks are
 *   followed); {@linkcode readFileLimited}'s errors otherwise.
 */
export function readRegularFileLimited(path: string, limit: number): Promise<Uint8Array> {
  try {
    return Promise.resolve(readRegularFileLimitedSync(path, limit));
  } catch (error) {
    return Promise.reject(error);
  }
}

function readRegularFileLimitedSync(path: string, limit: number): Uint8Array {
  const info = Deno.statSync(path);
  if (!info.isFile) throw new TypeError(`it is ${fileKindOf(info)}, not a regular file`);
  using file = Deno.openSync(path, { read: true });
  const chunks: Uint8Array[] = [];
  let total = 0;
  // The size it has now, and one byte more to see it end (it may grow meanwhile).
  const buffer = new Uint8Array(Math.min(Math.max(info.size + 1, 1 << 16), limit + 1));
  for (;;) {
    const n = file.readSync(buffer);
    if (n === null) break;
    total += n;
    if (total > limit) throw new RangeError(`"${path}" is larger than ${limit} bytes`);
    chunks.push(buffer.slice(0, n));
  }
  return concat(chunks, total);
}

/**
 * Joins `chunks` (whose lengths add up to `total` bytes) into one array: the only chunk itself
 * when there is one, else a new array of `total` bytes.
 */
export function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/**
 * Reads a whole file of at most `limit` bytes; a larger one (or a device that never ends) is
 * refused after `limit + 1` bytes rather than read into memory.
 *
 * @throws {RangeError} naming the file and the limit when it is larger.
 */
export async function readFileLimited(path: string, limit: number): Promise<Uint8Array> {
  using file = await Deno.open(path, { read: true });
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(1 << 16);
  for (;;) {
    const n = await file.read(buffer);
    if (n === null) break;
    total += n;
    if (total > limit) throw new RangeError(`"${path}" is larger than ${limit} bytes`);
    chunks.push(buffer.slice(0, n));
  }
  return concat(chunks, total);
}
