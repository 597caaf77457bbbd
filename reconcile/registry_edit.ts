/**
 * Editing the registry without touching anything but the entry: every comment (including the
 * reasons written beside and above other entries), the order of entries, quoting, flow
 * collections and blank lines stay byte for byte as they were.
 *
 * The `yaml` package's Document API finds the entry (`parseDocument`, the `services` map's
 * pairs and their source ranges), renders the new entry (`new Document(...)`, `String(doc)`) and
 * is the oracle that checks the result (`doc.setIn` / `doc.deleteIn` on the original must give
 * the same data as the edited text). The text itself is spliced rather than re-printed with
 * `String(doc)`, because re-printing a whole document changes lines nobody edited: `[root,
 * alice]` becomes `[ root, alice ]`, a folded `>-` note is re-wrapped, the spacing before a
 * `# comment` is normalised (yaml 2.9).
 *
 * Which lines an entry owns (block `services` maps): its key line; the lines after it that are
 * blank or indented deeper than its key (its fields, block scalars, comments written inside it),
 * without trailing blank lines; and the comment lines at its key's indentation directly above
 * it (the `yaml` package attaches those to the key too). Removing an entry also removes the blank
 * lines that separated it from the entry before, so the spacing between the others is kept.
 *
 * @module
 */

import { Document, isMap, isScalar, type Pair, parseDocument, type YAMLMap } from "yaml";
import { parseRegistry, type Registry } from "./registry.ts";

/**
 * An edit that was refused; nothing was written. The message says why.
 *
 * @example An entry that exists already
 * ```ts
 * import { addEntry, RegistryEditError } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const registry = `version: 1
 * accounts: [root]
 * services:
 *   # The shop's front end; its database is on db1.
 *   shop:
 *     kind: service
 *     container: shop
 *     user: root
 *     port: 8080
 * `;
 * assert.throws(
 *   () => addEntry(registry, { name: "shop", fields: { kind: "daemon", port: 22 } }),
 *   (error) =>
 *     error instanceof RegistryEditError && /already has an entry "shop"/.test(error.message),
 * );
 * ```
 */
export class RegistryEditError extends Error {
  override name = "RegistryEditError";
}

interface Line {
  start: number;
  /** Index just after the line's `\n` (or the end of the text). */
  end: number;
  text: string;
}

function linesOf(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    const end = nl < 0 ? text.length : nl + 1;
    lines.push({ start, end, text: text.slice(start, nl < 0 ? text.length : nl) });
    start = end;
  }
  return lines;
}

const blank = (l: Line) => l.text.trim() === "";
const indentOf = (l: Line) => l.text.length - l.text.trimStart().length;
const isComment = (l: Line) => l.text.trimStart().startsWith("#");

function servicesMap(doc: ReturnType<typeof parseDocument>): YAMLMap {
  const node = doc.get("services", true);
  if (!isMap(node)) throw new RegistryEditError(`"services" is not a map`);
  return node as YAMLMap;
}

function keyOf(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}

/** The byte range [start, end) an entry of a block map owns (see the module notes). */
function ownedRange(
  text: string,
  map: YAMLMap,
  index: number,
  withSpaceBefore: boolean,
): { start: number; end: number } {
  const lines = linesOf(text);
  const pair = map.items[index] as Pair;
  const keyStart = (pair.key as { range?: [number, number, number] }).range?.[0];
  if (keyStart === undefined) throw new RegistryEditError("the entry has no place in the file");
  let k = lines.findIndex((l) => l.start <= keyStart && keyStart < l.end);
  const keyIndent = keyStart - lines[k]!.start;
  // Its fields: blank or deeper-indented lines after the key line, trailing blanks excluded.
  let last = k;
  for (let i = k + 1; i < lines.length; i++) {
    const l = lines[i]!;
    if (blank(l)) continue;
    if (indentOf(l) <= keyIndent) break;
    last = i;
  }
  // Its comment lines above, at the key's indentation, with no blank line between.
  while (
    k > 0 && !blank(lines[k - 1]!) && isComment(lines[k - 1]!) &&
    indentOf(lines[k - 1]!) === keyIndent
  ) k--;
  if (withSpaceBefore && index > 0) {
    while (k > 0 && blank(lines[k - 1]!)) k--;
  }
  return { start: lines[k]!.start, end: lines[last]!.end };
}

/** Renders `{name: entry}` as block YAML with the given indentation step, lines prefixed. */
function renderEntry(
  name: string,
  entry: Record<string, unknown>,
  options: { indent: number; step: number; eol: string },
): string {
  const rendered = new Document({ [name]: entry }).toString({
    indent: options.step,
    lineWidth: 0,
  });
  return rendered.split("\n").filter((l) => l !== "")
    .map((l) => " ".repeat(options.indent) + l + options.eol).join("");
}

