/**
 * Helpers for reading parsed JSON objects without a schema library, for the fast read of a valid
 * declaration (lib/declaration_base.ts): each returns exactly what the zod schema would for a
 * valid value, or gives up.
 *
 * @module
 */

/** A parsed JSON object. */
export type Raw = Record<string, unknown>;

/** Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether every key of `r` is one of `allowed`. */
export function onlyKeys(r: Raw, allowed: readonly string[]): boolean {
  for (const k of Object.keys(r)) if (!allowed.includes(k)) return false;
  return true;
}

/** `r`'s `keys` that it has, in that order (what a zod object schema returns). */
export function pick(r: Raw, keys: readonly string[]): Raw {
  const out: Raw = {};
  for (const k of keys) if (k in r) out[k] = r[k];
  return out;
}

/**
 * `r` as a zod object schema of `keys` returns it when every key of `r` is one of `keys`: `r`
 * itself when its keys are already in that order (as a program writes them), else a copy in that
 * order; undefined when it has another key.
 */
export function shaped(r: Raw, keys: readonly string[]): Raw | undefined {
  let last = -1;
  let ordered = true;
  for (const k of Object.keys(r)) {
    const at = keys.indexOf(k);
    if (at === -1) return undefined;
    if (at < last) ordered = false;
    last = at;
  }
  return ordered ? r : pick(r, keys);
}
