/**
 * `localeCompare`'s order for plain names, without ICU's collator: the first `localeCompare` of
 * a process loads the collation data (~15 ms of CPU in a `run` profile, 78 ms of wall on a
 * loaded VM), for a sort of a few account and source names.
 *
 * @module
 */

/** The characters of a plain name, in the order ICU's root collation gives them. */
const ORDER = "_-$0123456789abcdefghijklmnopqrstuvwxyz";
const PLAIN = /^[a-z0-9_$-]*$/;

/**
 * Compares `a` and `b` as `a.localeCompare(b)` does (the same sign): names of lowercase letters,
 * digits, `_`, `-` and `$` (account names, source names) by ICU's root order of those characters
 * (`_` < `-` < `$` < digits < letters, a prefix first), without loading the collator; any other
 * name is left to `localeCompare`.
 */
export function compareNames(a: string, b: string): number {
  if (!PLAIN.test(a) || !PLAIN.test(b)) return a.localeCompare(b);
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return ORDER.indexOf(a[i]!) < ORDER.indexOf(b[i]!) ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
