/**
 * The registry: what should exist on this machine (docs/design.md, "Registry (reconcile input),
 * version 1, YAML"). One strict zod schema; the type is derived from it. Every problem is
 * collected at once and placed at its line and column with the `yaml` package's line counter.
 *
 * @module
 */

import process from "node:process";
import { z } from "zod";
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  type Pair,
  parseDocument,
  type YAMLMap,
} from "yaml";
import { messageOf, readRegularFileLimited } from "../lib/atomic.ts";
import { formatPath } from "../lib/json_path.ts";
import { quickLoad } from "./registry_fast.ts";

export { formatPath };

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Linux account names as `useradd` accepts them (lowercase, digits, `_`, `-`, optional `$`). */
const ACCOUNT = /^[a-z_][a-z0-9_-]*\$?$/;
/** Container names as podman and docker accept them. */
const CONTAINER = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** A DNS host name (lowercase), optionally a leading `*.` wildcard label. */
const HOST = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The largest registry read, in bytes (16 MiB; a registry of a thousand entries is well under
 * 1 MiB). A larger file, or a device that never ends, is refused rather than read into memory.
 */
export const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;

/** An entry's name, also the key of the `services` map. */
export const EntryName = z.string().regex(NAME, "Must be letters, digits, '.', '_' or '-'");
/** A Linux account name. */
export const AccountName = z.string().regex(ACCOUNT, "Must be a Linux account name");
/** A TCP port, 1 to 65535. */
export const Port = z.number({
  error: (issue) =>
    issue.code === "invalid_type"
      ? `Must be a port number, 1 to 65535${
        Array.isArray(issue.input) ? "" : ", or a list of them"
      } (not ${JSON.stringify(issue.input) ?? String(issue.input)})`
      : undefined,
}).int("Must be a whole number").min(1, "Must be a port number, 1 to 65535").max(
  65535,
  "Must be a port number, 1 to 65535",
);
/**
 * A web address: the host name the reverse proxy serves (lowercase; `*.` wildcard allowed), or
 * `*` for a catch-all route that answers any host name.
 */
export const WebAddress = z.string().refine(
  (h) => h === "*" || HOST.test(h),
  "Must be a lowercase host name, e.g. app.example.org, or * for a catch-all route",
);
const ContainerName = z.string().regex(CONTAINER, "Must be a container name");
const AbsolutePath = z.string().refine(
  (p) => p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\0"),
  "Must be an absolute path without '..'",
);
const OneOrMany = <T extends z.ZodType>(item: T) =>
  z.union([item, z.array(item).min(1)]).transform((v) =>
    (Array.isArray(v) ? v : [v]) as z.output<T>[]
  );

const shared = {
  /** The account the entry's container or process runs as; containers are asked about there. */
  user: AccountName.optional(),
  /** TCP port or ports the entry listens on (the registry is the port table). */
  port: OneOrMany(Port).optional(),
  /** Web addresses the reverse proxy serves for the entry. */
  web: OneOrMany(WebAddress).optional(),
  /** Whether the entry reports telemetry. */
  telemetry: z.boolean().optional(),
  /** Names of the secrets the entry may hold (names only, never values). */
  secrets: z.array(z.string().min(1)).optional(),
  /** Directories holding state worth backing up. */
  state: z.array(AbsolutePath).optional(),
  /** Database (or databases) the entry owns. */
  database: OneOrMany(z.string().min(1)).optional(),
  /** Free text; the place to write why an entry that looks removable is not. */
  note: z.string().optional(),
};

/**
 * The fields every kind shares, not strict: an entry whose `kind` is invalid or missing is still
 * checked on these, so a bad kind does not hide its other problems (the fields only some kinds
 * have cannot be judged without one).
 */
const SharedFields = z.object(shared);

/** `kind: service`: a container service. Its container must be running. */
export const ServiceEntry = z.strictObject({
  kind: z.literal("service"),
  container: ContainerName,
  ...shared,
});
/** `kind: site`: a static site served by the proxy; `redirect` for an address that only redirects. */
export const SiteEntry = z.strictObject({
  kind: z.literal("site"),
  container: ContainerName.optional(),
  redirect: z.url({ protocol: /^https?$/, error: "Must be an http(s) URL" }).optional(),
  ...shared,
});
/** `kind: batch`: a timer-driven job; its `container` runs only while the job does. */
export const BatchEntry = z.strictObject({
  kind: z.literal("batch"),
  timer: z.string().regex(
    // A template without an instance (`foo@.timer`) cannot run, and asking systemd about one
    // fails the whole call for every other timer.
    /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.timer$/,
    "Must be a systemd timer unit, e.g. publish.timer (a template needs an instance: x@y.timer)",
  ),
  container: ContainerName.optional(),
  ...shared,
});
/**
 * `kind: daemon`: a non-container process of the machine, such as sshd. `unit`: the systemd
 * service that starts it at boot (e.g. `ssh.service`); without it, the unit is found from the
 * process holding its port.
 */
