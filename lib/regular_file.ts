/**
 * The one bounded reader of files that come from outside a program (declarations, registries,
 * result and stamp files, kept state, stores, bundles): only a regular file is read, and only up
 * to a bound (docs/design.md, "Hostile inputs", rule 1).
 *
 * In order: `lstat` then `stat` (symlinks followed) refuse anything that is not a regular file,
 * naming what it is ("a FIFO", "a symbolic link to a character device", ...), and a file larger
 * than the bound, before anything is opened (a `stat` never blocks); the open is asynchronous, and
 * when it waits longer than a second the path is looked at again (a FIFO swapped in after the
 * `stat` is released and refused; a regular file on a busy machine is waited for); `fstat` of what was opened must be the same regular file (device and
 * inode); then at most `maxBytes + 1` bytes are read, so a file that grew past the bound is
 * refused without being read whole.
 *
 * @module
 */

/** Options for {@linkcode readRegularFile} and its siblings. */
export interface ReadRegularOptions {
  /** The largest size accepted, in bytes; a larger file is refused ({@linkcode FileTooLargeError}). */
  maxBytes: number;
}

/**
 * A path that is not a regular file (or a symlink to one): a FIFO, a socket, a device, a
 * directory. Its message says what it is: "it is a FIFO, not a regular file".
 */
export class NotRegularFileError extends Error {
  /** What the path is, in words ("a FIFO", "a symbolic link to a directory"). */
  readonly kind: string;
  /** @param kind what the path is, in words. */
  constructor(kind: string) {
    super(`it is ${kind}, not a regular file`);
    this.name = "NotRegularFileError";
    this.kind = kind;
  }
}

/**
 * A regular file larger than the bound. A `RangeError`, as a refusal for size has always been.
 * Its message: "it is larger than N bytes".
 */
export class FileTooLargeError extends RangeError {
  /** The bound it broke, in bytes. */
  readonly maxBytes: number;
  /** @param maxBytes the bound it broke, in bytes. */
  constructor(maxBytes: number) {
    super(`it is larger than ${maxBytes} bytes`);
    this.name = "FileTooLargeError";
    this.maxBytes = maxBytes;
  }
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
  if (info.isSymlink) return "a symbolic link";
  return info.isFile ? "a regular file" : "not a regular file";
}

/** How long an open may take before it is given up, in milliseconds (a regular file: microseconds). */
const OPEN_WAIT_MS = 1000;

/**
 * Reads the whole of the regular file `path`, of at most `options.maxBytes` bytes, without any
 * call that can block on what the path is (see the module's documentation).
 *
 * @param path the file; symlinks are followed, and a symlink to anything but a regular file is
 *   refused as such.
 * @returns its bytes.
 * @throws {Deno.errors.NotFound} when nothing is there (or a symlink dangles).
 * @throws {NotRegularFileError} when it is a FIFO, socket, device or directory, or was replaced by
 *   one between the `stat` and the open.
 * @throws {FileTooLargeError} when it is (or grows while read to be) larger than the bound.
 * @throws {Deno.errors.PermissionDenied} and the other errors of `stat`, `open` and `read`.
 */
export async function readRegularFile(
  path: string,
  options: ReadRegularOptions,
): Promise<Uint8Array> {
  const { maxBytes } = options;
  const info = statRegular(path);
  if (info.size > maxBytes) throw new FileTooLargeError(maxBytes);
  using file = await openWithin(path);
  const opened = file.statSync();
  if (!opened.isFile) throw new NotRegularFileError(fileKindOf(opened));
  if (opened.dev !== info.dev || opened.ino !== info.ino) {
    throw new Error("it was replaced while being opened; read it again");
  }
  if (opened.size > maxBytes) throw new FileTooLargeError(maxBytes);
  // Read into one buffer of the size it has now and one byte more (to see it end), grown only
  // if the file grows meanwhile, never past the bound and one: no second copy of the content.
  // Synchronous reads: a regular file answers at once, and costs no thread of the pool.
  let buffer = new Uint8Array(Math.min(maxBytes + 1, opened.size + 1));
  let total = 0;
  for (;;) {
    if (total === buffer.length) {
      if (total > maxBytes) throw new FileTooLargeError(maxBytes);
      const grown = new Uint8Array(Math.min(maxBytes + 1, buffer.length * 2 + (1 << 16)));
      grown.set(buffer);
      buffer = grown;
    }
    const n = file.readSync(buffer.subarray(total));
    if (n === null) break;
    total += n;
  }
  return buffer.subarray(0, total);
}

