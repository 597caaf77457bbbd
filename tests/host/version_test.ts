/**
 * `--version` on every program prints the one version (lib/version.ts), the one the host records
 * as known-good and carries in its reports.
 */

import { assertEquals } from "../support/assert.ts";
import { cli } from "../support/mod.ts";
import { VERSION } from "../../lib/version.ts";
import { VERSION as HOST_VERSION } from "../../host/version.ts";

Deno.test("every program prints the one version with --version, and exits 0", async () => {
  assertEquals(HOST_VERSION, VERSION);
  for (
    const program of [
      "systems/debian/main.ts",
      "control/main.ts",
      "builder/main.ts",
      "reconcile/main.ts",
    ]
  ) {
    for (const flag of ["--version", "-V"]) {
      const r = await cli(program, [flag]);
      assertEquals([r.code, r.stdout, r.stderr], [0, `${VERSION}\n`, ""], `${program} ${flag}`);
    }
  }
});

Deno.test("known-good records the version --version prints", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/d.json`, JSON.stringify({ version: 1, resources: [] }));
    const r = await cli("systems/debian/main.ts", [
      "apply",
      `${dir}/d.json`,
      "--state-dir",
      `${dir}/state`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await Deno.readTextFile(`${dir}/state/known-good`), `${VERSION}\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
