/**
 * Whether an OCI registry holds the manifest an image reference pins, asked over the
 * distribution API: `HEAD /v2/NAME/manifests/DIGEST` with the OCI and Docker manifest media types
 * accepted. Used where no container runtime can be asked (`deno task hosts` checking the bundle it
 * embeds; a host whose runtime is not installed yet, the Debian bundle installing podman itself).
 *
 * @module
 */

import { messageOf } from "./atomic.ts";
import { isLoopback as isLoopbackHost } from "./wire_trust.ts";

/** The manifest media types a registry may answer with, single images and indexes. */
export const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
].join(", ");

/** An image reference pinned by digest, split: `REGISTRY/NAME@sha256:HEX`. */
export interface PinnedReference {
  /** `host[:port]`. */
  registry: string;
  /** The repository, e.g. `mesh-postgres` or `team/app`. */
  name: string;
  /** `sha256:<64 hex>`. */
  digest: string;
}

/**
 * Splits `image` (`REGISTRY/NAME@sha256:<64 hex>`); the first component is a registry only when
 * it has a `.` or `:` or is `localhost`, as the runtimes read it (else Docker Hub's).
 *
 * @returns undefined when `image` is not pinned by digest.
 */
export function splitPinned(image: string): PinnedReference | undefined {
  const m = /^([^\s@]+)@(sha256:[0-9a-f]{64})$/.exec(image);
  if (m === null) return undefined;
  const path = m[1]!;
  const slash = path.indexOf("/");
  const first = slash === -1 ? "" : path.slice(0, slash);
  if (first !== "" && (first.includes(".") || first.includes(":") || first === "localhost")) {
    return { registry: first, name: path.slice(slash + 1), digest: m[2]! };
  }
  const name = path.includes("/") ? path : `library/${path}`;
  return { registry: "registry-1.docker.io", name, digest: m[2]! };
}

/**
 * Whether `registry` (`host[:port]`, an IPv6 address in brackets) is on this machine's loopback:
 * its host by lib/wire_trust.ts's one rule (`localhost`, 127.0.0.0/8, `::1`, ...; a name that
 * merely starts with `127.` is not).
 */
export function isLoopback(registry: string): boolean {
  return isLoopbackHost(registry.replace(/:\d+$/, ""));
}

/**
 * Asks the registry whether it holds the manifest `image` pins.
 *
 * @param image `REGISTRY/NAME@sha256:<64 hex>`.
 * @param options `plainHttp`: speak HTTP rather than HTTPS (a loopback or insecure registry);
 *   `timeoutMs` for the one request (default 15 s).
 * @returns undefined when the registry answered 200 for that digest; otherwise why not, as a
 *   clause ("the registry 127.0.0.1:5000 does not hold it (HTTP 404)", "the registry ... cannot be
 *   reached: ..."). Never throws.
 */
export async function manifestMissing(
  image: string,
  options: { plainHttp: boolean; timeoutMs?: number },
): Promise<string | undefined> {
  const ref = splitPinned(image);
  if (ref === undefined) return "it is not pinned by digest (name@sha256:<64 hex digits>)";
  const url = `${
    options.plainHttp ? "http" : "https"
  }://${ref.registry}/v2/${ref.name}/manifests/${ref.digest}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "HEAD",
      headers: { accept: MANIFEST_ACCEPT },
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
  } catch (error) {
    return `the registry ${ref.registry} cannot be reached (HEAD ${url}): ${messageOf(error)}`;
  }
  await response.body?.cancel();
  if (response.status === 200) return undefined;
  if (response.status === 404) {
    return `the registry ${ref.registry} does not hold it (HEAD ${url} answered 404)`;
  }
  return `the registry ${ref.registry} did not say it holds it (HEAD ${url} answered ${response.status} ${response.statusText})`;
}

/**
 * Every image reference pinned by digest that `text` names with a registry
 * (`HOST[:PORT]/NAME@sha256:<64 hex>`), each once, in order of first appearance: the images a
 * bundle's containers pin and those its actions run (`podman run REF ...` in a shell command).
 */
export function pinnedReferences(text: string): string[] {
  const found = new Set<string>();
  const pattern =
    /(?<![\w.\/:@-])([a-z0-9][a-z0-9.-]*(?::\d+)?\/[a-z0-9._\/-]+@sha256:[0-9a-f]{64})(?![0-9a-f])/g;
  for (const m of text.matchAll(pattern)) {
    const ref = splitPinned(m[1]!);
    if (ref !== undefined && ref.registry !== "registry-1.docker.io") found.add(m[1]!);
  }
  return [...found];
}
