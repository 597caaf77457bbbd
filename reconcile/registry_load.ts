/**
 * Reading a registry file: the fast read (reconcile/registry_fast.ts) and the plain checks of a
 * valid registry (reconcile/registry_base.ts `validRegistry`) first; only when the plain checks
 * are not sure, the zod schema (reconcile/registry_schema.ts, zod loaded then); and only when
 * the fast read declines or the schema refuses, the positioned read (reconcile/registry.ts, with
 * the `yaml` package), loaded then. Kept apart from all three so that none imports another back
 * (the positioned read builds on the schema module). A valid registry is read without loading
 * zod.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import { MAX_REGISTRY_BYTES, RegistryError, validRegistry } from "./registry_base.ts";
import { quickLoad } from "./registry_fast.ts";
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
 * read and the plain checks; when they are not sure, the zod schema (loaded then); and only when
 * the fast read declines or the schema refuses, the positioned read (reconcile/registry.ts, the
 * `yaml` package, loaded then).
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 */
export async function parseRegistryText(text: string, file = "<registry>"): Promise<Registry> {
  const quick = quickLoad(text);
  if (quick !== undefined) {
    const valid = validRegistry(quick) as Registry | undefined;
    if (valid !== undefined) return valid;
    const { Registry } = await import("./registry_schema.ts");
    const parsed = Registry.safeParse(quick);
    if (parsed.success) return parsed.data;
  }
  const { parsePlaced } = await import("./registry.ts");
  return parsePlaced(text, file);
}
