/**
 * `deno task hosts [--system NAME]... [--arch x86_64|aarch64]... [--out DIR]`: builds each
 * system's host into `DIR` (default `dist/`) as `mesh-host-<system>-<arch>`, one file each, with
 * the narrowest permissions that work: read and write (files, store), run (the tools appliers
 * drive), env (HOME for rootless tools), sys (uid, hostname), net (the link to the broker).
 *
 * Two forms of the same program (docs/mesh-host.md, "One file is the whole install"):
 *
 * - `compiled` when `DENORT_BIN` names a `denort` runtime: `deno compile` (one target, this
 *   machine's, since one runtime is one target);
 * - `one-file` otherwise (these machines: `deno compile` would download `denort`, which they
 *   cannot reach, and npm carries no `denort`): the Deno runtime from the npm package
 *   `@deno/linux-<arch>-glibc` and the program bundled with its dependencies, in one executable
 *   file (scripts/onefile.ts). Runtimes are cached under `DIR/.cache`.
 *
 * Each native build is run once (`--help`, which names it) before it is reported built; one that does not run is
 * removed. A manifest of what was built, its form and its size is written to
 * `DIR/hosts.json`. Exit 0 when everything asked was built; 1 when a build failed; 2 on bad
 * arguments.
 */

import { parseArgs } from "node:util";
import { SYSTEM_NAMES } from "../systems/mod.ts";
import { messageOf } from "../lib/atomic.ts";
import { buildOneFile, fetchRuntime, ONEFILE_ARCHES, type OneFileArch } from "./onefile.ts";

const TRIPLES: Record<OneFileArch, string> = {
  x86_64: "x86_64-unknown-linux-gnu",
  aarch64: "aarch64-unknown-linux-gnu",
};
/** The permissions every host runs with, in both forms. */
export const HOST_PERMISSIONS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-env",
  "--allow-sys=uid,gid,hostname,osRelease",
  "--allow-net",
];

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
    },
    strict: true,
    allowPositionals: false,
  });
} catch (error) {
  refuse(messageOf(error));
}
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
await Deno.mkdir(out, { recursive: true });

/** One built host, as recorded in `hosts.json`. */
interface Built {
  system: string;
  arch: OneFileArch;
  path: string;
  form: "compiled" | "one-file";
  bytes: number;
  runtime?: { source: string; integrity: string; sha256: string; bytes: number };
  program?: { sha256: string; bytes: number };
  probed: boolean;
}
const built: Built[] = [];

/** Runs the native build once; removes it and stops when it does not run. */
async function probe(path: string, system: string): Promise<void> {
  const cache = await Deno.makeTempDir({ prefix: "mesh-hosts-probe-" });
  try {
    const r = await new Deno.Command(path, {
      args: ["--help"],
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
          "--target",
          TRIPLES[arch],
          ...HOST_PERMISSIONS,
          "--output",
          output,
          `${root}host/${system}.ts`,
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
        probed: true,
      });
      console.log(`built ${output} (compiled)`);
    }
    continue;
  }
  let runtime;
  try {
    runtime = await fetchRuntime(arch, `${out}/.cache`);
  } catch (error) {
    console.error(
      `deno task hosts: cannot fetch the Deno runtime for ${arch} from npm (${
        ONEFILE_ARCHES[arch]
      }@${Deno.version.deno}), and no DENORT_BIN names a denort runtime: ${messageOf(error)}`,
    );
    Deno.exit(1);
  }
  for (const system of systems) {
    const output = `${out}/mesh-host-${system}-${arch}`;
    let file;
    try {
      file = await buildOneFile(`${root}host/${system}.ts`, output, {
        name: `mesh-host-${system}-${arch}`,
        runtime,
        permissions: HOST_PERMISSIONS,
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
      probed: arch === native,
    });
    console.log(
      `built ${output} (one-file, ${(file.size / 1e6).toFixed(1)} MB: runtime ${
        (runtime.size / 1e6).toFixed(1)
      } MB and program ${(file.programSize / 1e6).toFixed(2)} MB before compression${
        arch === native ? "" : "; not run here, another architecture"
      })`,
    );
  }
}
await Deno.writeTextFile(`${out}/hosts.json`, JSON.stringify(built, null, 2) + "\n");
console.log(`${built.length} hosts built in ${out} (manifest: ${out}/hosts.json)`);
