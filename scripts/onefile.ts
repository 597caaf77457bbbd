/**
 * One-file executables: a program and the Deno runtime in one file, for machines where
 * `deno compile` cannot be used because its `denort` runtime cannot be downloaded (these machines
 * reach only the npm registry and Debian's archive, and npm carries the full `deno` binary, not
 * `denort`).
 *
 * The file is a POSIX sh script followed by two compressed segments: the Deno runtime (the `deno`
 * binary of the npm package `@deno/linux-<arch>-glibc`, at this Deno's version, gzip; for a system
 * without glibc a tar of it, the glibc it links and their `SHA256SUMS`, xz: see
 * {@linkcode runtimeSegment}) and the program
 * (`deno bundle` of its entry point with code splitting, npm dependencies inlined: `main.js`, a
 * JavaScript file for each part the program imports only when it needs it, and `SHA256SUMS`
 * listing them, as a tar; see {@linkcode bundleProgram}). On start the script unpacks each
 * segment, once, into a content-addressed cache (`$MESH_RUNTIME_CACHE`, default
 * `/var/lib/mesh/runtime`: `runtime/<sha256>/deno`, `program/<sha256>/main.js`, the program's
 * directory named by the sha256 of its `SHA256SUMS`), through a temporary directory renamed into
 * place only after what was unpacked matched the sha256 recorded in the script, and then `exec`s
 * the runtime on the program with fixed permission flags, and the `deno run` flags the build gave
 * for the program's command if any (`commandFlags`: the host's link starts without Deno's code
 * cache). Because it `exec`s, the process the
 * caller started is the program: its argv, exit status and signals are the program's own
 * (launcher.sh signals the pid it started). At every start the program's files are checked
 * against their digests and the runtime's size is checked (the runtime's full digest costs about
 * 0.4 s, so it is checked at unpack only); a cached program that fails the check is unpacked
 * again. When it cannot unpack (no writable cache, a damaged or
 * truncated file, the wrong architecture) it exits 3 with a sentence naming what and where. The
 * program finds the file it was started from in `MESH_EXECUTABLE` (host/identity.ts), so a host
 * still notices its executable being replaced.
 *
 * @module
 */

import { run } from "../lib/command.ts";
import type { CarriedLibc } from "./carried_libc.ts";

/**
 * Where builds keep what they fetch and make once (Deno runtimes from npm, the carried glibc's
 * packages, compressed runtime segments): `MESH_BUILD_CACHE`, else `$XDG_CACHE_HOME/mesh/build`,
 * else `$HOME/.cache/mesh/build`, as Deno keeps its own cache in `~/.cache/deno`. Entries are
 * named by version and digest and checked when reused, so one cache serves every checkout and
 * output directory of the machine (a clean clone need not fetch the runtime again).
 */
export function buildCacheDir(): string {
  const named = Deno.env.get("MESH_BUILD_CACHE");
  if (named) return named;
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  return `${xdg || `${Deno.env.get("HOME") ?? "/root"}/.cache`}/mesh/build`;
}

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
  /** sha256 of the program's `SHA256SUMS` (which lists the sha256 of each of its files). */
  programSha256: string;
  /** Size of the bundled JavaScript, all its files together, bytes. */
  programSize: number;
  runtime: Runtime;
  /** The runtime segment embedded (with the carried glibc, if any). */
  segment: RuntimeSegment;
  /** Bytes the file unpacks to in the cache: runtime, carried libraries and program. */
  unpackedBytes: number;
}

/** Options for {@linkcode buildOneFile}. */
export interface OneFileOptions {
  /** The program's name, as it says itself in messages (e.g. `mesh-host-debian-x86_64`). */
  name: string;
  /** The runtime to embed (from {@linkcode fetchRuntime}). */
  runtime: Runtime;
  /** Deno permission flags the program runs with (e.g. `--allow-read`). */
  permissions: string[];
  /**
   * `deno run` flags added when the program's command (its first argument that is not an
   * option) is a given name, e.g. `{ link: ["--no-code-cache"] }`: for a command that runs for
   * days and not for the short ones (see {@linkcode oneFileHeader}).
   */
  commandFlags?: Record<string, string[]>;
  /** The deno.json whose imports the bundle resolves (default: the project's). */
  config?: string;
  /**
   * The glibc to carry (scripts/carried_libc.ts), for a system whose libc is not glibc: the
   * runtime segment is then a tar of `deno`, `lib/` and `SHA256SUMS`, xz-compressed, and the
   * runtime is started through the carried loader.
   */
  libc?: CarriedLibc;
  /** The system the file is for (`alpine`), named in its refusals; none for a program. */
  system?: string;
  /** The POSIX shell the file's first line names (default `/bin/sh`; Android's `/system/bin/sh`). */
  shell?: string;
}

/**
 * Writes the tar `file` of `names` in `dir`, in that order, owner and time fixed (ustar), so the
 * same files give the same bytes.
 *
 * @throws {CommandError} when tar fails.
 */