export const DaemonEntry = z.strictObject({
  kind: z.literal("daemon"),
  unit: z.string().regex(
    /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.service$/,
    "Must be a systemd service unit, e.g. ssh.service (a template needs an instance)",
  ).optional(),
  ...shared,
});

const ENTRY_KINDS: readonly string[] = ["service", "site", "batch", "daemon"];

/** One registry entry: a discriminated union on `kind`. */
export const Entry = z.discriminatedUnion("kind", [
  ServiceEntry,
  SiteEntry,
  BatchEntry,
  DaemonEntry,
], {
  error: (issue) =>
    issue.code === "invalid_union"
      ? "kind must be one of: service, site, batch, daemon"
      : undefined,
});

const RegistryShape = z.strictObject({
  version: z.literal(1, { error: "Unsupported registry version; this program reads version 1" }),
  accounts: z.array(AccountName).min(
    1,
    "List at least one account whose containers are asked about",
  ),
  // Names are checked with the other cross-entry checks: a bad name must not hide the
  // problems of its entry (a record's key failing stops zod from checking its value).
  services: z.record(z.string(), Entry),
});

/**
 * The registry file, version 1, with the checks that span entries. {@linkcode parseRegistry}
 * also runs those checks on the raw input when the per-field schema fails, so their problems
 * are reported together with the schema's own.
 */
export const Registry: z.ZodType<z.output<typeof RegistryShape>, unknown> = RegistryShape
  .superRefine((registry, ctx) => {
    for (const issue of crossCheck(registry)) ctx.addIssue({ code: "custom", ...issue });
  });

/**
 * The checks that span entries: an account listed twice, a port claimed by two entries, an
 * address declared twice, a container claimed twice (per account), a container in an account
 * that is not asked about. Works on raw, possibly invalid data, so these problems are reported
 * together with the schema's own rather than only once everything else is fixed.
 */
function crossCheck(raw: unknown): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const data = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const accounts = Array.isArray(data.accounts)
    ? data.accounts.filter((a) => typeof a === "string")
    : [];
  const seen = new Set<string>();
  accounts.forEach((account, i) => {
    if (seen.has(account)) {
      issues.push({ path: ["accounts", i], message: `Account "${account}" is listed twice` });
    }
    seen.add(account);
  });
  const services = typeof data.services === "object" && data.services !== null
    ? data.services as Record<string, unknown>
    : {};
  const ports = new Map<number, string>();
  const containers = new Map<string, string>();
  const addresses = new Map<string, string>();
  for (const [name, value] of Object.entries(services)) {
    if (!NAME.test(name)) {
      issues.push({
        path: ["services", name],
        message:
          `Entry name "${name}" must be letters, digits, '.', '_' or '-' (starting with a letter or digit)`,
      });
    }
    if (typeof value !== "object" || value === null) continue;
    const entry = value as Record<string, unknown>;
    const many = <T>(v: unknown, ok: (x: unknown) => x is T): T[] =>
      Array.isArray(v) ? v.filter(ok) : ok(v) ? [v] : [];
    for (const p of many(entry.port, (x): x is number => typeof x === "number")) {
      const other = ports.get(p);
      if (other !== undefined) {
        issues.push({
          path: ["services", name, "port"],
          message: other === name
            ? `Port ${p} is listed twice in this entry`
            : `Port ${p} is already claimed by "${other}"`,
        });
      } else ports.set(p, name);
    }
    for (const address of many(entry.web, (x): x is string => typeof x === "string")) {
      const other = addresses.get(address);
      if (other !== undefined) {
        issues.push({
          path: ["services", name, "web"],
          message: `Address "${address}" is already declared by "${other}"`,
        });
      } else addresses.set(address, name);
    }
    if (typeof entry.container === "string") {
      if (entry.user === undefined) {
        issues.push({
          path: ["services", name, "user"],
          message: `An entry with a container must name the account it runs in (one of: ${
            accounts.join(", ")
          })`,
        });
      } else if (typeof entry.user === "string") {
        const key = `${entry.user}/${entry.container}`;
        const other = containers.get(key);
        if (other !== undefined) {
          issues.push({
            path: ["services", name, "container"],
            message:
              `Container "${entry.container}" of account "${entry.user}" is already claimed by "${other}"`,
          });
        } else containers.set(key, name);
        if (!accounts.includes(entry.user)) {
          issues.push({
            path: ["services", name, "user"],
            message:
              `Account "${entry.user}" is not in accounts, so its containers are never asked about`,
          });
        }
      }
    }
    if (entry.kind === "site" && entry.redirect !== undefined && entry.web === undefined) {
      issues.push({
        path: ["services", name, "redirect"],
        message: "A redirect needs the web addresses that redirect",
      });
    }
  }
  return issues;
}

/** A parsed, valid registry. */
export type Registry = z.output<typeof RegistryShape>;
/** One valid registry entry. */
export type Entry = z.output<typeof Entry>;
/** The kinds of entry. */
export type EntryKind = Entry["kind"];

