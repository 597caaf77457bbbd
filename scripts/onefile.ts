/**
 * One-file executables: a program and the Deno runtime in one file, for machines where
 * `deno compile` cannot be used because its `denort` runtime cannot be downloaded (these machines
 * reach only the npm registry and Debian's archive, and npm carries the full `deno` binary, not
 * `denort`).
 *
 * The file is a POSIX sh script followed by two gzip segments: the Deno runtime (the `deno`
 * binary of the npm package `@deno/linux-<arch>-glibc`, at this Deno's version) and the program
 * (`deno bundle` of its entry point, npm dependencies inlined, one JavaScript file). On start the
 * script unpacks each segment, once, into a content-addressed cache
 * (`$MESH_RUNTIME_CACHE`, default `/var/lib/mesh/runtime`: `runtime/<sha256>/deno`,
 * `program/<sha256>/main.js`), through a temporary directory renamed into place only after the
 * unpacked file matched the sha256 recorded in the script, and then `exec`s the runtime on the
 * program with fixed permission flags. Because it `exec`s, the process the caller started is the
 * program: its argv, exit status and signals are the program's own (launcher.sh signals the pid
 * it started). At every start the program's digest and the runtime's size are checked (the
 * runtime's full digest costs about 0.4 s, so it is checked at unpack only); a cached file that
 * fails the check is unpacked again. When it cannot unpack (no writable cache, a damaged or
 * truncated file, the wrong architecture) it exits 3 with a sentence naming what and where. The
 * program finds the file it was started from in `MESH_EXECUTABLE` (host/identity.ts), so a host
 * still notices its executable being replaced.
 *
 * @module
 */

import { run } from "../lib/command.ts";

/** The architectures a one-file build can target, with their npm package names. */
export const ONEFILE_ARCHES = {
  x86_64: "@deno/linux-x64-glibc",
  aarch64: "@deno/linux-arm64-glibc",
} as const;

/** An architecture a one-file build targets (`uname -m` spelling). */
export type OneFileArch = keyof typeof ONEFILE_ARCHES;

/** The Deno runtime for one architecture, as fetched from npm and compressed for embedding. */
export interface Runtime {
  arch: OneFileArch;
  /** The npm package and version it came from, e.g. `@deno/linux-x64-glibc@2.9.6`. */
  source: string;
  /** The npm registry's integrity string for that package's tarball (checked by npm). */
  integrity: string;
  /** Path of the gzip-compressed `deno` binary. */
  gzPath: string;
  /** sha256 (hex) of the uncompressed binary. */
  sha256: string;
  /** Size of the uncompressed binary, bytes. */
  size: number;
}

const sha256Hex = async (bytes: Uint8Array<ArrayBuffer>): Promise<string> =>
  Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");

async function sha256File(path: string): Promise<string> {
  const out = await run(["sha256sum", path]);
  return out.stdout.split(" ")[0]!;
}

/**
 * Fetches (or reuses from `cacheDir`) the Deno runtime of `arch` at this Deno's own version from
 * the npm registry (`npm pack`, which checks the tarball against the registry's integrity), and
 * keeps it gzip-compressed for embedding.
 *
 * @throws {CommandError} when npm cannot fetch the package or tar/gzip fail.
 */
