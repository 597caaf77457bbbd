/**
 * Repeated keys in JSON text. `JSON.parse` keeps the last of two equal keys without a word, so
 * `{"resources": [...], "resources": []}` reads as an empty declaration; every input the host
 * accepts is scanned with {@linkcode duplicateKeys} and a repeated key refuses the whole.
 *
 * The scan is one `charCodeAt` pass meant to run after `JSON.parse` accepted the text: it assumes
 * valid JSON (RFC 8259) and reports nothing useful for text that is not. It allocates nothing per
 * token: a value string's end is found with `indexOf`, a key is remembered as its offsets and a
 * hash of its decoded characters (a key with an escape is decoded, so `"\u0061"` and `"a"` are
 * one key), a new key is compared with its object's earlier keys by hash then by characters (an
 * object of more than {@linkcode LINEAR_KEYS} keys switches to a `Set` of its keys), and paths and
 * key strings are built only for an object that does hold a repeated key.
 *
 * @module
 */

import { formatPath } from "./json_path.ts";

/** One repeated key: where (the path of the object holding it, plus the key) and how often. */
export interface DuplicateKey {
  /** Path segments to the repeated key, e.g. `["resources", 3, "mode"]`. */
  path: (string | number)[];
  /** The path formatted as in every other problem: `resources[3].mode`. */
  at: string;
  /** The key, decoded (`"\u0061"` and `"a"` are one key). */
  key: string;
  /** How many times the key occurs in that object (at least 2). */
  count: number;
}

/** Up to this many keys an object's keys are compared one by one; past it, through a `Set`. */
const LINEAR_KEYS = 8;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** The hash every key is compared by first; a key with escapes is hashed decoded. */
function hashOf(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** The index of the quote that ends the string whose content starts at `from`. */
function stringEnd(text: string, from: number): number {
  let end = text.indexOf('"', from);
  while (end !== -1) {
    let slashes = 0;
    for (let j = end - 1; text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if ((slashes & 1) === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return text.length - 1;
}

/**
 * Every key that occurs more than once in one object of `text`, at any depth: objects in the
 * order they close (an inner object before the one holding it), within one object in the order
 * of each repeated key's first occurrence; one entry per repeated key and object.
 *
 * @param text valid JSON text (parse it first: invalid text gives no reliable answer).
 */
export function duplicateKeys(text: string): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  const n = text.length;
  // Every key of every open object, in order: its content's offsets (end exclusive), the hash of
  // its decoded characters, and its decoded string when it has escapes (else undefined).
  const keyStart: number[] = [];
  const keyEnd: number[] = [];
  const keyHash: number[] = [];
  const keyDecoded: (string | undefined)[] = [];
  let keys = 0;
  // One frame per open container: whether it is an object; for an object the index of its first
  // key in the key arrays, of its current key (-1 before the first) and whether a key repeated;
  // for an array its current index; a Set of the object's keys once it has many.
  const isObject: boolean[] = [];
  const base: number[] = [];
  const current: number[] = [];
  const repeated: boolean[] = [];
  const sets: (Set<string> | undefined)[] = [];
  let depth = 0;
  // Whether the next string is a key (after `{` or `,` in an object).
  let expectKey = false;

  const keyAt = (k: number): string => keyDecoded[k] ?? text.slice(keyStart[k]!, keyEnd[k]!);
  const sameKey = (a: number, b: number): boolean => {
    const da = keyDecoded[a];
    const db = keyDecoded[b];
    if (da !== undefined || db !== undefined) return keyAt(a) === keyAt(b);
    const s = keyStart[a]!;
    const t = keyStart[b]!;
    const len = keyEnd[a]! - s;
    if (keyEnd[b]! - t !== len) return false;
    for (let i = 0; i < len; i++) {
      if (text.charCodeAt(s + i) !== text.charCodeAt(t + i)) return false;
    }
    return true;
  };
  /** Records the repeated keys of the object on top (at `depth - 1`, about to close). */
  const report = (top: number) => {
    const counts = new Map<string, number>();
    for (let k = base[top]!; k < keys; k++) {
      const key = keyAt(k);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const parent: (string | number)[] = [];
    for (let d = 0; d < top; d++) parent.push(isObject[d] ? keyAt(current[d]!) : current[d]!);
    for (const [key, count] of counts) {
      if (count > 1) {
        const path = [...parent, key];
        found.push({ path, at: formatPath(path), key, count });
      }
    }
  };

  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      if (!expectKey) {
        i = stringEnd(text, i + 1);
        continue;
      }
      expectKey = false;
      // A key: hash it while looking for its end; an escape sends it to the decoder.
      const start = i + 1;
      let h = 0;
      let j = start;
      let ch = 0;
      for (; j < n; j++) {
        ch = text.charCodeAt(j);
        if (ch === QUOTE || ch === BACKSLASH) break;
        h = (Math.imul(h, 31) + ch) | 0;
      }
      let decoded: string | undefined;
      if (ch === BACKSLASH) {
        j = stringEnd(text, j);
        decoded = JSON.parse(text.slice(i, j + 1)) as string;
        h = hashOf(decoded);
      }
      i = j;
      const top = depth - 1;
      if (top < 0 || !isObject[top]) continue;
      keyStart[keys] = start;
      keyEnd[keys] = j;
      keyHash[keys] = h;
      keyDecoded[keys] = decoded;
      const k = keys++;
      current[top] = k;
      if (repeated[top]) continue;
      const from = base[top]!;
      const set = sets[top];
      if (set !== undefined) {
        const key = keyAt(k);
        if (set.has(key)) repeated[top] = true;
        else set.add(key);
      } else if (k - from < LINEAR_KEYS) {
        for (let m = from; m < k; m++) {
          if (keyHash[m] === h && sameKey(m, k)) {
            repeated[top] = true;
            break;
          }
        }
      } else {
        // The object grew past LINEAR_KEYS distinct keys: from now on, a Set.
        const many = new Set<string>();
        for (let m = from; m < k; m++) many.add(keyAt(m));
        const key = keyAt(k);
        if (many.has(key)) repeated[top] = true;
        else many.add(key);
        sets[top] = many;
      }
    } else if (c === COMMA) {
      if (depth > 0 && !isObject[depth - 1]) current[depth - 1]!++;
      else expectKey = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const object = c === OPEN_OBJECT;
      isObject[depth] = object;
      base[depth] = keys;
      current[depth] = object ? -1 : 0;
      repeated[depth] = false;
      sets[depth] = undefined;
      depth++;
      expectKey = object;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth > 0) {
        const top = depth - 1;
        if (isObject[top]) {
          if (repeated[top]) report(top);
          sets[top] = undefined;
          keys = base[top]!;
        }
        depth = top;
      }
      expectKey = false;
    }
  }
  return found;
}

/** The message for one repeated key, as every input's problems word it. */
export function duplicateKeyMessage(d: DuplicateKey): string {
  return `Duplicate key ${JSON.stringify(d.key)} (${d.count} times in one object): ` +
    "JSON.parse would silently keep the last, so the input is refused";
}
