/**
 * The fast path of a boundary's reader, generated from its one zod schema: each schema of
 * {@linkcode TARGETS} is turned into JSON Schema (zod's `z.toJSONSchema`, the input side) and
 * compiled by ajv (JSON Schema draft 2020-12, `strict`) into standalone validator code, a module
 * that says whether a value has the schema's shape and imports nothing but the target's checks
 * module. The reader runs it first and asks the zod schema itself (loaded only then) for what it
 * refuses, so zod keeps the last word and the messages; a rule is written once, in the schema.
 *
 * zod's JSON Schema leaves refinements out. So every `.refine` of a target's schemas must be a
 * predicate exported by the target's zod-free checks module ({@linkcode ChecksModule}); the
 * generated code imports that module and calls the predicate where the schema does (the
 * {@linkcode CHECK_KEYWORD} keyword, after the node's other keywords). A refinement that is not
 * one (an inline function; a `superRefine` without `.meta({ "x-check": [name] })` naming the
 * predicate that stands for it) stops the generation: the validator would accept what the schema
 * refuses. So does a pattern JavaScript matches otherwise than ajv, which compiles each with the
 * `u` flag alone (`/^.$/` without it takes "😀" as two characters, ajv as one), and a step the
 * input's JSON Schema leaves out: a pipe into anything but a transform (`.pipe()`,
 * `z.preprocess`), a default. ajv's runtime helpers (`ucs2length`, which makes `maxLength` count code points as zod
 * does; {@linkcode HELPERS}) are written into the module, which imports nothing else. A validator
 * only says yes or no (what it refuses, the reader asks the schema about), so ajv builds no error
 * objects: the module is half the code the hosts compile when it is first called. A reader that
 * builds the value zod returns (its keys in the schema's order) takes that order from the module
 * too: a target's {@linkcode Target.orders} are exported after the validators, each a tagged
 * union's keys per tag, as the schema's JSON Schema lists its `properties` ({@linkcode keyOrder}),
 * and its {@linkcode Target.objects}, each an untagged object's keys, found by its place in a value
 * ({@linkcode objectKeyOrder}).
 *
 * Run from the repository root: `deno run -A scripts/validators.ts` writes every target's module
 * as ajv writes it (deno.json keeps `deno fmt` and `deno lint` off `*_validators.js`) and its
 * types beside it; `--check` writes nothing and exits 1 naming each module that differs
 * from what its schema makes now (tests/scripts/validators_test.ts runs it).
 *
 * @module
 */

import { z } from "zod";
import { Ajv2020 } from "ajv/dist/2020.js";
import standalone from "ajv/dist/standalone/index.js";
import { _ } from "ajv/dist/compile/codegen/index.js";

/**
 * ajv's standalone code generator: its CommonJS module (Deno's default import) is the function,
 * and carries it again as `default`, which is how ajv's types declare it.
 */
const standaloneCode = standalone.default;

const ROOT = new URL("../", import.meta.url).pathname;

/** A generated module: its path, and the schemas it validates by export name. */
export interface Target {
  /** The module written, from the repository root (`.js`; its types in the `.d.ts` beside it). */
  path: string;
  /** The schemas' module, named in the generated module's header. */
  from: string;
  /** Loads the schemas, by the name each validator is exported as. */
  schemas: () => Promise<Record<string, z.ZodType>>;
  /**
   * The module of the schemas' refinements, when they have any: zod's JSON Schema leaves every
   * `.refine` out, so each one must be a predicate exported by this module (zod-free, so that
   * the fast path loads no zod), and is called by the generated code where the schema calls it.
   */
  checks?: ChecksModule;
  /**
   * Whether a subschema used more than once is written once, as a function called where it is
   * used (zod's `reused: "ref"`, ajv's `inlineRefs: false`), rather than as its code again at
   * each use: for schemas that repeat large parts, a smaller module whose functions V8 compiles
   * sooner and can optimise, for a call more at each use.
   */
  reuse?: boolean;
  /**
   * The key orders the module exports beside its validators, for a reader that builds the value
   * zod returns (whose keys are in the schema's order) from what the validator accepted: each
   * constant's name, and the tag (`discriminator.propertyName`) of the discriminated union of the
   * schemas' JSON Schema whose order it holds ({@linkcode keyOrder}).
   */
  orders?: Record<string, string>;
  /**
   * The key orders of untagged objects the module exports beside its validators, for the same
   * reader: each constant's name, and the object's place in a valid value, as the keys that lead
   * to it from the schema's root (`[]`: the root itself; `"*"`: any value of a record, `"[]"`: any
   * item of a list), whose `properties` the constant lists in their order
   * ({@linkcode objectKeyOrder}).
   */
  objects?: Record<string, readonly string[]>;
}

