/**
 * The fast read of a registry: `js-yaml` with a schema resolving plain scalars exactly as the
 * YAML 1.2 core schema of the `yaml` package does, used only to accept a registry that is valid.
 * Anything it is not sure of (a YAML error, a repeated key, an alias, a tag it does not know) is
 * left to the full read of `registry.ts`, which places every problem at its line and column.
 *
 * Why two parsers: the `yaml` package keeps a concrete syntax tree with every node's position
 * (what placing problems needs) and costs ~5 s of CPU for a 30,000-entry registry (3.6 MB) on
 * this project's 2-core machines; `js-yaml` builds plain data in about a fifth of that. A valid
 * registry needs no position, so it is read fast; an invalid one is read twice and pays for it.
 * `tests/reconcile/registry_fast_test.ts` holds the two reads to the same data (every scalar
 * form, the test fixtures, and thousands of random edits of a registry).
 *
 * The data read is checked by {@linkcode validRegistry}: the validator generated from the zod
 * schema (./registry_validators.js, by scripts/validators.ts from reconcile/registry_schema.ts,
 * calling the predicates of reconcile/registry_base.ts the schema refines with), so a valid
 * registry is read without loading zod; it returns what the schema returns.
 *
 * @module
 */

// @ts-types="@types/js-yaml"
import { FAILSAFE_SCHEMA, load, type Schema, Type } from "js-yaml";
import { longLine, MAX_YAML_DEPTH } from "../lib/text_bounds.ts";
import { asList, urlAsRead } from "./registry_base.ts";
import {
  BACKUP_KEYS,
  ENTRY_KEYS,
  isRegistry,
  REGISTRY_KEYS,
  RESTIC_KEYS,
  TLS_KEYS,
} from "./registry_validators.js";
import type { EntryKind, Registry } from "./registry_schema.ts";

// The YAML 1.2 core schema's implicit scalars, as the `yaml` package 2.x resolves them
// (yaml/dist/schema/common/null.js, core/bool.js, core/int.js, core/float.js). js-yaml's own
// CORE_SCHEMA differs: it reads `1_000`, `0b101` and `+0x1` as numbers and `-.5e-3` as a string.
const NULL = /^(?:~|[Nn]ull|NULL)?$/;
const BOOL = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const INT_OCT = /^0o[0-7]+$/;
const INT = /^[-+]?[0-9]+$/;
const INT_HEX = /^0x[0-9a-fA-F]+$/;
const FLOAT_NAN = /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
const FLOAT_EXP = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/;

const coreNull = new Type("tag:yaml.org,2002:null", {
  kind: "scalar",
  resolve: (data: string | null) => data === null || NULL.test(data),
  construct: () => null,
  predicate: (value: unknown) => value === null,
});

const coreBool = new Type("tag:yaml.org,2002:bool", {
  kind: "scalar",
  resolve: (data: string | null) => data !== null && BOOL.test(data),
  construct: (data: string) => data[0] === "t" || data[0] === "T",
  predicate: (value: unknown) => typeof value === "boolean",
});

const coreInt = new Type("tag:yaml.org,2002:int", {
  kind: "scalar",
  resolve: (data: string | null) =>
    data !== null && (INT.test(data) || INT_OCT.test(data) || INT_HEX.test(data)),
  construct: (data: string) =>
    INT_OCT.test(data)
      ? parseInt(data.substring(2), 8)
      : INT_HEX.test(data)
      ? parseInt(data.substring(2), 16)
      : parseInt(data, 10),
  predicate: (value: unknown) => Number.isInteger(value),
});

const coreFloat = new Type("tag:yaml.org,2002:float", {
  kind: "scalar",
  resolve: (data: string | null) =>
    data !== null && (FLOAT_NAN.test(data) || FLOAT_EXP.test(data) || FLOAT.test(data)),
  construct: (data: string) =>
    FLOAT_NAN.test(data)
      ? (data.slice(-3).toLowerCase() === "nan"
        ? NaN
        : data[0] === "-"
        ? Number.NEGATIVE_INFINITY
        : Number.POSITIVE_INFINITY)
      : parseFloat(data),
  predicate: (value: unknown) => typeof value === "number",
});

