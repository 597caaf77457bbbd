/**
 * The glibc a one-file host carries where its system's libc is not glibc (alpine: musl;
 * android: bionic). The Deno runtime that npm carries (`@deno/linux-<arch>-glibc`) links glibc's
 * `libc.so.6`, `libm.so.6`, `libdl.so.2`, `librt.so.1`, `libpthread.so.0`, its dynamic loader and
 * libgcc's `libgcc_s.so.1`; on a root filesystem without them the kernel cannot even start it
 * (`exec: deno: not found`: the ELF interpreter `/lib64/ld-linux-x86-64.so.2` is missing).
 *
 * The pieces come from Debian's own packages for the target architecture (`libc6`,
 * `libgcc-s1`), pinned with their sha256 in `scripts/carried_libc.lock.json` (the format: that
 * file's own fields, read by {@linkcode readCarriedLibcLock}; the package fields are those of a
 * Debian `Packages` index, deb-control(5)). Which libraries are carried is not a list kept by
 * hand: it is the closure of the runtime's `DT_NEEDED` entries (`readelf -d`), each resolved in
 * the unpacked packages; a library none of them holds stops the build.
 *
 * The one-file header (scripts/onefile.ts) starts the runtime through the carried loader:
 * `lib/ld-linux-x86-64.so.2 --library-path lib --argv0 deno deno run ...`, so no path of the
 * build machine and no absolute interpreter path is inside the file, and the cache can be
 * anywhere (`MESH_RUNTIME_CACHE`). `Deno.execPath()` then names the loader; the host knows its
 * own file from `MESH_EXECUTABLE`, which the header sets (host/identity.ts).
 *
 * `deno run -A scripts/carried_libc.ts --update` rewrites the lock from the mirror's current
 * `Packages` indices (a Debian point release removes the superseded packages from the pool).
 *
 * @module
 */

import { z } from "zod";
import { run } from "../lib/command.ts";
import { messageOf } from "../lib/atomic.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";

/** Where the lock is kept, beside the build. */
export const CARRIED_LIBC_LOCK = new URL("./carried_libc.lock.json", import.meta.url).pathname;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, "a sha256 is 64 lower-case hex digits");
const PackageSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9.+-]+$/),
  version: z.string().regex(/^[A-Za-z0-9.+~:-]+$/),
  /** Path in the mirror's pool (the `Filename` of the Packages index). */
  filename: z.string().regex(/^pool\/[A-Za-z0-9._+~\/-]+\.deb$/),
  /** Bytes of the .deb. */
  size: z.number().int().positive(),
  sha256: Sha256,
});
const ArchSchema = z.strictObject({
  /** Debian's name of the architecture (`amd64`, `arm64`). */
  debianArch: z.string().regex(/^[a-z0-9]+$/),
  /** The multiarch directory the libraries are in (`x86_64-linux-gnu`). */
  triplet: z.string().regex(/^[a-z0-9_]+-linux-gnu$/),
  /** The dynamic loader's file name (`ld-linux-x86-64.so.2`). */
  loader: z.string().regex(/^ld-linux-[a-z0-9_-]+\.so\.\d+$/),
  packages: z.array(PackageSchema).min(1),
});
const LockSchema = z.strictObject({
  about: z.string(),
  mirror: z.url(),
  suite: z.string().regex(/^[a-z]+$/),
  arches: z.strictObject({ x86_64: ArchSchema, aarch64: ArchSchema }),
});

/** The lock, as read by {@linkcode readCarriedLibcLock}. */
export type CarriedLibcLock = z.infer<typeof LockSchema>;
/** One pinned package of the lock. */
export type PinnedPackage = z.infer<typeof PackageSchema>;

/**
 * Reads and validates the lock (default {@linkcode CARRIED_LIBC_LOCK}).
 *
 * @throws {Error} "Cannot read the carried libc lock ...": unreadable, not JSON, or each field
 *   that is wrong with its path.
 */