export async function fetchRuntime(
  arch: OneFileArch,
  cacheDir: string,
  version: string = Deno.version.deno,
): Promise<Runtime> {
  const source = `${ONEFILE_ARCHES[arch]}@${version}`;
  const base = `${cacheDir}/deno-${version}-${arch}`;
  const metaPath = `${base}.json`;
  try {
    const meta = JSON.parse(await Deno.readTextFile(metaPath)) as Runtime;
    if (meta.source === source && (await Deno.stat(meta.gzPath)).isFile) return meta;
  } catch { /* not cached yet */ }
  await Deno.mkdir(cacheDir, { recursive: true });
  const work = await Deno.makeTempDir({ dir: cacheDir, prefix: ".runtime-" });
  try {
    const packed = await run(["npm", "pack", "--json", "--pack-destination", work, source], {
      cwd: work,
      timeoutMs: 10 * 60_000,
    });
    const [info] = JSON.parse(packed.stdout) as { filename: string; integrity: string }[];
    if (info === undefined) throw new Error(`npm pack ${source} said nothing it packed`);
    await run(["tar", "-xzf", `${work}/${info.filename}`, "-C", work, "package/deno"]);
    const binary = `${work}/package/deno`;
    const sha256 = await sha256File(binary);
    const size = (await Deno.stat(binary)).size;
    await run(["gzip", "-6", "-n", binary]);
    const gzPath = `${base}.gz`;
    await Deno.rename(`${binary}.gz`, gzPath);
    const meta: Runtime = { arch, source, integrity: info.integrity, gzPath, sha256, size };
    await Deno.writeTextFile(metaPath, JSON.stringify(meta, null, 2) + "\n");
    return meta;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** What {@linkcode buildOneFile} wrote. */
export interface OneFile {
  path: string;
  /** Size of the whole file, bytes. */
  size: number;
  /** sha256 of the program (the bundled JavaScript). */
  programSha256: string;
  /** Size of the bundled JavaScript, bytes. */
  programSize: number;
  runtime: Runtime;
}

/** Options for {@linkcode buildOneFile}. */
export interface OneFileOptions {
  /** The program's name, as it says itself in messages (e.g. `mesh-host-debian-x86_64`). */
  name: string;
  /** The runtime to embed (from {@linkcode fetchRuntime}). */
  runtime: Runtime;
  /** Deno permission flags the program runs with (e.g. `--allow-read`). */
  permissions: string[];
  /** The deno.json whose imports the bundle resolves (default: the project's). */
  config?: string;
}

const shQuote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;

/**
 * The sh header of a one-file executable. Every offset is space-padded to a fixed width so the
 * header's length does not depend on the values written into it.
 */
export function oneFileHeader(values: {
  name: string;
  arch: OneFileArch;
  source: string;
  runtimeSha256: string;
  runtimeSize: number;
  runtimeOffset: number;
  runtimeLength: number;
  programSha256: string;
  programOffset: number;
  programLength: number;
  permissions: string[];
}): string {
  const n = (v: number) => String(v).padEnd(14);
  return `#!/bin/sh
# ${values.name}: one self-contained executable (built by \`deno task hosts\`, one-file form).
# After this script come two gzip segments: the Deno runtime (${values.source}) and the program
# (its modules bundled into one JavaScript file). It unpacks both, once, into a content-addressed
# cache (MESH_RUNTIME_CACHE, default /var/lib/mesh/runtime), checks them against the sha256
# recorded here, and execs the runtime on the program, so argv, exit status and signals are the
# program's own. Exit 3 when it cannot unpack, with a sentence saying why.
name=${shQuote(values.name)}
arch=${shQuote(values.arch)}
runtime_sha=${values.runtimeSha256}
runtime_size=${n(values.runtimeSize)}
runtime_off=${n(values.runtimeOffset)}
runtime_len=${n(values.runtimeLength)}
program_sha=${values.programSha256}
program_off=${n(values.programOffset)}
program_len=${n(values.programLength)}
cache=\${MESH_RUNTIME_CACHE:-/var/lib/mesh/runtime}

fail() {
  printf '%s: %s\\n' "$name" "$*" >&2
  exit 3
}

case $0 in
/*) self=$0 ;;
*) self=$PWD/$0 ;;
esac
[ -f "$self" ] && [ -r "$self" ] || fail "cannot read this executable \\"$self\\" to unpack it"
machine=$(uname -m)
[ "$machine" = "$arch" ] || fail "this file is built for $arch, and this machine is $machine"
case $cache in
/*) ;;
*) fail "MESH_RUNTIME_CACHE must be an absolute path, not \\"$cache\\"" ;;
esac
for tool in tail head gzip sha256sum mkdir mv rm chmod wc; do
  command -v "$tool" >/dev/null 2>&1 || fail "cannot unpack: this machine has no \\"$tool\\""
done

# matches FILE SHA256: the file exists and has that digest.
matches() {
  [ -f "$1" ] || return 1
  sum=$(sha256sum "$1" 2>/dev/null) || return 1
  [ "\${sum%% *}" = "$2" ]
}

# unpack WHAT OFFSET LENGTH SHA256 DIR FILE MODE: segment to DIR/FILE, through DIR.tmp.PID.
unpack() {
  parent=\${5%/*}
  mkdir -p "$parent" 2>/dev/null || fail "cannot unpack the $1: cannot create the cache directory \\"$parent\\" (set MESH_RUNTIME_CACHE to a writable directory)"
  tmp=$5.tmp.$$
  rm -rf "$tmp"
  mkdir "$tmp" 2>/dev/null || fail "cannot unpack the $1: cannot create \\"$tmp\\" (set MESH_RUNTIME_CACHE to a writable directory)"
  if ! tail -c +"$2" "$self" 2>/dev/null | head -c "$3" 2>/dev/null | gzip -dc >"$tmp/$6" 2>/dev/null; then
    rm -rf "$tmp"
    fail "cannot unpack the $1 from \\"$self\\" into \\"$tmp\\": the file is damaged or truncated, or the disk is full"
  fi
  if ! matches "$tmp/$6" "$4"; then
    rm -rf "$tmp"
    fail "the $1 unpacked from \\"$self\\" does not have the sha256 $4 recorded in it: the file is damaged"
  fi
  chmod "$7" "$tmp/$6" || fail "cannot unpack the $1: cannot set the mode of \\"$tmp/$6\\""
  # Another start may have put a good copy there meanwhile: keep it and drop ours.
  if matches "$5/$6" "$4"; then
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$5"
  # When another start renamed its copy first, ours lands inside it: then ours is dropped.
  mv "$tmp" "$5" 2>/dev/null
  rm -rf "$tmp" "$5/\${tmp##*/}"
  [ -f "$5/$6" ] || fail "cannot unpack the $1: \\"$5/$6\\" is not there after the rename"
}

runtime_dir=$cache/runtime/$runtime_sha
program_dir=$cache/program/$program_sha
if [ ! -x "$runtime_dir/deno" ] || [ "$(($(wc -c <"$runtime_dir/deno")))" -ne "$runtime_size" ]; then
  unpack runtime "$runtime_off" "$runtime_len" "$runtime_sha" "$runtime_dir" deno 0755
fi
if ! matches "$program_dir/main.js" "$program_sha"; then
  unpack program "$program_off" "$program_len" "$program_sha" "$program_dir" main.js 0644
fi

MESH_EXECUTABLE=$self DENO_DIR=$cache/deno-dir DENO_NO_UPDATE_CHECK=1 DENO_NO_PACKAGE_JSON=1 \\
  exec "$runtime_dir/deno" run --quiet --no-config --no-lock --no-remote --no-prompt \\
  ${values.permissions.join(" ")} "$program_dir/main.js" "$@"
fail "cannot start the runtime \\"$runtime_dir/deno\\""
# The payload follows; nothing below this line is read by sh.
`;
}

/**
 * Builds the one-file executable of `entry` (a module path) at `output`: bundles the program
 * with its npm dependencies into one JavaScript file (`deno bundle`), compresses it, and writes
 * header, runtime and program into `output` (mode 0755), through a temporary file renamed into
 * place.
 *
 * @throws {CommandError} when `deno bundle` or gzip fail.
 */
export async function buildOneFile(
  entry: string,
  output: string,
  options: OneFileOptions,
): Promise<OneFile> {
  const work = await Deno.makeTempDir({ prefix: "mesh-onefile-" });
  try {
    await run([
      Deno.execPath(),
      "bundle",
      "--quiet",
      "--platform",
      "deno",
      "--packages",
      "bundle",
      ...(options.config ? ["--config", options.config] : []),
      "--output",
      `${work}/main.js`,
      entry,
    ], { env: { NO_COLOR: "1" }, timeoutMs: 10 * 60_000 });
    const program = await Deno.readFile(`${work}/main.js`);
    const programSha256 = await sha256Hex(program);
    await run(["gzip", "-9", "-n", `${work}/main.js`]);
    const programGz = await Deno.readFile(`${work}/main.js.gz`);
    const runtimeLength = (await Deno.stat(options.runtime.gzPath)).size;
    const values = {
      name: options.name,
      arch: options.runtime.arch,
      source: options.runtime.source,
      runtimeSha256: options.runtime.sha256,
      runtimeSize: options.runtime.size,
      runtimeOffset: 0,
      runtimeLength,
      programSha256,
      programOffset: 0,
      programLength: programGz.length,
      permissions: options.permissions,
    };
    const headerLength = new TextEncoder().encode(oneFileHeader(values)).length;
    // tail -c +N counts from 1.
    values.runtimeOffset = headerLength + 1;
    values.programOffset = headerLength + runtimeLength + 1;
    const header = new TextEncoder().encode(oneFileHeader(values));
    if (header.length !== headerLength) {
      throw new Error(`The one-file header of ${options.name} changed length when filled in`);
    }
    const tmp = `${output}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const file = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o755 });
      try {
        for (const part of [header, await Deno.readFile(options.runtime.gzPath), programGz]) {
          let written = 0;
          while (written < part.length) written += await file.write(part.subarray(written));
        }
        await file.sync();
      } finally {
        file.close();
      }
      await Deno.chmod(tmp, 0o755);
      await Deno.rename(tmp, output);
    } catch (error) {
      await Deno.remove(tmp).catch(() => {});
      throw error;
    }
    return {
      path: output,
      size: (await Deno.stat(output)).size,
      programSha256,
      programSize: program.length,
      runtime: options.runtime,
    };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}
