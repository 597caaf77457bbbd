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
  /**
   * `false`: never replace a file already at `path`: the complete temporary file is hard-linked
   * to `path` (which fails when anything is there) instead of renamed over it, so two writers
   * racing leave exactly one's content. Default `true`.
   */
  replace?: boolean;
}

/**
 * Replaces `path` with `data` atomically (temp file, fsync, rename, fsync of the directory).
 *
 * @param path the file to replace; its directory must exist.
 * @param data the whole new content (a string is written as UTF-8).
 * @throws {Error} "Cannot write "<path>": ..." when the directory is missing, is not writable,
 *   or any step fails; the temporary file is removed and the target is left as it was. With
 *   `replace: false` and something already at `path`, its `cause` is `Deno.errors.AlreadyExists`.
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
    if (options.replace === false) {
      await Deno.link(temp, path);
      await Deno.remove(temp);
    } else {
      await Deno.rename(temp, path);
    }
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