/** A module of named predicates (`(value) => boolean`) the schemas refine with. */
export interface ChecksModule {
  /** Its path from the repository root (the generated module imports it). */
  path: string;
  /** Loads it: each predicate by its export name. */
  load: () => Promise<Record<string, unknown>>;
}

/**
 * The JSON Schema keyword a refinement is written as: the names of the predicates of the
 * target's {@linkcode ChecksModule} the value must pass, after every other keyword of its node.
 */
export const CHECK_KEYWORD = "x-check";

/** The keyword each schema is checked inside: without building ajv's error objects. */
const QUIET_KEYWORD = "x-quiet";

/** Every generated validator module. */
export const TARGETS: readonly Target[] = [
  {
    path: "lib/runtime_validators.js",
    from: "lib/runtime_schemas.ts",
    schemas: async () => {
      const { ContainerInspect, DockerInspect, PodmanPs } = await import(
        "../lib/runtime_schemas.ts"
      );
      return {
        isPodmanPs: PodmanPs,
        isDockerInspect: DockerInspect,
        isContainerInspect: ContainerInspect,
      };
    },
  },
  {
    path: "lib/broker_validators.js",
    from: "lib/broker.ts",
    schemas: async () => {
      const { DeclarationMessage } = await import("../lib/broker.ts");
      return { isDeclarationMessage: DeclarationMessage };
    },
  },
  {
    path: "lib/report_validators.js",
    from: "lib/broker.ts",
    schemas: async () => {
      const { ReportMessage } = await import("../lib/broker.ts");
      return { isReportMessage: ReportMessage };
    },
    checks: { path: "lib/report_rules.ts", load: () => import("../lib/report_rules.ts") },
  },
  {
    path: "host/store_validators.js",
    from: "host/store_schema.ts",
    schemas: async () => {
      const { StoreFile } = await import("../host/store_schema.ts");
      return { isStoreFile: StoreFile };
    },
  },
  {
    path: "lib/declaration_validators.js",
    from: "lib/declaration.ts",
    schemas: async () => {
      const { DeclarationShape } = await import("../lib/declaration.ts");
      return { isDeclaration: DeclarationShape };
    },
    checks: {
      path: "lib/resource_rules.ts",
      load: () => import("../lib/resource_rules.ts"),
    },
    orders: { RESOURCE_FIELDS: "type" },
  },
  {
    path: "reconcile/registry_validators.js",
    from: "reconcile/registry_schema.ts",
    schemas: async () => {
      const { Registry } = await import("../reconcile/registry_schema.ts");
      return { isRegistry: Registry };
    },
    checks: {
      path: "reconcile/registry_base.ts",
      load: () => import("../reconcile/registry_base.ts"),
    },
    // Each entry kind repeats the shared fields, and each TLS endpoint is written twice.
    reuse: true,
    orders: { ENTRY_KEYS: "kind" },
    objects: {
      REGISTRY_KEYS: [],
      BACKUP_KEYS: ["backup"],
      RESTIC_KEYS: ["backup", "restic"],
      TLS_KEYS: ["services", "*", "tls"],
    },
  },
];

/**
 * The module (code and types) for `target`, formatted as `deno fmt` leaves it.
 *
 * @throws {Error} when a schema has a rule JSON Schema cannot say (zod's `unrepresentable`, a
 *   refinement that is not a predicate of the target's {@linkcode ChecksModule}), or ajv refuses
 *   the JSON Schema in strict mode.
 */
