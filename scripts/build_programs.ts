/**
 * `deno task programs [--program reconcile|control|builder]... [--arch x86_64|aarch64]... [--out DIR]`:
 * builds the programs other than the host into `DIR` (default `dist/`) as
 * `mesh-<program>-<arch>`, one file each, in the same two forms as `deno task hosts`
 * (scripts/build_hosts.ts): `compiled` with `deno compile` when `DENORT_BIN` names a `denort`
 * runtime, else `one-file` (scripts/onefile.ts: the Deno runtime from npm and the bundled program
 * in one executable). Installed as `/usr/lib/mesh/mesh-<program>`, which is where the shipped units
 * (`packaging/`) run it.
 *
 * Each program runs with the permissions its work needs (`PROGRAM_PERMISSIONS`, declared beside
 * each entry point). Each native
 * build is run once (`--help`, which names the program) before it is reported built;
 * one that does not run is removed. A manifest is written to `DIR/programs.json`. Exit 0 when
 * everything asked was built; 1 when a build failed; 2 on bad arguments.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { messageOf } from "../lib/atomic.ts";
import {
  buildCacheDir,
  buildOneFile,
  fetchRuntime,
  ONEFILE_ARCHES,
  type OneFileArch,
} from "./onefile.ts";
import { RECONCILE_PERMISSIONS } from "../reconcile/permissions.ts";
import { CONTROL_PERMISSIONS } from "../control/permissions.ts";
import { BUILDER_PERMISSIONS } from "../builder/permissions.ts";

/** The programs this script builds, with their entry points (relative to the checkout). */
export const PROGRAMS = {
  reconcile: "reconcile/main.ts",
  control: "control/main.ts",
  builder: "builder/main.ts",
} as const;

/** A program `deno task programs` builds. */
export type ProgramName = keyof typeof PROGRAMS;

/**
 * The permissions each program runs with, in both forms: declared once, beside each entry point
 * (reconcile/permissions.ts, control/permissions.ts, builder/permissions.ts), which say why each is
 * needed.
 */
export const PROGRAM_PERMISSIONS: Record<ProgramName, readonly string[]> = {
  reconcile: RECONCILE_PERMISSIONS,
  control: CONTROL_PERMISSIONS,
  builder: BUILDER_PERMISSIONS,
};

const TRIPLES: Record<OneFileArch, string> = {
  x86_64: "x86_64-unknown-linux-gnu",
  aarch64: "aarch64-unknown-linux-gnu",
};
const root = new URL("../", import.meta.url).pathname;
const native: OneFileArch | undefined = Deno.build.arch === "x86_64"
  ? "x86_64"
  : Deno.build.arch === "aarch64"
  ? "aarch64"
  : undefined;

function refuse(message: string): never {
  console.error(`deno task programs: ${message}`);
  Deno.exit(2);
}
function fail(message: string): never {
  console.error(`deno task programs: ${message}`);
  Deno.exit(1);
}

let parsed;
try {
  parsed = parseArgs({
    args: Deno.args,
    options: {
      program: { type: "string", multiple: true },
      arch: { type: "string", multiple: true },
      out: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
} catch (error) {
  refuse(messageOf(error));
}
const programs = (parsed.values.program ?? Object.keys(PROGRAMS)) as ProgramName[];
for (const p of programs) {
  if (!(p in PROGRAMS)) {
    refuse(`--program ${p} is not a program; they are ${Object.keys(PROGRAMS).join(", ")}`);
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

/** One built program, as recorded in `programs.json`. */
interface Built {
  program: ProgramName;
  arch: OneFileArch;
  path: string;
  form: "compiled" | "one-file";
  bytes: number;
  program_sha256?: string;
  runtime?: string;
  probed: boolean;
}
const built: Built[] = [];

/** Runs the native build once (`--help`); removes it and stops when it does not run. */
async function probe(path: string, program: ProgramName): Promise<void> {
  const cache = await Deno.makeTempDir({ prefix: "mesh-programs-probe-" });
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
    if (!r.success || !text.startsWith(`Usage: mesh-${program} `)) {
      await Deno.remove(path).catch(() => {});
      fail(
        `${path} was written but does not run (--help printed ${text.length} bytes: ${
          new TextDecoder().decode(r.stderr).trim().slice(-300)
        })`,
      );
    }
  } finally {
    await Deno.remove(cache, { recursive: true }).catch(() => {});
  }
}

for (const arch of arches) {
  if (denort !== undefined) {
    if (arch !== native) {
      console.error(`skipping ${arch}: DENORT_BIN is one runtime, for ${Deno.build.target}`);
      continue;
    }
    for (const program of programs) {
      const output = `${out}/mesh-${program}-${arch}`;
      const r = await new Deno.Command(Deno.execPath(), {
        args: [
          "compile",
          "--quiet",
          "--no-check=remote",
          "--config",
          `${root}deno.json`,
          "--target",
          TRIPLES[arch],
          ...PROGRAM_PERMISSIONS[program],
          "--output",
          output,
          `${root}${PROGRAMS[program]}`,
        ],
        env: { DENORT_BIN: denort },
        stdout: "inherit",
        stderr: "piped",
      }).output();
      if (!r.success) {
        fail(
          `compiling ${program} for ${TRIPLES[arch]} failed:\n${
            new TextDecoder().decode(r.stderr)
          }`,
        );
      }
      await probe(output, program);
      const bytes = (await Deno.stat(output)).size;
      built.push({ program, arch, path: output, form: "compiled", bytes, probed: true });
      console.log(`built ${output} (compiled)`);
    }
    continue;
  }
  let runtime;
  try {
    runtime = await fetchRuntime(arch, buildCacheDir());
  } catch (error) {
    fail(
      `cannot fetch the Deno runtime for ${arch} from npm (${
        ONEFILE_ARCHES[arch]
      }@${Deno.version.deno}), and no DENORT_BIN names a denort runtime: ${messageOf(error)}`,
    );
  }
  for (const program of programs) {
    const output = `${out}/mesh-${program}-${arch}`;
    let file;
    try {
      file = await buildOneFile(`${root}${PROGRAMS[program]}`, output, {
        name: `mesh-${program}-${arch}`,
        runtime,
        permissions: [...PROGRAM_PERMISSIONS[program]],
        config: `${root}deno.json`,
      });
    } catch (error) {
      fail(`building ${program} for ${arch} failed: ${messageOf(error)}`);
    }
    if (arch === native) await probe(output, program);
    built.push({
      program,
      arch,
      path: output,
      form: "one-file",
      bytes: file.size,
      program_sha256: file.programSha256,
      runtime: runtime.source,
      probed: arch === native,
    });
    console.log(
      `built ${output} (one-file, ${(file.size / 1e6).toFixed(1)} MB${
        arch === native ? "" : "; not run here, another architecture"
      })`,
    );
  }
}
await Deno.writeTextFile(`${out}/programs.json`, JSON.stringify(built, null, 2) + "\n");
console.log(`${built.length} programs built in ${out} (manifest: ${out}/programs.json)`);
