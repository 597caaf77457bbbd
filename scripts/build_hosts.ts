/**
 * `deno task hosts [--system NAME]... [--arch x86_64|aarch64]... [--out DIR] [--bundle FILE]
 * [--insecure] [--skip-image-check]`:
 * builds each system's host into `DIR` (default `dist/`) as `mesh-host-<system>-<arch>`, one file
 * each, with the narrowest permissions that work: read and write (files, store), run (the tools
 * appliers drive), env (HOME for rootless tools), sys (uid, hostname), net (the link to the broker).
 *
 * `--bundle FILE` (with exactly one `--system`) builds that system's host carrying `FILE` instead
 * of the checkout's `bundles/substrate-<system>.lock`. `FILE` is validated by the host's own
 * {@linkcode loadBundle} (the path `mesh-host bundle` and `reconcile` take) before anything is
 * built; a file that is not a valid bundle for that system is refused (exit 2, naming the problem).
 * The checkout is not touched: the entry point is `systems/<system>/main.ts` rewritten into a temporary
 * directory, its relative imports made absolute and its bundle import pointed at a copy of
 * `FILE` there; the directory is removed when the build ends. The output and `hosts.json` name the
 * bundle carried and its digest (sha256 of its declaration, as `mesh-host bundle` shows it).
 *
 * Before anything is built, every image a bundle to be embedded pins (the checkout's lock, or
 * `FILE`) must be in its registry ({@linkcode checkImages}); otherwise exit 2 naming each image and
 * `deno task substrate --registry ...` as the step to run first. `--insecure` asks a registry
 * that is not on the loopback over plain HTTP; `--skip-image-check` builds anyway (hosts for a
 * registry this machine cannot reach).
 *
 * Two forms of the same program (docs/mesh-host.md, "One file is the whole install"):
 *
 * - `compiled` when `DENORT_BIN` names a `denort` runtime: `deno compile` (one target, this
 *   machine's, since one runtime is one target);
 * - `one-file` otherwise (these machines: `deno compile` would download `denort`, which they
 *   cannot reach, and npm carries no `denort`): the Deno runtime from the npm package
 *   `@deno/linux-<arch>-glibc` and the program bundled with its dependencies, in one executable
 *   file (scripts/onefile.ts). Runtimes are cached in {@linkcode buildCacheDir} (`MESH_BUILD_CACHE`,
 *   default `~/.cache/mesh/build`).
 *
 * Each native build is run once (`--help`, which names it) before it is reported built; one that does not run is
 * removed. A manifest of what was built, its form and its size is written to
 * `DIR/hosts.json`. Exit 0 when everything asked was built; 1 when a build failed; 2 on bad
 * arguments.
 */

import { parseArgs } from "node:util";
import { SYSTEM_NAMES, type SystemName } from "../host/system.ts";
import { SYSTEM_ONEFILE } from "../systems/mod.ts";
import { messageOf } from "../lib/atomic.ts";
import { run } from "../lib/command.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import { loadBundle } from "../host/bundle.ts";
import { MAX_DECLARATION_BYTES } from "../lib/declaration_base.ts";
import {
  isLoopback,
  manifestMissing,
  pinnedReferences,
  splitPinned,
} from "../lib/registry_manifest.ts";
import {
  buildCacheDir,
  buildOneFile,
  fetchRuntime,
  ONEFILE_ARCHES,
  type OneFileArch,
} from "./onefile.ts";
import { type CarriedLibc, fetchCarriedLibc } from "./carried_libc.ts";
import { HOST_COMMAND_FLAGS, HOST_V8_FLAGS } from "./host_flags.ts";
import { HOST_PERMISSIONS } from "../host/permissions.ts";

const TRIPLES: Record<OneFileArch, string> = {
  x86_64: "x86_64-unknown-linux-gnu",
  aarch64: "aarch64-unknown-linux-gnu",
};
export { HOST_COMMAND_FLAGS, HOST_PERMISSIONS, HOST_V8_FLAGS };

const root = new URL("../", import.meta.url).pathname;
const native: OneFileArch | undefined = Deno.build.arch === "x86_64"
  ? "x86_64"
  : Deno.build.arch === "aarch64"
  ? "aarch64"
  : undefined;

