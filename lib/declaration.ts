/**
 * Declarations: what a host is told to be (docs/design.md, "Declaration (host input), version 1").
 * One strict zod schema per resource type in a discriminated union; the types are written once in
 * ./declaration_base.ts (which reads a valid declaration without zod, by the validator
 * scripts/validators.ts generates from {@linkcode DeclarationShape}) and checked here, at type
 * check, to be exactly what the schemas return. Each refinement is a predicate of
 * ./declaration_base.ts, which the generated validator calls too. The whole declaration is
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
  ACCOUNT_PATTERN,
  assertShallow,
  CONTAINER_NAME_PATTERN,
  contentFits,
  crossResourceProblems,
  type Declaration as DeclarationType,
  DeclarationError,
  type DeclarationProblem,
  ID_PATTERN,
  isAbsolutePath,
  MAX_PATH_LENGTH,
  MODE_PATTERN,
  noNul,
  PACKAGE_PATTERN,
  type ParseOptions,
  pathProblem,
  readDeclarationText,
  repeatedKeyProblems,
  type Resource as ResourceOf,
  UNIT_PATTERN,
  validParsed,
  wellFormed,
} from "./declaration_base.ts";

export {
  declarationDigest,
  DeclarationError,
  type DeclarationProblem,
  MAX_CONTENT_BYTES,
  MAX_DECLARATION_BYTES,
  subjectOf,
} from "./declaration_base.ts";

const Id = z.string().regex(
  ID_PATTERN,
  "Must be 1 to 200 letters, digits, '.', '_' or '-'",
);

/**
 * An absolute, normalised path: starts with `/`, no `.` or `..` segment, no empty segment
 * (`//`), no trailing `/`, no NUL byte.
 */
export const AbsolutePath = z.string().max(MAX_PATH_LENGTH).refine(isAbsolutePath, {
  error: (issue) => pathProblem(issue.input as string),
});

/** A mode as an octal string: `"0644"`, `"755"`, `"2775"`. */
export const Mode = z.string({
  error: (issue) =>
    typeof issue.input === "number"
      ? `Must be an octal mode as a string, not the number ${issue.input} (a JSON number is ` +
        (/^[0-7]{3,4}$/.test(String(issue.input))
          ? `decimal; write "${String(issue.input).padStart(4, "0")}")`
          : 'decimal; write the mode in octal digits such as "0644")')
      : 'Must be an octal mode such as "0644"',
}).regex(
  MODE_PATTERN,
  'Must be an octal mode such as "0644"',
);
const AccountRef = z.string().regex(
  ACCOUNT_PATTERN,
  "Must be an account name or a numeric id",
);
const Content = z.string().refine(
  wellFormed,
  "Must be valid Unicode text (a lone surrogate cannot be written as UTF-8)",
).refine(
  contentFits,
  "Content is larger than 16 MiB (as UTF-8)",
);
const ContainerName = z.string().regex(
  CONTAINER_NAME_PATTERN,
  "Must be a container name",
);
/** Text handed to another program: no NUL byte, valid Unicode. */
const Arg = z.string()
  .refine(noNul, "Must not contain a NUL byte")
  .refine(wellFormed, "Must be valid Unicode (a lone surrogate cannot be passed on)");
const Argv = z.array(Arg).min(1, "Must name a program");

/** `directory`: a directory with its mode (and owner and group when given) maintained. */
export const Directory = z.strictObject({
  id: Id,
  type: z.literal("directory"),
  path: AbsolutePath,
  mode: Mode,
  owner: AccountRef.optional(),
  group: AccountRef.optional(),
});
/** `file`: a regular file's content, mode (and owner and group when given), all maintained. */
export const File = z.strictObject({
  id: Id,
  type: z.literal("file"),
  path: AbsolutePath,
  content: Content,
  mode: Mode,
  owner: AccountRef.optional(),
  group: AccountRef.optional(),
});
/** `service`: a unit's running state, and its boot state when `boot` is given. */
export const Service = z.strictObject({
  id: Id,
  type: z.literal("service"),
  unit: z.string().regex(UNIT_PATTERN, "Must be a unit or service name"),
  state: z.enum(["running", "stopped"]),
  boot: z.enum(["enabled", "disabled"]).optional(),
});
/** `package`: a package present. Never upgraded, never uninstalled. */
export const Package = z.strictObject({
  id: Id,
  type: z.literal("package"),
  package: z.string().regex(PACKAGE_PATTERN, "Must be a package name"),
});
/** `container`: a container from an image pinned by digest; any change is a replacement. */
export const Container = z.strictObject({
  id: Id,
  type: z.literal("container"),
  name: ContainerName,
  image: z.string().regex(
    /^[^\s@]+@sha256:[0-9a-f]{64}$/u,
    "Must be pinned by digest: name@sha256:<64 hex digits>",
  ),
  env: z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/u, "Must be an environment variable name"),
    Arg,
  )
    .optional(),
  ports: z.array(
    z.string().regex(
      /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?\d{1,5}:\d{1,5}(\/(tcp|udp))?$/u,
      'Must be "[address:]hostPort:containerPort[/tcp|/udp]"',
    ),
  ).optional(),
  volumes: z.array(Arg.min(1)).optional(),
  args: z.array(Arg).optional(),
  command: z.array(Arg).optional(),
});
/** `action` (trusted input only): a command and the verify that is its idempotency check. */
export const Action = z.strictObject({
  id: Id,
  type: z.literal("action"),
  command: Argv,
  verify: Argv,
  in: ContainerName.optional(),
});

/**
 * Each resource type's schema, in the order of the contract: the one list of the types, from
 * which the union, {@linkcode RESOURCE_TYPES}, the store's entry types (host/store_schema.ts) and
 * the docs' order (tests/docs/tables_test.ts) follow.
 */
const RESOURCE_SCHEMAS = [Directory, File, Service, Package, Container, Action] as const;

/** Every resource type, in the order of the contract. */
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
/** One valid resource. */
export type Resource = ResourceOf;
/** The resource types. */
export type ResourceType = Resource["type"];

/** Whether `A` and `B` are each assignable to the other. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Each field of each variant of a union on `type`, as `"type.field"`. */
type Fields<U> = U extends { type: infer T extends string } ? `${T}.${Exclude<keyof U, symbol>}`
  : never;
// The schema's output is the declaration's type: each assignable to the other, and each resource
// type with the same fields (an optional field added to one only is caught too). Changing one
// without the other fails the type check here.
const _resourceIsSchema: Mutual<z.output<typeof Resource>, Resource> = true;
const _fieldsAreSchema: Mutual<Fields<z.output<typeof Resource>>, Fields<Resource>> = true;
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
