/**
 * The one-file host (scripts/onefile.ts) for tests: built once per test process by the real
 * `deno task hosts` for this machine's architecture (the compiled form when `DENORT_BIN` is set), into `dist/test/` (ignored by git).
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { ROOT } from "./mod.ts";

const built = new Map<string, Promise<string>>();

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
    path = (async () => {
      const out = `${ROOT}dist/test`;
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
      return `${out}/mesh-host-${system}-${arch}`;
    })();
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
    path = (async () => {
      const out = `${ROOT}dist/test`;
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
      return `${out}/mesh-${program}-${NATIVE_ARCH}`;
    })();
    builtPrograms.set(program, path);
  }
  return path;
}