export async function generate(target: Target): Promise<{ code: string; types: string }> {
  const schemas = await target.schemas();
  // zod writes its ISO date-time as a `pattern` (which decides) with `format: "date-time"`
  // beside it: the format is declared known and left to the pattern.
  const checks = target.checks ? await target.checks.load() : {};
  const ajv = new Ajv2020({
    code: { source: true, esm: true },
    strict: true,
    // A target's subschema used more than once, written once under `$defs` (below), stays one
    // function, called where it is used.
    ...(target.reuse ? { inlineRefs: false } : {}),
    // A union whose JSON Schema names its tag (zod: `.meta({ type: "object", discriminator:
    // { propertyName } })`) is checked by the branch of the value's tag alone, not by each branch.
    discriminator: true,
    formats: { "date-time": true },
  });
  // A refinement is called by name from the checks module the generated code imports, after
  // the node's other keywords (`post`): it sees only values of the node's shape, as in zod.
  ajv.addKeyword({
    keyword: CHECK_KEYWORD,
    schemaType: "array",
    post: true,
    code(cxt) {
      for (const name of cxt.schema as string[]) {
        cxt.pass(_`checks[${name}](${cxt.data})`);
      }
    },
  });
  // What a validator refuses is asked of the zod schema, so ajv's error objects are never read:
  // each schema is checked inside this keyword, under which ajv builds none (`createErrors`), and
  // the module is half the code the hosts compile when a validator is first called.
  ajv.addKeyword({
    keyword: QUIET_KEYWORD,
    schemaType: "object",
    code(cxt) {
      const valid = cxt.gen.name("valid");
      cxt.subschema({ keyword: QUIET_KEYWORD, createErrors: false }, valid);
      cxt.pass(valid);
    },
  });
  const exports: Record<string, string> = {};
  const jsonSchemas: Record<string, unknown>[] = [];
  for (const [name, schema] of Object.entries(schemas)) {
    const seen = { unnamed: new Set<string>(), declared: new Set<string>(), target };
    const json = z.toJSONSchema(schema, {
      io: "input",
      reused: target.reuse ? "ref" : "inline",
      unrepresentable: "throw",
      override: (ctx) => writeChecks(ctx, checks, seen),
    });
    const unnamed = [...seen.unnamed].filter((place) => !seen.declared.has(place));
    if (unnamed.length > 0) {
      throw new Error(
        `Cannot generate ${target.path}: a refinement at ${unnamed.join(", ")} of ` +
          `${target.from} is not a predicate exported by ` +
          `${target.checks?.path ?? "a checks module (the target names none)"}, and JSON ` +
          `Schema cannot say it: the validator would accept what the schema refuses`,
      );
    }
    jsonSchemas.push(json);
    const { $schema: _schema, $defs, ...checked } = json;
    ajv.addSchema({ $id: name, ...($defs ? { $defs } : {}), [QUIET_KEYWORD]: checked });
    exports[name] = name;
  }
  const header = `// Generated by scripts/validators.ts from ${target.from}: do not edit; run\n` +
    `// \`deno run -A scripts/validators.ts\` after changing a schema there.\n`;
  // As ajv writes it (deno.json keeps fmt and lint off `*_validators.js`): one long line.
  // Its types: the `.d.ts` beside it (Deno reads the pragma, first in the file).
  const self = `// @ts-self-types="./${typesPath(target.path).split("/").at(-1)}"\n`;
  const imports = target.checks
    ? `import * as checks from "${relativePath(target.path, target.checks.path)}";\n`
    : "";
  // Each key order after the validators, whose code stays as ajv writes it: one line each.
  const orders = Object.entries(target.orders ?? {}).map(([constant, tag]) => ({
    constant,
    tag,
    order: keyOrder(jsonSchemas, tag, target),
  }));
  const objects = Object.entries(target.objects ?? {}).map(([constant, at]) => ({
    constant,
    at,
    keys: objectKeyOrder(jsonSchemas, at, target),
  }));
  const code = `${self}${header}${imports}${await withoutRequire(standaloneCode(ajv, exports))}\n` +
    [
      ...orders.map(({ constant, order }) => [constant, order]),
      ...objects.map(({ constant, keys }) => [constant, keys]),
    ]
      .map(([constant, order]) => `export const ${constant} = ${JSON.stringify(order)};\n`)
      .join("");
  const types = `${header}\n` +
    Object.keys(schemas).map((name) =>
      `/** Whether \`data\` has the shape of the schema \`${name}\` validates (ajv, generated). */\n` +
      `export declare function ${name}(data: unknown): boolean;\n`
    ).join("\n") +
    orders.map(({ constant, tag, order }) =>
      `\n/**\n * For each \`${tag}\` of the tagged union, its object's keys in the order of the ` +
      `schema\n * (${target.from}), which is the order zod returns them in (generated).\n */\n` +
      `export declare const ${constant}: {\n` +
      Object.entries(order).map(([value, keys]) =>
        `  readonly ${propertyName(value)}: readonly ${JSON.stringify(keys)};\n`
      ).join("") + "};\n"
    ).join("") +
    objects.map(({ constant, at, keys }) =>
      `\n/**\n * The keys of the object at ${placeName(at)} in the order of the schema\n` +
      ` * (${target.from}), which is the order zod returns them in (generated).\n */\n` +
      `export declare const ${constant}: readonly ${JSON.stringify(keys)};\n`
    ).join("");
  return { code, types: await format(types, "ts") };
}

