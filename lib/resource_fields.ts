/**
 * The zod schemas of the fields several resource types share (an id, a path, a mode, an account,
 * a file's content, a container name, an argument), from which each type's schema
 * (resources/<type>/schema.ts) is built. Every refinement is a predicate of the zod-free
 * ./resource_rules.ts, which the validator generated from the declaration's schema calls too
 * (scripts/validators.ts).
 *
 * @module
 */

import { z } from "zod";
import {
  ACCOUNT_PATTERN,
  CONTAINER_NAME_PATTERN,
  contentFits,
  ID_PATTERN,
  isAbsolutePath,
  MAX_PATH_LENGTH,
  MODE_PATTERN,
  noNul,
  pathProblem,
  wellFormed,
} from "./resource_rules.ts";

/** A resource id: 1 to 200 letters, digits, `.`, `_` or `-`. */
export const Id = z.string().regex(
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

/** An owner or group: an account name or a numeric id. */
export const AccountRef = z.string().regex(
  ACCOUNT_PATTERN,
  "Must be an account name or a numeric id",
);

/** A file's content: valid Unicode text of at most 16 MiB as UTF-8. */
export const Content = z.string().refine(
  wellFormed,
  "Must be valid Unicode text (a lone surrogate cannot be written as UTF-8)",
).refine(
  contentFits,
  "Content is larger than 16 MiB (as UTF-8)",
);

/** A container's name. */
export const ContainerName = z.string().regex(
  CONTAINER_NAME_PATTERN,
  "Must be a container name",
);

/** Text handed to another program: no NUL byte, valid Unicode. */
export const Arg = z.string()
  .refine(noNul, "Must not contain a NUL byte")
  .refine(wellFormed, "Must be valid Unicode (a lone surrogate cannot be passed on)");

/** A command: a program and its arguments (at least the program). */
export const Argv = z.array(Arg).min(1, "Must name a program");
