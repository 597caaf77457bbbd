/**
 * The registry's positioned read: a registry the fast read declines or the validator generated
 * from the schema (reconcile/registry_schema.ts) refuses is read again with the `yaml` package,
 * whose line counter places every problem at its line and column; every problem is collected at
 * once. The schema and the types are reconcile/registry_schema.ts's, re-exported here; reading a
 * file (the fast read, then this one when needed) is reconcile/registry_load.ts's `loadRegistry`.
 *
 * @module
 */

import process from "node:process";
import {
  type Document,
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
  type YAMLMap,
} from "yaml";
import { messageOf } from "../lib/atomic.ts";
import { parseDocumentBounded, YamlBoundError } from "../lib/yaml_bounds.ts";
import { issueMessage } from "../lib/json_path.ts";
import {
  crossCheck,
  ENTRY_KINDS,
  formatPath,
  Registry,
  RegistryError,
  type RegistryProblem,
  SharedFields,
} from "./registry_schema.ts";
import { quickLoad, validRegistry } from "./registry_fast.ts";

export * from "./registry_schema.ts";

/**
 * Validates registry text. `file` is used only in messages. Linear in the text, problems
 * included (`bench/registry_parse_bench.ts`). A valid registry is read by the fast reader
 * ({@linkcode quickLoad}, {@linkcode validRegistry}); one it declines or refuses is read with
 * positions.
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 *
 * @example A registry's text, read and checked
 * ```ts
 * import { parseRegistry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const registry = parseRegistry(
 *   `version: 1
 * accounts: [root]
 * services:
 *   shop:
 *     kind: service
 *     container: shop
 *     user: root
 *     port: 8080
 *     web: shop.example.org
 *   sshd: {kind: daemon, user: root, port: 22, unit: ssh.service}
 * `,
 *   "/var/lib/mesh/reconcile/registry.yaml",
 * );
 * assert.deepEqual(Object.keys(registry.services), ["shop", "sshd"]);
 * // One port or one address is read as a list of one.
 * assert.deepEqual(registry.services.shop?.port, [8080]);
 * assert.deepEqual(registry.services.shop?.web, ["shop.example.org"]);
 * ```
 */
export function parseRegistry(text: string, file = "<registry>"): Registry {
  // A valid registry needs no position: read fast, and only a registry the fast read declines or
  // the validator refuses is read again with every node's position (reconcile/registry_fast.ts).
  return validRegistry(quickLoad(text)) ?? parsePlaced(text, file);
}

