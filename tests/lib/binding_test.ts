/**
 * A binding file's one reader (lib/binding.ts): every problem of a file that is not a binding is
 * named with its path, a missing field and an unknown field said as the declaration's are.
 */

import { assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { Binding, bindingText, readBinding, schemaProblems } from "../../lib/binding.ts";

Deno.test("schemaProblems names a missing field, an unknown field and a bad value at their paths", () => {
  const parsed = Binding.safeParse({ name: "Artifact Store", module: "registry", port: 5000 });
  assertEquals(parsed.success, false);
  const problems = schemaProblems(parsed.error!.issues);
  assertEquals(problems.map((p) => p.path).sort(), ["address", "name", "port"]);
  const by = new Map(problems.map((p) => [p.path, p.message]));
  assertEquals(by.get("address"), 'Missing required field "address"');
  assertEquals(by.get("port"), 'Unknown field "port"');
  assertStringIncludes(by.get("name")!, "lower-case letters");
});

Deno.test("readBinding: a binding is read; a missing file is undefined; a bad one is an error naming the file and every problem", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-binding-" });
  try {
    const binding = { name: "artifact-store", address: "10.0.0.5:5000", module: "registry" };
    await Deno.writeTextFile(`${dir}/artifact-store.json`, bindingText(binding));
    assertEquals(await readBinding("artifact-store", { dir }), binding);
    assertEquals(await readBinding("absent", { dir }), undefined);
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify({ name: "bad", extra: 1 }));
    const error = await assertRejects(() => readBinding("bad", { dir }), Error);
    assertStringIncludes(error.message, `${dir}/bad.json`);
    assertStringIncludes(error.message, 'address: Missing required field "address"');
    assertStringIncludes(error.message, 'extra: Unknown field "extra"');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
