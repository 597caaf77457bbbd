/**
 * scripts/validators.ts: every generated validator module is what its zod schemas make now, so a
 * rule changed in a schema and not regenerated fails here instead of diverging silently.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { generate, TARGETS } from "../../scripts/validators.ts";
import { PodmanPs } from "../../reconcile/observe/runtime_schemas.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("validators: each generated module is what its schemas make now (--check)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/validators.ts", "--check"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
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
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/validators.ts", "--chekc"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 2);
  assert(new TextDecoder().decode(out.stderr).includes('unknown argument "--chekc"'));
  const after = await Promise.all(TARGETS.map((t) => Deno.stat(`${ROOT}${t.path}`)));
  assertEquals(after.map((s) => s.mtime?.getTime()), before.map((s) => s.mtime?.getTime()));
});
