/**
 * Characters that make shown text display as something else (rule 5 in docs/design.md, "Hostile
 * inputs"), and the assertions every output is held to: none of them raw, each shown as
 * `<U+XXXX>` in text and HTML and as a `\uXXXX` escape in JSON.
 *
 * @module
 */

import { assert, assertStringIncludes } from "./assert.ts";

/** One disguising character: what it is, itself, and how text shows it. */
export interface Disguise {
  what: string;
  char: string;
  /** As text and HTML show it: `<U+202E>`. */
  shown: string;
  /** As JSON writes it: `\u202e`. */
  json: string;
}

function disguise(what: string, code: number): Disguise {
  const hex = code.toString(16).padStart(4, "0");
  return {
    what,
    char: String.fromCodePoint(code),
    shown: `<U+${hex.toUpperCase()}>`,
    json: `\\u${hex}`,
  };
}

/** The cases: bidi override, embedding, isolates and marks, zero-width, BOM, a C1 control. */
export const DISGUISES: Disguise[] = [
  disguise("right-to-left override", 0x202e),
  disguise("left-to-right embedding", 0x202a),
  disguise("right-to-left isolate", 0x2067),
  disguise("pop directional isolate", 0x2069),
  disguise("left-to-right mark", 0x200e),
  disguise("Arabic letter mark", 0x061c),
  disguise("zero-width space", 0x200b),
  disguise("zero-width joiner", 0x200d),
  disguise("word joiner", 0x2060),
  disguise("byte order mark", 0xfeff),
  disguise("C1 control sequence introducer", 0x009b),
  disguise("C1 next line", 0x0085),
  disguise("line separator", 0x2028),
];

/** `label` with every disguise in it, each between letters: `label a<RLO>b a<LRE>b ...`. */
export function disguised(label: string): string {
  return `${label} ${DISGUISES.map((d) => `a${d.char}b`).join(" ")}`;
}

/** Asserts `text` carries no disguise raw and shows each as `<U+XXXX>` (in `a<U+...>b`). */
export function assertShown(text: string, where: string): void {
  for (const d of DISGUISES) {
    assert(!text.includes(d.char), `${where}: a raw ${d.what} (${d.shown}) in:\n${text}`);
    assertStringIncludes(
      text,
      `a${d.shown}b`,
      `${where}: the ${d.what} is not shown as ${d.shown}`,
    );
  }
}

/** Asserts JSON text carries no disguise raw and writes each as a `\uXXXX` escape. */
export function assertJsonEscaped(text: string, where: string): void {
  for (const d of DISGUISES) {
    assert(!text.includes(d.char), `${where}: a raw ${d.what} (${d.shown}) in the JSON`);
    assertStringIncludes(text, `a${d.json}b`, `${where}: the ${d.what} is not written ${d.json}`);
  }
}
