/**
 * Reading a registry file: the fast read and the schema (reconcile/registry_schema.ts) first, and
 * only when the fast read declines or the schema refuses, the positioned read
 * (reconcile/registry.ts, with the `yaml` package), loaded then. Kept apart from both so that
 * neither imports the other back (the positioned read builds on the schema module).
 *
 * @module
 */

import { messageOf, readRegularFileLimited } from "../lib/atomic.ts";
import { MAX_REGISTRY_BYTES, readFast, type Registry, RegistryError } from "./registry_schema.ts";

/**
 * Reads and validates a registry file.
 *
 * @throws {RegistryError} when the file is missing, is not a regular file (a directory, a FIFO,
 *   a device: refused before it is opened, so nothing blocks), is larger than
 *   {@linkcode MAX_REGISTRY_BYTES}, is not UTF-8 text, is not valid YAML, or breaks the schema; every problem is listed with its line and column.
 */
export async function loadRegistry(file: string): Promise<Registry> {
  let text: string;
  try {
    const bytes = await readRegularFileLimited(file, MAX_REGISTRY_BYTES);
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
 * read and the schema, and only when the fast read declines or the schema refuses, the
 * positioned read (reconcile/registry.ts, the `yaml` package, loaded then).
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 */
export async function parseRegistryText(text: string, file = "<registry>"): Promise<Registry> {
  const fast = readFast(text);
  if (fast !== undefined) return fast;
  const { parsePlaced } = await import("./registry.ts");
  return parsePlaced(text, file);
}
