/**
 * Text from nodes, reports, modules, registries and the machine (names, paths, problems, tool
 * output) shown to people cannot disguise itself: every character that is invisible, that
 * controls the terminal, or that reorders or hides what is around it is shown as `<U+XXXX>`
 * (rule 5 in docs/design.md, "Hostile inputs"). This module is the one definition of those
 * characters; it imports nothing, so a program's help can use it.
 *
 * - {@linkcode printable}: one field (a name, a message): its line breaks are escaped too, so it
 *   cannot forge a line.
 * - {@linkcode printableText}: a whole output (what `lib/write.ts` writes to stdout and stderr):
 *   its line breaks and tabs are the output's own and kept.
 * - {@linkcode jsonText}: JSON output: `JSON.stringify`, with the same characters written as
 *   `\uXXXX` escapes (JSON.stringify leaves every one of them but C0 raw), so the JSON means the
 *   same and a terminal showing it is not fooled either.
 *
 * The characters: C0 and C1 controls and DEL (Unicode Cc; a tab is kept: whitespace that shows as
 * whitespace), every format character (Cf: the bidirectional embeddings, overrides, isolates and
 * marks U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C; zero-width space, non-joiner and joiner
 * U+200B-200D; word joiner U+2060; byte order mark U+FEFF; soft hyphen; tag characters), the line
 * and paragraph separators U+2028 and U+2029 (Zl, Zp), lone surrogates (Cs), and the Hangul
 * fillers that render as nothing (U+115F, U+1160, U+3164, U+FFA0).
 *
 * @module
 */

// The characters beyond C0 (which JSON.stringify escapes itself): DEL and C1, format characters,
// line and paragraph separators, the invisible fillers.
const BEYOND_C0 = String.raw`\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0`;
/** One field: every unsafe character, the line feed included (a tab is kept). */
const FIELD = new RegExp(String.raw`[\u0000-\u0008\u000a-\u001f\p{Cs}${BEYOND_C0}]`, "u");
const FIELD_ALL = new RegExp(FIELD.source, "gu");
/** A whole output: the same, but its line feeds are its own. */
const TEXT = new RegExp(String.raw`[\u0000-\u0008\u000b-\u001f\p{Cs}${BEYOND_C0}]`, "u");
const TEXT_ALL = new RegExp(TEXT.source, "gu");
/** What JSON.stringify leaves raw of them (it escapes C0 and a lone surrogate). */
const JSON_RAW = new RegExp(`[${BEYOND_C0}]`, "u");
const JSON_RAW_ALL = new RegExp(JSON_RAW.source, "gu");

/** `<U+XXXX>`: the code point in upper-case hex, at least four digits. */
function shown(c: string): string {
  return `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** `\uXXXX` (two, a surrogate pair, above U+FFFF): the character as a JSON string escape. */
function jsonEscape(c: string): string {
  let out = "";
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}

/**
 * One field of text (a name, a path, a message) as shown to people: every unsafe character,
 * line breaks included, written as `<U+XXXX>` (`"a\u202eb\n"` is `a<U+202E>b<U+000A>`); a tab and
 * everything else is kept. Text with nothing unsafe is returned as it is.
 */
export function printable(text: string): string {
  return FIELD.test(text) ? text.replace(FIELD_ALL, shown) : text;
}

/**
 * A whole output (lines of a report, a help, an error) as written to a terminal: every unsafe
 * character written as `<U+XXXX>`, except its line feeds and tabs, which are the output's own.
 * Already printable text is unchanged (the escapes are plain ASCII), so a field escaped with
 * {@linkcode printable} is not escaped twice.
 */
export function printableText(text: string): string {
  return TEXT.test(text) ? text.replace(TEXT_ALL, shown) : text;
}

/**
 * `JSON.stringify(value, null, space)`, with every unsafe character JSON.stringify leaves raw
 * (DEL, C1 controls, format characters, line and paragraph separators, the invisible fillers)
 * written as a `\uXXXX` escape: the same JSON value, and no character in the text that a terminal
 * would hide, reorder or act on. Those characters only occur inside strings (JSON's own syntax is
 * ASCII), so an escape is always where a string's character was.
 *
 * @param space Indentation, as JSON.stringify's third argument (none by default).
 */
export function jsonText(value: unknown, space?: number): string {
  return jsonSafe(JSON.stringify(value, null, space));
}

/**
 * JSON text written elsewhere (by the database, by `JSON.stringify`) with every character
 * {@linkcode jsonText} escapes written as a `\uXXXX` escape: the same JSON value. The text must be
 * JSON, whose own syntax is ASCII, so each such character is inside a string.
 */
export function jsonSafe(text: string): string {
  return JSON_RAW.test(text) ? text.replace(JSON_RAW_ALL, jsonEscape) : text;
}