function refuse(message: string): never {
  console.error(`deno task hosts: ${message}`);
  Deno.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    args: Deno.args,
    options: {
      system: { type: "string", multiple: true },
      arch: { type: "string", multiple: true },
      out: { type: "string" },
      bundle: { type: "string" },
      "skip-image-check": { type: "boolean" },
      insecure: { type: "boolean" },
    },
    strict: true,
    allowPositionals: false,
  });
} catch (error) {
  refuse(messageOf(error));
}
const insecure = parsed.values.insecure === true;
const skipImageCheck = parsed.values["skip-image-check"] === true;
const systems = parsed.values.system ?? [...SYSTEM_NAMES];
for (const s of systems) {
  if (!(SYSTEM_NAMES as readonly string[]).includes(s)) {
    refuse(`--system ${s} is not a system; the systems are ${SYSTEM_NAMES.join(", ")}`);
  }
}
const arches = (parsed.values.arch ?? Object.keys(ONEFILE_ARCHES)) as OneFileArch[];
for (const a of arches) {
  if (!(a in ONEFILE_ARCHES)) {
    refuse(
      `--arch ${a} is not an architecture; they are ${Object.keys(ONEFILE_ARCHES).join(", ")}`,
    );
  }
}
const out = parsed.values.out ?? `${root}dist`;
if (!out.startsWith("/")) refuse(`--out must be an absolute path, not "${out}"`);
const denort = Deno.env.get("DENORT_BIN");

/** The bundle a `--bundle` build carries, as recorded in `hosts.json`. */
interface Carried {
  /** The file given, as an absolute path. */
  source: string;
  /** sha256 of its declaration (what `mesh-host bundle` shows). */
  digest: string;
  resources: number;
}

/** The bundle given with `--bundle`, validated as the host validates its carried bundle. */
async function carriedBundle(
  file: string,
  system: string,
): Promise<{ text: string; carried: Carried }> {
  const source = file.startsWith("/") ? file : `${Deno.cwd()}/${file}`;
  let text;
  try {
    text = await readRegularTextFile(source, { maxBytes: MAX_DECLARATION_BYTES });
  } catch (error) {
    refuse(`Cannot read bundle "${source}": ${messageOf(error)}`);
  }
  try {
    const bundle = await loadBundle(text, system as SystemName);
    return {
      text,
      carried: { source, digest: bundle.digest, resources: bundle.declaration.resources.length },
    };
  } catch (error) {
    refuse(
      `--bundle "${source}" is not a bundle the ${system} host can carry: ${messageOf(error)}`,
    );
  }
}

/**
 * Writes, into a new temporary directory, the entry point of `system`'s host carrying `text`:
 * `systems/<system>/main.ts` with its relative imports made absolute and its bundle import pointed at a
 * copy of the bundle beside it. The caller removes the directory.
 *
 * @throws {Error} when the entry point does not import `../bundles/substrate-<system>.lock`.
 */
async function entryCarrying(
  system: string,
  text: string,
): Promise<{ dir: string; entry: string }> {
  const host = new URL(`../systems/${system}/main.ts`, import.meta.url);
  const source = await Deno.readTextFile(host);
  const lock = `../../bundles/substrate-${system}.lock`;
  let replaced = 0;
  const rewritten = source.replace(
    /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']+)\2/g,
    (_all, lead: string, quote: string, spec: string) => {
      if (spec === lock) {
        replaced++;
        return `${lead}${quote}./bundle.lock${quote}`;
      }
      return `${lead}${quote}${new URL(spec, host).href}${quote}`;
    },
  );
  if (replaced !== 1) {
    throw new Error(
      `Cannot build ${system} with another bundle: systems/${system}/main.ts imports "${lock}" ${replaced} times, not once`,
    );
  }
  const dir = await Deno.makeTempDir({ prefix: `mesh-hosts-${system}-bundle-` });
  await Deno.writeTextFile(`${dir}/bundle.lock`, text);
  await Deno.writeTextFile(`${dir}/${system}.ts`, rewritten);
  return { dir, entry: `${dir}/${system}.ts` };
}

let given: { text: string; carried: Carried } | undefined;
if (parsed.values.bundle !== undefined) {
  if (parsed.values.system?.length !== 1) {
    refuse(
      `--bundle needs exactly one --system (the system the bundle is for), not ${
        parsed.values.system?.length ?? "none"
      }`,
    );
  }
  given = await carriedBundle(parsed.values.bundle, systems[0]!);
}

/**
 * Every image a bundle about to be embedded pins is in its registry: `HEAD /v2/NAME/manifests/
 * DIGEST` (lib/registry_manifest.ts), over plain HTTP for a loopback registry or with
 * `--insecure`, else HTTPS (as `deno task substrate` pushes). A host carrying a digest its
 * registry lacks stops at its first container (issue 26: hosts built before `deno task
 * substrate` pinned digests the registry never had). Refused with exit 2, nothing written,
 * naming each image and the step to run first, unless `--skip-image-check` (a host built for a
 * registry this machine cannot reach; the host itself checks again before it applies anything).
 */
