/**
 * The half of lib/declaration.ts that needs no zod: the limits, the error a refused declaration
 * is, the reading of its text (size, UTF-8, JSON, repeated keys), the checks across resources,
 * and {@linkcode parseValid}: a declaration that is valid, read without zod. The rules of each
 * field (the patterns and the predicates the zod schemas are built from and refine with) are
 * ./resource_rules.ts; the types of a resource and a declaration are the schemas' own output,
 * imported as types only (erased at run time).
 *
 * The zod schema of lib/declaration.ts stays the one definition of a declaration: its JSON
 * Schema, and every problem of an invalid declaration with its message and path. `parseValid`
 * asks the validator generated from that schema (./declaration_validators.js, written by
 * scripts/validators.ts; it calls ./resource_rules.ts's predicates where the schema refines),
 * then the checks across resources and the repeated keys the zod path runs too; it answers only
 * for a declaration that passes all of them (every valid one, of every resource type) and gives
 * up (undefined) on anything else, and the caller then asks the zod schema, which says what is
 * wrong. What it returns is what the zod schema returns for the same text (the same values, the
 * keys in the schema's order); tests/host/declaration_fast_test.ts holds the two equal.
 * `mesh-host apply` of a valid declaration thus loads no zod at all.
 *
 * @module
 */

import type { z } from "zod";
import type { RESOURCE_SCHEMAS } from "../resources/schemas.ts";
import { subjectOfType, SUBJECTS } from "../resources/subjects.ts";
import { jsonTooDeep, jsonTooDeepMessage } from "./text_bounds.ts";
import { MAX_DECLARATION_MESSAGE_BYTES } from "./broker_names.ts";
import { duplicateKeyMessage, duplicateKeys } from "./json_keys.ts";
import { isDeclaration, RESOURCE_FIELDS } from "./declaration_validators.js";

/** The largest declaration accepted, in bytes (64 MiB). */
export const MAX_DECLARATION_BYTES = 64 * 1024 * 1024;
/**
 * The largest kept link declaration, in bytes: the declaration message the link took (at most
 * {@linkcode MAX_DECLARATION_MESSAGE_BYTES}; a larger one is refused from its header) as the link
 * writes it again, with 1 MiB of room for what writing it again may change.
 */
export const MAX_KEPT_DECLARATION_BYTES = MAX_DECLARATION_MESSAGE_BYTES + (1 << 20);

/** One problem of a refused declaration: where (JSON path, and the resource's id) and what. */
export interface DeclarationProblem {
  /** JSON path, e.g. `resources[3].mode`; empty for the whole document. */
  path: string;
  /** The id of the resource it belongs to, when it has a readable one. */
  id?: string;
  message: string;
}

/** A declaration refused as a whole; carries every problem. */
export class DeclarationError extends Error {
  readonly problems: DeclarationProblem[];
  constructor(problems: DeclarationProblem[]) {
    super(
      `Declaration refused (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` +
        problems.map((p) => `  ${p.path || "(document)"}${p.id ? ` [${p.id}]` : ""}: ${p.message}`)
          .join("\n"),
    );
    this.name = "DeclarationError";
    this.problems = problems;
  }
}

/** Options for parsing. */
export interface ParseOptions {
  /** Whether `action` resources are allowed. */
  trusted: boolean;
}

/**
 * One valid resource: what the zod schema of its type (resources/<type>/schema.ts, listed in
 * resources/schemas.ts) returns. Derived from the schemas by a type import, erased at run time,
 * so this module loads neither them nor zod.
 */
export type Resource = z.output<(typeof RESOURCE_SCHEMAS)[number]>;

/** The resource types. */
export type ResourceType = Resource["type"];

/** A valid declaration (version 1), as the zod schema of lib/declaration.ts returns it. */
export interface Declaration {
  version: 1;
  resources: Resource[];
}

