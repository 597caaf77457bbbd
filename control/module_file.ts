/**
 * A module file: a declaration fragment (version 1, `resources`, parsed as a node will parse it)
 * and, optionally, the provisions it offers and needs:
 *
 * ```json
 * { "version": 1, "resources": [...],
 *   "provides": [{ "name": "artifact-store", "address": "registry.lan:5000" }],
 *   "requires": ["artifact-store"] }
 * ```
 *
 * The one reader of a module's stored body: `module add`, rendering and `module list` all read
 * through {@linkcode parseModule}. A provision may be offered without an address (the module
 * provides it, its address is not known yet): adding it is allowed, pushing a node that requires
 * it is refused.
 *
 * @module
 */

import { z } from "zod";
import { type Declaration, DeclarationError, parse } from "../lib/declaration.ts";
import type { DeclarationProblem } from "../lib/declaration_base.ts";
import { ProvisionAddress, ProvisionName, schemaProblems } from "../lib/binding.ts";

/** A provision a module offers: its name and, when known, its address. */
export interface Provision {
  name: string;
  address?: string;
}

/** A module file read: its declaration fragment and its provisions. */
export interface ModuleFile {
  declaration: Declaration;
  provides: Provision[];
  requires: string[];
}

const Provisions = z.object({
  provides: z.array(z.strictObject({ name: ProvisionName, address: ProvisionAddress.optional() }))
    .optional(),
  requires: z.array(ProvisionName).optional(),
});

/**
 * Reads a module file (JSON text): the declaration fragment as the link will parse it (actions
 * refused), `provides` and `requires` by their schema.
 *
 * @throws {DeclarationError} with every problem and its JSON path (a provision named twice in
 *   `provides` or in `requires` is one).
 */
export function parseModule(text: string): ModuleFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Not JSON: the declaration parser says so, as it always did.
    return { declaration: parse(text), provides: [], requires: [] };
  }
  if (
    data === null || typeof data !== "object" || Array.isArray(data) ||
    (!("provides" in data) && !("requires" in data))
  ) {
    return { declaration: parse(text), provides: [], requires: [] };
  }
  const { provides, requires, ...rest } = data as Record<string, unknown>;
  const problems: DeclarationProblem[] = [];
  const parsed = Provisions.safeParse({ provides, requires });
  if (!parsed.success) problems.push(...schemaProblems(parsed.error.issues));
  // A name given twice is said whatever else is wrong.
  const twice = (list: unknown, nameOf: (item: unknown) => unknown, at: (i: number) => string) => {
    if (!Array.isArray(list)) return;
    const names = list.map(nameOf);
    names.forEach((n, i) => {
      if (typeof n === "string" && names.indexOf(n) !== i) {
        problems.push({ path: at(i), message: `Provision "${n}" is named twice` });
      }
    });
  };
  twice(provides, (p) => (p as { name?: unknown } | null)?.name, (i) => `provides[${i}].name`);
  twice(requires, (n) => n, (i) => `requires[${i}]`);
  const offered = parsed.success ? parsed.data.provides ?? [] : [];
  const needed = parsed.success ? parsed.data.requires ?? [] : [];
  let declaration: Declaration | undefined;
  try {
    declaration = parse(JSON.stringify(rest));
  } catch (error) {
    if (!(error instanceof DeclarationError)) throw error;
    problems.unshift(...error.problems);
  }
  if (problems.length > 0 || declaration === undefined) throw new DeclarationError(problems);
  return {
    declaration,
    provides: offered.map((p) => p.address === undefined ? { name: p.name } : p),
    requires: needed,
  };
}
