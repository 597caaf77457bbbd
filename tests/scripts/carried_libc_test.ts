/**
 * scripts/carried_libc.ts: the lock is read with every problem named by its path, and a package
 * that does not match its pin is refused, naming what it has and what the lock pins, before
 * anything of it is unpacked or carried (Debian's real archive, the committed lock's libgcc-s1).
 */

import { assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import {
  CARRIED_LIBC_LOCK,
  fetchCarriedLibc,
  readCarriedLibcLock,
} from "../../scripts/carried_libc.ts";

Deno.test("the committed carried-libc lock reads; a bad one is refused naming each field", async () => {
  const lock = await readCarriedLibcLock();
  assertEquals(Object.keys(lock.arches).sort(), ["aarch64", "x86_64"]);
  const dir = await Deno.makeTempDir();
  try {
    const bad = structuredClone(lock);
    bad.arches.x86_64.packages[0]!.sha256 = "not-a-digest";
    bad.arches.aarch64.loader = "/lib/ld.so";
    await Deno.writeTextFile(`${dir}/lock.json`, JSON.stringify(bad));
    const error = await assertRejects(() => readCarriedLibcLock(`${dir}/lock.json`), Error);
    const message = error.message;
    assertStringIncludes(message, `Cannot read the carried libc lock "${dir}/lock.json"`);
    assertStringIncludes(message, "arches.x86_64.packages.0.sha256: a sha256 is 64 lower-case hex");
    assertStringIncludes(message, "arches.aarch64.loader");
    await Deno.writeTextFile(`${dir}/lock.json`, "{");
    const notJson = await assertRejects(() => readCarriedLibcLock(`${dir}/lock.json`), Error);
    assertStringIncludes(notJson.message, `Cannot read the carried libc lock "${dir}/lock.json"`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a package that is not what the lock pins is refused, and nothing is unpacked", async () => {
  const lock = await readCarriedLibcLock(CARRIED_LIBC_LOCK);
  const forged = structuredClone(lock);
  // libgcc-s1 (50 KB) first, so the real archive is asked for the small package only.
  forged.arches.x86_64.packages = [{ ...lock.arches.x86_64.packages[1]!, sha256: "0".repeat(64) }];
  const dir = await Deno.makeTempDir();
  try {
    const error = await assertRejects(
      () => fetchCarriedLibc("x86_64", dir, { runtime: "/bin/true", lock: forged }),
      Error,
    );
    const pinned = lock.arches.x86_64.packages[1]!;
    assertStringIncludes(
      error.message,
      `Cannot use libgcc-s1 ${pinned.version} from ${lock.mirror}/${pinned.filename}: it has ` +
        `${pinned.size} bytes and sha256 ${pinned.sha256}, and the lock pins ${pinned.size} bytes ` +
        `and ${"0".repeat(64)}`,
    );
    // Nothing kept: no package, no unpacked libc.
    const left = [...Deno.readDirSync(dir)].flatMap((e) =>
      e.isDirectory
        ? [...Deno.readDirSync(`${dir}/${e.name}`)].map((f) => `${e.name}/${f.name}`)
        : [e.name]
    );
    assertEquals(left, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