function checkAgainstOracle(
  edited: string,
  original: string,
  change: (doc: ReturnType<typeof parseDocument>) => void,
  file: string,
): Registry {
  const registry = parseRegistry(edited, file); // the schema, before anything is written
  const oracle = parseDocument(original);
  change(oracle);
  const want = JSON.stringify(oracle.toJS());
  const got = JSON.stringify(parseDocument(edited).toJS());
  if (want !== got) {
    throw new RegistryEditError(
      `cannot edit ${file} in place without changing other lines (its layout is one this ` +
        `program does not splice); nothing was written: edit it by hand`,
    );
  }
  return registry;
}

/**
 * Returns `text` with entry `name` added at the end of `services`, and only that changed.
 *
 * @param text the registry as it is on disk (must be a valid registry).
 * @param entry the new entry's `name`, and its `fields` in the order they are to be written.
 * @param options `file` names the registry in messages.
 * @throws {RegistryError} when `text`, or the result, is not a valid registry (e.g. the new
 *   entry's account is not in `accounts`, or its container is claimed already).
 * @throws {RegistryEditError} when the entry exists already, or the file cannot be edited
 *   without changing other lines.
 *
 * @example A batch entry added; the comment and the layout of the others kept
 * ```ts
 * import { addEntry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const registry = `version: 1
 * accounts: [root]
 * services:
 *   # The shop's front end; its database is on db1.
 *   shop:
 *     kind: service
 *     container: shop
 *     user: root
 *     port: 8080
 * `;
 * const edited = addEntry(
 *   registry,
 *   {
 *     name: "nightly-report",
 *     fields: { kind: "batch", timer: "nightly-report.timer", user: "root" },
 *   },
 *   { file: "/var/lib/mesh/reconcile/registry.yaml" },
 * );
 * assert.equal(
 *   edited,
 *   registry + `  nightly-report:
 *     kind: batch
 *     timer: nightly-report.timer
 *     user: root
 * `,
 * );
 * ```
 */
