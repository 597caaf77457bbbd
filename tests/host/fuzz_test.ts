/**
 * Bad input: thousands of mutated declarations fed to `applyBytes` for the debian system, with
 * `trusted: false` and `trusted: true`. Every mutation is invalid by construction (a byte-level
 * one that still decodes and parses is discarded and not counted), so every one must be refused
 * with its problems, no exception may escape, and nothing on disk may change: the temporary
 * tree the base declaration points into is identical before and after every input, and the
 * state directory is never created.
 *
 * The generator is a seeded PRNG: set MESH_FUZZ_SEED to replay a run; a failure prints the
 * seed, the mutation and the input. The fast tier (tests/support/tier.ts) draws a tenth as many
 * random inputs; the exhaustive ones are all fed in both tiers.
 */

import { AssertionError } from "node:assert";
import { assert, assertEquals } from "../support/assert.ts";
import { byTier } from "../support/tier.ts";
import { applyBytes, type ApplyResult } from "../../host/apply.ts";
import { debian } from "../../systems/debian/mod.ts";

// The contract's limits (docs/design.md and lib/declaration.ts): 16 Mi of content, 64 MiB of input.
const MAX_CONTENT = 16 * 1024 * 1024;
const MAX_INPUT = 64 * 1024 * 1024;
const RANDOM_MUTATIONS = byTier({ whole: 3000, fast: 300 });
/** Random triples of independent faults. */
const RANDOM_TRIPLES = byTier({ whole: 600, fast: 60 });

// ---------------------------------------------------------------------------------------------
// Seeded PRNG (sfc32), so a failing run can be replayed exactly.

class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;
  constructor(seed: number) {
    this.#a = 0x9e3779b9;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 20; i++) this.u32();
  }
  u32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.u32() % (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }
  chance(p: number): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }
  /** `n` distinct indices of [0, size). */
  distinct(n: number, size: number): number[] {
    const all = Array.from({ length: size }, (_, i) => i);
    for (let i = all.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    return all.slice(0, n);
  }
}

// ---------------------------------------------------------------------------------------------
// The tree, the base declaration, and what a mutation is.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };
interface Decl {
  version: Json;
  resources: Json;
  [key: string]: Json;
}

/** One mutated input and what its refusal must name. */
interface Mutation {
  kind: string;
  what: string;
  bytes: Uint8Array;
  /** JSON paths each of which must be the path of some problem ("" is the whole document). */
  paths: string[];
  /** Paths under each of which some problem must lie (a resource whose shape is confused). */
  under?: string[];
  /** Invalid only as untrusted input (an action): fed with `trusted: false` only. */
  untrustedOnly?: boolean;
  /** Text some problem's message must hold (a bound named). */
  says?: string;
}

const FILE_FIELDS = ["id", "type", "path", "content", "mode", "owner", "group"];
const DIRECTORY_FIELDS = ["id", "type", "path", "mode", "owner", "group"];

/** A valid declaration of directories and files under `tree`, some of which already exist. */
function baseDeclaration(tree: string): Decl {
  return {
    version: 1,
    resources: [
      { id: "etc", type: "directory", path: `${tree}/etc`, mode: "0755" },
      {
        id: "app",
        type: "directory",
        path: `${tree}/etc/app`,
        mode: "0750",
        owner: "root",
        group: "0",
      },
      {
        id: "app.config",
        type: "file",
        path: `${tree}/etc/app/config`,
        content: "key = value\n",
        mode: "0640",
      },
      {
        id: "app_motd",
        type: "file",
        path: `${tree}/etc/app/motd`,
        content: "héllo wörld 😀 ∑\n",
        mode: "644",
      },
      { id: "var", type: "directory", path: `${tree}/var`, mode: "0700" },
      { id: "var-state", type: "file", path: `${tree}/var/state`, content: "0", mode: "0600" },
      { id: "empty", type: "file", path: `${tree}/etc/app/empty`, content: "", mode: "0644" },
      { id: "www", type: "directory", path: `${tree}/srv/www`, mode: "2775", group: "root" },
      {
        id: "www.index",
        type: "file",
        path: `${tree}/srv/www/index.html`,
        content: "<!doctype html>\n<p>hi</p>\n",
        mode: "0644",
        owner: "0",
        group: "0",
      },
    ],
  };
}

/** What is on disk before the run: part of the declaration already there, drifted. */
async function prepareTree(root: string, tree: string): Promise<void> {
  await Deno.mkdir(`${tree}/etc/app`, { recursive: true });
  await Deno.chmod(`${tree}/etc`, 0o700);
  await Deno.writeTextFile(`${tree}/etc/app/config`, "stale = true\n");
  await Deno.chmod(`${tree}/etc/app/config`, 0o666);
  await Deno.writeTextFile(`${tree}/etc/foreign`, "not the host's\n");
  await Deno.mkdir(`${tree}/var`, { mode: 0o755 });
  await Deno.writeTextFile(`${root}/sibling`, "beside the tree\n");
}

const clone = <T>(value: T): T => structuredClone(value);
const resourcesOf = (d: Decl): Obj[] => d.resources as Obj[];

