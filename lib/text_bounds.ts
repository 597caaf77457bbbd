/**
 * The bounds every reader of text holds before it parses (docs/design.md, "Hostile inputs",
 * rule 3: no input crashes a reader), in a module that loads no parser, so the fast reads can
 * hold them too: the longest line a line-based reader takes ({@linkcode MAX_YAML_LINE}), the
 * deepest nesting ({@linkcode MAX_YAML_DEPTH} for YAML, {@linkcode MAX_JSON_DEPTH} for JSON),
 * and the scans that find where a text passes them, each linear and without recursion or
 * regular expressions. lib/yaml_bounds.ts holds the YAML bounds while the `yaml` package parses.
 *
 * @module
 */

/** The deepest nesting (collections inside collections) a YAML input of mesh may have. */
export const MAX_YAML_DEPTH = 64;

/** The longest line (in UTF-16 code units, the characters of a JavaScript string) read. */
export const MAX_YAML_LINE = 65_536;

/**
 * A YAML text past a bound: where (`offset` in the text, and its 1-based `line` and `column`)
 * and what was passed (`message`, a sentence naming the bound).
 */
export class YamlBoundError extends Error {
  override name = "YamlBoundError";
  /** The offset in the text where the bound was passed (a line's start, a collection's). */
  readonly offset: number;
  /** The line of `offset`, from 1. */
  readonly line: number;
  /** The column of `offset`, from 1 (in UTF-16 code units). */
  readonly column: number;

  constructor(text: string, offset: number, message: string) {
    super(message);
    this.offset = offset;
    let line = 1;
    let start = 0;
    for (let nl = text.indexOf("\n"); nl >= 0 && nl < offset; nl = text.indexOf("\n", nl + 1)) {
      line++;
      start = nl + 1;
    }
    this.line = line;
    this.column = offset - start + 1;
  }
}

/**
 * The first line of `text` longer than `max` characters: its number (1-based), its length and
 * the offset of its start; undefined when every line fits. Linear, no regular expression.
 */
export function longLine(
  text: string,
  max: number = MAX_YAML_LINE,
): { line: number; length: number; offset: number } | undefined {
  let start = 0;
  for (let line = 1; start <= text.length; line++) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    if (end - start > max) return { line, length: end - start, offset: start };
    start = end + 1;
  }
  return undefined;
}

/** The sentence for a line past {@linkcode longLine}'s bound. */
export function longLineMessage(length: number, max: number = MAX_YAML_LINE): string {
  return `This line is ${length} characters long, more than the ${max} a line may have ` +
    "(nothing is read past this bound)";
}

/** The deepest nesting (arrays and objects inside each other) a JSON input of mesh may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * Where JSON `text` first opens an array or object deeper than `max` (its offset), or
 * undefined. One pass, strings skipped with `indexOf`; meant for text `JSON.parse` accepted (for
 * other text it still ends, and its answer only counts the brackets outside strings).
 */
export function jsonTooDeep(text: string, max: number = MAX_JSON_DEPTH): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: its end is the next quote not escaped by an odd run of backslashes.
      let end = text.indexOf('"', i + 1);
      while (end > 0) {
        let slashes = 0;
        for (let j = end - 1; text.charCodeAt(j) === 0x5c; j--) slashes++;
        if ((slashes & 1) === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end < 0) return undefined;
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return undefined;
}

/** The sentence for JSON past {@linkcode jsonTooDeep}'s bound, at `offset`. */
export function jsonTooDeepMessage(offset: number, max: number = MAX_JSON_DEPTH): string {
  return `nested more than ${max} levels deep (arrays and objects inside each other, from ` +
    `character ${offset + 1}): no input of mesh nests so deep`;
}
