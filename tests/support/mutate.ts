/**
 * The mutations every mutation test makes of an object (a registry entry, a declaration's
 * resource, ...), in place: one of them chosen by a seeded {@linkcode Rng}, so that a failure's
 * seed replays it. What is particular to a format (its kinds, its cross-entry claims) stays in
 * its own test.
 *
 * @module
 */

import type { Rng } from "./rng.ts";

/** A JSON object being mutated. */
export type Obj = Record<string, unknown>;

/** The mutations {@linkcode mutateFields} makes, by number. */
export const FIELD_MUTATIONS = 4;

/** What {@linkcode mutateFields} draws from. */
export interface FieldMutationOptions {
  /** Values a present field is set to: each wrong for some field. */
  bad: readonly unknown[];
  /** Field names added: known to another variant, unknown, or `__proto__`. */
  fields: readonly string[];
  /** Values an added field is given. */
  added: readonly unknown[];
}

/**
 * Mutates `target` in place by mutation `which` (0 to {@linkcode FIELD_MUTATIONS} - 1): 0 a
 * present field set to one of `bad`; 1 a present field removed; 2 one of `fields` added as an own
 * enumerable property (so an own `__proto__` is a field, as JSON.parse makes it), valued one of
 * `added`; 3 the keys put in reverse order (still valid: a checker must give its output in the
 * schema's order). 0 and 1 do nothing to an empty object.
 */
export function mutateFields(
  r: Rng,
  target: Obj,
  options: FieldMutationOptions & { which: number },
): void {
  const keys = Object.keys(target);
  switch (options.which) {
    case 0:
      if (keys.length > 0) target[r.pick(keys)] = r.pick(options.bad);
      break;
    case 1:
      if (keys.length > 0) delete target[r.pick(keys)];
      break;
    case 2:
      Object.defineProperty(target, r.pick(options.fields), {
        value: r.pick(options.added),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      break;
    case 3: {
      const reversed = Object.entries(target).reverse();
      for (const k of keys) delete target[k];
      for (const [k, v] of reversed) target[k] = v;
      break;
    }
    default:
      throw new RangeError(`Cannot mutate: no field mutation ${options.which}`);
  }
}
