import { assertEquals, assertRejects } from "../support/assert.ts";
import {
  concat,
  readFileLimited,
  readRegularFileLimited,
  writeFileAtomic,
} from "../../lib/atomic.ts";

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

Deno.test("concat joins chunks in order; readFileLimited and readRegularFileLimited read files of several chunks whole", async () => {
  assertEquals(concat([], 0), new Uint8Array());
  const one = new Uint8Array([1, 2, 3]);
  assertEquals(concat([one], 3), one);
  assertEquals(
    concat([new Uint8Array([1]), new Uint8Array(), new Uint8Array([2, 3]), new Uint8Array([4])], 4),
    new Uint8Array([1, 2, 3, 4]),
  );
  const dir = await Deno.makeTempDir();
  try {
    // 200,003 bytes: more than three of readFileLimited's 64 KiB reads, a pattern that shows order.
    const bytes = Uint8Array.from({ length: 200_003 }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
    const path = `${dir}/big`;
    await Deno.writeFile(path, bytes);
    assertEquals(await readFileLimited(path, bytes.length), bytes);
    assertEquals(await readRegularFileLimited(path, bytes.length), bytes);
    const tooBig = await assertRejects(() => readFileLimited(path, bytes.length - 1), RangeError);
    assertEquals(tooBig.message, `"${path}" is larger than ${bytes.length - 1} bytes`);
    await assertRejects(() => readRegularFileLimited(path, bytes.length - 1), RangeError);
    await Deno.writeFile(path, new Uint8Array());
    assertEquals(await readFileLimited(path, 10), new Uint8Array());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