async function reproducibleTar(file: string, dir: string, names: string[]): Promise<void> {
  await run([
    "tar",
    "--create",
    "--file",
    file,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mtime=@0",
    "--format=ustar",
    "-C",
    dir,
    "--",
    ...names,
  ]);
}

/** The runtime segment a one-file build embeds (see {@linkcode runtimeSegment}). */
export interface RuntimeSegment {
  /** The compressed segment. */
  path: string;
  form: "file" | "tar";
  compression: "gzip" | "xz";
  /** The digest the cache entry is named by: the runtime's (`file`), its SHA256SUMS' (`tar`). */
  sha256: string;
  /** Bytes unpacked: the runtime, and the carried libraries with it. */
  unpackedBytes: number;
}

/**
 * The runtime segment for `runtime`: as fetched (gzip of `deno`) when the machine's glibc is
 * used; with `libc`, a tar of `deno`, `lib/<soname>` for each carried file and `SHA256SUMS`
 * (owner and time fixed), compressed with `xz -6` (every system that needs the carried glibc
 * has xz: busybox and toybox), kept beside the runtime in its cache so it is made once.
 *
 * @throws {CommandError} when gzip, tar or xz fail.
 */
export async function runtimeSegment(
  runtime: Runtime,
  libc?: CarriedLibc,
): Promise<RuntimeSegment> {
  if (libc === undefined) {
    return {
      path: runtime.gzPath,
      form: "file",
      compression: "gzip",
      sha256: runtime.sha256,
      unpackedBytes: runtime.size,
    };
  }
  if (libc.arch !== runtime.arch) {
    throw new Error(`Cannot carry ${libc.arch}'s glibc with the ${runtime.arch} runtime`);
  }
  const base = `${runtime.gzPath.replace(/\.gz$/, "")}-libc-${libc.sha256.slice(0, 16)}`;
  const metaPath = `${base}.json`;
  try {
    const meta = JSON.parse(await Deno.readTextFile(metaPath)) as RuntimeSegment;
    if ((await Deno.stat(meta.path)).isFile) return meta;
  } catch { /* not made yet */ }
  const work = await Deno.makeTempDir({ prefix: "mesh-runtime-segment-" });
  try {
    const dir = `${work}/runtime`;
    await Deno.mkdir(`${dir}/lib`, { recursive: true });
    await run(["sh", "-c", 'gzip -dc "$1" >"$2"', "sh", runtime.gzPath, `${dir}/deno`]);
    await Deno.chmod(`${dir}/deno`, 0o755);
    const names = ["deno", ...Object.keys(libc.files).sort().map((n) => `lib/${n}`)];
    for (const [soname, path] of Object.entries(libc.files)) {
      await Deno.copyFile(path, `${dir}/lib/${soname}`);
      await Deno.chmod(`${dir}/lib/${soname}`, soname === libc.loader ? 0o755 : 0o644);
    }
    let unpackedBytes = 0;
    const sums: string[] = [];
    for (const name of names) {
      const data = await Deno.readFile(`${dir}/${name}`);
      unpackedBytes += data.length;
      sums.push(`${await sha256Hex(data)}  ${name}\n`);
    }
    const list = new TextEncoder().encode(sums.join(""));
    await Deno.writeFile(`${dir}/SHA256SUMS`, list, { mode: 0o644 });
    await reproducibleTar(`${work}/runtime.tar`, dir, [...names, "SHA256SUMS"]);
    await run(["xz", "-6", "-T2", `${work}/runtime.tar`], { timeoutMs: 10 * 60_000 });
    const path = `${base}.tar.xz`;
    await Deno.rename(`${work}/runtime.tar.xz`, path);
    const meta: RuntimeSegment = {
      path,
      form: "tar",
      compression: "xz",
      sha256: await sha256Hex(list),
      unpackedBytes,
    };
    await Deno.writeTextFile(metaPath, JSON.stringify(meta, null, 2) + "\n");
    return meta;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

const shQuote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;

/** A command name a one-file header may add flags for, and a flag it may add (no blank, no quote). */
const COMMAND_NAME = /^[a-z][a-z0-9-]*$/;
const RUN_FLAG = /^--[a-z0-9-]+(=[A-Za-z0-9,._=/-]*)?$/;

/**
 * The header's choice of extra `deno run` flags by command (`commandFlags` of
 * {@linkcode OneFileOptions}): the program's command is its first argument that is not an
 * option, before any `--`, as mesh's command lines read it (lib/cli_table.ts, `dispatch`).
 *
 * @throws {Error} when a command name is not a plain lower-case word or a flag is not a plain
 *   `--name[=value]` (the header splits the flags on blanks, unquoted).
 */
function commandFlagsScript(commandFlags: Record<string, string[]>): string {
  const branches: string[] = [];
  for (const [command, flags] of Object.entries(commandFlags)) {
    if (!COMMAND_NAME.test(command)) {
      throw new Error(`Cannot write a one-file header: "${command}" is not a command name`);
    }
    for (const flag of flags) {
      if (!RUN_FLAG.test(flag)) {
        throw new Error(
          `Cannot write a one-file header: "${flag}" (for ${command}) is not a plain --flag`,
        );
      }
    }
    branches.push(`${command}) run_flags='${flags.join(" ")}' ;;\n`);
  }
  if (branches.length === 0) return "run_flags=\n";
  return `# Flags for one command only (its first argument that is not an option, as the program
# reads it): e.g. the link, which runs for days, starts without Deno's code cache.
command=
for arg in "$@"; do
  case $arg in
  --) break ;;
  -*) ;;
  *)
    command=$arg
    break
    ;;
  esac
done
run_flags=
case $command in
${branches.join("")}esac
`;
}

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
  /** `file`: the runtime segment is the gzip of `deno`; `tar`: a tar of `deno`, `lib/` and `SHA256SUMS`. */
  runtimeForm?: "file" | "tar";
  /** How the runtime segment is compressed (the program's is always gzip). */
  runtimeCompression?: "gzip" | "xz";
  /** The carried loader's file name under the runtime's `lib/`, or none: the machine's glibc. */
  loader?: string;
  /** The system the file is for (`alpine`), or none for a program that is for any. */
  system?: string;
  /** The shell of the first line (default `/bin/sh`). */
  shell?: string;
  /** Length of the whole file, bytes. */
  fileLength: number;
  /** sha256 of everything after the header (the runtime and program segments). */
  payloadSha256: string;
  permissions: string[];
  /** See {@linkcode OneFileOptions}. */
  commandFlags?: Record<string, string[]>;
}): string {
  const n = (v: number) => String(v).padEnd(14);
  const loader = values.loader ?? "";
  if (loader !== "" && !/^ld-linux-[a-z0-9_-]+\.so\.\d+$/.test(loader)) {
    throw new Error(`Cannot write a one-file header: "${loader}" is not a loader's file name`);
  }
  const system = values.system ?? "";
  if (system !== "" && !/^[a-z]+$/.test(system)) {
    throw new Error(`Cannot write a one-file header: "${system}" is not a system's name`);
  }
  const shell = values.shell ?? "/bin/sh";
  if (!/^(\/[a-z0-9_.-]+)+$/.test(shell)) {
    throw new Error(`Cannot write a one-file header: "${shell}" is not a shell's absolute path`);
  }
  const form = values.runtimeForm ?? "file";
  const compression = values.runtimeCompression ?? "gzip";
  return `#!${shell}
# ${values.name}: one self-contained executable (built by \`deno task hosts\`, one-file form).
# After this script come two segments: the Deno runtime (${values.source}; ${
    form === "tar" ? `a tar, ${compression}` : compression
  }) and the program
# (a tar of its bundled modules, split, and their SHA256SUMS; gzip). It unpacks both, once, into a
# content-addressed cache (MESH_RUNTIME_CACHE, default /var/lib/mesh/runtime), checks them against
# the sha256 recorded here, and execs the runtime on the program, so argv, exit status and
# signals are the program's own.${
    loader === "" ? "" : `
# The runtime segment also carries glibc (its loader and the libraries the runtime links, from
# Debian's packages) for a machine without glibc: the runtime is started through that loader.`
  }
