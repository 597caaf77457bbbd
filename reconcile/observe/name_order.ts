/**
 * The order of account and source names in a run's output, the same on every machine and without
 * ICU's collator: the first `localeCompare` of a process loads the collation data (~15 ms of CPU
 * in a `run` profile, 78 ms of wall on a loaded VM), for a sort of a few names, and its order
 * follows the machine's locale (`LANG`: under `da_DK`, "aa" sorts after "n").
 *
 * @module
 */

/** The characters of a plain name, in the order ICU's root collation gives them. */
const ORDER = "_-$0123456789abcdefghijklmnopqrstuvwxyz";

/** A character's rank: its place in {@linkcode ORDER}, or after all of them by its code unit. */
function rank(code: number, char: string): number {
  const i = ORDER.indexOf(char);
  return i >= 0 ? i : ORDER.length + code;
}

/**
 * Compares `a` and `b` (a negative number, 0 or a positive number, as a sort comparator): a
 * total order, whatever the machine's locale. Names of lowercase letters, digits, `_`, `-` and
 * `$` (account and source names) come in ICU's root order, `localeCompare`'s under an English
 * locale (`_` < `-` < `$` < digits < letters, a prefix first); any other character sorts after
 * those, by its UTF-16 code unit.
 */
export function compareNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return rank(x, a[i]!) < rank(y, b[i]!) ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/**
 * Compares two `account/name` keys (a container of an account): by account, then by name, each
 * by {@linkcode compareNames}. Compared whole, `/` (after every plain character) would put
 * `root2/a` before `root/a`. A key without `/` is all account.
 */
export function compareAccountKeys(a: string, b: string): number {
  const i = a.indexOf("/");
  const j = b.indexOf("/");
  const [accountA, nameA] = i < 0 ? [a, ""] : [a.slice(0, i), a.slice(i + 1)];
  const [accountB, nameB] = j < 0 ? [b, ""] : [b.slice(0, j), b.slice(j + 1)];
  return compareNames(accountA, accountB) || compareNames(nameA, nameB);
}
