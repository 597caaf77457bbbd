/**
 * Declarations: what a host is told to be (docs/design.md, "Declaration (host input), version 1").
 * One strict zod schema per resource type in a discriminated union; the types are derived from
 * them. The whole declaration is refused when anything is wrong, with every problem at once and
 * its JSON path.
 *
 * Safe by default: {@linkcode parse} refuses `action` resources; {@linkcode parseTrusted}
 * permits them and is used only for embedded bundles and a local file given to `apply`.
 *
 * @module
 */

import { z } from "zod";
import { formatPath } from "../lib/json_path.ts";
import { duplicateKeyMessage, duplicateKeys } from "../lib/json_keys.ts";

/** The largest declaration accepted, in bytes (64 MiB). */
export const MAX_DECLARATION_BYTES = 64 * 1024 * 1024;
/** The largest `content` of one file, in bytes of UTF-8 (16 MiB). */
export const MAX_CONTENT_BYTES = 16 * 1024 * 1024;

/** The length of `s` encoded as UTF-8, without encoding it. */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

const Id = z.string().regex(
  /^[A-Za-z0-9._-]{1,200}$/,
  "Must be 1 to 200 letters, digits, '.', '_' or '-'",
);

/**
 * An absolute, normalised path: starts with `/`, no `.` or `..` segment, no empty segment
 * (`//`), no trailing `/`, no NUL byte.
 */
export const AbsolutePath = z.string().max(4096).superRefine((p, ctx) => {
  const fail = (message: string) => ctx.addIssue({ code: "custom", message });
  if (p.includes("\0")) return fail("Must not contain a NUL byte");
  if (!p.isWellFormed()) return fail("Must be valid Unicode (a lone surrogate is no file name)");
  if (!p.startsWith("/")) return fail("Must be an absolute path");
  if (p === "/") return fail("Must not be the root directory");
  const segments = p.slice(1).split("/");
  if (segments.includes("..")) return fail("Must not contain '..'");
  if (segments.includes(".") || segments.includes("")) {
    return fail("Must be normalised (no '.', '//' or trailing '/')");
  }
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
  /^0?[0-7]{3}$|^[0-7]{4}$/,
  'Must be an octal mode such as "0644"',
);
const AccountRef = z.string().regex(
  /^([a-z_][a-z0-9_-]*\$?|\d+)$/,
  "Must be an account name or a numeric id",
);
const Content = z.string().refine(
  (s) => s.isWellFormed(),
  "Must be valid Unicode text (a lone surrogate cannot be written as UTF-8)",
).refine(
  (s) => s.length <= MAX_CONTENT_BYTES && utf8Length(s) <= MAX_CONTENT_BYTES,
  "Content is larger than 16 MiB (as UTF-8)",
);
const ContainerName = z.string().regex(
  /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/,
  "Must be a container name",
);
/** Text handed to another program: no NUL byte, valid Unicode. */
const Arg = z.string()
  .refine((s) => !s.includes("\0"), "Must not contain a NUL byte")
  .refine((s) => s.isWellFormed(), "Must be valid Unicode (a lone surrogate cannot be passed on)");
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
  unit: z.string().regex(/^[A-Za-z0-9:_.@\\-]{1,255}$/, "Must be a unit or service name"),
  state: z.enum(["running", "stopped"]),
  boot: z.enum(["enabled", "disabled"]).optional(),
});
/** `package`: a package present. Never upgraded, never uninstalled. */
export const Package = z.strictObject({
  id: Id,
  type: z.literal("package"),
  package: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9+._@-]{0,127}$/, "Must be a package name"),
});
/** `container`: a container from an image pinned by digest; any change is a replacement. */
export const Container = z.strictObject({
  id: Id,
  type: z.literal("container"),
  name: ContainerName,
  image: z.string().regex(
    /^[^\s@]+@sha256:[0-9a-f]{64}$/,
    "Must be pinned by digest: name@sha256:<64 hex digits>",
  ),
  env: z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "Must be an environment variable name"),
    Arg,
  )
    .optional(),
  ports: z.array(
    z.string().regex(
      /^((\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?\d{1,5}:\d{1,5}(\/(tcp|udp))?$/,
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

/** One resource: a discriminated union on `type`. */
export const Resource = z.discriminatedUnion("type", [
  Directory,
  File,
  Service,
  Package,
  Container,
  Action,
], {
  error: (issue) =>
    issue.code === "invalid_union"
      ? "type must be one of: directory, file, service, package, container, action"
      : undefined,
});

const DeclarationShape = z.strictObject({
  version: z.literal(1, { error: "Unsupported declaration version; this host reads version 1" }),
  resources: z.array(Resource),
});

/** A valid declaration. */
export type Declaration = z.output<typeof DeclarationShape>;
/** One valid resource. */
export type Resource = z.output<typeof Resource>;
/** The resource types. */
export type ResourceType = Resource["type"];
/** Every resource type, in the order of the contract. */
export const RESOURCE_TYPES: readonly ResourceType[] = [
  "directory",
  "file",
  "service",
  "package",
  "container",
  "action",
];

/** What a resource is about on the machine: a path, a unit, a package, a container, or the action's id. */
export function subjectOf(resource: Resource): string {
  switch (resource.type) {
    case "directory":
    case "file":
      return resource.path;
    case "service":
      return resource.unit;
    case "package":
      return resource.package;
    case "container":
      return resource.name;
    case "action":
      return resource.id;
  }
}

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
interface ParseOptions {
  /** Whether `action` resources are allowed. */
  trusted: boolean;
}

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
  // A repeated key is a problem like any other, reported with the schema's own: JSON.parse kept
  // only the last of them, so what it read is not what the text says.
  const resources = (data as { resources?: unknown } | null)?.resources;
  const repeated: DeclarationProblem[] = duplicateKeys(text).map((d) => {
    const index = d.path[0] === "resources" && typeof d.path[1] === "number" ? d.path[1] : -1;
    const raw = Array.isArray(resources) ? resources[index] as { id?: unknown } | null : null;
    const id = typeof raw?.id === "string" ? raw.id : undefined;
    return { path: d.at, ...(id ? { id } : {}), message: duplicateKeyMessage(d) };
  });
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
      const missing = issue.code === "invalid_type" && issue.message.endsWith("received undefined");
      problems.push({
        path: formatPath(path),
        ...(id ? { id } : {}),
        message: missing
          ? `Missing required field "${String(path[path.length - 1])}"`
          : issue.message,
      });
    }
  }
  // Checks across resources run on the raw input, so they are reported with the schema's own.
  if (Array.isArray(resources)) {
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
  }
  if (problems.length > 0 || !parsed.success) throw new DeclarationError(problems);
  return parsed.data;
}

function rawSubject(
  r: Record<string, unknown>,
): { key: string; field: string; what: string; value: string } | undefined {
  const pick = (field: string, what: string, space: string) =>
    typeof r[field] === "string"
      ? { key: `${space}\0${r[field]}`, field, what, value: r[field] as string }
      : undefined;
  switch (r.type) {
    case "directory":
    case "file":
      return pick("path", "path", "path");
    case "service":
      return pick("unit", "unit", "unit");
    case "package":
      return pick("package", "package", "package");
    case "container":
      return pick("name", "container name", "container");
    default:
      return undefined;
  }
}

/** The JSON Schema of a declaration (`mesh-host schema`). */
export function declarationJsonSchema(): unknown {
  return z.toJSONSchema(DeclarationShape, { io: "input", unrepresentable: "any" });
}

/** The sha256 digest of a declaration's bytes, as `sha256:<hex>`. */
export async function declarationDigest(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  return `sha256:${Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