# Exit 2 on a machine it is not built for; exit 3 when it cannot unpack or is not whole, with a
# sentence saying why.
name=${shQuote(values.name)}
arch=${shQuote(values.arch)}
system=${shQuote(system)}
loader=${shQuote(loader)}
runtime_form=${form}
file_len=${n(values.fileLength)}
payload_sha=${values.payloadSha256}
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

# refuse SENTENCE: this is not a machine the file is built for (exit 2).
refuse() {
  printf '%s: %s\\n' "$name" "$*" >&2
  exit 2
}

case $0 in
/*) self=$0 ;;
*) self=$PWD/$0 ;;
esac
[ -f "$self" ] && [ -r "$self" ] || fail "cannot read this executable \\"$self\\" to unpack it"
machine=$(uname -m)
built_for=\${system:+$system on }$arch
[ "$machine" = "$arch" ] || refuse "this file is built for $built_for, and this machine is $machine"
if [ -z "$loader" ]; then
  # The runtime links the machine's glibc: without its loader the kernel cannot start it.
  case $arch in
  aarch64) glibc_loader=/lib/ld-linux-aarch64.so.1 ;;
  *) glibc_loader=/lib64/ld-linux-x86-64.so.2 ;;
  esac
  [ -e "$glibc_loader" ] || refuse "this file is built for $built_for with glibc, and this machine has no glibc (no $glibc_loader), as on Alpine or Android\${system:+: copy mesh-host-alpine-$arch or mesh-host-android-$arch, which carry their own}"
fi
case $cache in
/*) ;;
*) fail "MESH_RUNTIME_CACHE must be an absolute path, not \\"$cache\\"" ;;
esac
# One spelling of the cache (no trailing or doubled slash, no symlink), so that a running
# process's command line names its entries as a pruning start spells them.
mkdir -p "$cache" 2>/dev/null
if [ -d "$cache" ]; then
  cache=$(cd "$cache" && pwd -P) || fail "cannot enter the runtime cache \\"$cache\\""
fi
for tool in tail head gzip tar sha256sum mkdir mv rm chmod stat; do
  command -v "$tool" >/dev/null 2>&1 || fail "cannot unpack: this machine has no \\"$tool\\""
done
${
    compression === "xz"
      ? `# xz_dc: decompresses xz from stdin (busybox and Debian's xz-utils have xz; toybox has xzcat).
if command -v xz >/dev/null 2>&1; then
  xz_dc() { xz -dc; }
elif command -v xzcat >/dev/null 2>&1; then
  xz_dc() { xzcat; }
else
  fail "cannot unpack: this machine has neither \\"xz\\" nor \\"xzcat\\""
fi
`
      : ""
  }
# The file is whole: as long as it was built (a copy cut short by an interrupted upgrade or a
# full disk is refused at every start, even when what it carries is already unpacked).
# One stat for this file and the unpacked runtime (a fork is a good part of a warm start):
# the runtime's line is missing when it is not unpacked.
runtime_dir=$cache/runtime/$runtime_sha
stats=$(stat -L -c '%d %i %s %Y %Z' "$self" "$runtime_dir/deno" 2>/dev/null)
{
  read -r ident || ident=
  read -r _ _ runtime_len_now _ _ || runtime_len_now=
} <<EOF
$stats
EOF
read -r _ _ self_len _ _ <<EOF
$ident
EOF
[ -n "$ident" ] || fail "cannot read the size of this executable \\"$self\\""
[ "$self_len" -eq "$file_len" ] || fail "\\"$self\\" has $self_len bytes and was built with $file_len: it is truncated or altered; copy it again"

# matches FILE SHA256: the file exists and has that digest.
matches() {
  [ -f "$1" ] || return 1
  sum=$(sha256sum "$1" 2>/dev/null) || return 1
  [ "\${sum%% *}" = "$2" ]
}

# program_ok DIR SHA256: DIR holds the program: its SHA256SUMS has that digest and every file
# listed there has the digest listed.
program_ok() {
  matches "$1/SHA256SUMS" "$2" && (cd "$1" && sha256sum -c SHA256SUMS) >/dev/null 2>&1
}

# unpack WHAT OFFSET LENGTH SHA256 DIR FILE MODE: segment to DIR/FILE, through DIR.tmp.PID; the
# program's segment is a tar of its files, unpacked into DIR (FILE and MODE unused), and so is the
# runtime's when it carries glibc (runtime_form=tar: deno, lib/ and SHA256SUMS).
unpack() {
  parent=\${5%/*}
  mkdir -p "$parent" 2>/dev/null || fail "cannot unpack the $1: cannot create the cache directory \\"$parent\\" (set MESH_RUNTIME_CACHE to a writable directory)"
  tmp=$5.tmp.$$
  rm -rf "$tmp"
  mkdir "$tmp" 2>/dev/null || fail "cannot unpack the $1: cannot create \\"$tmp\\" (set MESH_RUNTIME_CACHE to a writable directory)"
  if [ "$1" = program ] || [ "$runtime_form" = tar ]; then
    decompress='gzip -dc'
    [ "$1" = program ] || decompress='${compression === "xz" ? "xz_dc" : "gzip -dc"}'
    # The decompressor's status is checked on its own: in a pipe into tar only tar's would be seen.
    if ! tail -c +"$2" "$self" 2>/dev/null | head -c "$3" 2>/dev/null | $decompress >"$tmp.tar" 2>/dev/null ||
      ! tar -xf "$tmp.tar" -C "$tmp" 2>/dev/null; then
      rm -rf "$tmp" "$tmp.tar"
      fail "cannot unpack the $1 from \\"$self\\" into \\"$tmp\\": the file is damaged or truncated, or the disk is full"
    fi
    rm -f "$tmp.tar"
    good=program_ok
    made="$tmp"
    kept="$5"
  else
    if ! tail -c +"$2" "$self" 2>/dev/null | head -c "$3" 2>/dev/null | gzip -dc >"$tmp/$6" 2>/dev/null; then
      rm -rf "$tmp"
      fail "cannot unpack the $1 from \\"$self\\" into \\"$tmp\\": the file is damaged or truncated, or the disk is full"
    fi
    good=matches
    made="$tmp/$6"
    kept="$5/$6"
  fi
  if ! "$good" "$made" "$4"; then
    rm -rf "$tmp"
    fail "the $1 unpacked from \\"$self\\" does not have the sha256 $4 recorded in it: the file is damaged"
  fi
  if [ "$1" != program ] && [ "$runtime_form" != tar ]; then
    chmod "$7" "$tmp/$6" || fail "cannot unpack the $1: cannot set the mode of \\"$tmp/$6\\""
  fi
  # Another start may have put a good copy there meanwhile: keep it and drop ours.
  if "$good" "$kept" "$4"; then
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$5"
  # When another start renamed its copy first, ours lands inside it: then ours is dropped.
  mv "$tmp" "$5" 2>/dev/null
  rm -rf "$tmp" "$5/\${tmp##*/}"
  # What is there now is what runs: checked whole, not only for its first file.
  "$good" "$kept" "$4" || fail "cannot unpack the $1: \\"$5\\" does not hold it whole after the rename (another start may be unpacking it: start again)"
}

