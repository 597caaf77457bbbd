/**
 * lib/zod_record.ts: a record that reads an own `__proto__` key (as JSON.parse makes one) as any
 * other key, where zod's own record skips it unchecked.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { z } from "zod";
import { record } from "../../lib/zod_record.ts";

const NAME = z.string().regex(/^[A-Za-z]\w*$/u, "Must be a name");

Deno.test("an own __proto__ key the key schema accepts is kept in its place, as data, its value checked", () => {
  const schema = record(z.string(), z.number());
  const read = schema.parse(JSON.parse('{"a":1,"__proto__":2,"b":3}'));
  assertEquals(Object.keys(read), ["a", "__proto__", "b"]);
  assertEquals(Object.getOwnPropertyDescriptor(read, "__proto__")?.value, 2);
  assertEquals(Object.getPrototypeOf(read), Object.prototype);
  const bad = schema.safeParse(JSON.parse('{"a":1,"__proto__":"x"}'));
  assert(!bad.success);
  assertEquals(bad.error.issues.map((i) => [i.code, i.path]), [["invalid_type", ["__proto__"]]]);
  // Nested, with the other keys' problems: each said at its place.
  const nested = record(z.string(), record(z.string(), z.number()));
  const deep = nested.safeParse(JSON.parse('{"__proto__":{"__proto__":"x","b":"y"}}'));
  assert(!deep.success);
  assertEquals(deep.error.issues.map((i) => i.path).sort(), [
    ["__proto__", "__proto__"],
    ["__proto__", "b"],
  ]);
  // A key schema that transforms: kept under its output, as any other key.
  const upper = record(z.string().transform((k) => k.toUpperCase()), z.number());
  assertEquals(upper.parse(JSON.parse('{"a":1,"__proto__":2}')), { A: 1, __PROTO__: 2 });
  // zod's own record: skipped unchecked, so the value is accepted without it.
  assertEquals(z.record(z.string(), z.number()).parse(JSON.parse('{"__proto__":"x"}')), {});
});

Deno.test("an own __proto__ key the key schema refuses is zod's invalid_key at that key, as any other", () => {
  const schema = record(NAME, z.number());
  for (const value of ["1", '"x"']) {
    const refused = schema.safeParse(JSON.parse(`{"a":1,"__proto__":${value}}`));
    assert(!refused.success, value);
    assertEquals(refused.error.issues.map((i) => [i.code, i.path, i.message]), [
      ["invalid_key", ["__proto__"], "Invalid key in record"],
    ]);
    const other = schema.safeParse(JSON.parse(`{"a":1,"_x":${value}}`));
    assertEquals(
      other.error?.issues.map((i) => [i.code, i.path, i.message]),
      refused.error.issues.map((i) => [i.code, i.path, i.message]).map(([c, , m]) => [
        c,
        ["_x"],
        m,
      ]),
    );
  }
  // Without an own __proto__ (an inherited one, or none) it is zod's record.
  assertEquals(schema.parse({ a: 1 }), { a: 1 });
  // A record whose keys are listed: an unlisted own __proto__ is unrecognized, said once.
  const listed = record(z.enum(["a"]), z.number()).safeParse(JSON.parse('{"a":1,"__proto__":1}'));
  assertEquals(listed.error?.issues.map((i) => i.code), ["unrecognized_keys"]);
});

Deno.test("no production schema uses zod's own record: each is lib/zod_record.ts's", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(`${root}${dir}`)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && path.endsWith(".ts") && path !== "lib/zod_record.ts") {
        const lines = (await Deno.readTextFile(`${root}${path}`)).split("\n");
        lines.forEach((line, i) => {
          if (/\bz\s*\.\s*(record|partialRecord|looseRecord)\s*\(/.test(line)) {
            found.push(`${path}:${i + 1}`);
          }
        });
      }
    }
  };
  for (const dir of ["lib", "host", "control", "reconcile", "resources", "builder", "systems"]) {
    await walk(dir);
  }
  assertEquals(found, []);
});
