/**
 * The substrate images for tests: the Debian bundle (bundles/substrate-debian.lock) pins images
 * in the lab registry by digest. When the registry no longer holds one (its storage was wiped),
 * `deno task substrate` builds (or reuses) and pushes them again; the digests it gets must be
 * the ones the bundle pins, or the test stops saying so.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { ensureRegistry } from "../lab/mod.ts";
import { ROOT } from "./mod.ts";

/** The image references the Debian bundle pins (`HOST:PORT/NAME@sha256:HEX`). */
export async function pinnedSubstrateImages(
  lock = `${ROOT}bundles/substrate-debian.lock`,
): Promise<string[]> {
  const text = await Deno.readTextFile(lock);
  return [...new Set(text.match(/[A-Za-z0-9.:-]+\/[a-z0-9-]+@sha256:[0-9a-f]{64}/g) ?? [])].sort();
}

async function inRegistry(ref: string): Promise<boolean> {
  const [, host, name, digest] = /^([^/]+)\/([^@]+)@(sha256:[0-9a-f]{64})$/.exec(ref)!;
  const r = await fetch(`http://${host}/v2/${name}/manifests/${digest}`, {
    method: "HEAD",
    headers: {
      accept: [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
      ].join(", "),
    },
  });
  await r.body?.cancel();
  return r.ok;
}

/**
 * Makes sure the registry holds every image the Debian bundle pins.
 *
 * @throws {Error} when the bundle pins none, or the rebuilt images' digests differ from the pinned.
 */
export async function ensureSubstrateImages(): Promise<void> {
  await ensureRegistry();
  const pinned = await pinnedSubstrateImages();
  if (pinned.length === 0) throw new Error("bundles/substrate-debian.lock pins no image");
  const missing = [];
  for (const ref of pinned) if (!(await inRegistry(ref))) missing.push(ref);
  if (missing.length === 0) return;
  const dir = await Deno.makeTempDir();
  try {
    await run([
      Deno.execPath(),
      "run",
      "-A",
      `${ROOT}scripts/substrate.ts`,
      "--registry",
      missing[0]!.split("/")[0]!,
      "--lock",
      `${dir}/lock`,
    ], { timeoutMs: 60 * 60_000 });
    const pushed = await pinnedSubstrateImages(`${dir}/lock`);
    const still = missing.filter((ref) => !pushed.includes(ref));
    if (still.length > 0) {
      throw new Error(
        `The registry lacks ${still.join(", ")}, and rebuilding pushed ${pushed.join(", ")}: ` +
          `run deno task substrate --registry ${missing[0]!.split("/")[0]} and commit the lock`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
