/**
 * What a source's name must be: the one rule host/store.ts, its zod schema host/store_schema.ts
 * and host/sources.ts all check (kept apart so that the schema imports no store).
 *
 * @module
 */

/** What a source's name must match (`bundle`, `link`, `local`, or a local declaration's name). */
export const SOURCE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/u;
/** What is said of a source's name that does not match {@linkcode SOURCE_NAME_PATTERN}. */
export const SOURCE_NAME_MESSAGE =
  "Must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit";