program_dir=$cache/program/$program_sha
# What is exec'd: the runtime, or the carried loader that starts it.
start=$runtime_dir/deno
[ -z "$loader" ] || start=$runtime_dir/lib/$loader

# The file is what was built: the sha256 of all it carries is checked whenever this file (its
# device, inode, size, mtime and ctime) is new to the cache, even when what it carries is
# already unpacked (an altered copy put where the old one was); a file seen whole before is not
# read again, so a warm start stays a stat. Recorded beside the program's entry, once checked.
seen=$program_dir.seen
record="$payload_sha $ident"
known=
if [ -f "$seen" ]; then
  while IFS= read -r line; do
    if [ "$line" = "$record" ]; then
      known=1
      break
    fi
  done <"$seen"
fi
if [ -z "$known" ]; then
  sum=$(tail -c +"$runtime_off" "$self" 2>/dev/null | sha256sum 2>/dev/null) || sum=
  [ "\${sum%% *}" = "$payload_sha" ] || fail "\\"$self\\" is damaged: what it carries does not have the sha256 $payload_sha recorded in it; copy it again"
fi

# Each entry of the cache has a lock file beside it (ENTRY.lock). From here until this process
# has exec'd the runtime (then /proc/PID/cmdline names both entries it runs) or died, a process of
# its own holds a shared lock on this start's two entries: a start that prunes the cache takes an
# entry's lock exclusively, without waiting, before it looks for a process running the entry, so
# it never removes an entry a start has checked and is about to run. Not held by the program
# itself: what it starts (conmon for a container) would inherit the lock and keep its version
# forever. Without flock, or a cache it cannot write, nothing is locked and nothing is pruned.
held=
if command -v flock >/dev/null 2>&1 && command -v grep >/dev/null 2>&1 &&
  command -v sed >/dev/null 2>&1 && command -v sleep >/dev/null 2>&1 &&
  mkdir -p "$cache/runtime" "$cache/program" 2>/dev/null; then
  pid=$$
  held=$(
    (
      exec 3>&1 >/dev/null 2>&1 </dev/null
      for try in 1 2 3 4 5 6 7 8 9 10; do
        # Made by the first start that can write the cache; read by any start that can read it
        # (a service running as another account from a cache root unpacked).
        { [ -f "$runtime_dir.lock" ] || : >>"$runtime_dir.lock"; } &&
          { [ -f "$program_dir.lock" ] || : >>"$program_dir.lock"; } || exit 1
        exec 8<"$runtime_dir.lock" 9<"$program_dir.lock"
        # Blocking, with no timeout (busybox's flock has no -w): a pruner holds an entry's lock
        # only for the moment it checks and removes it.
        flock -s 8 && flock -s 9 || exit 1
        # A pruner removes a lock file while it holds it: then lock the new one.
        if [ "$runtime_dir.lock" -ef /dev/fd/8 ] && [ "$program_dir.lock" -ef /dev/fd/9 ]; then
          echo held >&3
          exec 3>&-
          while [ -d "/proc/$pid" ] && ! [ "/proc/$pid/exe" -ef "$start" ]; do
            sleep 0.05 2>/dev/null || sleep 1
          done
          exit 0
        fi
        exec 8<&- 9<&-
      done
      exit 1
    ) &
  )