/**
 * What a resource is about on the machine: a path, a unit, a package, a container, or the
 * action's id (the field resources/subjects.ts names for its type).
 */
export function subjectOf(resource: Resource): string {
  return String(Reflect.get(resource, SUBJECTS[resource.type].field));
}

/**
 * A declaration's text and its JSON data.
 *
 * @param input JSON text, or its bytes (which must be valid UTF-8).
 * @throws {DeclarationError} when it is too large, not UTF-8 or not JSON (one problem).
 */
export function readDeclarationText(input: string | Uint8Array): { text: string; data: unknown } {
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    if (input.length > MAX_DECLARATION_BYTES) {
      throw new DeclarationError([{
        path: "",
        message: `Declaration is larger than ${MAX_DECLARATION_BYTES} bytes`,
      }]);
    }
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      throw new DeclarationError([{ path: "", message: "Declaration is not valid UTF-8" }]);
    }
  }
  if (text.length > MAX_DECLARATION_BYTES) {
    throw new DeclarationError([{
      path: "",
      message: `Declaration is larger than ${MAX_DECLARATION_BYTES} bytes`,
    }]);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new DeclarationError([{
      path: "",
      message: `Declaration is not JSON: ${(error as Error).message}`,
    }]);
  }
  return { text, data };
}

/**
 * Refuses a declaration nested deeper than lib/text_bounds.ts's bound, before anything that is
 * not the generated validator walks it (docs/design.md, "Hostile inputs", rule 3). The validator
 * needs none: it accepts only the declaration's own shapes, a few levels deep (its schema has no
 * recursion), so a valid declaration is not scanned twice.
 *
 * @throws {DeclarationError} naming the bound (one problem, at the whole document).
 */
export function assertShallow(text: string): void {
  const deep = jsonTooDeep(text);
  if (deep !== undefined) {
    throw new DeclarationError([{
      path: "",
      message: `Declaration is ${jsonTooDeepMessage(deep)}`,
    }]);
  }
}

/**
 * The keys `text` repeats, as problems: JSON.parse kept only the last of them, so what it read
 * is not what the text says. `data` is what it read (for the resources' ids).
 */
export function repeatedKeyProblems(text: string, data: unknown): DeclarationProblem[] {
  const resources = (data as { resources?: unknown } | null)?.resources;
  return duplicateKeys(text).map((d) => {
    const index = d.path[0] === "resources" && typeof d.path[1] === "number" ? d.path[1] : -1;
    const raw = Array.isArray(resources) ? resources[index] as { id?: unknown } | null : null;
    const id = typeof raw?.id === "string" ? raw.id : undefined;
    return { path: d.at, ...(id ? { id } : {}), message: duplicateKeyMessage(d) };
  });
}

/**
 * The problems across resources, found on the raw data (so they are reported beside the
 * schema's own): a repeated id, two resources on one subject, an action from untrusted input.
 * Two paths written differently that lead to one file on the machine (a symlinked or
 * bind-mounted directory) are found when the declaration is applied, by real location
 * (host/apply.ts, `realLocation` of host/store.ts).
 */
export function crossResourceProblems(data: unknown, options: ParseOptions): DeclarationProblem[] {
  const problems: DeclarationProblem[] = [];
  const resources = (data as { resources?: unknown } | null)?.resources;
  if (!Array.isArray(resources)) return problems;
  const ids = new Map<string, number>();
  const subjects = new Map<string, number>();
  resources.forEach((raw, i) => {
    if (typeof raw !== "object" || raw === null) return;
    const r = raw as Record<string, unknown>;
    const id = typeof r.id === "string" ? r.id : undefined;
    if (id !== undefined) {
      const first = ids.get(id);
      if (first !== undefined) {
        problems.push({
          path: `resources[${i}].id`,
          id,
          message: `Duplicate id: resources[${first}] has it too`,
        });
      } else ids.set(id, i);
    }
    const subject = rawSubject(r);
    if (subject !== undefined) {
      const first = subjects.get(subject.key);
      if (first !== undefined) {
        problems.push({
          path: `resources[${i}].${subject.field}`,
          ...(id ? { id } : {}),
          message: `Two resources on one ${subject.what}: resources[${first}] declares ${
            JSON.stringify(subject.value)
          } too`,
        });
      } else subjects.set(subject.key, i);
    }
    if (r.type === "action" && !options.trusted) {
      problems.push({
        path: `resources[${i}]`,
        ...(id ? { id } : {}),
        message:
          "An action runs commands and is accepted only from trusted input (parseTrusted: an embedded bundle or a local file), never from the link",
      });
    }
  });
  return problems;
}