/** JSON with `__proto__` allowed as an own key (set with defineProperty, so it is data). */
function setKey(object: Obj, key: string, value: Json): void {
  Object.defineProperty(object, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** The contract's JSON path: `resources[3].mode`, `resources[3]["odd key"]`, "" for the whole. */
function jsonPath(segments: (string | number)[]): string {
  let out = "";
  for (const k of segments) {
    if (typeof k === "number") out += `[${k}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k)) out += out ? `.${k}` : k;
    else out += `[${JSON.stringify(k)}]`;
  }
  return out;
}
const at = (i: number, field?: string) =>
  jsonPath(field ? ["resources", i, field] : ["resources", i]);

const encoder = new TextEncoder();
const encode = (value: unknown) => encoder.encode(JSON.stringify(value));

function mutation(
  kind: string,
  what: string,
  value: unknown,
  paths: string[],
  extra: Partial<Mutation> = {},
): Mutation {
  return { kind, what, bytes: encode(value), paths, ...extra };
}

// ---------------------------------------------------------------------------------------------
// Value catalogues. Each value is invalid where it is used, whatever the rest of the input.

/** Not a string: for every string field. */
const NOT_STRINGS: Json[] = [null, 0, 1, -1, 3.5, 1e300, true, false, [], ["x"], {}, { a: "b" }];
const NOT_ONE: Json[] = [0, 2, -1, 1.5, 1e300, "1", "v1", null, true, [1], { version: 1 }];
const NOT_ARRAYS: Json[] = [null, 0, 1, "[]", "", true, {}, { 0: {} }];
const NOT_OBJECTS: Json[] = [null, 0, 7, "file", "", true, false, [], [{ id: "x" }]];

const BAD_IDS = [
  "",
  " ",
  "a b",
  "a/b",
  "a:b",
  "é",
  "x".repeat(201),
  "id\n",
  "nul\0",
  "tab\t",
  "emoji😀",
  "\ud800",
];
const BAD_TYPES = [
  "",
  "Directory",
  "FILE",
  "dir",
  "files",
  "link",
  "symlink",
  "template",
  " file",
  "file\0",
  "directory ",
];
const BAD_MODES = [
  "",
  "1",
  "64",
  "0o644",
  "0x1a4",
  "rw-r--r--",
  "8644",
  "0648",
  "00644",
  "+644",
  " 644",
  "644 ",
  "644\n",
  "٦٤٤",
  "-644",
  "06440",
  "12345",
  "0999",
];
const BAD_ACCOUNTS = [
  "",
  "Root",
  "ROOT",
  "-root",
  "1root",
  "root user",
  "root:root",
  "ro$ot",
  "é",
  "0x1",
  "-1",
  "1.5",
  "root\n",
  "\ud800",
];

/** Hostile paths for a resource under `tree`; root-like ones only for files (never chmod /). */
function hostilePaths(tree: string, forFile: boolean): string[] {
  const paths = [
    "",
    "etc/app",
    "./etc",
    "../etc",
    "~/etc",
    `${tree}/../escape`,
    `${tree}/etc/../var/x`,
    `${tree}/..`,
    `${tree}/.`,
    `${tree}/./etc`,
    `${tree}//etc`,
    `/${tree}`,
    `${tree}/etc/`,
    `${tree}/etc//`,
    `${tree}/etc/app/\0`,
    `${tree}/nul\0byte`,
    `\0${tree}`,
    `${tree}/${"a".repeat(4097)}`,
    `${tree}/${"long/".repeat(900)}x`,
  ];
  if (forFile) paths.push("/", "//", "/.", "/..", "///", "/./", "/tmp/..");
  return paths;
}

const LONE_SURROGATES = ["\ud800", "a\udfffb", "\udc00\ud800", "ok\ud83d", "\ude00tail"];

/** Names no resource type (or the top level, for TOP_UNKNOWN) accepts. */
const UNKNOWN_KEYS = [
  "extra",
  "Path",
  "PATH",
  "paths",
  "contents",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "",
  " ",
  "id ",
  "type\0",
  "mode_",
  "owners",
  "uid",
  "gid",
  "state",
  "unit",
  "image",
  "command",
  "verify",
  "recursive",
  "force",
  "x".repeat(300),
  "ü",
  "\ud800",
];
const TOP_UNKNOWN = [
  "extra",
  "Version",
  "resource",
  "Resources",
  "__proto__",
  "constructor",
  "",
  "$schema",
  "metadata",
  "name",
  "id",
  "\ud800",
];
const ANY_VALUES: Json[] = [null, 0, "", "x", true, [], {}, { nested: [1, 2, { deep: null }] }];

const HEX64 = "0123456789abcdef".repeat(4);
const UNPINNED_IMAGES = [
  "busybox",
  "busybox:latest",
  "localhost:5000/busybox:1",
  `busybox@sha256:${HEX64.slice(1)}`,
  `busybox@sha256:${HEX64}0`,
  `busybox@sha256:${HEX64.toUpperCase()}`,
  `busybox@sha512:${HEX64}`,
  `@sha256:${HEX64}`,
  `busy box@sha256:${HEX64}`,
  `busybox@sha256:${HEX64}\n`,
  `busybox:latest@sha256:${HEX64.slice(0, 63)}g`,
  "",
];

/** Invalid byte sequences (each one is invalid UTF-8 before any ASCII byte). */
const BAD_UTF8: number[][] = [
  [0xff],
  [0xfe],
  [0x80],
  [0xbf, 0x80],
  [0xc0, 0xaf],
  [0xc1, 0xbf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0xf0, 0x9f, 0x98],
  [0xc3],
];

// ---------------------------------------------------------------------------------------------
// Faults local to one resource: each names the path its problem must carry. Used alone and
// combined (on distinct resources) to check that every fault is reported at once.

type LocalFault = (d: Decl, i: number, rng: Rng, tree: string) => { what: string; path: string };

const fieldsOf = (r: Obj) => (r.type === "file" ? FILE_FIELDS : DIRECTORY_FIELDS);
const REQUIRED = (r: Obj) =>
  r.type === "file" ? ["id", "type", "path", "content", "mode"] : ["id", "type", "path", "mode"];

const LOCAL_FAULTS: LocalFault[] = [
  // a field of the wrong type
  (d, i, rng) => {
    const r = resourcesOf(d)[i]!;
    const field = rng.pick(fieldsOf(r));
    const value = rng.pick(NOT_STRINGS);
    r[field] = value;
    return { what: `${field} = ${JSON.stringify(value)}`, path: at(i, field) };
  },
  // a field of the right type and an invalid value
  (d, i, rng, tree) => {
    const r = resourcesOf(d)[i]!;
    const field = rng.pick(["id", "type", "mode", "owner", "group", "path"]);
    const value = field === "id"
      ? rng.pick(BAD_IDS)
      : field === "type"
      ? rng.pick(BAD_TYPES)
      : field === "mode"
      ? rng.pick(BAD_MODES)
      : field === "path"
      ? rng.pick(hostilePaths(tree, r.type === "file"))
      : rng.pick(BAD_ACCOUNTS);
    r[field] = value;
    return { what: `${field} = ${JSON.stringify(value).slice(0, 80)}`, path: at(i, field) };
  },
  // an unknown field
  (d, i, rng) => {
    const r = resourcesOf(d)[i]!;
    const key = r.type === "directory" && rng.chance(0.15) ? "content" : rng.pick(UNKNOWN_KEYS);
    setKey(r, key, rng.pick(ANY_VALUES));
    return {
      what: `unknown field ${JSON.stringify(key).slice(0, 40)}`,
      path: jsonPath(["resources", i, key]),
    };
  },
  // a required field missing
  (d, i, rng) => {
    const r = resourcesOf(d)[i]!;
    const field = rng.pick(REQUIRED(r));
    delete r[field];
    return { what: `no ${field}`, path: at(i, field) };
  },
  // content that is not Unicode text
  (d, i, rng) => {
    const r = resourcesOf(d)[i]!;
    if (r.type !== "file") {
      r.type = rng.pick(BAD_TYPES);
      return { what: `type = ${JSON.stringify(r.type)}`, path: at(i, "type") };
    }
    r.content = `${rng.pick(["", "text "])}${rng.pick(LONE_SURROGATES)}${rng.pick(["", " more"])}`;
    return { what: "content with a lone surrogate", path: at(i, "content") };
  },
  // a path with a lone surrogate: no file name can hold it as written
  (d, i, rng) => {
    const r = resourcesOf(d)[i]!;
    r.path = `${r.path}${rng.pick(LONE_SURROGATES)}`;
    return { what: "path with a lone surrogate", path: at(i, "path") };
  },
  // the resource is not an object at all
  (d, i, rng) => {
    const value = rng.pick(NOT_OBJECTS);
    (d.resources as Json[])[i] = value;
    return { what: `resource = ${JSON.stringify(value)}`, path: at(i) };
  },
];

/** Faults of the whole document that combine with local ones. */
const TOP_FAULTS: ((d: Decl, rng: Rng) => { what: string; path: string })[] = [
  (d, rng) => {
    d.version = rng.pick(NOT_ONE);
    return { what: `version = ${JSON.stringify(d.version)}`, path: "version" };
  },
  (d, rng) => {
    const key = rng.pick(TOP_UNKNOWN);
    setKey(d as unknown as Obj, key, rng.pick(ANY_VALUES));
    return { what: `unknown top-level field ${JSON.stringify(key)}`, path: jsonPath([key]) };
  },
];

/** `count` local faults on distinct resources, plus sometimes a top-level one. */
function combined(base: Decl, tree: string, rng: Rng, count: number, top: boolean): Mutation {
  const d = clone(base);
  const n = resourcesOf(d).length;
  const faults = rng.distinct(count, n).map((i) => rng.pick(LOCAL_FAULTS)(d, i, rng, tree));
  if (top) faults.push(rng.pick(TOP_FAULTS)(d, rng));
  return mutation(
    `combined-${faults.length}`,
    faults.map((f) => `${f.path}: ${f.what}`).join("; "),
    d,
    faults.map((f) => f.path),
  );
}

// ---------------------------------------------------------------------------------------------
// The deterministic part: every field of every resource with every wrong type, and the whole
// document's shape.

function exhaustive(base: Decl, tree: string): Mutation[] {
  const out: Mutation[] = [];
  const n = resourcesOf(base).length;
  for (let i = 0; i < n; i++) {
    const r0 = resourcesOf(base)[i]!;
    for (const field of fieldsOf(r0)) {
      for (const value of NOT_STRINGS) {
        const d = clone(base);
        resourcesOf(d)[i]![field] = value;
        out.push(
          mutation("wrong-type", `${at(i, field)} = ${JSON.stringify(value)}`, d, [at(i, field)]),
        );
      }
    }
    for (const value of NOT_OBJECTS) {
      const d = clone(base);
      (d.resources as Json[])[i] = value;
      out.push(mutation("wrong-type", `${at(i)} = ${JSON.stringify(value)}`, d, [at(i)]));
    }
    for (const field of REQUIRED(r0)) {
      const d = clone(base);
      delete resourcesOf(d)[i]![field];
      out.push(mutation("missing", `${at(i)} without ${field}`, d, [at(i, field)]));
    }
    for (const path of hostilePaths(tree, r0.type === "file")) {
      const d = clone(base);
      resourcesOf(d)[i]!.path = path;
      out.push(mutation("hostile-path", JSON.stringify(path).slice(0, 100), d, [at(i, "path")]));
    }
  }
  for (const value of NOT_ONE) {
    const d = clone(base);
    d.version = value;
    out.push(mutation("version", `version = ${JSON.stringify(value)}`, d, ["version"]));
  }
  {
    const d = clone(base) as Partial<Decl>;
    delete d.version;
    out.push(mutation("version", "no version", d, ["version"]));
    const e = clone(base) as Partial<Decl>;
    delete e.resources;
    out.push(mutation("missing", "no resources", e, ["resources"]));
  }
  for (const value of NOT_ARRAYS) {
    const d = clone(base);
    d.resources = value;
    out.push(mutation("wrong-type", `resources = ${JSON.stringify(value)}`, d, ["resources"]));
  }
  const tops: [string, string][] = [
    ["null", "null"],
    ["number", "1"],
    ["string", '"{\\"version\\":1,\\"resources\\":[]}"'],
    ["true", "true"],
    ["empty array", "[]"],
    ["array of the declaration", `[${JSON.stringify(base)}]`],
    ["empty text", ""],
    ["whitespace", " \n\t "],
    ["two documents", `${JSON.stringify(base)}${JSON.stringify(base)}`],
    ["trailing junk", `${JSON.stringify(base)} x`],
    ["trailing comma", JSON.stringify(base).replace(/\]\}$/, ",]}")],
    ["single quotes", JSON.stringify(base).replaceAll('"', "'")],
    ["comment", `// declaration\n${JSON.stringify(base)}`],
    ["NaN version", JSON.stringify(base).replace('"version":1', '"version":NaN')],
    ["hex version", JSON.stringify(base).replace('"version":1', '"version":0x1')],
    ["empty object", "{}"],
  ];
  for (const [what, text] of tops) {
    const paths = what === "empty object" ? ["version", "resources"] : [""];
    out.push({ kind: "top-level", what, bytes: encoder.encode(text), paths });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The random part.

const textDecoder = new TextDecoder("utf-8", { fatal: true });
/** Whether `bytes` is a JSON document at all (the independent oracle for byte-level faults). */
function isJson(bytes: Uint8Array): boolean {
  try {
    JSON.parse(textDecoder.decode(bytes));
    return true;
  } catch {
    return false;
  }
}

const DEEP_MARK = "\u0001DEEP\u0001";
/** `value` with the string DEEP_MARK replaced, in its JSON text, by `deep` (raw JSON text). */
function withDeep(value: unknown, deep: string): Uint8Array {
  const text = JSON.stringify(value).replace(JSON.stringify(DEEP_MARK), deep);
  return encoder.encode(text);
}

type Generator = (base: Decl, tree: string, rng: Rng) => Mutation | undefined;

const GENERATORS: [number, string, Generator][] = [
  [14, "local", (base, tree, rng) => {
    const d = clone(base);
    const i = rng.int(0, resourcesOf(d).length - 1);
    const f = rng.pick(LOCAL_FAULTS)(d, i, rng, tree);
    return mutation("local", `${f.path}: ${f.what}`, d, [f.path]);
  }],
  [5, "top", (base, _tree, rng) => {
    const d = clone(base);
    const f = rng.pick(TOP_FAULTS)(d, rng);
    return mutation("top", f.what, d, [f.path]);
  }],
  [10, "combined", (base, tree, rng) => combined(base, tree, rng, rng.int(2, 4), rng.chance(0.3))],
  [6, "unknown-field", (base, _tree, rng) => {
    const d = clone(base);
    const i = rng.int(0, resourcesOf(d).length - 1);
    const keys = rng.distinct(rng.int(1, 3), UNKNOWN_KEYS.length).map((k) => UNKNOWN_KEYS[k]!);
    for (const key of keys) setKey(resourcesOf(d)[i]!, key, rng.pick(ANY_VALUES));
    return mutation(
      "unknown-field",
      `resources[${i}] + ${JSON.stringify(keys).slice(0, 120)}`,
      d,
      keys.map((k) => jsonPath(["resources", i, k])),
    );
  }],
  [5, "duplicate-id", (base, _tree, rng) => {
    const d = clone(base);
    const [a, b] = rng.distinct(2, resourcesOf(d).length).sort((x, y) => x - y) as [number, number];
    resourcesOf(d)[b]!.id = resourcesOf(d)[a]!.id!;
    return mutation("duplicate-id", `resources[${b}].id = resources[${a}].id`, d, [at(b, "id")]);
  }],
  [5, "duplicate-path", (base, _tree, rng) => {
    const d = clone(base);
    const [a, b] = rng.distinct(2, resourcesOf(d).length).sort((x, y) => x - y) as [number, number];
    resourcesOf(d)[b]!.path = resourcesOf(d)[a]!.path!;
    return mutation("duplicate-path", `resources[${b}].path = resources[${a}].path`, d, [
      at(b, "path"),
    ]);
  }],
  [5, "type-confusion", (base, _tree, rng) => {
    const d = clone(base);
    const i = rng.int(0, resourcesOf(d).length - 1);
    const r = resourcesOf(d)[i]!;
    // A directory has no content and a file needs one; the other types share no field shape.
    const to = rng.pick(
      ["service", "package", "container", "action", r.type === "file" ? "directory" : "file"],
    );
    r.type = to;
    return mutation("type-confusion", `resources[${i}].type = ${to}`, d, [], { under: [at(i)] });
  }],
  [4, "container", (base, _tree, rng) => {
    const d = clone(base);
    const k = rng.int(0, resourcesOf(d).length);
    const container: Obj = {
      id: "web-container",
      type: "container",
      name: "web",
      image: rng.pick(UNPINNED_IMAGES),
    };
    if (rng.chance(0.5)) container.ports = ["127.0.0.1:8080:80/tcp"];
    if (rng.chance(0.5)) container.env = { MODE: "test" };
    resourcesOf(d).splice(k, 0, container);
    return mutation("container", `image ${JSON.stringify(container.image)}`, d, [
      at(k, "image"),
    ]);
  }],
  [3, "other-types", (base, _tree, rng) => {
    const d = clone(base);
    const k = rng.int(0, resourcesOf(d).length);
    const options: [Obj, string][] = [
      [{ id: "svc", type: "service", unit: "nginx.service", state: "started" }, "state"],
      [{ id: "svc", type: "service", unit: "nginx service", state: "running" }, "unit"],
      [{ id: "svc", type: "service", unit: "a.service", state: "running", boot: "on" }, "boot"],
      [{ id: "pkg", type: "package", package: "-rf" }, "package"],
      [{ id: "pkg", type: "package", package: "curl", version: "1" }, "version"],
      [{ id: "act", type: "action", command: [], verify: ["true"] }, "command"],
      [{ id: "act", type: "action", command: ["true"] }, "verify"],
      [{ id: "act", type: "action", command: ["true"], verify: "true" }, "verify"],
      [{
        id: "ct",
        type: "container",
        name: "-web",
        image: `busybox@sha256:${HEX64}`,
      }, "name"],
      [{
        id: "ct",
        type: "container",
        name: "web",
        image: `busybox@sha256:${HEX64}`,
        ports: ["80"],
      }, "ports"],
    ];
    const [resource, field] = rng.pick(options);
    resourcesOf(d).splice(k, 0, resource);
    return mutation("other-types", `${resource.type} with a bad ${field}`, d, [], {
      under: [jsonPath(["resources", k, field])],
    });
  }],
  [2, "action-untrusted", (base, _tree, rng) => {
    const d = clone(base);
    const k = rng.int(0, resourcesOf(d).length);
    resourcesOf(d).splice(k, 0, {
      id: "act",
      type: "action",
      command: ["/bin/touch", "/nonexistent/never"],
      verify: ["/bin/false"],
    });
    return mutation("action-untrusted", `a valid action at resources[${k}]`, d, [at(k)], {
      untrustedOnly: true,
    });
  }],
  [6, "truncated", (base, _tree, rng) => {
    const full = encode(base);
    const cut = rng.int(0, full.length - 1);
    const bytes = full.slice(0, cut);
    if (isJson(bytes)) return undefined;
    return { kind: "truncated", what: `cut at ${cut} of ${full.length}`, bytes, paths: [""] };
  }],
  [6, "byte-flip", (base, _tree, rng) => {
    const bytes = encode(base);
    const flips: string[] = [];
    for (let n = rng.int(1, 3); n > 0; n--) {
      const pos = rng.int(0, bytes.length - 1);
      const to = (bytes[pos]! ^ rng.int(1, 255)) & 0xff;
      flips.push(`${pos}: ${bytes[pos]} -> ${to}`);
      bytes[pos] = to;
    }
    if (isJson(bytes)) return undefined; // still JSON: not counted
    return { kind: "byte-flip", what: flips.join(", "), bytes, paths: [""] };
  }],
  [5, "invalid-utf8", (base, _tree, rng) => {
    const full = encode(base);
    let pos = rng.int(0, full.length - 1);
    while (full[pos]! >= 0x80) pos--; // before an ASCII byte: a character boundary
    const bad = rng.pick(BAD_UTF8);
    const bytes = new Uint8Array(full.length + bad.length);
    bytes.set(full.subarray(0, pos));
    bytes.set(bad, pos);
    bytes.set(full.subarray(pos), pos + bad.length);
    try {
      textDecoder.decode(bytes);
      return undefined; // cannot happen: the sequence is invalid before ASCII
    } catch { /* invalid UTF-8, as meant */ }
    return {
      kind: "invalid-utf8",
      what: `${bad.map((b) => b.toString(16)).join(" ")} at ${pos}`,
      bytes,
      paths: [""],
    };
  }],
  [4, "deep", (original, _tree, rng) => {
    // Past the bound of 64 levels (lib/text_bounds.ts), up to 50,000: refused whole, naming the
    // bound, before anything walks it (docs/design.md, "Hostile inputs", rule 3). Within it (at
    // most 50 levels, inside at most 3 of the declaration's own): refused by the schema, at the
    // place of the nesting.
    const depth = rng.chance(0.3) ? rng.int(2, 50) : rng.int(65, 50_000);
    const kind = rng.int(0, 4);
    const array = "[".repeat(depth) + "]".repeat(depth);
    const object = '{"a":'.repeat(depth) + "null" + "}".repeat(depth);
    const deep = rng.chance(0.5) ? array : object;
    const base = clone(original);
    const what = `depth ${depth}, ${
      ["document", "resource", "unknown field", "content", "mode"][kind]
    }`;
    if (depth > 64) {
      const bytes = kind === 0 ? encoder.encode(deep) : (() => {
        if (kind === 1) (base.resources as Json[])[2] = DEEP_MARK;
        else if (kind === 2) base.junk = DEEP_MARK;
        else if (kind === 3) resourcesOf(base)[3]!.content = DEEP_MARK;
        else resourcesOf(base)[5]!.mode = DEEP_MARK;
        return withDeep(base, deep);
      })();
      return { kind: "deep", what, bytes, paths: [""], says: "more than 64 levels deep" };
    }
    switch (kind) {
      case 0:
        return {
          kind: "deep",
          what,
          bytes: encoder.encode(deep),
          paths: deep === array ? [""] : ["a", "version", "resources"],
        };
      case 1:
        (base.resources as Json[])[2] = DEEP_MARK;
        // An array is not a resource; an object is one of no known type.
        return deep === array
          ? { kind: "deep", what, bytes: withDeep(base, deep), paths: [at(2)] }
          : { kind: "deep", what, bytes: withDeep(base, deep), paths: [], under: [at(2)] };
      case 2:
        base.junk = DEEP_MARK;
        return { kind: "deep", what, bytes: withDeep(base, deep), paths: ["junk"] };
      case 3:
        resourcesOf(base)[3]!.content = DEEP_MARK;
        return { kind: "deep", what, bytes: withDeep(base, deep), paths: [at(3, "content")] };
      default:
        resourcesOf(base)[5]!.mode = DEEP_MARK;
        return { kind: "deep", what, bytes: withDeep(base, deep), paths: [at(5, "mode")] };
    }
  }],
  [2, "long", (base, _tree, rng) => {
    // One very long line: a key or a value of up to 800,000 characters, refused at its place
    // (a declaration is JSON, not read by lines: its length bound is its 64 MiB).
    const d = clone(base);
    const i = rng.int(0, resourcesOf(d).length - 1);
    const long = rng.pick(["k", "é", "😀", "\\"]).repeat(rng.int(1_025, 400_000));
    if (rng.chance(0.5)) {
      setKey(resourcesOf(d)[i]!, long, "x");
      return mutation("long", `a key of ${long.length} characters`, d, [
        jsonPath(["resources", i, long]),
      ]);
    }
    // Fields whose pattern bounds their length (an owner has none: a long name is refused by
    // the machine, which has no such account, not by the schema).
    const field = rng.pick(["id", "mode", "type"]);
    resourcesOf(d)[i]![field] = long;
    return mutation("long", `${field} of ${long.length} characters`, d, [at(i, field)]);
  }],
  [2, "non-object", (base, _tree, rng) => {
    const value = rng.pick<Json>([
      null,
      0,
      -1,
      "declaration",
      true,
      [],
      [clone(base) as unknown as Json],
      [null],
    ]);
    return mutation("non-object", JSON.stringify(value).slice(0, 80), value, [""]);
  }],
];

const TOTAL_WEIGHT = GENERATORS.reduce((sum, [w]) => sum + w, 0);
function generate(base: Decl, tree: string, rng: Rng): Mutation {
  for (;;) {
    let roll = rng.int(0, TOTAL_WEIGHT - 1);
    for (const [weight, , gen] of GENERATORS) {
      if (roll < weight) {
        const m = gen(base, tree, rng);
        if (m) return m;
        break;
      }
      roll -= weight;
    }
  }
}

/** A few inputs of huge size: kept apart, since each takes tens of milliseconds. */
function huge(base: Decl, rng: Rng): Mutation[] {
  const out: Mutation[] = [];
  for (const extra of [1, rng.int(2, 4096), rng.int(4097, 1 << 20)]) {
    const d = clone(base);
    const i = rng.pick([2, 3, 5, 6, 8]);
    resourcesOf(d)[i]!.content = "a".repeat(MAX_CONTENT + extra);
    out.push(mutation("huge", `content of ${MAX_CONTENT + extra} bytes`, d, [at(i, "content")]));
  }
  {
    // Valid in every other way: an empty declaration padded past the input limit.
    const head = encoder.encode('{"version":1,"resources":[]}');
    const bytes = new Uint8Array(MAX_INPUT + 1).fill(0x20);
    bytes.set(head, 0);
    out.push({ kind: "huge", what: `${bytes.length} bytes of input`, bytes, paths: [""] });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// What is on disk: names, kinds, modes, sizes and content hashes, under the temporary root.

async function listing(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, rel: string) => {
    const names: string[] = [];
    for await (const e of Deno.readDir(dir)) names.push(e.name);
    names.sort();
    for (const name of names) {
      const path = `${dir}/${name}`;
      const r = rel ? `${rel}/${name}` : name;
      const info = await Deno.lstat(path);
      const mode = ((info.mode ?? 0) & 0o7777).toString(8);
      if (info.isSymlink) out.push(`${r} symlink -> ${await Deno.readLink(path)}`);
      else if (info.isDirectory) {
        out.push(`${r} dir ${mode} ${info.uid}:${info.gid}`);
        await walk(path, r);
      } else {
        const hash = new Uint8Array(
          await crypto.subtle.digest("SHA-256", await Deno.readFile(path)),
        );
        const hex = Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
        out.push(`${r} file ${mode} ${info.uid}:${info.gid} ${info.size} ${hex}`);
      }
    }
  };
  await walk(root, "");
  return out;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  return `sha256:${Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** How an input is shown in a failure: its text (lossy) cut short, with its size. */
function preview(bytes: Uint8Array): string {
  const text = new TextDecoder().decode(bytes.subarray(0, 1500));
  return `${bytes.length} bytes: ${JSON.stringify(text)}${bytes.length > 1500 ? " ..." : ""}`;
}

// ---------------------------------------------------------------------------------------------
// The run.

interface Fixture {
  root: string;
  tree: string;
  stateDir: string;
  base: Decl;
  before: string[];
}

async function fixture(): Promise<Fixture> {
  const root = await Deno.makeTempDir({ prefix: "mesh-fuzz-" });
  const tree = `${root}/tree`;
  await prepareTree(root, tree);
  return {
    root,
    tree,
    stateDir: `${root}/state`,
    base: baseDeclaration(tree),
    before: await listing(root),
  };
}

/** Feeds one mutation and checks everything the contract promises for it. */
async function feed(
  fx: Fixture,
  m: Mutation,
  trusted: boolean,
  context: { seed: number; index: number },
): Promise<ApplyResult> {
  const fail = (why: string, result?: ApplyResult): never => {
    throw new AssertionError({
      message: `fuzz input #${context.index} (seed ${context.seed}, replay with ` +
        `MESH_FUZZ_SEED=${context.seed}), trusted: ${trusted}\n` +
        `  mutation: ${m.kind}: ${m.what}\n  expected problem paths: ${JSON.stringify(m.paths)}` +
        `${m.under ? ` under ${JSON.stringify(m.under)}` : ""}\n` +
        `  input: ${preview(m.bytes)}\n` +
        (result ? `  result: ${JSON.stringify(result).slice(0, 3000)}\n` : "") +
        `  ${why}`,
    });
  };
  let result: ApplyResult;
  try {
    result = await applyBytes(m.bytes, {
      system: debian,
      stateDir: fx.stateDir,
      version: "fuzz",
      trusted,
    });
  } catch (error) {
    return fail(`an exception escaped applyBytes: ${(error as Error)?.stack ?? String(error)}`);
  }
  if (result.outcome !== "refused") fail(`outcome is "${result.outcome}", not "refused"`, result);
  if (result.applied !== 0 || result.changes.length !== 0) fail("something was applied", result);
  if (!Array.isArray(result.problems) || result.problems.length < 1) fail("no problem", result);
  for (const p of result.problems) {
    if (typeof p.message !== "string" || p.message.trim() === "") {
      fail(`a problem without a message: ${JSON.stringify(p)}`, result);
    }
    if (typeof p.path !== "string") fail(`a problem without a path: ${JSON.stringify(p)}`, result);
  }
  if (m.says !== undefined && !result.problems.some((p) => p.message.includes(m.says!))) {
    fail(`no problem says ${JSON.stringify(m.says)}`, result);
  }
  const paths = result.problems.map((p) => p.path);
  for (const want of m.paths) {
    if (!paths.includes(want)) fail(`no problem at ${JSON.stringify(want)}`, result);
  }
  for (const under of m.under ?? []) {
    const inside = (p?: string) =>
      p === under || p?.startsWith(`${under}.`) || p?.startsWith(`${under}[`);
    if (!paths.some(inside)) fail(`no problem at or under ${JSON.stringify(under)}`, result);
  }
  if (m.paths.length > 1 && result.problems.length < m.paths.length) {
    fail(`${m.paths.length} faults but ${result.problems.length} problems`, result);
  }
  if (m.bytes.length <= 1 << 20 && result.declaration !== await sha256(m.bytes)) {
    fail(`declaration digest ${result.declaration} is not the input's`, result);
  }
  if (await exists(fx.stateDir)) fail("the state directory was created", result);
  const now = await listing(fx.root);
  if (JSON.stringify(now) !== JSON.stringify(fx.before)) {
    const gone = fx.before.filter((l) => !now.includes(l));
    const added = now.filter((l) => !fx.before.includes(l));
    fail(`the disk changed:\n  - ${gone.join("\n  - ")}\n  + ${added.join("\n  + ")}`, result);
  }
  return result;
}

