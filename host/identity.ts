/**
 * The identity of the running executable, captured at start, so the host can tell that its
 * binary was replaced on disk (overwritten in place, a new file renamed onto the path, or the
 * installed symlink repointed to another version) and
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

/** What {@linkcode executablePath} decides from; each defaults to this process's own. */
export interface ExecutableFacts {
  /** `Deno.build.standalone`: a compiled binary. */
  standalone: boolean;
  /** `MESH_EXECUTABLE`, or `undefined` when unset. */
  named: string | undefined;
  /** `Deno.execPath()`: for a compiled binary the file it runs from, symlinks resolved. */
  execPath: string;
  /** `Deno.mainModule`, a URL. */
  mainModule: string;
}

/**
 * The file this process runs from, as installed: `MESH_EXECUTABLE` when it is an absolute path
 * (the launcher sets it to the path it starts, `$MESH_LIB/mesh-host`, usually a symlink; a
 * one-file executable's script (scripts/onefile.ts) sets it to the file it was started from);
 * else the compiled binary (`Deno.execPath()`); else, for `deno run`, the main module's file.
 *
 * The named path wins even for a compiled binary: `Deno.execPath()` is read from the kernel with
 * symlinks resolved (`/usr/lib/mesh/mesh-host-0.1.0`), so a symlink repointed to a new version
 * (`ln -sfn mesh-host-0.2.0 mesh-host`) would leave the file it names unchanged and go unnoticed.
 * {@linkcode executableIdentity} stats the path following symlinks, so a repointed symlink is a
 * new file at the path, exactly as a copied file renamed onto it is.
 */
export function executablePath(facts: Partial<ExecutableFacts> = {}): string {
  const named = "named" in facts ? facts.named : Deno.env.get("MESH_EXECUTABLE");
  if (named !== undefined && named.startsWith("/")) return named;
  const execPath = facts.execPath ?? Deno.execPath();
  if (facts.standalone ?? Deno.build.standalone) return execPath;
  const main = new URL(facts.mainModule ?? Deno.mainModule);
  return main.protocol === "file:" ? decodeURIComponent(main.pathname) : execPath;
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