/**
 * {@linkcode readRegularFile}, decoded as UTF-8. With `fatal`, bytes that are not UTF-8 are
 * refused (a `TypeError` from `TextDecoder`); without it they become U+FFFD, as
 * `Deno.readTextFile` reads them.
 */
export async function readRegularTextFile(
  path: string,
  options: ReadRegularOptions & { fatal?: boolean },
): Promise<string> {
  return new TextDecoder("utf-8", { fatal: options.fatal ?? false })
    .decode(await readRegularFile(path, options));
}

/** How many looks at the path an open is given before a timer is made (see openWithin). */
const EARLY_LOOKS = 8;

/**
 * Opens `path` (found a regular file by its `stat`) for reading. The open is asynchronous, so
 * that the program stays free to answer a signal even if it waits; and it may wait for two
 * reasons: the path was replaced by a FIFO after its `stat` (Deno's open takes no `O_NONBLOCK`),
 * or the machine is slow (every thread of Deno's pool busy with other nodes' or resources'
 * fsyncs, a file lease being broken, a slow disk). So every {@linkcode OPEN_WAIT_MS} the open has
 * not returned, the path is looked at again: a regular file is waited for further; a FIFO is
 * opened for writing, which lets the waiting open return, and refused; anything else is refused.
 * Exported for its test (a swap between two calls cannot be timed).
 *
 * @throws {NotRegularFileError} "... (put there after its stat)" when, while the open waited,
 *   the path became something other than a regular file.
 */
export async function openWithin(path: string): Promise<Deno.FsFile> {
  const opening = Deno.open(path, { read: true });
  // Nearly every open is done within a few looks at the path (each an lstat on the same thread
  // pool): then no timer is made. A process's first timer loads Deno's Node timers (12-14 ms of
  // a short command such as `apply`, measured with --prof); a late open still gets one below.
  for (let look = 0; look < EARLY_LOOKS; look++) {
    const looked = Deno.lstat(path).then(() => undefined, () => undefined);
    const early = await Promise.race([opening, looked]);
    if (early !== undefined) return early;
  }
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), OPEN_WAIT_MS);
    });
    const file = await Promise.race([opening, late]).finally(() => clearTimeout(timer));
    if (file !== undefined) return file;
    let kind = "something that did not open";
    let now: Deno.FileInfo | undefined;
    try {
      now = Deno.statSync(path);
    } catch { /* gone: refused all the same */ }
    // A regular file opens; it is only late. (The descriptor opened is checked against the
    // first stat by the caller, so a regular file swapped in meanwhile is refused there.)
    if (now?.isFile) continue;
    opening.then((f) => f.close(), () => {});
    try {
      if (now !== undefined) kind = fileKindOf(now);
      if (now?.isFifo) (await Deno.open(path, { write: true })).close();
    } catch { /* not ours to release: refused all the same */ }
    throw new NotRegularFileError(`${kind} (put there after its stat)`);
  }
}

/**
 * The `stat` of `path` when it is a regular file (symlinks followed).
 *
 * @throws {NotRegularFileError} naming what it is otherwise ("a symbolic link to a FIFO").
 * @throws {Deno.errors.NotFound} when nothing is there.
 */
export function statRegular(path: string): Deno.FileInfo {
  const own = Deno.lstatSync(path);
  if (own.isFile) return own;
  if (!own.isSymlink) throw new NotRegularFileError(fileKindOf(own));
  const target = Deno.statSync(path);
  if (!target.isFile) {
    throw new NotRegularFileError(`a symbolic link to ${fileKindOf(target)}`);
  }
  return target;
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
