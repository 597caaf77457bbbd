/**
 * Reading a registry file: the fast read (reconcile/registry_fast.ts: js-yaml, then the validator
 * generated from the zod schema) first; only when the fast read declines or the validator
 * refuses, the positioned read (reconcile/registry.ts, with the `yaml` package and the zod schema
 * of reconcile/registry_schema.ts, which says every problem), loaded then. Kept apart from both
 * so that neither imports the other back (the positioned read builds on the schema module). A
 * valid registry is read without loading zod.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import { MAX_REGISTRY_BYTES, RegistryError } from "./registry_base.ts";
import { quickLoad, validRegistry } from "./registry_fast.ts";
import type { Registry } from "./registry_schema.ts";

/**
 * Reads and validates a registry file.
 *
 * @throws {RegistryError} when the file is missing, is not a regular file (a directory, a FIFO,
 *   a device: refused before it is opened, so nothing blocks), is larger than
 *   {@linkcode MAX_REGISTRY_BYTES}, is not UTF-8 text, is not valid YAML, or breaks the schema; every problem is listed with its line and column.
 *
 * @example A registry file read from disk
 * ```ts
 * import { loadRegistry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const file = await Deno.makeTempFile({ suffix: ".yaml" });
 * await Deno.writeTextFile(
 *   file,
 *   "version: 1\naccounts: [root]\nservices:\n  sshd: {kind: daemon, user: root, port: 22}\n",
 * );
 * const registry = await loadRegistry(file);
 * assert.equal(registry.services.sshd?.kind, "daemon");
 * await Deno.remove(file);
 * ```
 */
export async function loadRegistry(file: string): Promise<Registry> {
  let text: string;
  try {
    const bytes = await readRegularFile(file, { maxBytes: MAX_REGISTRY_BYTES });
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    const why = cause instanceof Deno.errors.NotFound
      ? "no such file"
      : cause instanceof TypeError && /encoded data/i.test(cause.message)
      ? "it is not UTF-8 text"
      : cause instanceof RangeError
      ? `it is larger than ${MAX_REGISTRY_BYTES} bytes (16 MiB)`
      : messageOf(cause);
    throw new RegistryError(file, [{
      path: "",
      line: 0,
      column: 0,
      message: `Cannot read registry: ${why}`,
    }]);
  }
  return await parseRegistryText(text, file);
}

/**
 * Validates registry text as {@linkcode parseRegistry} (reconcile/registry.ts) does: the fast
 * read and the generated validator; only when the fast read declines or the validator refuses,
 * the positioned read (reconcile/registry.ts: the `yaml` package and zod, loaded then).
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 */
export async function parseRegistryText(text: string, file = "<registry>"): Promise<Registry> {
  const valid = validRegistry(quickLoad(text));
  if (valid !== undefined) return valid;
  const { parsePlaced } = await import("./registry.ts");
  return parsePlaced(text, file);
}
