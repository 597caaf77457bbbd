import { assert, assertEquals } from "../support/assert.ts";
import { writeFileAtomic } from "../../lib/atomic.ts";

Deno.test("P: writeFileAtomic replaces the file (a new inode), never rewrites it in place", async () => {
  const dir = await Deno.makeTempDir();
  const old = Deno.umask(0o077);
  try {
    const path = `${dir}/stamp`;
    await Deno.writeTextFile(path, "old\n");
    // A reader holding the old file (here a hard link) keeps reading the old content whole.
    await Deno.link(path, `${dir}/reader`);
    await writeFileAtomic(path, "new\n");
    assertEquals(await Deno.readTextFile(path), "new\n");
    assertEquals(await Deno.readTextFile(`${dir}/reader`), "old\n");
    assertEquals((await Deno.stat(path)).mode! & 0o777, 0o644, "the mode ignores the umask");
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["reader", "stamp"]);
  } finally {
    Deno.umask(old);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileAtomic with replace: false never replaces a file there, says so in its cause, and leaves no temporary file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/ca.key`;
    await writeFileAtomic(path, "first\n", { mode: 0o600, replace: false });
    assertEquals(await Deno.readTextFile(path), "first\n");
    assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
    let caught: unknown;
    try {
      await writeFileAtomic(path, "second\n", { replace: false });
    } catch (error) {
      caught = error;
    }
    assert(caught instanceof Error, "refused");
    assert(caught.cause instanceof Deno.errors.AlreadyExists, String(caught.cause));
    assertEquals(await Deno.readTextFile(path), "first\n");
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["ca.key"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