/**
 * The key order of the discriminated union tagged `tag` in `schemas` (JSON Schemas, as zod writes
 * them): for each value of the tag, the `properties` keys of its branch in their order, which is
 * the order of the zod object's shape and the order zod returns its keys in. The union is the node
 * whose `discriminator.propertyName` is `tag`, with its branches under `oneOf` or `anyOf`; a
 * branch or the union itself may be a `$ref` into the schema's `$defs`.
 *
 * @throws {Error} when no union or more than one is tagged `tag`, or a branch does not hold the
 *   tag as a `const` or an `enum` of strings.
 */
export function keyOrder(
  schemas: readonly Record<string, unknown>[],
  tag: string,
  target: Pick<Target, "path" | "from">,
): Record<string, string[]> {
  const refused = (why: string) =>
    new Error(`Cannot generate the key order of ${target.path} tagged "${tag}": ${why}`);
  const found: Record<string, string[]>[] = [];
  for (const root of schemas) {
    const defs = (root.$defs ?? {}) as Record<string, Record<string, unknown>>;
    const resolved = (node: Record<string, unknown>): Record<string, unknown> => {
      const ref = node.$ref;
      if (typeof ref !== "string") return node;
      const def = ref.startsWith("#/$defs/") ? defs[ref.slice("#/$defs/".length)] : undefined;
      if (def === undefined) throw refused(`the reference ${ref} is not one of the schema's $defs`);
      return resolved(def);
    };
    // Every node once: each of $defs is walked where it is defined, not where it is referred to.
    const walk = (node: unknown): void => {
      if (typeof node !== "object" || node === null) return;
      if (Array.isArray(node)) return node.forEach(walk);
      const n = node as Record<string, unknown>;
      const discriminator = n.discriminator as { propertyName?: unknown } | undefined;
      if (discriminator?.propertyName === tag) {
        const branches = n.oneOf ?? n.anyOf;
        if (!Array.isArray(branches)) throw refused("the union has no oneOf or anyOf");
        const order: Record<string, string[]> = {};
        for (const branch of branches as Record<string, unknown>[]) {
          const properties = (resolved(branch).properties ?? {}) as Record<string, unknown>;
          const held = resolved((properties[tag] ?? {}) as Record<string, unknown>);
          const values = "const" in held ? [held.const] : held.enum;
          if (!Array.isArray(values) || !values.every((v) => typeof v === "string")) {
            throw refused(`a branch holds no string const or enum at "${tag}"`);
          }
          for (const value of values) order[value] = Object.keys(properties);
        }
        found.push(order);
      }
      for (const value of Object.values(n)) walk(value);
    };
    walk(root);
  }
  if (found.length !== 1) {
    throw refused(
      `${target.from}'s JSON Schema has ${found.length} discriminated unions of that tag, not one`,
    );
  }
  return found[0]!;
}