function rawSubject(
  r: Record<string, unknown>,
): { key: string; field: string; what: string; value: string } | undefined {
  const subject = subjectOfType(r.type);
  if (subject?.space === undefined) return undefined; // an action's id: checked as an id
  const value = r[subject.field];
  return typeof value === "string"
    ? { key: `${subject.space}\0${value}`, field: subject.field, what: subject.what, value }
    : undefined;
}

/**
 * A valid declaration read without zod, or undefined when it is not one (then the zod schema
 * decides, and says what is wrong): the same values the zod schema returns, each object's keys
 * in the schema's order. An `action` is valid only when `options.trusted`.
 *
 * @param input JSON text, or its bytes (which must be valid UTF-8).
 * @throws {DeclarationError} when it is too large, not UTF-8 or not JSON: the one problem the
 *   zod path would report too.
 */
export function parseValid(
  input: string | Uint8Array,
  options: ParseOptions,
): Declaration | undefined {
  const { text, data } = readDeclarationText(input);
  return validParsed(text, data, options);
}

/**
 * {@linkcode parseValid} of a declaration's text already read: `data` is `JSON.parse(text)`.
 * Its shape is the generated validator's to judge (./declaration_validators.js, made from the
 * zod schema), then the checks across resources (an action from untrusted input among them) and
 * the repeated keys, which the zod path reports as problems.
 */
export function validParsed(
  text: string,
  data: unknown,
  options: ParseOptions,
): Declaration | undefined {
  if (!isDeclaration(data)) return undefined;
  if (crossResourceProblems(data, options).length > 0) return undefined;
  if (duplicateKeys(text).length > 0) return undefined;
  return schemaValue(data as Declaration);
}

/**
 * Each resource type's fields in the order of its zod schema, which is the order zod returns
 * them in: generated from the schema's JSON Schema with the validator (scripts/validators.ts), so
 * a field moved in the schema moves here. Its type holds every resource type to be there, with
 * only its own fields.
 */
const FIELDS: {
  readonly [T in ResourceType]: readonly (keyof Extract<Resource, { type: T }>)[];
} = RESOURCE_FIELDS;

/**
 * A valid declaration (`data`, which the generated validator accepted) as the zod schema returns
 * it: each resource's fields in its schema's order (the resource itself when they already are, as
 * a program writes them). A container's `env` is the file's, an own `__proto__` key included as
 * any other (the schema's record keeps it too, lib/zod_record.ts).
 */
function schemaValue(data: Declaration): Declaration {
  return {
    version: 1,
    resources: data.resources.map((r) => inOrder(r, FIELDS[r.type]) as Resource),
  };
}

/** `r` (whose fields are all of `fields`) with its fields in that order: `r` when they are. */
function inOrder(r: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  let last = -1;
  for (const key of Object.keys(r)) {
    const at = fields.indexOf(key);
    if (at < last) {
      const out: Record<string, unknown> = {};
      for (const field of fields) if (Object.hasOwn(r, field)) out[field] = r[field];
      return out;
    }
    last = at;
  }
  return r;
}

/** The sha256 digest of a declaration's bytes, as `sha256:<hex>`. */
export async function declarationDigest(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  return `sha256:${Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
