/**
 * Bounds on YAML text, held before the `yaml` package composes a document (docs/design.md,
 * "Hostile inputs", rule 3: no input crashes a reader). The package's composer, its `toJS` and
 * every walker over the composed nodes recurse once per level of nesting, so `[` repeated a few
 * hundred times exhausts V8's stack (at about 800 levels here), and a line of megabytes
 * exhausts the backtracking stack of a regular expression tested on it (js-yaml's and the fast
 * registry read's, at about 5 to 10 million characters). So:
 *
 * - {@linkcode longLine} (lib/text_bounds.ts, which loads no parser) finds a line longer than a
 *   bound, with one `indexOf` per line;
 * - {@linkcode parseDocumentBounded} is the package's `parseDocument`, its concrete syntax tree
 *   built by the package's own `Parser` (iterative: it keeps its open collections on a stack)
 *   and the stack's height checked after every token, so a document nested deeper than the
 *   bound is refused before anything recurses on it (and before the parser, whose time grows
 *   with the square of the depth, has spent more than a few tokens on it).
 *
 * @module
 */

import {
  Composer,
  type Document,
  type DocumentOptions,
  Lexer,
  type LineCounter,
  type ParseOptions,
  Parser,
  type SchemaOptions,
  YAMLParseError,
} from "yaml";
import {
  longLine,
  longLineMessage,
  MAX_YAML_DEPTH,
  MAX_YAML_LINE,
  YamlBoundError,
} from "./text_bounds.ts";

export { longLine, MAX_YAML_DEPTH, MAX_YAML_LINE, YamlBoundError };

const COLLECTIONS = new Set(["block-map", "block-seq", "flow-collection"]);

/**
 * `parseDocument(text, options)` of the `yaml` package, refusing a line longer than `maxLine`
 * and a document nested deeper than `maxDepth` collections before it is composed. Only the first
 * document is returned; a second one is the package's own `MULTIPLE_DOCS` error in `errors`, as
 * `parseDocument` puts it. Errors are never prettified (`prettyErrors` is taken as false).
 *
 * @throws {YamlBoundError} when a collection opens deeper than `maxDepth` (at its offset), or a
 *   line is longer than `maxLine` characters (at its start); nothing is composed then.
 */
export function parseDocumentBounded(
  text: string,
  options: ParseOptions & DocumentOptions & SchemaOptions & {
    lineCounter?: LineCounter;
    maxDepth?: number;
    maxLine?: number;
  } = {},
): Document.Parsed {
  const { maxDepth = MAX_YAML_DEPTH, maxLine = MAX_YAML_LINE, ...rest } = options;
  const long = longLine(text, maxLine);
  if (long !== undefined) {
    throw new YamlBoundError(text, long.offset, longLineMessage(long.length, maxLine));
  }
  const lineCounter = rest.lineCounter;
  const parser = new Parser(lineCounter?.addNewLine);
  // The parser's stack holds the document, then each open collection and, for a moment, the
  // node being read (a scalar): more than `maxDepth` collections in it is too deep. They are
  // counted only when the stack is higher than that could be.
  const tooDeep = (): boolean => {
    if (parser.stack.length <= maxDepth + 1) return false;
    let collections = 0;
    for (const token of parser.stack) if (COLLECTIONS.has(token.type)) collections++;
    return collections > maxDepth || parser.stack.length > 2 * maxDepth + 2;
  };
  function* tokens() {
    lineCounter?.addNewLine(0);
    for (const lexeme of new Lexer().lex(text)) {
      const at = parser.offset;
      yield* parser.next(lexeme);
      if (tooDeep()) {
        throw new YamlBoundError(
          text,
          at,
          `Nested more than ${maxDepth} levels deep here (collections inside collections); ` +
            "nothing is read past this bound",
        );
      }
    }
    yield* parser.end();
  }
  const composer = new Composer({ ...rest, prettyErrors: false });
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens(), true, text.length)) {
    if (doc === undefined) doc = next as Document.Parsed;
    else {
      // As parseDocument: the first document, and an error where the second one starts.
      doc.errors.push(
        new YAMLParseError(
          [next.range[0], next.range[1]],
          "MULTIPLE_DOCS",
          "Source contains multiple documents; please use YAML.parseAllDocuments()",
        ),
      );
      break;
    }
  }
  return doc!;
}
