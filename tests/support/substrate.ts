/**
 * The substrate for tests, independent of the digests committed in bundles/substrate-debian.lock.
 *
 * The images `deno task substrate` builds from Debian's packages get other digests on every
 * machine that builds them (apt downloads and file times differ), and mesh-control's image changes
 * with its code. So tests do not use the committed lock: {@linkcode freshSubstrateLock} runs
 * `scripts/substrate.ts --registry REGISTRY --lock <temporary file>` (images are tagged by the
 * digest of their recipe, so on a machine that built them before this only pushes) and
 * {@linkcode substrateHost} builds the one-file debian host carrying that lock
 * (`deno task hosts --bundle`). The committed lock stays the reference for operators; its shape
 * is checked against a fresh one by tests/host/substrate_lock_test.ts ({@linkcode lockShape}).
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { ensureRegistry, REGISTRY } from "../lab/mod.ts";
import { ROOT } from "./mod.ts";
import { NATIVE_ARCH } from "./onefile.ts";
import { inRegistry, pinnedSubstrateImages } from "./substrate_lock.ts";

export { lockShape, pinnedSubstrateImages } from "./substrate_lock.ts";

const fresh = new Map<string, Promise<FreshLock>>();

/** A lock produced on this machine by {@linkcode freshSubstrateLock}. */
export interface FreshLock {
  /** Path of the lock (in a temporary directory of this process). */
  path: string;
  /** Its text. */
  text: string;
  /** The images it pins, each checked to be in the registry. */
  images: string[];
  /** Wall time of the `scripts/substrate.ts` run, seconds. */
  seconds: number;
}

/**
 * Builds (or reuses) the substrate images on this machine, pushes them to `registry` (default the
 * lab's, started if it is not running) and returns the lock pinning them, once per process and
 * registry. The temporary directory holding it is removed when the process ends.
 *
 * @throws {CommandError} when scripts/substrate.ts fails; {@linkcode Error} when the lock pins
 *   no image or the registry does not hold one it pins.
 */
export function freshSubstrateLock(registry: string = REGISTRY): Promise<FreshLock> {
  let lock = fresh.get(registry);
  if (lock === undefined) {
    lock = (async () => {
      if (registry === REGISTRY) await ensureRegistry();
      const dir = await Deno.makeTempDir({ prefix: "mesh-test-substrate-" });
      removeAtExit(dir);
      const path = `${dir}/substrate-debian.lock`;
      const started = performance.now();
      await run([
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/substrate.ts`,
        "--registry",
        registry,
        "--lock",
        path,
      ], { timeoutMs: 60 * 60_000 });
      const seconds = (performance.now() - started) / 1000;
      const images = await pinnedSubstrateImages(path);
      if (images.length !== 3) {
        throw new Error(`The fresh lock ${path} pins ${images.length} images, not 3: ${images}`);
      }
      for (const ref of images) {
        if (!(await inRegistry(ref))) {
          throw new Error(`The registry at ${registry} lacks ${ref}, just pushed`);
        }
      }
      return { path, text: await Deno.readTextFile(path), images, seconds };
    })();
    fresh.set(registry, lock);
  }
  return lock;
}

/** The one-file debian host carrying a lock, built by {@linkcode substrateHost}. */
export interface SubstrateHost {
  /** Path of the one file. */
  path: string;
  /** The build's own line about it (`built ... carrying the bundle ... digest ...`). */
  said: string;
}

const hosts = new Map<string, Promise<SubstrateHost>>();

/**
 * Builds (once per process and lock) the one-file debian host for this machine carrying `lock`,
 * with `deno task hosts --system debian --bundle LOCK`, into a temporary directory removed when
 * the process ends. `skipImageCheck` builds a lock pinning an image the registry lacks (a broken
 * bundle, on purpose), which the build otherwise refuses.
 *
 * @throws {CommandError} when the build fails or refuses the lock.
 */
export function substrateHost(
  lock: string,
  options: { skipImageCheck?: boolean } = {},
): Promise<SubstrateHost> {
  let host = hosts.get(lock);
  if (host === undefined) {
    host = (async () => {
      const out = await Deno.makeTempDir({ prefix: "mesh-test-substrate-host-" });
      removeAtExit(out);
      const r = await run([
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/build_hosts.ts`,
        "--system",
        "debian",
        "--arch",
        NATIVE_ARCH,
        "--out",
        out,
        "--bundle",
        lock,
        ...(options.skipImageCheck ? ["--skip-image-check"] : []),
      ], { timeoutMs: 15 * 60_000 });
      return { path: `${out}/mesh-host-debian-${NATIVE_ARCH}`, said: r.stdout };
    })();
    hosts.set(lock, host);
  }
  return host;
}

const leftovers = new Set<string>();
function removeAtExit(dir: string): void {
  if (leftovers.size === 0) {
    globalThis.addEventListener("unload", () => {
      for (const d of leftovers) {
        try {
          Deno.removeSync(d, { recursive: true });
        } catch { /* already gone */ }
      }
    });
  }
  leftovers.add(dir);
}