/**
 * The key order of the untagged object at `at` in `schemas` (JSON Schemas, as zod writes them):
 * its `properties` keys in their order, which is the order of the zod object's shape and the
 * order zod returns its keys in. `at` is the keys that lead to the object from a schema's root:
 * each step goes into the node's `properties` of that name, `"*"` into its `additionalProperties`
 * (a record's values), `"[]"` into its `items` (a list's). A `$ref` into the schema's `$defs` is
 * followed, and every branch of a union (`anyOf`, `oneOf`) is walked: a branch the step cannot go
 * into (a list where a key is asked for) is no place of the object, so a field that is an object or
 * a list of them (`tls`) names the object by either place. Every object found must list the same
 * keys in the same order.
 *
 * @throws {Error} when no object with `properties` is at `at`, or objects whose keys differ are
 *   (the branches of a tagged union: {@linkcode keyOrder}'s).
 */
export function objectKeyOrder(
  schemas: readonly Record<string, unknown>[],
  at: readonly string[],
  target: Pick<Target, "path" | "from">,
): string[] {
  const refused = (why: string) =>
    new Error(`Cannot generate the key order of ${target.path} at ${placeName(at)}: ${why}`);
  const orders = new Set<string>();
  for (const root of schemas) {
    const defs = (root.$defs ?? {}) as Record<string, unknown>;
    // Each node once for each number of steps left: a $ref that leads back ends there.
    const seen = new Map<unknown, Set<number>>();
    const walk = (node: unknown, step: number): void => {
      if (typeof node !== "object" || node === null || Array.isArray(node)) return;
      const n = node as Record<string, unknown>;
      const visited = seen.get(n) ?? new Set<number>();
      if (visited.has(step)) return;
      seen.set(n, visited.add(step));
      if (typeof n.$ref === "string") {
        const ref = n.$ref;
        const def = ref.startsWith("#/$defs/") ? defs[ref.slice("#/$defs/".length)] : undefined;
        if (def === undefined) {
          throw refused(`the reference ${ref} is not one of the schema's $defs`);
        }
        walk(def, step);
      }
      for (const branches of [n.anyOf, n.oneOf]) {
        if (Array.isArray(branches)) { for (const branch of branches) walk(branch, step); }
      }
      const properties = n.properties as Record<string, unknown> | undefined;
      if (step === at.length) {
        if (typeof properties === "object" && properties !== null) {
          orders.add(JSON.stringify(Object.keys(properties)));
        }
        return;
      }
      const key = at[step]!;
      walk(
        key === "*" ? n.additionalProperties : key === "[]" ? n.items : properties?.[key],
        step + 1,
      );
    };
    walk(root, 0);
  }
  if (orders.size !== 1) {
    throw refused(
      orders.size === 0
        ? `${target.from}'s JSON Schema has no object there`
        : `${target.from}'s JSON Schema has objects of ${orders.size} key orders there, not one`,
    );
  }
  return JSON.parse([...orders][0]!);
}

/**
 * A place in a value ({@linkcode Target.objects}) as a message names it: `the root`,
 * `backup.restic`.
 */
function placeName(at: readonly string[]): string {
  return at.length === 0 ? "the root" : `\`${at.join(".")}\``;
}

/**
 * Helpers written in place of ajv's own, each the same function: ajv's `ucs2length` counts code
 * points by walking the string in JavaScript, which the hosts' V8 (its optimising compilers off)
 * interprets char by char, a string bound's check then costing more than the rest of its
 * validator; this one leaves the walk to the regular expression engine.
 */
export const HELPERS: Record<string, string> = {
  ucs2length: `function ucs2length(str) {
    const pairs = str.match(/[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]/g);
    return pairs === null ? str.length : str.length - pairs.length;
}`,
};

/**
 * `code` with each of ajv's runtime helpers written in: ajv's standalone code asks for them
 * with `require("ajv/dist/runtime/NAME").default` even in an ES module (`ucs2length`, by which
 * `maxLength` counts code points as zod does; `equal`), which Deno's ES modules do not have. Each
 * is the function's own text (they close over nothing), so the module still imports nothing.
 *
 * @throws {Error} when another `require` is left (a helper that cannot be written in).
 */
