/**
 * What a declaration path may be for `mesh-host apply`: a regular file. A FIFO blocks its
 * reader until a writer comes and a device never ends: both are refused at once, exit 2,
 * nothing applied.
 */
import { assert, assertEquals } from "../support/assert.ts";
import { cli } from "../support/mod.ts";

for (
  const [what, make] of [
    ["a FIFO", async (dir: string) => {
      const path = `${dir}/declaration.json`;
      const out = await new Deno.Command("mkfifo", { args: [path] }).output();
      assert(out.success);
      return path;
    }],
    ["a character device", () => Promise.resolve("/dev/zero")],
  ] as const
) {
  Deno.test(`${what} as a declaration is refused at once, exit 2, nothing applied`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "mesh-host-input-" });
    try {
      const path = await make(dir);
      const r = await cli("systems/debian/main.ts", ["apply", path, "--state-dir", `${dir}/state`]);
      assertEquals(r.code, 2, r.stderr);
      assert(r.stderr.includes(`Cannot read declaration "${path}": it is ${what}`), r.stderr);
      const state = await Deno.stat(`${dir}/state`).then(() => true, () => false);
      assertEquals(state, false, "nothing written");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