/**
 * Validates registry text with every node's position (the `yaml` package), without trying the
 * fast read first: what {@linkcode parseRegistry} does once the fast read declined or the
 * validator refused.
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 */
export function parsePlaced(text: string, file = "<registry>"): Registry {
  let lineCounter = new LineCounter();
  // The yaml package's own duplicate-key check compares every key with every earlier key of its
  // map (quadratic in the entries: 29,000 entries took 11 s); duplicateKeys finds the same keys
  // with one set per map and reports them where and in the order the package does. A line or a
  // nesting past lib/yaml_bounds.ts's bounds is refused before anything recurses on the text.
  let doc: Document.Parsed;
  try {
    doc = quietly(() =>
      parseDocumentBounded(text, { lineCounter, uniqueKeys: false, prettyErrors: false })
    );
  } catch (error) {
    if (!(error instanceof YamlBoundError)) throw error;
    throw new RegistryError(file, [{
      path: "",
      line: error.line,
      column: error.column,
      message: error.message,
    }]);
  }
  let errors: { pos: [number, number]; code: string; message: string }[] = doc.errors;
  const duplicates = duplicateKeys(doc.contents);
  if (duplicates.length > 0 && errors.length > 0) {
    // Both kinds of problem: the package's own check keeps its order of the two exactly. Only a
    // file that is broken twice over pays for it.
    lineCounter = new LineCounter();
    doc = quietly(() =>
      parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false })
    );
    errors = doc.errors;
  } else if (duplicates.length > 0) {
    errors = duplicates.map((offset) => ({
      pos: [offset, offset + 1],
      code: "DUPLICATE_KEY",
      message: "Map keys must be unique",
    }));
  }
  const problems: RegistryProblem[] = [];
  for (const error of errors) {
    const pos = lineCounter.linePos(error.pos[0]);
    problems.push({
      path: "",
      line: pos.line,
      column: pos.col,
      message: error.code === "MULTIPLE_DOCS"
        ? "The registry must be one YAML document, and another one starts here (a '---' line " +
          "separates documents): merge them or remove it"
        : error.message.split("\n")[0]!,
    });
  }
  if (problems.length > 0) throw new RegistryError(file, problems);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 1000 });
  } catch (cause) {
    throw new RegistryError(file, [{ path: "", line: 1, column: 1, message: messageOf(cause) }]);
  }
  // No name or field of a registry may be named `__proto__`: said once, at its key, here. (The
  // schema refuses one too, the entry by its name, a field as unknown; what it says of it, or of
  // anything under it, is not said again below.)
  const prototypes = protoKeys(data, []);
  const parsed = Registry.safeParse(data);
  if (parsed.success && prototypes.length === 0) return parsed.data;
  const index = new WeakMap<YAMLMap, Map<string, Pair>>();
  for (const path of prototypes) {
    problems.push({
      path: formatPath(path),
      ...positionOf(doc.contents, path, { lineCounter, index, atKey: true }),
      message: 'A key may not be "__proto__" (JavaScript objects cannot hold it as a name)',
    });
  }
  const issues = parsed.success ? [] : withKindless(data, flattenUnions(data, parsed.error.issues));
  const key = (path: PropertyKey[], message: string) =>
    `${formatPath(path as (string | number)[])}\0${message}`;
  const already = new Set(issues.map((i) => key(i.path, i.message)));
  for (const extra of parsed.success ? [] : crossCheck(data)) {
    if (!already.has(key(extra.path, extra.message))) issues.push({ code: "custom", ...extra });
  }
  // A strict object's `__proto__` field is also one of zod's unknown keys: said once, above.
  const placed = new Set(prototypes.map(formatPath));
  const under = (path: (string | number)[]) =>
    prototypes.some((p) => p.length <= path.length && p.every((k, i) => path[i] === k));
  for (const issue of issues) {
    const path = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
    if (under(path)) continue;
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys ?? []) {
        if (placed.has(formatPath([...path, key]))) continue;
        const pos = positionOf(doc.contents, [...path, key], { lineCounter, index, atKey: true });
        problems.push({
          path: formatPath([...path, key]),
          ...pos,
          message: `Unknown field "${key}"${hintFor(data, path)}`,
        });
      }
      continue;
    }
    problems.push({
      path: formatPath(path),
      ...positionOf(doc.contents, path, { lineCounter, index, atKey: false }),
      message: issueMessage(issue, data, path),
    });
  }
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  throw new RegistryError(file, problems);
}

/** The path of each own `__proto__` key in `value` (a registry as the `yaml` package reads it). */
function protoKeys(value: unknown, at: (string | number)[]): (string | number)[][] {
  if (typeof value !== "object" || value === null) return [];
  const out: (string | number)[][] = [];
  if (Array.isArray(value)) {
    value.forEach((item, i) => out.push(...protoKeys(item, [...at, i])));
    return out;
  }
  for (const key of Object.keys(value)) {
    if (key === "__proto__") out.push([...at, key]);
    else out.push(...protoKeys((value as Record<string, unknown>)[key], [...at, key]));
  }
  return out;
}

/** An issue as {@linkcode parseRegistry} places it. */
interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
  errors?: Issue[][];
}

/**
 * A one-or-many field that fails both ways says only "Invalid input"; its problems are those of
 * the branch the input has the shape of (a list: the list's items; anything else: the single
 * value), placed under the field's path.
 */
function flattenUnions(data: unknown, issues: readonly Issue[]): Issue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== "invalid_union" || issue.errors?.length !== 2) return [issue];
    let input: unknown = data;
    for (const k of issue.path) input = (input as Record<PropertyKey, unknown> | undefined)?.[k];
    const branch = issue.errors[Array.isArray(input) ? 1 : 0]!;
    if (branch.length === 0) return [issue];
    return flattenUnions(data, branch.map((i) => ({ ...i, path: [...issue.path, ...i.path] })));
  });
}

/**
 * Adds, for each entry whose `kind` is invalid or missing, the problems of the fields every kind
 * shares ({@linkcode SharedFields}), so fixing the kind does not reveal more.
 */
function withKindless(data: unknown, issues: Issue[]): Issue[] {
  const services = (data as { services?: unknown } | null)?.services;
  if (typeof services !== "object" || services === null || Array.isArray(services)) return issues;
  const out = [...issues];
  for (const [name, entry] of Object.entries(services)) {
    if (typeof entry !== "object" || entry === null) continue;
    const kind = (entry as { kind?: unknown }).kind;
    if (typeof kind === "string" && ENTRY_KINDS.includes(kind)) continue;
    const shared = SharedFields.safeParse(entry);
    if (shared.success) continue;
    for (const i of flattenUnions(entry, shared.error.issues)) {
      out.push({ ...i, path: ["services", name, ...i.path] });
    }
  }
  return out;
}