async function withoutRequire(code: string): Promise<string> {
  const asked = /require\("ajv\/dist\/runtime\/(\w+)"\)\.default/g;
  const names = [...new Set([...code.matchAll(asked)].map((m) => m[1]!))].sort();
  let helpers = "";
  for (const name of names) {
    const runtime = await import(`ajv/dist/runtime/${name}.js`);
    const fn = runtime.default?.default ?? runtime.default;
    if (typeof fn !== "function") {
      throw new Error(`Cannot write in ajv's runtime helper ${name}: it is not a function`);
    }
    helpers += `const ajvRuntime_${name} = ${HELPERS[name] ?? String(fn)};\n`;
  }
  const written = code.replace(asked, (_all, name: string) => `ajvRuntime_${name}`);
  if (written.includes("require(")) {
    throw new Error(`Cannot generate an ES module: ajv's code still requires a module`);
  }
  return helpers + written;
}

/**
 * Writes each refinement of the zod node `ctx.zodSchema` into its JSON Schema as
 * {@linkcode CHECK_KEYWORD}: the export name of its predicate in `checks`. A refinement that is
 * not one of them (an inline function, a `superRefine`, whose function zod does not keep) would
 * be left out, and the validator would accept what the schema refuses; it is recorded in
 * `unnamed` (by the node's path), and stands only if a node at the same path names the check
 * that stands for it in its metadata (`.meta({ "x-check": ["name"] })`, recorded in `declared`).
 *
 * @throws {Error} naming the node's path when a check its metadata names is not in `checks`, or
 *   when one of its checks changes the value (`.trim()`).
 */
function writeChecks(
  ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown>; path: (string | number)[] },
  checks: Record<string, unknown>,
  seen: { unnamed: Set<string>; declared: Set<string>; target: Target },
): void {
  const zod = (ctx.zodSchema as { _zod: { def: Node } })._zod;
  // The input's JSON Schema is the pipe's input side: the checks of what it pipes into (a
  // `.pipe()`, the schema after `z.preprocess`) are left out, and a default is filled in by zod
  // alone. Only a pipe into a transform (`.transform(f)`, which checks nothing) is said whole; its
  // reader applies `f` to what the validator accepted.
  const kind = zod.def.type;
  if (
    kind === "default" || kind === "prefault" ||
    (kind === "pipe" && zod.def.out?._zod.def.type !== "transform")
  ) {
    throw new Error(
      `Cannot generate ${seen.target.path}: the ${kind} at ${JSON.stringify(ctx.path)} checks or ` +
        `fills in what the input's JSON Schema leaves out: the validator would judge another value`,
    );
  }
  const defs = (zod.def.checks ?? []).map((c) => c._zod.def);
  // A check that changes the value before the next one sees it (`.trim()`, `.toLowerCase()`:
  // zod's `overwrite`) is not in the JSON Schema either, and no predicate can stand for it.
  const changes = defs.find((d) => d.check === "overwrite");
  if (changes !== undefined) {
    throw new Error(
      `Cannot generate ${seen.target.path}: a check at ${JSON.stringify(ctx.path)} changes the ` +
        `value (zod's ${changes.check}), which JSON Schema cannot say: the validator would judge ` +
        `the value the schema does not`,
    );
  }
  // ajv compiles every `pattern` with the `u` flag and no other: a pattern zod matches otherwise
  // (by UTF-16 unit, sticky, case-blind, ...) could be accepted by the validator and refused by
  // the schema (`/^.$/`: "😀" is one code point for ajv, two units for zod).
  const unlike = defs.find((d) => d.pattern instanceof RegExp && !matchesAsAjv(d.pattern));
  if (unlike !== undefined) {
    throw new Error(
      `Cannot generate ${seen.target.path}: the pattern ${String(unlike.pattern)} at ` +
        `${JSON.stringify(ctx.path)} matches otherwise than ajv's (which adds the u flag and ` +
        `keeps no other): write it with the u flag alone`,
    );
  }
  const custom = defs.filter((d) => d.check === "custom");
  const meta = z.globalRegistry.get(ctx.zodSchema as z.ZodType) as
    | Record<string, unknown>
    | undefined;
  const declared = meta?.[CHECK_KEYWORD];
  const names = Array.isArray(declared) ? [...declared as string[]] : [];
  const place = JSON.stringify(ctx.path);
  for (const name of names) {
    if (typeof checks[name] !== "function") {
      throw new Error(
        `Cannot generate ${seen.target.path}: the check ${JSON.stringify(name)} at ${place} is ` +
          `not a function exported by ${seen.target.checks?.path ?? "a checks module"}`,
      );
    }
  }
  if (Array.isArray(declared)) seen.declared.add(place);
  for (const def of custom) {
    const name = Object.keys(checks).find((key) => checks[key] === def.fn);
    if (name === undefined) seen.unnamed.add(place);
    else if (!names.includes(name)) names.push(name);
  }
  if (names.length > 0) ctx.jsonSchema[CHECK_KEYWORD] = names;
}