/** Strings, sequences and maps (failsafe), and the core schema's implicit scalars, in its order. */
const SCHEMA: Schema = FAILSAFE_SCHEMA.extend({
  implicit: [coreNull, coreBool, coreInt, coreFloat],
});

// The plain style a registry is written in, line by line: block mappings and sequences of plain
// names, single-line quoted strings and single-line flow sequences, comments, and block scalars
// (`|`, `>`). Parsers differ where YAML is malformed (a quoted string or a flow collection
// continued on a less indented line, which js-yaml accepts and the `yaml` package refuses), and all
// such forms span lines; a text with a line outside this style is left to the full read. Aliases
// (js-yaml shares the anchored node, so a "billion laughs" document would be cheap to load and
// exponential to validate), tags, flow maps, directives, tabs and carriage returns are outside it,
// and so is each form a review found the two reading differently (noted where it is excluded).
// Not a null (the yaml package reads a null key as "", js-yaml as "null"), at most 1,000
// characters (the yaml package refuses an implicit key over 1,024).
const KEY = String.raw`(?!(?:null|Null|NULL):)[A-Za-z0-9_][A-Za-z0-9._/-]{0,999}`;
// Not `%` (a directive such as `%YAML 1.1` changes the yaml package's schema, not js-yaml's).
const PLAIN_START = String.raw`(?:[A-Za-z0-9_./~+=$^();]|-(?=[^\s]))`;
const PLAIN = String.raw`${PLAIN_START}(?:[^\s:#]|:(?=[^\s]))*(?: +(?:[^\s:#]|:(?=[^\s]))+)*`;
const PLAIN_IN_FLOW = String.raw`${PLAIN_START}(?:[^\s:#,[\]{}]|:(?=[^\s,[\]{}]))*` +
  String.raw`(?: +(?:[^\s:#,[\]{}]|:(?=[^\s,[\]{}]))+)*`;
// Only the plain escapes (`\U00110000` and the like are refused by one parser, read by the other).
const DOUBLE = String.raw`"(?:[^"\\]|\\["\\/bfnrt])*"`;
const SINGLE = String.raw`'(?:[^']|'')*'`;
const ITEM = `(?:${DOUBLE}|${SINGLE}|${PLAIN_IN_FLOW})`;
const FLOW_SEQ = String.raw`\[ *(?:${ITEM}(?: *, *${ITEM})* *,? *)?\]`;
const VALUE = `(?:${DOUBLE}|${SINGLE}|${FLOW_SEQ}|${PLAIN})`;
const COMMENT = String.raw`(?: +#.*)?`;
// Chomping only: with an explicit indentation the two parsers differ over blank lines.
const BLOCK_HEADER = String.raw`[|>][+-]?`;
/** A line of the plain style; group 1 is its indentation, group 2 a block scalar's header. */
const LINE = new RegExp(
  String.raw`^( *)(?:#.*|(?:- +)*(?:${KEY}:(?: +(?:${VALUE}|(${BLOCK_HEADER})))?|${VALUE})` +
    `${COMMENT}|)$`,
);
/** A block scalar's header after a bare dash (`- |`), which LINE's value does not cover. */
const DASH_BLOCK = new RegExp(String.raw`^( *)(?:- +)+(${BLOCK_HEADER})${COMMENT}$`);

/**
 * Whether every line of `text` is in the plain style a registry is written in (see above), and
 * within lib/yaml_bounds.ts's bounds: no line longer than `MAX_YAML_LINE` (tested
 * before any regular expression sees it: one of megabytes exhausts the expressions' backtracking
 * stack) and no nesting that could be deeper than {@linkcode MAX_YAML_DEPTH} (js-yaml recurses
 * once per level). Lines inside a block scalar (more indented than its header's line, or blank)
 * are its content. In this style only indentation and `- ` nest (a flow sequence holds scalars):
 * each open indentation holds at most a map and a sequence, and a line's dashes one level each,
 * so a text whose count of those could pass the bound is left to the full read, which measures
 * its nesting exactly and refuses it there.
 */
