/**
 * Declarations: what a host is told to be (docs/design.md, "Declaration (host input), version 1").
 * One strict zod schema per resource type (resources/<type>/schema.ts, listed in
 * resources/schemas.ts) in a discriminated union; the types are the schemas' output, derived in
 * ./declaration_base.ts (which reads a valid declaration without zod, by the validator
 * scripts/validators.ts generates from {@linkcode DeclarationShape}; its `Declaration` is checked
 * here, at type check, to be exactly what the schema returns). Each refinement is a predicate of
 * ./resource_rules.ts, which the generated validator calls too. The whole declaration is
 * refused when anything is wrong, with every problem at once and its JSON path. Shared by the
 * host, which applies a declaration, and the control plane, which renders and checks one (so it
 * lives in lib/, below both).
 *
 * Safe by default: {@linkcode parse} refuses `action` resources; {@linkcode parseTrusted}
 * permits them and is used only for embedded bundles and a local file given to `apply`.
 *
 * @module
 */

import { z } from "zod";
import { formatPath, issueMessage } from "./json_path.ts";
import {
  assertShallow,
  crossResourceProblems,
  type Declaration as DeclarationType,
  DeclarationError,
  type DeclarationProblem,
  type ParseOptions,
  readDeclarationText,
  repeatedKeyProblems,
  type Resource as ResourceOf,
  validParsed,
} from "./declaration_base.ts";
import { RESOURCE_SCHEMAS } from "../resources/schemas.ts";

export {
  declarationDigest,
  DeclarationError,
  type DeclarationProblem,
  MAX_DECLARATION_BYTES,
  subjectOf,
} from "./declaration_base.ts";
export { MAX_CONTENT_BYTES } from "./resource_rules.ts";

/**
 * Every resource type, in the order of the contract (resources/schemas.ts's list, from which the
 * union, the store's entry types (host/store_schema.ts) and the docs' order
 * (tests/docs/tables_test.ts) follow).
 */
export const RESOURCE_TYPES = RESOURCE_SCHEMAS.map((s) => s.shape.type.value);

/**
 * One resource: a discriminated union on `type`. Its JSON Schema names the tag (`discriminator`),
 * so the validator generated from it checks a resource by its type's schema alone.
 */
export const Resource = z.discriminatedUnion("type", RESOURCE_SCHEMAS, {
  error: (issue) =>
    issue.code === "invalid_union"
      ? `type must be one of: ${RESOURCE_TYPES.join(", ")}`
      : undefined,
}).meta({ type: "object", discriminator: { propertyName: "type" } });

/** A declaration: its version and resources (the schema the fast read is generated from). */
export const DeclarationShape = z.strictObject({
  version: z.literal(1, { error: "Unsupported declaration version; this host reads version 1" }),
  resources: z.array(Resource),
});

/** A valid declaration (defined in ./declaration_base.ts, which needs it without zod). */
export type Declaration = DeclarationType;
/** One valid resource: the output of its type's schema (resources/<type>/schema.ts). */
export type Resource = ResourceOf;
/** The resource types. */
export type ResourceType = Resource["type"];

/** Whether `A` and `B` are each assignable to the other. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The schema's output is the declaration's type (its resources are the schemas' output by
// definition): changing the one without the other fails the type check here.
const _declarationIsSchema: Mutual<z.output<typeof DeclarationShape>, Declaration> = true;

/**
 * Parses an untrusted declaration (from the link): `action` resources are refused.
 *
 * @param input JSON text, or its bytes (which must be valid UTF-8).
 * @throws {DeclarationError} with every problem and its JSON path.
 */
export function parse(input: string | Uint8Array): Declaration {
  return parseWith(input, { trusted: false });
}

/**
 * Parses a trusted declaration (an embedded bundle, or a local file handed to `apply`):
 * `action` resources are allowed. Must be asked for by name.
 *
 * @throws {DeclarationError} with every problem and its JSON path.
 */
export function parseTrusted(input: string | Uint8Array): Declaration {
  return parseWith(input, { trusted: true });
}

function parseWith(input: string | Uint8Array, options: ParseOptions): Declaration {
  const { text, data } = readDeclarationText(input);
  // A valid declaration is read without the schema; anything else is the schema's to judge.
  const valid = validParsed(text, data, options);
  if (valid !== undefined) return valid;
  assertShallow(text);
  // A repeated key is a problem like any other, reported with the schema's own: JSON.parse kept
  // only the last of them, so what it read is not what the text says.
  const repeated = repeatedKeyProblems(text, data);
  let declaration: Declaration;
  try {
    declaration = validate(data, options);
  } catch (error) {
    if (error instanceof DeclarationError && repeated.length > 0) {
      throw new DeclarationError([...repeated, ...error.problems]);
    }
    throw error;
  }
  if (repeated.length > 0) throw new DeclarationError(repeated);
  return declaration;
}

/**
 * Validates already-parsed JSON data as a declaration.
 *
 * @throws {DeclarationError} with every problem and its JSON path.
 */
export function validate(data: unknown, options: ParseOptions): Declaration {
  const problems: DeclarationProblem[] = [];
  const resources = (data as { resources?: unknown } | null)?.resources;
  const idAt = (i: number): string | undefined => {
    const id = Array.isArray(resources) ? (resources[i] as { id?: unknown } | null)?.id : undefined;
    return typeof id === "string" ? id : undefined;
  };
  const parsed = DeclarationShape.safeParse(data);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
      const index = path[0] === "resources" && typeof path[1] === "number" ? path[1] : undefined;
      const id = index !== undefined ? idAt(index) : undefined;
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          problems.push({
            path: formatPath([...path, key]),
            ...(id ? { id } : {}),
            message: `Unknown field "${key}"`,
          });
        }
        continue;
      }
      problems.push({
        path: formatPath(path),
        ...(id ? { id } : {}),
        message: issueMessage(issue, data, path),
      });
    }
  }
  // Checks across resources run on the raw input, so they are reported with the schema's own.
  problems.push(...crossResourceProblems(data, options));
  if (problems.length > 0 || !parsed.success) throw new DeclarationError(problems);
  return parsed.data;
}

/** The JSON Schema of a declaration (`mesh-host schema`). */
export function declarationJsonSchema(): unknown {
  return z.toJSONSchema(DeclarationShape, { io: "input", unrepresentable: "any" });
}