function seedOf(): number {
  const given = Deno.env.get("MESH_FUZZ_SEED");
  if (given !== undefined && given !== "") return Number(given) >>> 0;
  return crypto.getRandomValues(new Uint32Array(1))[0]!;
}

Deno.test("bad input: thousands of mutated declarations are refused and touch nothing", async () => {
  const seed = seedOf();
  console.log(`fuzz seed ${seed} (replay with MESH_FUZZ_SEED=${seed})`);
  const rng = new Rng(seed);
  const fx = await fixture();
  const cwd = Deno.cwd();
  // A relative path, if ever accepted, would land in the tree, where the listing sees it.
  Deno.chdir(fx.tree);
  try {
    // The base is valid and one fault away from every mutation: a dry run accepts it, in
    // both modes, and changes nothing.
    for (const trusted of [false, true]) {
      const ok = await applyBytes(encode(fx.base), {
        system: debian,
        stateDir: fx.stateDir,
        version: "fuzz",
        trusted,
        dryRun: true,
      });
      assertEquals(ok.outcome, "applied", JSON.stringify(ok.problems));
      assertEquals(ok.total, resourcesOf(fx.base).length);
      assert(!(await exists(fx.stateDir)), "a dry run created the state directory");
    }
    assertEquals(await listing(fx.root), fx.before, "a dry run changed the disk");

    const inputs = [...exhaustive(fx.base, fx.tree), ...huge(fx.base, rng)];
    for (let n = 0; n < RANDOM_MUTATIONS; n++) inputs.push(generate(fx.base, fx.tree, rng));
    const kinds = new Map<string, number>();
    let calls = 0;
    for (const [index, m] of inputs.entries()) {
      kinds.set(m.kind, (kinds.get(m.kind) ?? 0) + 1);
      for (const trusted of m.untrustedOnly ? [false] : [false, true]) {
        await feed(fx, m, trusted, { seed, index });
        calls++;
      }
    }
    assert(inputs.length >= RANDOM_MUTATIONS, `only ${inputs.length} inputs`);
    console.log(
      `${inputs.length} mutated declarations, ${calls} refusals checked: ${
        [...kinds].map(([k, v]) => `${k} ${v}`).join(", ")
      }`,
    );
    assertEquals(await listing(fx.root), fx.before);
    assert(!(await exists(fx.stateDir)), "the state directory was created");
  } finally {
    Deno.chdir(cwd);
    await Deno.remove(fx.root, { recursive: true });
  }
});