fi

# drop ENTRY: removes a cache entry unless its lock is held (a start about to run it) or a
# process's command line names it (one running it, whatever started it).
drop() {
  : >>"$1.lock" 2>/dev/null || return 0
  (
    exec 7<"$1.lock"
    flock -xn 7 || exit 0
    # The pattern from a file: grep's own command line would name the entry.
    printf '%s/\\n' "$1" >"$cache/.prune.$$" || exit 0
    # -z: a command line's arguments are NUL-separated, and busybox's grep (Alpine's) reads a
    # line only up to its first NUL, which is the runtime's path, never the program's.
    if ! grep -qszF -f "$cache/.prune.$$" /proc/[0-9]*/cmdline; then
      rm -rf "$1" && rm -f "$1.name" "$1.seen" "$1.lock"
    fi
  ) 2>/dev/null
}

# header_sha FILE WHAT: the WHAT_sha a one-file executable FILE records in its header, or nothing.
header_sha() {
  head -c 4096 "$1" 2>/dev/null | sed -n "s/^$2_sha=\\([0-9a-f]\\{64\\}\\)\$/\\1/p" | head -n 1
}

# prune: this start unpacked what no start here had: remove what earlier versions of this program
# unpacked, and the runtimes no program left names, except this start's, what a process runs or
# is about to run (drop), and the host's known-good version: MESH_STATE_DIR/known-good (default
# /var/lib/mesh/host) names it, and MESH_LIB/mesh-host-VERSION (default /usr/lib/mesh) is its
# file, whose header names its entries. A program entry another program unpacked is that one's to
# prune (ENTRY.name names its program and runtime); one an older header unpacked names nothing
# and is anyone's. What a start that died mid-unpack left (ENTRY.tmp.PID) goes too.
prune() {
  [ -r /proc/self/cmdline ] || return 0
  keep_program=
  keep_runtime=
  known_good=$(head -n 1 "\${MESH_STATE_DIR:-/var/lib/mesh/host}/known-good" 2>/dev/null) || known_good=
  case $known_good in
  '' | *[!A-Za-z0-9._+-]*) ;;
  *)
    known_good_file=\${MESH_LIB:-/usr/lib/mesh}/mesh-host-$known_good
    keep_program=$(header_sha "$known_good_file" program)
    keep_runtime=$(header_sha "$known_good_file" runtime)
    ;;
  esac
  # Programs first: the runtimes kept are those the programs left name.
  for entry in "$cache"/program/* "$cache"/runtime/*; do
    base=\${entry##*/}
    case $base in
    *.tmp.*)
      dead=\${base##*.tmp.}
      dead=\${dead%.tar}
      case $dead in
      '' | *[!0-9]*) ;;
      *) [ -d "/proc/$dead" ] || rm -rf "$entry" ;;
      esac
      continue
      ;;
    *.lock | *.name | *.seen) continue ;;
    esac
    [ -d "$entry" ] || continue
    case $entry in
    "$cache"/program/*)
      if [ "$base" = "$program_sha" ] || [ "$base" = "$keep_program" ]; then continue; fi
      owner=
      [ -f "$entry.name" ] && read -r owner _ <"$entry.name"
      [ -z "$owner" ] || [ "$owner" = "$name" ] || continue
      ;;
    *)
      if [ "$base" = "$runtime_sha" ] || [ "$base" = "$keep_runtime" ]; then continue; fi
      named=
      for used in "$cache"/program/*.name; do
        [ -f "$used" ] && [ -d "\${used%.name}" ] || continue
        read -r _ runtime <"$used" && [ "$runtime" = "$base" ] && named=1
      done
      [ -z "$named" ] || continue
      ;;
    esac
    drop "$entry"
  done
  rm -f "$cache/.prune.$$"
}

fresh=
if [ ! -x "$runtime_dir/deno" ] || [ "$runtime_len_now" != "$((runtime_size))" ] ||
  [ ! -f "$start" ]; then
  unpack runtime "$runtime_off" "$runtime_len" "$runtime_sha" "$runtime_dir" deno 0755
  fresh=1
fi
if ! program_ok "$program_dir" "$program_sha"; then
  unpack program "$program_off" "$program_len" "$program_sha" "$program_dir" main.js 0644
  fresh=1
fi
# Which program and runtime this entry is for (the prune of another program leaves it).
if [ -n "$held" ] && [ ! -f "$program_dir.name" ]; then
  { printf '%s %s\\n' "$name" "$runtime_sha" >"$program_dir.name.tmp.$$" &&
    mv -f "$program_dir.name.tmp.$$" "$program_dir.name"; } 2>/dev/null || rm -f "$program_dir.name.tmp.$$"
fi
if [ -n "$held" ] && [ -n "$fresh" ]; then
  prune
fi
if [ -z "$known" ]; then
  { printf '%s\\n' "$record" >>"$seen"; } 2>/dev/null
fi

${commandFlagsScript(values.commandFlags ?? {})}
# \$run_flags unquoted: split on blanks into its flags (none has a blank), or nothing.
# shellcheck disable=SC2086
${
    loader === ""
      ? `MESH_EXECUTABLE=$self DENO_DIR=$cache/deno-dir DENO_NO_UPDATE_CHECK=1 DENO_NO_PACKAGE_JSON=1 \\
  exec "$runtime_dir/deno" run --quiet --no-config --no-lock --no-remote --no-prompt $run_flags \\
  ${values.permissions.join(" ")} "$program_dir/main.js" "$@"`
      : `# Through the carried loader, with the carried libraries only (--library-path, not the
# environment, so what the program runs uses the machine's own); argv[0] names the runtime.
MESH_EXECUTABLE=$self DENO_DIR=$cache/deno-dir DENO_NO_UPDATE_CHECK=1 DENO_NO_PACKAGE_JSON=1 \\
  exec "$start" --library-path "$runtime_dir/lib" --argv0 "$runtime_dir/deno" "$runtime_dir/deno" \\
  run --quiet --no-config --no-lock --no-remote --no-prompt $run_flags \\
  ${values.permissions.join(" ")} "$program_dir/main.js" "$@"`
  }
fail "cannot start the runtime \\"$start\\""
# The payload follows; nothing below this line is read by sh.
`;
}

/** What {@linkcode bundleProgram} wrote. */
export interface BundledProgram {
  /** The directory: `main.js` (the entry), the files it imports, `SHA256SUMS`. */
  dir: string;
  /** The JavaScript files, sorted by name (`main.js` among them). */
  files: string[];
  /** sha256 (hex) of `SHA256SUMS`. */
  sha256: string;
  /** Size of the JavaScript files together, bytes. */
  bytes: number;
}

