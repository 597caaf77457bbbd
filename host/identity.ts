/**
 * The identity of the running executable, captured at start, so the host can tell that its
 * binary was replaced on disk (overwritten in place, or a new file renamed onto the path) and
 * stand aside for the new one. No procfs: `/proc/self/exe` marked deleted catches unlink only,
 * and a rename onto the same path is exactly what a package manager does.
 *
 * @module
 */

/** Device, inode, size and modification time of a file; `undefined` fields when unknown. */
export interface FileIdentity {
  path: string;
  dev: number;
  ino: number;
  size: number;
  /** Modification time, ms since the epoch. */
  mtime: number;
}

/**
 * The file this process runs from: the compiled binary (`Deno.execPath()`); for a one-file
 * executable (scripts/onefile.ts) the file it was started from, which its launcher script passes
 * in `MESH_EXECUTABLE` (an absolute path); or for `deno run` the main module's file.
 */
export function executablePath(): string {
  if (Deno.build.standalone) return Deno.execPath();
  const packed = Deno.env.get("MESH_EXECUTABLE");
  if (packed !== undefined && packed.startsWith("/")) return packed;
  const main = new URL(Deno.mainModule);
  return main.protocol === "file:" ? decodeURIComponent(main.pathname) : Deno.execPath();
}

/**
 * Reads the identity of `path` (default: {@linkcode executablePath}).
 *
 * @throws {Error} "Cannot read executable ..." when it cannot be stat'ed.
 */
export function executableIdentity(path: string = executablePath()): FileIdentity {
  try {
    const info = Deno.statSync(path);
    return {
      path,
      dev: info.dev,
      ino: info.ino ?? 0,
      size: info.size,
      mtime: info.mtime?.getTime() ?? 0,
    };
  } catch (error) {
    throw new Error(`Cannot read executable "${path}": ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * Says how the file at `start.path` differs from `start` (replaced by rename, overwritten, or
 * removed), or `undefined` when it is the same file.
 */
export function replacedSince(start: FileIdentity): string | undefined {
  let now: FileIdentity;
  try {
    now = executableIdentity(start.path);
  } catch {
    return `the executable "${start.path}" was removed`;
  }
  if (now.dev !== start.dev || now.ino !== start.ino) {
    return `the executable "${start.path}" was replaced (a new file now stands at its path)`;
  }
  if (now.size !== start.size || now.mtime !== start.mtime) {
    return `the executable "${start.path}" was overwritten in place`;
  }
  return undefined;
}