/** One problem found in a registry file, placed where it is. */
export interface RegistryProblem {
  /** Path inside the document, e.g. `services.web.port`; empty for the whole document. */
  path: string;
  /** 1-based line, 0 when the problem has no place (e.g. an unreadable file). */
  line: number;
  /** 1-based column. */
  column: number;
  message: string;
}

/** A registry that could not be read or is invalid; carries every problem at once. */
export class RegistryError extends Error {
  readonly file: string;
  readonly problems: RegistryProblem[];
  constructor(file: string, problems: RegistryProblem[]) {
    const unread = problems.length === 1 && problems[0]!.line === 0 &&
      problems[0]!.message.startsWith("Cannot read registry: ");
    super(
      unread
        // A file that could not be read is not an invalid one: say it as what it is.
        ? `Cannot read registry "${file}": ${
          problems[0]!.message.slice("Cannot read registry: ".length)
        }`
        : `Invalid registry "${file}" (${problems.length} problem${
          problems.length === 1 ? "" : "s"
        }):\n` +
          problems.map((p) => `  ${formatProblem(file, p)}`).join("\n"),
    );
    this.name = "RegistryError";
    this.file = file;
    this.problems = problems;
  }
}

/** Renders one problem as `file:line:column: path: message`. */
export function formatProblem(file: string, p: RegistryProblem): string {
  const where = p.line > 0 ? `${file}:${p.line}:${p.column}` : file;
  return `${where}: ${p.path ? `${p.path}: ` : ""}${p.message}`;
}

/**
 * Reads and validates a registry file.
 *
 * @throws {RegistryError} when the file is missing, is not a regular file (a directory, a FIFO,
 *   a device: refused before it is opened, so nothing blocks), is larger than
 *   {@linkcode MAX_REGISTRY_BYTES}, is not UTF-8 text, is not valid YAML, or breaks the schema; every problem is listed with its line and column.
 */
export async function loadRegistry(file: string): Promise<Registry> {
  let text: string;
  try {
    const bytes = await readRegularFileLimited(file, MAX_REGISTRY_BYTES);
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    const why = cause instanceof Deno.errors.NotFound
      ? "no such file"
      : cause instanceof TypeError && /encoded data/i.test(cause.message)
      ? "it is not UTF-8 text"
      : cause instanceof RangeError
      ? `it is larger than ${MAX_REGISTRY_BYTES} bytes (16 MiB)`
      : messageOf(cause);
    throw new RegistryError(file, [{
      path: "",
      line: 0,
      column: 0,
      message: `Cannot read registry: ${why}`,
    }]);
  }
  return parseRegistry(text, file);
}

/**
 * Validates registry text. `file` is used only in messages. Linear in the text, problems
 * included (`bench/registry_parse_bench.ts`). A valid registry is read by the fast reader
 * ({@linkcode quickLoad}); one it declines or the schema refuses is read with positions.
 *
 * @throws {RegistryError} with every YAML and schema problem, each at its line and column.
 */
export function parseRegistry(text: string, file = "<registry>"): Registry {
  // A valid registry needs no position: read fast, and only a registry the fast read declines or
  // the schema refuses is read again with every node's position (reconcile/registry_fast.ts).
  const quick = quickLoad(text);
  if (quick !== undefined) {
    const parsed = Registry.safeParse(quick);
    if (parsed.success) return parsed.data;
  }
  let lineCounter = new LineCounter();
  // The yaml package's own duplicate-key check compares every key with every earlier key of its
  // map (quadratic in the entries: 29,000 entries took 11 s); duplicateKeys finds the same keys
  // with one set per map and reports them where and in the order the package does.
  let doc = quietly(() =>
    parseDocument(text, { lineCounter, uniqueKeys: false, prettyErrors: false })
  );
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
  const parsed = Registry.safeParse(data);
  if (parsed.success) return parsed.data;
  const issues = withKindless(data, flattenUnions(data, parsed.error.issues));
  const key = (path: PropertyKey[], message: string) =>
    `${formatPath(path as (string | number)[])}\0${message}`;
  const already = new Set(issues.map((i) => key(i.path, i.message)));
  for (const extra of crossCheck(data)) {
    if (!already.has(key(extra.path, extra.message))) issues.push({ code: "custom", ...extra });
  }
  const index = new WeakMap<YAMLMap, Map<string, Pair>>();
  for (const issue of issues) {
    const path = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys ?? []) {
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
      message: issue.code === "invalid_type" && issue.message.endsWith("received undefined")
        ? `Missing required field "${String(path[path.length - 1])}"`
        : issue.message,
    });
  }
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  throw new RegistryError(file, problems);
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
    } else if (
      n && "items" in n && Array.isArray((n as { items: unknown[] }).items) &&
      typeof step === "number"
    ) {
      const item = (n as unknown as { items: Node[] }).items[step];
      if (!item) break;
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

/** The JSON Schema of the registry, for editors (`mesh-reconcile schema`). */
export function registryJsonSchema(): unknown {
  return z.toJSONSchema(Registry, { io: "input", unrepresentable: "any" });
}