async function checkImages(system: string, text: string, from: string): Promise<void> {
  const bundle = await loadBundle(text, system as SystemName).catch(() => undefined);
  if (bundle === undefined) return; // refused by the host's own validation, said elsewhere
  // What its containers pin, and what its actions run (the substrate's schema step runs
  // mesh-control's image): every pinned reference in its declaration.
  const images = pinnedReferences(JSON.stringify(bundle.declaration));
  const missing: string[] = [];
  const registries = new Set<string>();
  await Promise.all(images.map(async (image) => {
    const ref = splitPinned(image);
    const plainHttp = insecure ||
      (ref !== undefined && isLoopback(ref.registry));
    const why = await manifestMissing(image, { plainHttp });
    if (why !== undefined) {
      missing.push(`${image}: ${why}`);
      if (ref !== undefined) registries.add(ref.registry);
    }
  }));
  if (missing.length === 0) return;
  missing.sort();
  const lock = from === "" ? `bundles/substrate-${system}.lock` : from;
  refuse(
    `Cannot embed the ${system} bundle ${lock}: ${missing.length} of its ${images.length} ` +
      `images cannot be had from their registry, so the host would stop at its first ` +
      `container:\n${missing.map((m) => `  ${m}`).join("\n")}\n` +
      `Run ${
        ([...registries].length > 0 ? [...registries].sort() : ["HOST:PORT"]).map((r) =>
          `\`deno task substrate --registry ${r}${from === "" ? "" : ` --lock ${from}`}\``
        ).join(" and ")
      } first (it builds and pushes the images and ` +
      `writes the lock with their digests), then build the hosts again; or, building hosts ` +
      `for a registry this machine cannot reach, pass --skip-image-check.`,
  );
}

if (!skipImageCheck) {
  for (const system of systems) {
    const text = given?.text ??
      await Deno.readTextFile(`${root}bundles/substrate-${system}.lock`).catch(() => undefined);
    if (text !== undefined) await checkImages(system, text, given?.carried.source ?? "");
  }
}
await Deno.mkdir(out, { recursive: true });

// Temporary directories (the --bundle entry point, the probe's cache) are removed however this
// ends: the unload event runs on Deno.exit too, and an interrupt exits through it.
const temporary = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of temporary) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  }
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => Deno.exit(130));
}
const entries = new Map<string, string>();
for (const system of systems) {
  if (given === undefined) {
    entries.set(system, `${root}systems/${system}/main.ts`);
    continue;
  }
  try {
    const { dir, entry } = await entryCarrying(system, given.text);
    temporary.add(dir);
    entries.set(system, entry);
  } catch (error) {
    console.error(`deno task hosts: ${messageOf(error)}`);
    Deno.exit(1);
  }
}
const carrying = given === undefined
  ? ""
  : `, carrying the bundle ${given.carried.source} (${given.carried.resources} resources, digest ${given.carried.digest})`;

/** One built host, as recorded in `hosts.json`. */
interface Built {
  system: string;
  arch: OneFileArch;
  path: string;
  form: "compiled" | "one-file";
  bytes: number;
  runtime?: { source: string; integrity: string; sha256: string; bytes: number };
  program?: { sha256: string; bytes: number };
  /**
   * The C library the file starts its runtime with: the machine's glibc, or the glibc it
   * carries (Debian's packages, pinned in scripts/carried_libc.lock.json) for a system without.
   */
  libc?: { carried: false } | { carried: true; packages: string[]; files: string[] };
  /** Bytes the file unpacks to in its cache (runtime, carried libraries, program). */
  unpackedBytes?: number;
  /** The bundle it carries, when built with `--bundle`. */
  bundle?: Carried;
  probed: boolean;
}
const built: Built[] = [];

/** Runs the native build once; removes it and stops when it does not run. */
async function probe(path: string, system: string): Promise<void> {
  const cache = await Deno.makeTempDir({ prefix: "mesh-hosts-probe-" });
  temporary.add(cache);
  try {
    // A file whose shell this machine lacks (android's /system/bin/sh) is run by this one's sh.
    const shell = SYSTEM_ONEFILE[system as SystemName]?.shell ?? "/bin/sh";
    const direct = await Deno.stat(shell).then(() => true, () => false);
    const r = await new Deno.Command(direct ? path : "sh", {
      args: direct ? ["--help"] : [path, "--help"],
      env: { MESH_RUNTIME_CACHE: cache },
      stdout: "piped",
      stderr: "piped",
    }).output().catch((error) => ({
      success: false,
      stdout: new Uint8Array(),
      stderr: new TextEncoder().encode(String(error)),
    }));
    const text = new TextDecoder().decode(r.stdout);
    if (!r.success || !text.startsWith(`Usage: mesh-host-${system} `)) {
      await Deno.remove(path).catch(() => {});
      console.error(
        `deno task hosts: ${path} was written but does not run (--help printed ${text.length} bytes: ${
          new TextDecoder().decode(r.stderr).trim().slice(-300)
        })${denort ? `; is DENORT_BIN a denort runtime for ${Deno.build.target}?` : ""}`,
      );
      Deno.exit(1);
    }
  } finally {
    await Deno.remove(cache, { recursive: true }).catch(() => {});
  }
}

for (const arch of arches) {
  if (denort !== undefined) {
    if (arch !== native) {
      console.error(
        `skipping ${arch}: DENORT_BIN (${denort}) is one runtime, for this machine's target ${Deno.build.target}`,
      );
      continue;
    }
    for (const system of systems) {
      const output = `${out}/mesh-host-${system}-${arch}`;
      const r = await new Deno.Command(Deno.execPath(), {
        args: [
          "compile",
          "--quiet",
          "--no-check=remote",
          "--config",
          `${root}deno.json`,
          "--target",
          TRIPLES[arch],
          ...HOST_PERMISSIONS,
          ...HOST_V8_FLAGS,
          "--output",
          output,
          entries.get(system)!,
        ],
        env: { DENORT_BIN: denort },
        stdout: "inherit",
        stderr: "piped",
      }).output();
      if (!r.success) {
        console.error(
          `deno task hosts: compiling ${system} for ${TRIPLES[arch]} failed:\n${
            new TextDecoder().decode(r.stderr)
          }`,
        );
        Deno.exit(1);
      }
      await probe(output, system);
      built.push({
        system,
        arch,
        path: output,
        form: "compiled",
        bytes: (await Deno.stat(output)).size,
        ...(given === undefined ? {} : { bundle: given.carried }),
        probed: true,
      });
      console.log(`built ${output} (compiled${carrying})`);
    }
    continue;
  }
  let runtime;
  try {
    runtime = await fetchRuntime(arch, buildCacheDir());
  } catch (error) {
    console.error(
      `deno task hosts: cannot fetch the Deno runtime for ${arch} from npm (${
        ONEFILE_ARCHES[arch]
      }@${Deno.version.deno}), and no DENORT_BIN names a denort runtime: ${messageOf(error)}`,
    );
    Deno.exit(1);
  }
  let libc: CarriedLibc | undefined;
  for (const system of systems) {
    const output = `${out}/mesh-host-${system}-${arch}`;
    const carries = SYSTEM_ONEFILE[system as SystemName].libc !== "glibc";
    let file;
    try {
      if (carries && libc === undefined) {
        const binary = `${buildCacheDir()}/deno-${Deno.version.deno}-${arch}.${Deno.pid}`;
        await run(["sh", "-c", 'gzip -dc "$1" >"$2"', "sh", runtime.gzPath, binary]);
        try {
          libc = await fetchCarriedLibc(arch, buildCacheDir(), { runtime: binary });
        } finally {
          await Deno.remove(binary).catch(() => {});
        }
      }
      file = await buildOneFile(entries.get(system)!, output, {
        system,
        shell: SYSTEM_ONEFILE[system as SystemName].shell,
        ...(carries ? { libc: libc! } : {}),
        name: `mesh-host-${system}-${arch}`,
        runtime,
        permissions: [...HOST_PERMISSIONS, ...HOST_V8_FLAGS],
        commandFlags: HOST_COMMAND_FLAGS,
        config: `${root}deno.json`,
      });
    } catch (error) {
      console.error(`deno task hosts: building ${system} for ${arch} failed: ${messageOf(error)}`);
      Deno.exit(1);
    }
    if (arch === native) await probe(output, system);
    built.push({
      system,
      arch,
      path: output,
      form: "one-file",
      bytes: file.size,
      runtime: {
        source: runtime.source,
        integrity: runtime.integrity,
        sha256: runtime.sha256,
        bytes: runtime.size,
      },
      program: { sha256: file.programSha256, bytes: file.programSize },
      libc: carries
        ? { carried: true, packages: libc!.packages, files: Object.keys(libc!.files) }
        : { carried: false },
      unpackedBytes: file.unpackedBytes,
      ...(given === undefined ? {} : { bundle: given.carried }),
      probed: arch === native,
    });
    console.log(
      `built ${output} (one-file, ${(file.size / 1e6).toFixed(1)} MB, ${
        (file.unpackedBytes / 1e6).toFixed(1)
      } MB unpacked: runtime ${(runtime.size / 1e6).toFixed(1)} MB${
        carries ? `, glibc carried (${libc!.packages.join(", ")})` : ""
      } and program ${(file.programSize / 1e6).toFixed(2)} MB before compression${
        arch === native ? "" : "; not run here, another architecture"
      }${carrying})`,
    );
  }
}
await Deno.writeTextFile(`${out}/hosts.json`, JSON.stringify(built, null, 2) + "\n");
console.log(`${built.length} hosts built in ${out} (manifest: ${out}/hosts.json)`);
