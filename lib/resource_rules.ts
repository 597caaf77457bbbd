/**
 * The rules of the resources' fields, written once and without zod: the limits, the patterns and
 * the predicates the resource types' zod schemas are built from and refine with
 * (./resource_fields.ts, resources/<type>/schema.ts), which the validator generated from the
 * declaration's schema (./declaration_validators.js, by scripts/validators.ts) calls by name.
 *
 * It imports nothing, so the schemas that use it stay below ./declaration_base.ts, whose
 * `Resource` type is derived from them (a type import of resources/schemas.ts).
 *
 * @module
 */

/** The largest `content` of one file, in bytes of UTF-8 (16 MiB). */
export const MAX_CONTENT_BYTES = 16 * 1024 * 1024;

/** A resource id. */
export const ID_PATTERN = /^[A-Za-z0-9._-]{1,200}$/u;
/** A mode in octal digits. */
export const MODE_PATTERN = /^0?[0-7]{3}$|^[0-7]{4}$/u;
/** An account (owner or group): a name or a numeric id. */
export const ACCOUNT_PATTERN = /^([a-z_][a-z0-9_-]*\$?|\d+)$/u;
/** A unit or service name. */
export const UNIT_PATTERN = /^[A-Za-z0-9:_.@\\-]{1,255}$/u;
/** A package name. */
export const PACKAGE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9+._@-]{0,127}$/u;
/** A container name. */
export const CONTAINER_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/u;
/** The longest path accepted, in code points (as `z.string().max` and JSON Schema count). */
export const MAX_PATH_LENGTH = 4096;

/** The length of `s` encoded as UTF-8, without encoding it. */
export function utf8Length(s: string): number {
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

/**
 * What is wrong with `p` as an absolute, normalised path (starts with `/`, no `.` or `..`
 * segment, no empty segment, no trailing `/`, no NUL byte, valid Unicode), or undefined when
 * nothing is. Its length is checked apart ({@linkcode MAX_PATH_LENGTH}).
 */
export function pathProblem(p: string): string | undefined {
  if (p.includes("\0")) return "Must not contain a NUL byte";
  if (!p.isWellFormed()) return "Must be valid Unicode (a lone surrogate is no file name)";
  if (!p.startsWith("/")) return "Must be an absolute path";
  if (p === "/") return "Must not be the root directory";
  const segments = p.slice(1).split("/");
  if (segments.includes("..")) return "Must not contain '..'";
  if (segments.includes(".") || segments.includes("")) {
    return "Must be normalised (no '.', '//' or trailing '/')";
  }
  return undefined;
}

/** Whether `s` fits a file's `content`: at most 16 MiB as UTF-8 ({@linkcode MAX_CONTENT_BYTES}). */
export function contentFits(s: string): boolean {
  // utf8Length counts at most 4 bytes for each code unit (a lone high surrogate, which the
  // schema refuses apart, included): a string of at most a quarter of the limit fits uncounted.
  if (s.length <= MAX_CONTENT_BYTES / 4) return true;
  return s.length <= MAX_CONTENT_BYTES && utf8Length(s) <= MAX_CONTENT_BYTES;
}

/** Whether `s` is valid Unicode: no lone surrogate (which UTF-8 cannot carry). */
export function wellFormed(s: string): boolean {
  return s.isWellFormed();
}

/** Whether `s` has no NUL byte (which no argument, environment value or file name can carry). */
export function noNul(s: string): boolean {
  return !s.includes("\0");
}

/** Whether `p` is an absolute, normalised path ({@linkcode pathProblem} finds nothing). */
export function isAbsolutePath(p: string): boolean {
  return pathProblem(p) === undefined;
}