function hintFor(data: unknown, path: (string | number)[]): string {
  let node: unknown = data;
  for (const k of path) node = (node as Record<string | number, unknown> | undefined)?.[k];
  const kind = (node as { kind?: unknown } | undefined)?.kind;
  return typeof kind === "string" ? ` for kind ${kind}` : "";
}

/**
 * Finds the line and column of `path` in the document: the deepest node that exists on the
 * way (a missing field is placed at the map that lacks it); with `atKey`, the last step's key.
 */
function positionOf(
  root: Node | null,
  path: (string | number)[],
  options: { lineCounter: LineCounter; index: WeakMap<YAMLMap, Map<string, Pair>>; atKey: boolean },
): { line: number; column: number } {
  const { lineCounter, index, atKey } = options;
  let node: unknown = root;
  let offset = (root as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    const step = path[i]!;
    const n = node as Node | undefined;
    if (n && isMap(n)) {
      const pair = pairsOf(n, index).get(String(step));
      if (!pair) break;
      const keyNode = pair.key as Node;
      if (atKey && i === path.length - 1) {
        offset = keyNode.range?.[0] ?? offset;
        break;
      }
      node = pair.value;
      offset = (pair.value as Node | null)?.range?.[0] ?? keyNode.range?.[0] ?? offset;
    } else if (n && isSeq(n) && typeof step === "number") {
      const item = n.items[step];
      if (!isNode(item)) break;
      node = item;
      offset = item.range?.[0] ?? offset;
    } else break;
  }
  const pos = lineCounter.linePos(offset);
  return { line: pos.line, column: pos.col };
}

/**
 * Runs `parse` (synchronous) with `process.env` replaced by a plain object holding the two
 * variables the `yaml` package reads, and puts it back. The package's Node build reads
 * `process.env.LOG_TOKENS` for every token and `LOG_STREAM` for every document part; under Deno
 * each read is a call into the runtime (`op_get_env`): 4-7 % of a large registry's parse.
 * Nothing else runs while `parse` does, and the variables keep their values.
 */
function quietly<T>(parse: () => T): T {
  const env = process.env;
  const plain: Record<string, string> = {};
  for (const name of ["LOG_TOKENS", "LOG_STREAM"]) {
    const value = env[name];
    if (value !== undefined) plain[name] = value;
  }
  process.env = plain;
  try {
    return parse();
  } finally {
    process.env = env;
  }
}

/**
 * The pairs of a map by their scalar key as a string, the first pair of a key winning (as a
 * search from the start would find it); built once per map and kept in `index`, so placing a
 * problem costs a lookup per step, not a scan of the map (30,000 problems in a map of 30,000
 * entries would be 900 million comparisons).
 */
function pairsOf(map: YAMLMap, index: WeakMap<YAMLMap, Map<string, Pair>>): Map<string, Pair> {
  let pairs = index.get(map);
  if (pairs === undefined) {
    pairs = new Map();
    for (const pair of map.items) {
      if (!isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      if (!pairs.has(key)) pairs.set(key, pair);
    }
    index.set(map, pairs);
  }
  return pairs;
}

/**
 * The offsets of the keys that repeat an earlier key of their map, in the order the `yaml`
 * package's `uniqueKeys` check reports them (each pair's key, then that key's check, then its
 * value) and at the same place (the repeated key's start). Keys are equal as the package compares
 * them: scalars by value (`===`: `.nan` never repeats), anything else only by identity, which two
 * pairs never share. One set per map, so linear in the document.
 */
function duplicateKeys(root: unknown): number[] {
  const found: number[] = [];
  const walk = (node: unknown): void => {
    if (isAlias(node)) return;
    if (isMap(node)) {
      const seen = new Set<unknown>();
      for (const pair of node.items) {
        walk(pair.key);
        const key = pair.key;
        if (isScalar(key) && !Number.isNaN(key.value)) {
          if (seen.has(key.value)) found.push(key.range?.[0] ?? 0);
          else seen.add(key.value);
        }
        walk(pair.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) walk(item);
    } else if (isPair(node)) {
      walk(node.key);
      walk(node.value);
    }
  };
  walk(root);
  return found;
}