Deno.test("bad input: independent faults are all reported at once, each with its path", async () => {
  const seed = seedOf();
  console.log(`fuzz seed ${seed} (replay with MESH_FUZZ_SEED=${seed})`);
  const rng = new Rng(seed ^ 0x5eed);
  const fx = await fixture();
  const cwd = Deno.cwd();
  Deno.chdir(fx.tree);
  try {
    // Three faults in three resources: a mode of the wrong type, an unknown field, a relative
    // path. Each is reported, at its own path, in one refusal.
    const d = clone(fx.base);
    resourcesOf(d)[1]!.mode = 755;
    setKey(resourcesOf(d)[3]!, "ensure", "present");
    resourcesOf(d)[7]!.path = "srv/www";
    for (const trusted of [false, true]) {
      const result = await feed(
        fx,
        {
          kind: "three",
          what: "mode 755, unknown field, relative path",
          bytes: encode(d),
          paths: ["resources[1].mode", "resources[3].ensure", "resources[7].path"],
        },
        trusted,
        { seed, index: -1 },
      );
      assert(result.problems.length >= 3, JSON.stringify(result.problems));
      const idAt = (path: string) => result.problems.find((p) => p.path === path)?.id;
      assertEquals(
        [idAt("resources[1].mode"), idAt("resources[3].ensure"), idAt("resources[7].path")],
        ["app", "app_motd", "www"],
        "each problem names its resource's id",
      );
    }
    // And random triples of independent faults on distinct resources (600 in the whole suite).
    for (let index = 0; index < RANDOM_TRIPLES; index++) {
      const m = combined(fx.base, fx.tree, rng, 3, false);
      assertEquals(m.paths.length, 3);
      for (const trusted of [false, true]) await feed(fx, m, trusted, { seed, index });
    }
  } finally {
    Deno.chdir(cwd);
    await Deno.remove(fx.root, { recursive: true });
  }
});