/**
 * Deno's bundle helper that gives CommonJS code `require`: it imports `node:module` at the top of
 * the helpers every part of the bundle imports, and `node:module` brings most of Deno's Node
 * compatibility layer with it (about 0.1 s of CPU and 10 MiB at every start, measured on
 * `--help`). Made lazy by {@linkcode bundleProgram}: `node:module` is then loaded by the first
 * `require` of a bundled CommonJS package, as when the program runs from its sources.
 */
const EAGER_REQUIRE =
  'import { createRequire as __deno_internal_createRequire } from "node:module";\n' +
  "var __require = __deno_internal_createRequire(import.meta.url);\n";
const LAZY_REQUIRE = "var __deno_internal_require;\n" +
  "var __require = (id) => (__deno_internal_require ??= globalThis.process" +
  '.getBuiltinModule("node:module").createRequire(import.meta.url))(id);\n';

/**
 * A part of the bundle imported when first used: `import("./<part>.js")`, as `deno bundle` writes
 * it. `deno run` reads at start every module a literal specifier names, dynamic imports' included,
 * and holds them through the run: every part of the bundle (zod, the AMQP client, every command)
 * was read at every start, ~1.8 MiB of the one-file host's peak RSS for a no-op `apply`
 * (docs/mesh-host.md). Written `import(String("./<part>.js"))` ({@linkcode deferredImports}), the
 * part is imported at the same moment as before and read only then. Such an import needs read
 * permission on the program's directory: every program runs with `--allow-read` or `--allow-all`
 * (one without would fail at its first such import, saying so).
 */