/** A zod node's definition, as far as {@linkcode writeChecks} reads it. */
interface Node {
  type: string;
  checks?: { _zod: { def: Check } }[];
  /** A pipe's second schema (`.transform(f)`: a transform). */
  out?: { _zod: { def: { type: string } } };
}

/** A zod check's definition, as far as {@linkcode writeChecks} reads it. */
interface Check {
  check: string;
  fn?: unknown;
  /** A string check's regular expression (`.regex()`, and zod's own formats). */
  pattern?: unknown;
}

/**
 * Whether `re` matches what ajv's `new RegExp(re.source, "u")` matches: it has the `u` flag and no
 * other, or no flag and a source that cannot tell units from code points (printable ASCII only,
 * no `.`, no negated class or escape, no `\u` escape: each atom then matches one BMP character
 * that is not a surrogate, either way), as zod's own formats (`z.iso.datetime`) are written.
 */
function matchesAsAjv(re: RegExp): boolean {
  if (re.flags === "u") return true;
  if (re.flags !== "") return false;
  const escapesRemoved = re.source.replace(/\\[^SWDBpPuxc]/g, "");
  return !/[^ -~]|\\|\[\^|\./.test(escapesRemoved);
}

/** `name` as a property name of a type literal: bare when it is an identifier, else quoted. */
function propertyName(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

/** `to` (from the repository root) as an import specifier relative to the module `from`. */
function relativePath(from: string, to: string): string {
  const dir = from.split("/").slice(0, -1);
  const parts = to.split("/");
  let same = 0;
  while (same < dir.length && same < parts.length - 1 && dir[same] === parts[same]) same++;
  const up = dir.length - same;
  return (up === 0 ? "./" : "../".repeat(up)) + parts.slice(same).join("/");
}

/** `text` as `deno fmt` formats a file of extension `ext`. */
async function format(text: string, ext: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", `--ext=${ext}`, "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`Cannot format generated code: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** The `.d.ts` beside a generated `.js`. */
function typesPath(path: string): string {
  return path.replace(/\.js$/, ".d.ts");
}

if (import.meta.main) {
  // `--check` or nothing: anything else (a misspelt `--check`) is refused, never taken as "write".
  const unknown = Deno.args.filter((a) => a !== "--check");
  if (unknown.length > 0) {
    console.error(
      `validators: unknown argument ${JSON.stringify(unknown[0])}: run with --check to compare, ` +
        `or with none to write`,
    );
    Deno.exit(2);
  }
  const check = Deno.args.includes("--check");
  const stale: string[] = [];
  for (const target of TARGETS) {
    const { code, types } = await generate(target);
    const files = [[target.path, code], [typesPath(target.path), types]] as const;
    for (const [path, text] of files) {
      let now: string | undefined;
      try {
        now = await Deno.readTextFile(`${ROOT}${path}`);
      } catch { /* not written yet */ }
      if (now === text) continue;
      if (check) stale.push(path);
      else await Deno.writeTextFile(`${ROOT}${path}`, text);
    }
  }
  if (stale.length > 0) {
    console.error(
      `validators: ${stale.join(", ")} ${stale.length === 1 ? "differs" : "differ"} from what ` +
        `the schemas make now: run deno run -A scripts/validators.ts`,
    );
    Deno.exit(1);
  }
}
