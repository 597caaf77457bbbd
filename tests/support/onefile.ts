/**
 * The one-file host (scripts/onefile.ts) for tests: built by the real `deno task hosts` (the
 * compiled form when `DENORT_BIN` is set) into `dist/test/<digest of the sources>/` (ignored by
 * git), once per run of the suite: a later test process finds it built from the same sources.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { ROOT } from "./mod.ts";

const built = new Map<string, Promise<string>>();

let sourceDigest: Promise<string> | undefined;

/**
 * sha256 over the checkout's files a build reads (every file git tracks or would track: path and
 * content), so a test process reuses a one file another process of the same run built from the
 * same sources, and never one built from other sources.
 */
function buildInputs(): Promise<string> {
  sourceDigest ??= (async () => {
    const listed = await run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"]);
    const names = listed.stdout.split("\0").filter((n) => n !== "" && !n.startsWith("dist/"))
      .sort();
    const parts: Uint8Array[] = [];
    for (const name of names) {
      parts.push(new TextEncoder().encode(`${name}\0`));
      parts.push(await Deno.readFile(`${ROOT}${name}`).catch(() => new Uint8Array()));
    }
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
    return Array.from(digest.subarray(0, 12), (b) => b.toString(16).padStart(2, "0")).join("");
  })();
  return sourceDigest;
}

/**
 * Runs `build` (which writes `name` into `dir`) unless an earlier process built `name` from the
 * same sources: builds go to `dist/test/<sources digest>/`, each file marked done once written.
 */
async function reuseOrBuild(
  name: string,
  build: (dir: string) => Promise<void>,
): Promise<string> {
  const dir = `${ROOT}dist/test/${await buildInputs()}`;
  const path = `${dir}/${name}`;
  if (await Deno.stat(`${path}.done`).then(() => true, () => false)) return path;
  await Deno.mkdir(dir, { recursive: true });
  await build(dir);
  await Deno.writeTextFile(`${path}.done`, "");
  return path;
}

/** This machine's architecture in `uname -m` spelling. */
export const NATIVE_ARCH = Deno.build.arch;

/**
 * Builds (once per process) the one-file host of `system` for `arch` (default this machine's)
 * and returns its path.
 *
 * @throws {CommandError} when the build fails.
 */
export function oneFileHost(system = "debian", arch: string = NATIVE_ARCH): Promise<string> {
  const key = `${system}-${arch}`;
  let path = built.get(key);
  if (path === undefined) {
    path = reuseOrBuild(`mesh-host-${system}-${arch}`, async (out) => {
      await run([
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/build_hosts.ts`,
        "--system",
        system,
        "--arch",
        arch,
        "--out",
        out,
        // The checkout's lock pins the digests of the machine that committed it, which this
        // machine's registry need not hold: these tests are about the one file, not its images.
        "--skip-image-check",
      ], { timeoutMs: 15 * 60_000 });
    });
    built.set(key, path);
  }
  return path;
}

const builtPrograms = new Map<string, Promise<string>>();

/**
 * Builds (once per process) the one-file `mesh-<program>` (scripts/build_programs.ts) for this
 * machine and returns its path.
 *
 * @throws {CommandError} when the build fails.
 */
export function oneFileProgram(program: "reconcile" | "control" | "builder"): Promise<string> {
  let path = builtPrograms.get(program);
  if (path === undefined) {
    path = reuseOrBuild(`mesh-${program}-${NATIVE_ARCH}`, async (out) => {
      await run([
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/build_programs.ts`,
        "--program",
        program,
        "--arch",
        NATIVE_ARCH,
        "--out",
        out,
      ], { timeoutMs: 15 * 60_000 });
    });
    builtPrograms.set(program, path);
  }
  return path;
}