const PART_IMPORT = /\bimport\("\.\/([A-Za-z0-9._-]+\.js)"\)/g;

/**
 * `text`, a file of the bundle whose files are `names`, with each dynamic import of one of them
 * ({@linkcode PART_IMPORT}) in a form Deno reads only when it runs.
 */
export function deferredImports(text: string, names: readonly string[]): string {
  return text.replace(
    PART_IMPORT,
    (all, name: string) => names.includes(name) ? `import(String("./${name}"))` : all,
  );
}

/**
 * Bundles the program `entry` (a module path) into the new directory `dir` as a one-file build
 * carries it: `deno bundle` with its npm dependencies inlined and code splitting, so that what the
 * program imports dynamically (a command's module, a package only one command uses, and the Node
 * built-ins those import) stays a file of its own, loaded when first imported as it is from the
 * sources, rather than parsed and loaded at every start (nor read: {@linkcode PART_IMPORT}); the
 * entry is `main.js`; Deno's `require` helper is made lazy ({@linkcode EAGER_REQUIRE});
 * `SHA256SUMS` lists each file's sha256 (`sha256sum`'s format, sorted by name), and its own
 * sha256 names the program.
 *
 * @throws {CommandError} when `deno bundle` fails; {@linkcode Error} when the bundle has no
 *   `main.js`-able entry or Deno's `require` helper is not in the form this function rewrites
 *   (a new Deno: the build must then be looked at, not shipped slower unnoticed).
 */
