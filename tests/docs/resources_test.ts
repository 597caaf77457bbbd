/**
 * A resource type is one folder (issue 30 item 3): resources/<type>/ holds its schema
 * (schema.ts) and, when it is applied the same way everywhere, its generic applier (applier.ts);
 * resources/schemas.ts lists the schemas, from which the declaration's union, `RESOURCE_TYPES`,
 * the store's entry types and the JSON Schema follow, and resources/appliers.ts lists the generic
 * appliers, from which the systems take theirs. Held here: every folder is in the lists and every
 * entry of the lists has its folder, so a type added, removed or renamed in one and not the other
 * fails, naming it.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { RESOURCE_TYPES } from "../../lib/declaration.ts";
import { SUBJECTS } from "../../resources/subjects.ts";
import { moduleInfo } from "../support/module_graph.ts";
import { RESOURCE_SCHEMAS } from "../../resources/schemas.ts";
import { GENERIC_APPLIERS } from "../../resources/appliers.ts";
import { alpine } from "../../systems/alpine/mod.ts";
import { android } from "../../systems/android/mod.ts";
import { arch } from "../../systems/arch/mod.ts";
import { debian } from "../../systems/debian/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The folders of resources/, each a resource type. */
function folders(): string[] {
  return [...Deno.readDirSync(`${ROOT}resources`)].filter((e) => e.isDirectory).map((e) => e.name)
    .sort();
}

/** Whether `path` (from the root) is a file. */
function isFile(path: string): boolean {
  try {
    return Deno.statSync(`${ROOT}${path}`).isFile;
  } catch {
    return false;
  }
}

Deno.test("resources: every folder of resources/ is a type of resources/schemas.ts, and every type has its folder", () => {
  assertEquals(folders(), [...RESOURCE_TYPES].sort());
});

Deno.test("resources: resources/subjects.ts names one subject for every type, each a field of the type's schema", () => {
  assertEquals(Object.keys(SUBJECTS).sort(), [...RESOURCE_TYPES].sort());
  for (const schema of RESOURCE_SCHEMAS) {
    const type = schema.shape.type.value;
    const field = SUBJECTS[type].field;
    assert(Object.hasOwn(schema.shape, field), `${type}: its subject field "${field}"`);
  }
});

Deno.test("resources: each type's schema is its folder's schema.ts, the one resources/schemas.ts lists", async () => {
  for (const [i, type] of RESOURCE_TYPES.entries()) {
    const path = `resources/${type}/schema.ts`;
    assert(isFile(path), `${path} is missing`);
    const module = await import(`../../${path}`) as Record<string, unknown>;
    assert(
      Object.values(module).includes(RESOURCE_SCHEMAS[i]),
      `${path} does not export the schema resources/schemas.ts lists for ${type}`,
    );
  }
});

Deno.test("resources: resources/appliers.ts lists each folder's applier.ts, from that folder", async () => {
  const withApplier = folders().filter((type) => isFile(`resources/${type}/applier.ts`));
  assertEquals(Object.keys(GENERIC_APPLIERS).sort(), withApplier, "the table and the folders");
  const info = await moduleInfo("resources/appliers.ts");
  const table = info.modules.find((m) => m.specifier.endsWith("/resources/appliers.ts"));
  const imported = (table?.dependencies ?? []).map((d) => d.specifier)
    .filter((s) => /^\.\/[^/]+\/applier\.ts$/.test(s)).map((s) => s.split("/")[1]!).sort();
  assertEquals(imported, withApplier, "the appliers resources/appliers.ts imports");
});

Deno.test("resources: each full system has every generic applier and its own for the rest; no system names a type that is not one", () => {
  const own = RESOURCE_TYPES.filter((t) => !Object.hasOwn(GENERIC_APPLIERS, t));
  assertEquals(own, ["package"]);
  for (const system of [alpine, arch, debian]) {
    assertEquals(Object.keys(system.appliers).sort(), [...RESOURCE_TYPES].sort(), system.name);
    for (const [type, applier] of Object.entries(GENERIC_APPLIERS)) {
      assert(system.appliers[type as keyof typeof GENERIC_APPLIERS] === applier, system.name);
    }
  }
  for (const type of Object.keys(android.appliers)) {
    assert((RESOURCE_TYPES as string[]).includes(type), `android: ${type}`);
  }
});
