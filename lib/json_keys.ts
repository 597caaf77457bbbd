/**
 * Repeated keys in JSON text. `JSON.parse` keeps the last of two equal keys without a word, so
 * `{"resources": [...], "resources": []}` reads as an empty declaration; every input the host
 * accepts is scanned with {@linkcode duplicateKeys} and a repeated key refuses the whole.
 *
 * The scan is a single pass that visits only structural characters and strings (no allocation
 * per value, only per key), meant to run after `JSON.parse` accepted the text: it assumes valid
 * JSON (RFC 8259) and reports nothing useful for text that is not.
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

/**
 * Every key that occurs more than once in one object of `text`, at any depth, in document
 * order of the object (one entry per repeated key and object).
 *
 * @param text valid JSON text (parse it first: invalid text gives no reliable answer).
 */
export function duplicateKeys(text: string): DuplicateKey[] {
  const found: DuplicateKey[] = [];
  // One frame per open container: an object's keys seen so far (and its current key), or an
  // array's current index.
  type Frame =
    | { kind: "object"; keys: Map<string, number>; key: string }
    | { kind: "array"; index: number };
  const stack: Frame[] = [];
  const pathHere = (): (string | number)[] =>
    stack.map((f) => (f.kind === "object" ? f.key : f.index));
  // Only structural characters and strings matter: the regex engine (native code even in a
  // cold process) jumps to the next one, and a string's end is found with indexOf, so the bulk
  // of a declaration (file contents) is skipped without a character loop.
  const next = /["{}[\],]/g;
  // Whether the next string in the current object is a key (after `{` or `,`).
  let expectKey = false;
  for (let m = next.exec(text); m !== null; m = next.exec(text)) {
    const i = m.index;
    switch (text.charCodeAt(i)) {
      case 0x7b: // {
        stack.push({ kind: "object", keys: new Map(), key: "" });
        expectKey = true;
        break;
      case 0x5b: // [
        stack.push({ kind: "array", index: 0 });
        expectKey = false;
        break;
      case 0x7d: // }
      case 0x5d: {
        // ]
        const frame = stack.pop();
        if (frame?.kind === "object") {
          for (const [key, count] of frame.keys) {
            if (count > 1) {
              const path = [...pathHere(), key];
              found.push({ path, at: formatPath(path), key, count });
            }
          }
        }
        expectKey = false;
        break;
      }
      case 0x2c: {
        // ,
        const top = stack[stack.length - 1];
        if (top?.kind === "array") top.index++;
        else expectKey = true;
        break;
      }
      default: {
        // " : its end is the next quote not escaped by an odd number of backslashes
        let end = text.indexOf('"', i + 1);
        while (end !== -1) {
          let slashes = 0;
          for (let j = end - 1; text.charCodeAt(j) === 0x5c; j--) slashes++;
          if (slashes % 2 === 0) break;
          end = text.indexOf('"', end + 1);
        }
        if (end === -1) end = text.length - 1;
        if (expectKey) {
          const top = stack[stack.length - 1];
          if (top?.kind === "object") {
            const raw = text.slice(i + 1, end);
            const key = raw.includes("\\") ? JSON.parse(`"${raw}"`) as string : raw;
            top.keys.set(key, (top.keys.get(key) ?? 0) + 1);
            top.key = key;
          }
          expectKey = false;
        }
        next.lastIndex = end + 1;
      }
    }
  }
  return found;
}

/** The message for one repeated key, as every input's problems word it. */
export function duplicateKeyMessage(d: DuplicateKey): string {
  return `Duplicate key ${JSON.stringify(d.key)} (${d.count} times in one object): ` +
    "JSON.parse would silently keep the last, so the input is refused";
}