export async function readCarriedLibcLock(path = CARRIED_LIBC_LOCK): Promise<CarriedLibcLock> {
  let value: unknown;
  try {
    value = JSON.parse(await readRegularTextFile(path, { maxBytes: 64 * 1024 }));
  } catch (error) {
    throw new Error(`Cannot read the carried libc lock "${path}": ${messageOf(error)}`);
  }
  const parsed = LockSchema.safeParse(value);
  if (!parsed.success) {
    throw new Error(
      `Cannot read the carried libc lock "${path}": ${
        parsed.error.issues.map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`).join("; ")
      }`,
    );
  }
  return parsed.data;
}

/** What a one-file build carries for one architecture (see {@linkcode fetchCarriedLibc}). */
export interface CarriedLibc {
  arch: "x86_64" | "aarch64";
  /** The loader's file name, also among {@linkcode files}. */
  loader: string;
  /** Each carried file by its name (the soname), with the path of its unpacked copy. */
  files: Record<string, string>;
  /** The packages they come from, as `name=version`. */
  packages: string[];
  /** sha256 over the carried files' names and digests: names the set in caches. */
  sha256: string;
}

const hex = (bytes: ArrayBuffer) =>
  Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

async function fetchDeb(mirror: string, pkg: PinnedPackage, dir: string): Promise<string> {
  const path = `${dir}/${pkg.filename.slice(pkg.filename.lastIndexOf("/") + 1)}`;
  try {
    const bytes = await Deno.readFile(path);
    if (hex(await crypto.subtle.digest("SHA-256", bytes)) === pkg.sha256) return path;
  } catch { /* not fetched yet */ }
  const url = `${mirror.replace(/\/$/, "")}/${pkg.filename}`;
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`Cannot fetch ${pkg.name} ${pkg.version} from ${url}: ${messageOf(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(
      `Cannot fetch ${pkg.name} ${pkg.version} from ${url}: HTTP ${response.status}` +
        (response.status === 404
          ? " (a point release may have replaced it: run `deno run -A scripts/carried_libc.ts --update`)"
          : ""),
    );
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const sha = hex(await crypto.subtle.digest("SHA-256", bytes));
  if (bytes.length !== pkg.size || sha !== pkg.sha256) {
    throw new Error(
      `Cannot use ${pkg.name} ${pkg.version} from ${url}: it has ${bytes.length} bytes and sha256 ` +
        `${sha}, and the lock pins ${pkg.size} bytes and ${pkg.sha256}`,
    );
  }
  const tmp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.writeFile(tmp, bytes);
  await Deno.rename(tmp, path);
  return path;
}

/**
 * The shared libraries an ELF file needs (`DT_NEEDED`), read with binutils' `readelf -d`, which
 * reads an ELF file of any architecture.
 *
 * @throws {CommandError} when readelf fails (not an ELF file, readelf missing).
 */
export async function neededLibraries(path: string): Promise<string[]> {
  const out = await run(["readelf", "-d", "--wide", path], { env: { LC_ALL: "C" } });
  return [...out.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]!);
}

/**
 * Fetches (or reuses from `cacheDir`) the pinned packages of `arch`, unpacks them, and resolves
 * the closure of `runtime`'s needed libraries in them.
 *
 * @param runtime path of the uncompressed Deno runtime the build embeds.
 * @throws {Error} when a package cannot be fetched or does not match its pin, or the runtime
 *   needs a library no pinned package holds (naming it).
 */
export async function fetchCarriedLibc(
  arch: "x86_64" | "aarch64",
  cacheDir: string,
  options: { runtime: string; lock?: CarriedLibcLock },
): Promise<CarriedLibc> {
  const lock = options.lock ?? await readCarriedLibcLock();
  const pinned = lock.arches[arch];
  const debs = `${cacheDir}/debs`;
  await Deno.mkdir(debs, { recursive: true });
  const key = hex(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(pinned.packages.map((p) => p.sha256).join("\n")),
    ),
  ).slice(0, 16);
  const root = `${cacheDir}/libc-${arch}-${key}`;
  if (!(await Deno.stat(`${root}/.complete`).then(() => true, () => false))) {
    // Unpacked aside and renamed into place: builds sharing the cache may run at once.
    const work = await Deno.makeTempDir({ dir: cacheDir, prefix: `.libc-${arch}-` });
    try {
      for (const pkg of pinned.packages) {
        const deb = await fetchDeb(lock.mirror, pkg, debs);
        await run(["dpkg-deb", "-x", deb, work]);
      }
      await Deno.writeTextFile(`${work}/.complete`, "");
      if (!(await Deno.stat(`${root}/.complete`).then(() => true, () => false))) {
        await Deno.remove(root, { recursive: true }).catch(() => {});
        // Another build may rename its copy first: then it is used and this one dropped.
        await Deno.rename(work, root).catch(() => {});
      }
    } finally {
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  }
  const dirs = [`${root}/lib/${pinned.triplet}`, `${root}/usr/lib/${pinned.triplet}`];
  const files: Record<string, string> = {};
  const find = async (name: string): Promise<string> => {
    for (const dir of dirs) {
      try {
        if ((await Deno.stat(`${dir}/${name}`)).isFile) {
          return await Deno.realPath(`${dir}/${name}`);
        }
      } catch { /* next */ }
    }
    throw new Error(
      `Cannot carry glibc for ${arch}: the runtime needs "${name}", which none of ${
        pinned.packages.map((p) => p.name).join(", ")
      } (${CARRIED_LIBC_LOCK}) holds`,
    );
  };
  const queue = [pinned.loader, ...await neededLibraries(options.runtime)];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (name in files) continue;
    files[name] = await find(name);
    queue.push(...await neededLibraries(files[name]!));
  }
  const names = Object.keys(files).sort();
  const sums: string[] = [];
  for (const name of names) {
    sums.push(
      `${hex(await crypto.subtle.digest("SHA-256", await Deno.readFile(files[name]!)))}  ${name}`,
    );
  }
  return {
    arch,
    loader: pinned.loader,
    files: Object.fromEntries(names.map((n) => [n, files[n]!])),
    packages: pinned.packages.map((p) => `${p.name}=${p.version}`),
    sha256: hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(sums.join("\n")))),
  };
}

