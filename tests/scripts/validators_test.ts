/**
 * scripts/validators.ts: every generated validator module is what its zod schemas make now, so a
 * rule changed in a schema and not regenerated fails here instead of diverging silently.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { generate, HELPERS, TARGETS } from "../../scripts/validators.ts";
import { PodmanPs } from "../../lib/runtime_schemas.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Runs scripts/validators.ts with `args` from the repository root. */
function runValidators(args: string[]): Promise<Deno.CommandOutput> {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/validators.ts", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test("validators: each generated module is what its schemas make now (--check)", async () => {
  const out = await runValidators(["--check"]);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("validators: a schema changed and not regenerated differs from the module", async () => {
  const target = TARGETS[0]!;
  const written = await Deno.readTextFile(`${ROOT}${target.path}`);
  assertEquals((await generate(target)).code, written);
  const changed = {
    ...target,
    schemas: async () => ({
      ...await target.schemas(),
      isPodmanPs: PodmanPs.unwrap().partial().array(),
    }),
  };
  assert((await generate(changed)).code !== written, "an Image made optional is seen");
});

Deno.test("validators: an argument other than --check is refused and nothing is written", async () => {
  const before = await Promise.all(TARGETS.map((t) => Deno.stat(`${ROOT}${t.path}`)));
  const out = await runValidators(["--chekc"]);
  assertEquals(out.code, 2);
  assert(new TextDecoder().decode(out.stderr).includes('unknown argument "--chekc"'));
  const after = await Promise.all(TARGETS.map((t) => Deno.stat(`${ROOT}${t.path}`)));
  assertEquals(after.map((s) => s.mtime?.getTime()), before.map((s) => s.mtime?.getTime()));
});

Deno.test("validators: a refinement is called by its named check; one without a name is refused", async () => {
  const { Checked, Piped, StickyPattern, Trimmed, Unnamed, UnitPattern } = await import(
    "./fixtures/checked_schema.ts"
  );
  const checks = {
    path: "tests/scripts/fixtures/checked_checks.ts",
    load: () => import("./fixtures/checked_checks.ts"),
  };
  const target = {
    path: "tests/scripts/fixtures/checked_validators.js",
    from: "tests/scripts/fixtures/checked_schema.ts",
    schemas: () => Promise.resolve({ isChecked: Checked }),
    checks,
  };
  const { code } = await generate(target);
  // What a validator refuses is asked of the schema: ajv builds no error object but the one of
  // the keyword the schema is checked inside.
  assertEquals(code.match(/\bkeyword:"[^"]*"/g), ['keyword:"x-quiet"']);
  const dir = await Deno.makeTempDir();
  try {
    const at = new URL("./fixtures/checked_checks.ts", import.meta.url).href;
    await Deno.writeTextFile(
      `${dir}/checked_validators.js`,
      code.replace('"./checked_checks.ts"', JSON.stringify(at)),
    );
    const { isChecked } = await import(`${dir}/checked_validators.js`);
    const cases = [
      { word: "level", numbers: [1, 2] },
      { word: "levels", numbers: [1, 2] },
      { word: "level", numbers: [1, 1] },
      { word: "abcdeedcba", numbers: [] },
      { word: "level", numbers: [1], extra: true },
    ];
    for (const value of cases) {
      assertEquals(isChecked(value), Checked.safeParse(value).success, JSON.stringify(value));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const unnamed = { ...target, schemas: () => Promise.resolve({ isUnnamed: Unnamed }) };
  const refused = await generate(unnamed).then(() => undefined, (e: Error) => e.message);
  assert(refused?.includes("is not a predicate exported by"), refused);
  const trimmed = { ...target, schemas: () => Promise.resolve({ isTrimmed: Trimmed }) };
  const changing = await generate(trimmed).then(() => undefined, (e: Error) => e.message);
  assert(changing?.includes("changes the value"), changing);
  for (const pattern of [UnitPattern, StickyPattern]) {
    const flagged = { ...target, schemas: () => Promise.resolve({ isFlagged: pattern }) };
    const unlike = await generate(flagged).then(() => undefined, (e: Error) => e.message);
    assert(unlike?.includes("matches otherwise"), unlike);
  }
  for (const piped of Piped) {
    const left = { ...target, schemas: () => Promise.resolve({ isPiped: piped }) };
    const out = await generate(left).then(() => undefined, (e: Error) => e.message);
    assert(out?.includes("leaves out"), out);
  }
  const without = { ...target, checks: undefined };
  assert(await generate(without).then(() => false, () => true), "a target without checks");
});

Deno.test("validators: a helper written in place of ajv's is the same function", async () => {
  const runtime = await import("ajv/dist/runtime/ucs2length.js");
  const ajv: (s: string) => number = runtime.default.default ?? runtime.default;
  const ours = new Function(`return ${HELPERS.ucs2length}`)() as (s: string) => number;
  // Every string of up to four of these: pairs, lone and reversed surrogates, at either end.
  const parts = ["", "a", "é", "😀", "\ud800", "\udc00", "\udbff\udfff"];
  let strings = [""];
  for (let n = 0; n < 4; n++) strings = strings.flatMap((s) => parts.map((p) => s + p));
  for (const s of new Set(strings)) assertEquals(ours(s), ajv(s), JSON.stringify(s));
});

Deno.test("validators: a key order is the schema's, moved when a field moves, the validator the same", async () => {
  const { Drawing, Reordered, Shape, TwoUnions } = await import("./fixtures/tagged_schema.ts");
  const target = (schema: unknown, reuse = false) => ({
    path: "tests/scripts/fixtures/tagged_validators.js",
    from: "tests/scripts/fixtures/tagged_schema.ts",
    schemas: () => Promise.resolve({ isShape: schema as typeof Shape }),
    orders: { SHAPE_KEYS: "shape" },
    reuse,
  });
  const before = await generate(target(Shape));
  const after = await generate(target(Reordered));
  const circle = ["shape", "radius", "colour", "note"];
  const box = ["shape", "width", "height", "colour", "note"];
  const line = (order: unknown) => `export const SHAPE_KEYS = ${JSON.stringify(order)};\n`;
  assert(before.code.endsWith(line({ circle, square: box, rectangle: box })), before.code);
  assert(
    after.code.endsWith(
      line({ circle: ["note", "radius", "shape", "colour"], square: box, rectangle: box }),
    ),
    after.code,
  );
  // The order is only added: the validators' code is what the target without it makes.
  const without = await generate({ ...target(Shape), orders: undefined });
  assertEquals(before.code, without.code + line({ circle, square: box, rectangle: box }));
  assert(
    before.types.includes(
      'readonly circle: readonly ["shape", "radius", "colour", "note"];',
    ),
    before.types,
  );
  // The order is the one zod returns the keys in, read from the module as a reader imports it.
  const dir = await Deno.makeTempDir();
  try {
    for (const [schema, { code }] of [[Shape, before], [Reordered, after]] as const) {
      const file = `${dir}/${crypto.randomUUID()}.js`;
      await Deno.writeTextFile(file, code);
      const { SHAPE_KEYS, isShape } = await import(file);
      const value = { note: "n", radius: 1, colour: "red", shape: "circle" };
      assert(isShape(value));
      assertEquals(SHAPE_KEYS.circle, Object.keys(schema.parse(value)));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // The union and its branches written once under $defs (reuse) and referred to: the same order.
  const reused = await generate(target(Drawing, true));
  assert(reused.code.endsWith(line({ circle, square: box, rectangle: box })), reused.code);
  for (const [schema, count] of [[TwoUnions, 2], [Shape.options[0], 0]] as const) {
    const refused = await generate(target(schema)).then(() => undefined, (e: Error) => e.message);
    assert(refused?.includes(`has ${count} discriminated unions of that tag, not one`), refused);
  }
});

Deno.test("validators: an untagged object's key order is the schema's, found by its place", async () => {
  const { Nested, Shape } = await import("./fixtures/tagged_schema.ts");
  const objects = {
    ROOT_KEYS: [],
    OWNER_KEYS: ["owner"],
    HOST_KEYS: ["hosts", "*"],
    ENDPOINT_KEYS: ["hosts", "*", "endpoint"],
    LISTED_KEYS: ["hosts", "*", "endpoint", "[]"],
    SPARE_KEYS: ["spare", "[]"],
  };
  const target = (schema: unknown, reuse: boolean, at: Record<string, string[]> = objects) => ({
    path: "tests/scripts/fixtures/nested_validators.js",
    from: "tests/scripts/fixtures/tagged_schema.ts",
    schemas: () => Promise.resolve({ isNested: schema as typeof Nested }),
    objects: at,
    reuse,
  });
  const endpoint = ["port", "name", "tls"];
  const want = {
    ROOT_KEYS: ["version", "owner", "hosts", "spare"],
    OWNER_KEYS: ["name", "mail"],
    HOST_KEYS: ["address", "endpoint"],
    ENDPOINT_KEYS: endpoint,
    LISTED_KEYS: endpoint,
    SPARE_KEYS: endpoint,
  };
  const lines = Object.entries(want)
    .map(([name, keys]) => `export const ${name} = ${JSON.stringify(keys)};\n`).join("");
  const value = {
    spare: [{ tls: true, name: "s", port: 2 }],
    hosts: { h: { endpoint: [{ name: "e", port: 1 }], address: "a" } },
    owner: { mail: "m", name: "n" },
    version: 1,
  };
  const dir = await Deno.makeTempDir();
  try {
    for (const reuse of [false, true]) {
      const made = await generate(target(Nested, reuse));
      // The orders are only added: the validators' code is what the target without them makes.
      const without = await generate({ ...target(Nested, reuse), objects: undefined });
      assertEquals(made.code, without.code + lines);
      assert(made.types.includes('export declare const OWNER_KEYS: readonly ["name", "mail"];'));
      // Each order is the one zod returns the keys in, read from the module as a reader would.
      const file = `${dir}/${crypto.randomUUID()}.js`;
      await Deno.writeTextFile(file, made.code);
      const module = await import(file);
      assert(module.isNested(value));
      const parsed = Nested.parse(value);
      assertEquals(module.ROOT_KEYS, Object.keys(parsed));
      assertEquals(module.OWNER_KEYS, Object.keys(parsed.owner!));
      assertEquals(module.HOST_KEYS, Object.keys(parsed.hosts.h!));
      assertEquals(module.SPARE_KEYS, Object.keys(parsed.spare![0]!));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // No object there (a literal, a field the schema lacks), or the branches of a tagged union,
  // whose keys differ (keyOrder's), each refused, naming the place.
  for (
    const [schema, at, why] of [
      [
        Nested,
        ["version"],
        "at `version`: tests/scripts/fixtures/tagged_schema.ts's JSON Schema has no object there",
      ],
      [Nested, ["owner", "nick"], "at `owner.nick`"],
      [Nested, ["hosts"], "at `hosts`"],
      [
        Shape,
        [],
        "at the root: tests/scripts/fixtures/tagged_schema.ts's JSON Schema has objects of 2 key orders there, not one",
      ],
    ] as const
  ) {
    const refused = await generate(target(schema, false, { KEYS: [...at] }))
      .then(() => undefined, (e: Error) => e.message);
    assert(refused?.includes(why), refused);
  }
});