export function addEntry(
  text: string,
  entry: { name: string; fields: Record<string, unknown> },
  options: { file?: string } = {},
): string {
  const { name, fields } = entry;
  const file = options.file ?? "<registry>";
  const registry = parseRegistry(text, file);
  if (Object.hasOwn(registry.services, name)) {
    throw new RegistryEditError(
      `${file} already has an entry "${name}" (kind ${registry.services[name]!.kind})`,
    );
  }
  const doc = parseDocument(text);
  const map = servicesMap(doc);
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  let edited: string;
  if (map.flow) {
    const range = map.range;
    if (!range) throw new RegistryEditError("the services map has no place in the file");
    const close = text.lastIndexOf("}", range[1]);
    if (map.items.length === 0) {
      // `services: {}` becomes a block map: the `{}` goes, the entry follows the key's line.
      const lines = linesOf(text);
      const line = lines.find((l) => l.start <= range[0] && range[0] < l.end)!;
      const keyIndent = indentOf(line);
      const withoutBraces = text.slice(0, range[0]) + text.slice(close + 1);
      const lineEnd = withoutBraces.indexOf("\n", range[0]);
      const at = lineEnd < 0 ? withoutBraces.length : lineEnd + 1;
      const head = lineEnd < 0 ? withoutBraces + eol : withoutBraces.slice(0, at);
      edited = head.replace(/[ \t]+(\r?\n)$/, "$1").replace(/:[ \t]+(#)/, ": $1") +
        renderEntry(name, fields, { indent: keyIndent + 2, step: 2, eol }) +
        withoutBraces.slice(at);
    } else {
      const flow = new Document(fields);
      (flow.contents as YAMLMap).flow = true;
      // Written the way the file writes its braces: `{a: 1}` or `{ a: 1 }`.
      const padded = text[range[0] + 1] === " ";
      const value = flow.toString({ flowCollectionPadding: padded }).trim();
      const key = new Document(name).toString().trim();
      const body = text.slice(0, close);
      const trimmed = body.replace(/\s*$/, "");
      edited = trimmed + `, ${key}: ${value}` + body.slice(trimmed.length) + text.slice(close);
    }
  } else {
    const pairs = map.items as Pair[];
    const last = ownedRange(text, map, pairs.length - 1, false);
    const lines = linesOf(text);
    const firstKey = (pairs[0]!.key as { range?: number[] }).range![0]!;
    const keyLine = lines.find((l) => l.start <= firstKey && firstKey < l.end)!;
    const indent = firstKey - keyLine.start;
    // The indentation step of the entries' own fields, as the file writes them.
    let step = 2;
    for (const p of pairs) {
      if (isMap(p.value) && !(p.value as YAMLMap).flow) {
        const inner = ((p.value as YAMLMap).items[0]?.key as { range?: number[] })?.range?.[0];
        if (inner !== undefined) {
          const l = lines.find((x) => x.start <= inner && inner < x.end)!;
          step = Math.max(1, inner - l.start - indent);
          break;
        }
      }
    }
    // A blank line before the new entry when the file separates its entries with one.
    const spaced = pairs.slice(1).some((p) => {
      const start = (p.key as { range?: number[] }).range![0]!;
      const own = ownedRange(text, map, pairs.indexOf(p), false).start;
      const i = lines.findIndex((l) => l.start === own);
      return start >= 0 && i > 0 && blank(lines[i - 1]!);
    });
    const before = text.slice(0, last.end);
    const head = before.endsWith("\n") ? before : before + eol;
    edited = head + (spaced ? eol : "") + renderEntry(name, fields, { indent, step, eol }) +
      text.slice(last.end);
  }
  checkAgainstOracle(edited, text, (d) => d.setIn(["services", name], fields), file);
  return edited;
}

/**
 * Returns `text` without entry `name`, and only that changed (see the module notes for which
 * lines an entry owns).
 *
 * @param options `file` names the registry in messages; `kind`, when given, is the only kind of
 *   entry that may be removed (`batch disable` removes batch entries only).
 * @throws {RegistryError} when `text` is not a valid registry.
 * @throws {RegistryEditError} when there is no such entry, it is of another kind, or the file
 *   cannot be edited without changing other lines.
 *
 * @example A batch entry removed, and only it
 * ```ts
 * import { removeEntry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const registry = `version: 1
 * accounts: [root]
 * services:
 *   # The shop's front end; its database is on db1.
 *   shop:
 *     kind: service
 *     container: shop
 *     user: root
 *     port: 8080
 * `;
 * const withJob = registry + `  nightly-report:
 *     kind: batch
 *     timer: nightly-report.timer
 *     user: root
 * `;
 * assert.equal(removeEntry(withJob, "nightly-report", { kind: "batch" }), registry);
 * // `kind` guards against removing an entry of another kind.
 * assert.throws(
 *   () => removeEntry(withJob, "shop", { kind: "batch" }),
 *   /of kind service, not batch/,
 * );
 * ```
 */
export function removeEntry(
  text: string,
  name: string,
  options: { file?: string; kind?: string } = {},
): string {
  const file = options.file ?? "<registry>";
  const registry = parseRegistry(text, file);
  const existing = registry.services[name];
  if (existing === undefined || !Object.hasOwn(registry.services, name)) {
    throw new RegistryEditError(`${file} has no entry "${name}"`);
  }
  if (options.kind !== undefined && existing.kind !== options.kind) {
    throw new RegistryEditError(
      `entry "${name}" of ${file} is of kind ${existing.kind}, not ${options.kind}`,
    );
  }
  const doc = parseDocument(text);
  const map = servicesMap(doc);
  const index = (map.items as Pair[]).findIndex((p) => keyOf(p) === name);
  let edited: string;
  if (map.flow) {
    const pair = map.items[index] as Pair;
    const start = (pair.key as { range?: number[] }).range![0]!;
    const end = (pair.value as { range?: number[] } | null)?.range?.[1] ??
      (pair.key as { range?: number[] }).range![1]!;
    const after = /^\s*,\s*/.exec(text.slice(end));
    if (after) edited = text.slice(0, start) + text.slice(end + after[0].length);
    else {
      const before = /,\s*$/.exec(text.slice(0, start));
      edited = before
        ? text.slice(0, start - before[0].length) + text.slice(end)
        : text.slice(0, start) + text.slice(end);
    }
  } else if (map.items.length === 1) {
    // The last entry: `services:` is left as an empty map.
    const range = ownedRange(text, map, index, true);
    const lines = linesOf(text);
    const keyLine = lines.filter((l) => l.end <= range.start).reverse()
      .find((l) => /^\s*services\s*:/.test(l.text));
    if (keyLine === undefined) {
      throw new RegistryEditError(`cannot find the "services:" line of ${file}`);
    }
    const nl = keyLine.text.endsWith("\r") ? "\r\n" : "\n";
    const line = keyLine.text.replace(/\r$/, "");
    const hash = line.search(/\s#/);
    const replaced = hash < 0
      ? line.replace(/\s*$/, "") + " {}"
      : line.slice(0, hash).replace(/\s*$/, "") + " {}" + line.slice(hash);
    edited = text.slice(0, keyLine.start) + replaced + nl + text.slice(keyLine.end, range.start) +
      text.slice(range.end);
  } else {
    const range = ownedRange(text, map, index, true);
    edited = text.slice(0, range.start) + text.slice(range.end);
  }
  checkAgainstOracle(edited, text, (d) => d.deleteIn(["services", name]), file);
  return edited;
}
