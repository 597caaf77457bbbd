/**
 * The substrate lock's images, read without the lab: which images a lock pins, its shape, and
 * whether this machine can have each one (its podman store, or the registry the reference
 * names). tests/support/substrate.ts, which builds fresh locks in the lab, re-exports these.
 *
 * @module
 */

import { ROOT } from "./mod.ts";

/** The image references a lock pins (`HOST:PORT/NAME@sha256:HEX`), sorted, each once. */
export async function pinnedSubstrateImages(
  lock = `${ROOT}bundles/substrate-debian.lock`,
): Promise<string[]> {
  const text = await Deno.readTextFile(lock);
  return [...new Set(text.match(/[A-Za-z0-9.:-]+\/[a-z0-9-]+@sha256:[0-9a-f]{64}/g) ?? [])].sort();
}

/**
 * A lock's text with every image digest (`@sha256:HEX`) replaced by `@sha256:DIGEST`: two locks
 * of the same shape (the same images and steps, in the same order) give the same string.
 */
export function lockShape(text: string): string {
  return JSON.stringify(JSON.parse(text), null, 2).replace(
    /@sha256:[0-9a-f]{64}/g,
    "@sha256:DIGEST",
  );
}

/**
 * Whether the registry named in `ref` (`HOST:PORT/NAME@sha256:HEX`, asked over HTTP: the lab's
 * registry) holds that manifest.
 */
export async function inRegistry(ref: string): Promise<boolean> {
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
 * The images the lock `lock` (default the committed bundles/substrate-debian.lock) pins that this
 * machine cannot have: in neither podman's store nor the registry the reference names. The
 * committed lock pins the digests of the machine that made it, so elsewhere this may be all of
 * them.
 */
export async function imagesNotHeld(lock?: string): Promise<string[]> {
  const missing: string[] = [];
  for (const ref of await pinnedSubstrateImages(lock)) {
    const local = await new Deno.Command("podman", {
      args: ["image", "exists", ref],
      stdout: "null",
      stderr: "null",
    }).output();
    if (local.success) continue;
    if (!(await inRegistry(ref).catch(() => false))) missing.push(ref);
  }
  return missing;
}
