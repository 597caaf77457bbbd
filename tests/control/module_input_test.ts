/**
 * `mesh-control module add FILE` reads FILE as rule 1 of "Hostile inputs" (docs/design.md)
 * says: a FIFO, a socket, a directory, a symlink to /dev/zero or to a FIFO is refused by name at
 * once, and a file over 64 MiB from its size, exit 2, before the database is asked.
 */
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { hostileFiles, sparseFile } from "../support/hostile_files.ts";
import { within } from "../support/within.ts";
import { MAX_DECLARATION_BYTES } from "../../lib/declaration_base.ts";
import { controlCli } from "./support.ts";

// No database answers here: a refusal of the file must come before it is asked.
const ENV = { MESH_DATABASE_URL: "postgres://postgres@127.0.0.1:1/none" };

Deno.test("module add: a FIFO, socket, directory, symlink to /dev/zero or to a FIFO, or an oversized file is refused by name at once, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-module-input-" });
  const { files, close } = await hostileFiles(dir, ".json");
  try {
    const big = `${dir}/big.json`;
    await sparseFile(big, MAX_DECLARATION_BYTES + 1);
    const cases = [
      ...files,
      { name: "an oversized file", path: big, message: `larger than ${MAX_DECLARATION_BYTES}` },
    ];
    const runs = await within(
      Promise.all(cases.map((c) => controlCli(["module", "add", c.path], ENV))),
      30_000,
      "module add refusing every file",
    );
    for (const [i, { name, path, message }] of cases.entries()) {
      const r = runs[i]!;
      assertEquals(r.code, 2, `${name}: ${r.stderr}`);
      assertStringIncludes(r.stderr, `Cannot read module file "${path}": `, name);
      assertStringIncludes(r.stderr, message, name);
      assert(!r.stderr.includes("database"), `${name}: the database was asked: ${r.stderr}`);
    }
  } finally {
    close();
    await Deno.remove(dir, { recursive: true });
  }
});