function plainStyle(text: string): boolean {
  if (text.includes("\t") || text.includes("\r")) return false;
  if (longLine(text) !== undefined) return false;
  let blockIndent = -1;
  // The indentations of the open lines above this one, increasing.
  const open: number[] = [];
  for (const line of text.split("\n")) {
    if (blockIndent >= 0) {
      if (line.trim() === "") continue;
      if (line.length - line.trimStart().length > blockIndent) continue;
      blockIndent = -1;
    }
    const match = LINE.exec(line) ?? DASH_BLOCK.exec(line);
    if (match === null) return false;
    const indent = match[1]!.length;
    if (match[2] !== undefined) blockIndent = indent;
    const content = line.slice(indent);
    if (content === "" || content.startsWith("#")) continue;
    while (open.length > 0 && open[open.length - 1]! >= indent) open.pop();
    open.push(indent);
    // The dashes that open the line (`- - key: x`), each a sequence.
    let dashes = 0;
    for (let j = 0; content[j] === "-" && content[j + 1] === " "; dashes++) {
      for (j += 2; content[j] === " "; j++);
    }
    if (2 * open.length + dashes > MAX_YAML_DEPTH) return false;
  }
  return true;
}

/**
 * Reads registry text into plain data, or declines.
 *
 * @returns the document as plain data (objects, arrays, strings, numbers, booleans, null),
 *   exactly as `parseDocument(text).toJS()` of the `yaml` package would give it; `undefined`
 *   when the text is not one YAML document in the plain style this reader is sure of (any line
 *   outside it, a YAML error, a repeated key, more than one document). Never throws.
 */
export function quickLoad(text: string): unknown {
  if (!plainStyle(text)) return undefined;
  try {
    // Not `json: true`: that would let a repeated key overwrite the first instead of failing.
    return load(text, { schema: SCHEMA });
  } catch {
    return undefined;
  }
}

/** A plain object, as read from YAML. */
type Raw = Record<string, unknown>;

// Every object's keys in the order of its zod schema (reconcile/registry_schema.ts), the order zod
// returns them in, are generated with the validator (scripts/validators.ts): an entry's per kind
// (ENTRY_KEYS), the registry's, its backup's and restic's, and a TLS endpoint's.
/** The fields written as one value or a list (`tls` too, whose endpoints are read further). */
const LISTED: ReadonlySet<string> = new Set(["port", "web", "database"]);

/**
 * A valid registry as the zod schema `Registry` (reconcile/registry_schema.ts) returns it, or
 * undefined when `data` is not one: then the schema, with positions (reconcile/registry.ts),
 * says what is wrong. Checked by the validator generated from that schema, then read as its
 * transforms read it, by the same functions ({@linkcode asList}: a single port, address, TLS
 * endpoint, TLS name or database as a list of one; {@linkcode urlAsRead}: a redirect), each
 * object's keys in the schema's order. `data` is not changed; the lists of the result may be its
 * own (zod's are copies, of the same values).
 *
 * @param data plain data, e.g. {@linkcode quickLoad}'s (undefined is refused).
 */
export function validRegistry(data: unknown): Registry | undefined {
  if (!isRegistry(data)) return undefined;
  const registry = data as Raw;
  const raw = registry.services as Record<string, Raw>;
  const services: Record<string, Raw> = {};
  for (const name in raw) services[name] = entryAsRead(raw[name]!);
  // A key given a value again keeps its place: each object is first copied in the schema's order.
  const out = inOrder(registry, REGISTRY_KEYS);
  if (out.backup !== undefined) {
    const backup = inOrder(out.backup as Raw, BACKUP_KEYS);
    backup.restic = inOrder(backup.restic as Raw, RESTIC_KEYS);
    out.backup = backup;
  }
  out.services = services;
  return out as Registry;
}

/** A valid entry as the schema reads it (see {@linkcode validRegistry}). */
function entryAsRead(entry: Raw): Raw {
  const out: Raw = {};
  for (const key of ENTRY_KEYS[entry.kind as EntryKind]) {
    const value = entry[key];
    if (value === undefined) continue;
    out[key] = LISTED.has(key) ? asList(value) : key === "tls"
      ? asList(value as Raw[]).map((t) => {
        const endpoint = inOrder(t, TLS_KEYS);
        endpoint.name = asList(endpoint.name);
        return endpoint;
      })
      : key === "redirect"
      ? urlAsRead(value as string)
      : value;
  }
  return out;
}

/** The fields of `object` that `keys` names and it holds (not undefined), in `keys`' order. */
function inOrder(object: Raw, keys: readonly string[]): Raw {
  const out: Raw = {};
  for (const key of keys) {
    const value = object[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
