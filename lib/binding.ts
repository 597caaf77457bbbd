/**
 * Provisions and bindings: a module may provide a named provision with an address (e.g.
 * `artifact-store` at a registry) and may require provisions. On push the control plane writes
 * each binding a node's modules require into its declaration as a file, one per binding, under
 * {@linkcode BINDINGS_DIR}: JSON `{"name", "address", "module"}` (the providing module), mode
 * 0640. This module is the one schema of a binding file: what control writes and what a program
 * (mesh-builder) reads.
 *
 * @module
 */

import { z } from "zod";
import { messageOf } from "./atomic.ts";
import { formatPath } from "./json_path.ts";
import { readRegularTextFile } from "./regular_file.ts";
import { ARTIFACT_STORE, BINDINGS_DIR, BINDINGS_DIR_VARIABLE } from "./binding_names.ts";

export { ARTIFACT_STORE, BINDINGS_DIR, BINDINGS_DIR_VARIABLE };

/** A binding file's mode. */
export const BINDING_MODE = "0640";
/** A binding file is small; a larger one is refused unread. */
export const MAX_BINDING_BYTES = 64 * 1024;

/** A provision name: lower-case letters, digits, `.`, `_`, `-`; at most 100; a file name. */
export const PROVISION_NAME = /^[a-z0-9][a-z0-9._-]{0,99}$/;
const PROVISION_NAME_WORDS =
  "Must be 1 to 100 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit";

/** A provision's name. */
export const ProvisionName = z.string().regex(PROVISION_NAME, PROVISION_NAME_WORDS);

/** A provision's address: non-empty, at most 2048 characters, no control characters. */
export const ProvisionAddress = z.string().min(1, "Must not be empty").max(2048)
  // deno-lint-ignore no-control-regex
  .regex(/^[^\x00-\x1f\x7f]*$/, "Must hold no control characters")
  .refine((s) => s.trim() === s, "Must not begin or end with white space");

/** A binding file's content. */
export const Binding = z.strictObject({
  name: ProvisionName,
  address: ProvisionAddress,
  /** The module that provides it. */
  module: z.string().min(1).max(100),
});

/** A binding: a provision's name, its address and the module providing it. */
export type Binding = z.output<typeof Binding>;

/** The path of the binding file of provision `name` under `dir` (default {@linkcode BINDINGS_DIR}). */
export function bindingPath(name: string, dir: string = BINDINGS_DIR): string {
  return `${dir.replace(/\/+$/, "") || ""}/${name}.json`;
}

/** The text of a binding file (JSON, one line and a newline). */
export function bindingText(binding: Binding): string {
  return JSON.stringify({
    name: binding.name,
    address: binding.address,
    module: binding.module,
  }) + "\n";
}

/**
 * Reads the binding file of provision `name` from `dir` (default: the variable
 * {@linkcode BINDINGS_DIR_VARIABLE}, else {@linkcode BINDINGS_DIR}).
 *
 * @returns the binding, or undefined when there is no such file (a program run by hand).
 * @throws {Error} "Cannot read binding "PATH": ..." when the file cannot be read, is not a regular
 *   file, is not JSON, does not match the schema (each problem with its path), or names another
 *   provision. Never falls back.
 */
export async function readBinding(
  name: string,
  options: { dir?: string } = {},
): Promise<Binding | undefined> {
  const dir = options.dir ?? (Deno.env.get(BINDINGS_DIR_VARIABLE) || BINDINGS_DIR);
  const path = bindingPath(name, dir);
  const cannot = (why: string) => new Error(`Cannot read binding "${path}": ${why}`);
  let text: string;
  try {
    text = await readRegularTextFile(path, { maxBytes: MAX_BINDING_BYTES, fatal: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    if (error instanceof TypeError) throw cannot("it is not UTF-8 text");
    throw cannot(messageOf(error));
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw cannot(`it is not JSON (${messageOf(error)})`);
  }
  const parsed = Binding.safeParse(data);
  if (!parsed.success) {
    throw cannot(
      schemaProblems(parsed.error.issues).map((p) => `${p.path || "the file"}: ${p.message}`)
        .join("; "),
    );
  }
  if (parsed.data.name !== name) {
    throw cannot(`it binds provision "${parsed.data.name}", not "${name}"`);
  }
  return parsed.data;
}

/**
 * A zod schema's issues as problems with their paths (`provides[0].name`), said as the
 * declaration's are: "Missing required field", "Unknown field".
 */
export function schemaProblems(
  issues: readonly z.core.$ZodIssue[],
): { path: string; message: string }[] {
  return issues.flatMap((i) => {
    const path = i.path.map((k) => typeof k === "symbol" ? String(k) : k);
    if (i.code === "unrecognized_keys") {
      return i.keys.map((k) => ({
        path: formatPath([...path, k]),
        message: `Unknown field "${k}"`,
      }));
    }
    const missing = i.code === "invalid_type" && i.message.endsWith("received undefined");
    return [{
      path: formatPath(path),
      message: missing ? `Missing required field "${String(path[path.length - 1])}"` : i.message,
    }];
  });
}