export async function bundleProgram(
  entry: string,
  dir: string,
  options: { config?: string } = {},
): Promise<BundledProgram> {
  await run([
    Deno.execPath(),
    "bundle",
    "--quiet",
    "--platform",
    "deno",
    "--packages",
    "bundle",
    "--code-splitting",
    ...(options.config ? ["--config", options.config] : []),
    "--outdir",
    dir,
    entry,
  ], { env: { NO_COLOR: "1" }, timeoutMs: 10 * 60_000 });
  const entryName = entry.slice(entry.lastIndexOf("/") + 1).replace(/\.[cm]?[jt]sx?$/, ".js");
  const files = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  if (!files.includes(entryName)) {
    throw new Error(`Cannot bundle "${entry}": deno bundle wrote no "${entryName}" in "${dir}"`);
  }
  if (entryName !== "main.js") {
    if (files.includes("main.js")) {
      throw new Error(`Cannot bundle "${entry}": deno bundle wrote a "main.js" of its own`);
    }
    for (const name of files) {
      if (
        name !== entryName &&
        (await Deno.readTextFile(`${dir}/${name}`)).includes(`"./${entryName}"`)
      ) {
        throw new Error(`Cannot bundle "${entry}": "${name}" imports the entry "${entryName}"`);
      }
    }
    await Deno.rename(`${dir}/${entryName}`, `${dir}/main.js`);
  }
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  let rewritten = 0;
  let bytes = 0;
  const sums: string[] = [];
  for (const name of names) {
    if (!/^[A-Za-z0-9._-]+\.js$/.test(name)) {
      throw new Error(
        `Cannot bundle "${entry}": deno bundle wrote "${name}", not a JavaScript file`,
      );
    }
    let text = await Deno.readTextFile(`${dir}/${name}`);
    if (text.includes(EAGER_REQUIRE)) {
      text = text.replace(EAGER_REQUIRE, LAZY_REQUIRE);
      rewritten++;
    }
    text = deferredImports(text, names);
    if (text.includes("__deno_internal_createRequire") || /__require\s*\./.test(text)) {
      throw new Error(
        `Cannot bundle "${entry}": "${name}" uses Deno's require helper in a form this build ` +
          "does not know (scripts/onefile.ts, EAGER_REQUIRE)",
      );
    }
    const data = new TextEncoder().encode(text);
    await Deno.writeFile(`${dir}/${name}`, data, { mode: 0o644 });
    await Deno.chmod(`${dir}/${name}`, 0o644);
    bytes += data.length;
    sums.push(`${await sha256Hex(data)}  ${name}\n`);
  }
  if (rewritten > 1) {
    throw new Error(`Cannot bundle "${entry}": Deno's require helper is in ${rewritten} files`);
  }
  const list = new TextEncoder().encode(sums.join(""));
  await Deno.writeFile(`${dir}/SHA256SUMS`, list, { mode: 0o644 });
  await Deno.chmod(`${dir}/SHA256SUMS`, 0o644);
  return { dir, files: names, sha256: await sha256Hex(list), bytes };
}

/**
 * Builds the one-file executable of `entry` (a module path) at `output`: bundles the program
 * ({@linkcode bundleProgram}), packs its files into a tar (sorted, owner and time fixed, so the
 * same program gives the same bytes) and compresses it, and writes header, runtime and program
 * into `output` (mode 0755), through a temporary file renamed into place.
 *
 * @throws {CommandError} when `deno bundle`, tar or gzip fail; {@linkcode bundleProgram}'s errors.
 */
export async function buildOneFile(
  entry: string,
  output: string,
  options: OneFileOptions,
): Promise<OneFile> {
  const work = await Deno.makeTempDir({ prefix: "mesh-onefile-" });
  try {
    const program = await bundleProgram(entry, `${work}/program`, {
      ...(options.config ? { config: options.config } : {}),
    });
    const programSha256 = program.sha256;
    await reproducibleTar(`${work}/program.tar`, program.dir, [...program.files, "SHA256SUMS"]);
    await run(["gzip", "-9", "-n", `${work}/program.tar`]);
    const programGz = await Deno.readFile(`${work}/program.tar.gz`);
    const segment = await runtimeSegment(options.runtime, options.libc);
    const runtimeBytes = await Deno.readFile(segment.path);
    const runtimeLength = runtimeBytes.length;
    const payload = new Uint8Array(runtimeLength + programGz.length);
    payload.set(runtimeBytes, 0);
    payload.set(programGz, runtimeLength);
    const values = {
      name: options.name,
      arch: options.runtime.arch,
      source: options.runtime.source +
        (options.libc ? ` with ${options.libc.packages.join(", ")} from Debian` : ""),
      runtimeSha256: segment.sha256,
      runtimeSize: options.runtime.size,
      runtimeOffset: 0,
      runtimeLength,
      programSha256,
      programOffset: 0,
      programLength: programGz.length,
      runtimeForm: segment.form,
      runtimeCompression: segment.compression,
      ...(options.libc ? { loader: options.libc.loader } : {}),
      ...(options.system ? { system: options.system } : {}),
      ...(options.shell ? { shell: options.shell } : {}),
      fileLength: 0,
      payloadSha256: await sha256Hex(payload),
      permissions: options.permissions,
      ...(options.commandFlags ? { commandFlags: options.commandFlags } : {}),
    };
    const headerLength = new TextEncoder().encode(oneFileHeader(values)).length;
    // tail -c +N counts from 1.
    values.runtimeOffset = headerLength + 1;
    values.programOffset = headerLength + runtimeLength + 1;
    values.fileLength = headerLength + payload.length;
    const header = new TextEncoder().encode(oneFileHeader(values));
    if (header.length !== headerLength) {
      throw new Error(`The one-file header of ${options.name} changed length when filled in`);
    }
    const tmp = `${output}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const file = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o755 });
      try {
        for (const part of [header, payload]) {
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
      programSize: program.bytes,
      runtime: options.runtime,
      segment,
      unpackedBytes: segment.unpackedBytes + program.bytes,
    };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}