/**
 * The lock rewritten from the mirror's current `Packages.xz` of each architecture: each pinned
 * package's newest entry there (Version, Filename, Size, SHA256).
 *
 * @throws {Error} when an index cannot be fetched or lacks a package.
 */
export async function updatedLock(lock: CarriedLibcLock): Promise<CarriedLibcLock> {
  const next = structuredClone(lock);
  for (const arch of ["x86_64", "aarch64"] as const) {
    const entry = next.arches[arch];
    const url = `${
      lock.mirror.replace(/\/$/, "")
    }/dists/${lock.suite}/main/binary-${entry.debianArch}/Packages.xz`;
    const response = await fetch(url);
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`Cannot fetch ${url}: HTTP ${response.status}`);
    }
    const tmp = await Deno.makeTempFile({ suffix: ".xz" });
    try {
      await Deno.writeFile(tmp, new Uint8Array(await response.arrayBuffer()));
      const text = (await run(["xz", "-dc", tmp])).stdout;
      for (const pkg of entry.packages) {
        const stanza = text.split("\n\n").find((s) => s.startsWith(`Package: ${pkg.name}\n`));
        const field = (name: string) => new RegExp(`^${name}: (.+)$`, "m").exec(stanza ?? "")?.[1];
        const version = field("Version");
        const filename = field("Filename");
        const size = field("Size");
        const sha256 = field("SHA256");
        if (!version || !filename || !size || !sha256) {
          throw new Error(`Cannot update the lock: ${url} has no complete entry for ${pkg.name}`);
        }
        Object.assign(pkg, { version, filename, size: Number(size), sha256 });
      }
    } finally {
      await Deno.remove(tmp).catch(() => {});
    }
  }
  return LockSchema.parse(next);
}

if (import.meta.main) {
  if (Deno.args.length !== 1 || Deno.args[0] !== "--update") {
    console.error("Usage: deno run -A scripts/carried_libc.ts --update");
    Deno.exit(2);
  }
  try {
    const next = await updatedLock(await readCarriedLibcLock());
    await Deno.writeTextFile(CARRIED_LIBC_LOCK, JSON.stringify(next, null, 2) + "\n");
    console.log(`updated ${CARRIED_LIBC_LOCK}`);
  } catch (error) {
    console.error(`scripts/carried_libc.ts: ${messageOf(error)}`);
    Deno.exit(1);
  }
}
