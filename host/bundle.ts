/**
 * Substrate bundles: the declaration a host carries for raising its system's substrate, one
 * per system (`bundles/substrate-<system>.lock`), embedded by a static import in that system's
 * entry point. A bundle is trusted input (it may hold actions).
 *
 * Format (JSON): `{"bundle": 1, "system": "<system>", "says": "<what it is, or what is not yet
 * known>", "declaration": {"version": 1, "resources": [...]}}`.
 *
 * @module
 */

import type { Declaration } from "../lib/declaration.ts";
import { declarationDigest } from "../lib/declaration_base.ts";
import { SYSTEM_NAMES, type SystemName } from "../lib/system_names.ts";
import { duplicateKeyMessage, duplicateKeys } from "../lib/json_keys.ts";

/**
 * The bundle file's schema, built when a bundle is first read: zod and the declaration's schema
 * are loaded only by the commands that read one (this module's errors are imported by every
 * command's runner).
 */
async function schemas() {
  const { z } = await import("zod");
  const { parseTrusted } = await import("../lib/declaration.ts");
  const BundleFile = z.strictObject({
    bundle: z.literal(1, { error: "Unsupported bundle format; this host reads bundle 1" }),
    system: z.enum(SYSTEM_NAMES),
    says: z.string().min(1),
    declaration: z.unknown(),
  });
  return { BundleFile, parseTrusted };
}

/** A carried bundle, validated. */
export interface Bundle {
  system: SystemName;
  /** What the bundle is, or what is not yet known (shown by `mesh-host bundle`). */
  says: string;
  declaration: Declaration;
  /** sha256 of the bundle's declaration as embedded. */
  digest: string;
}

/** The host carries no bundle: it was built for no system, or its system has none. */
export class NoBundleError extends Error {
  constructor(why: string) {
    super(`This host carries no bundle: ${why}`);
    this.name = "NoBundleError";
  }
}

/** The carried bundle has no resources; its `says` tells why. */
export class EmptyBundleError extends Error {
  readonly says: string;
  constructor(system: string, says: string) {
    super(`The ${system} bundle is empty: ${says}`);
    this.name = "EmptyBundleError";
    this.says = says;
  }
}

/** A bundle that is not a valid bundle for this system. */
export class BundleError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "BundleError";
  }
}

/**
 * Reads the bundle text a host carries for `system`. This is the one path both `bundle` and
 * `reconcile` take.
 *
 * @param text the embedded bundle, or `undefined` when the host carries none.
 * @throws {NoBundleError} when there is no bundle; {@linkcode EmptyBundleError} when it has no
 *   resources; {@linkcode BundleError} when it is not a bundle for this system;
 *   {@linkcode DeclarationError} when its declaration is invalid.
 */
export async function loadBundle(
  text: string | undefined,
  system: SystemName | undefined,
): Promise<Bundle> {
  if (text === undefined || system === undefined) {
    throw new NoBundleError(
      system === undefined ? "it was built for no system" : `no bundle exists for ${system}`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new BundleError(`The ${system} bundle is not JSON: ${(error as Error).message}`);
  }
  // JSON.parse kept the last of two equal keys: every repeated key refuses the bundle.
  const repeated = duplicateKeys(text);
  if (repeated.length > 0) {
    throw new BundleError(
      `The ${system} bundle is invalid (${repeated.length} repeated key${
        repeated.length === 1 ? "" : "s"
      }):\n${repeated.map((d) => `  ${d.at}: ${duplicateKeyMessage(d)}`).join("\n")}`,
    );
  }
  const { BundleFile, parseTrusted } = await schemas();
  const parsed = BundleFile.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BundleError(
      `The ${system} bundle is invalid: ${issue.path.join(".") || "(document)"}: ${issue.message}`,
    );
  }
  if (parsed.data.system !== system) {
    throw new BundleError(
      `The bundle carried is for ${parsed.data.system}, and this host is for ${system}`,
    );
  }
  const body = JSON.stringify(parsed.data.declaration);
  const declaration = parseTrusted(body);
  if (declaration.resources.length === 0) throw new EmptyBundleError(system, parsed.data.says);
  return { system, says: parsed.data.says, declaration, digest: await declarationDigest(body) };
}
