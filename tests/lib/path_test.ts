import { assertEquals } from "../support/assert.ts";
import * as node from "node:path";
import { basename, dirname, join, resolve } from "../../lib/path.ts";

const SAMPLES = [
  "",
  "/",
  "//",
  "///",
  ".",
  "..",
  "./",
  "../",
  "a",
  "a/",
  "/a",
  "/a/",
  "a/b",
  "/a/b/",
  "a//b",
  "/a/./b",
  "/a/../b",
  "a/../..",
  "../a/..",
  "/..",
  "/../a",
  "./a/./b/.",
  "a/b/../../..",
  "..a",
  "a..",
  ".a",
  "a.",
  "...",
  "/.../b",
  "/a/b/c/../../d",
  "//a//b//",
  "a/b/./../c/",
  "/var/lib/mesh/host",
  "/tmp/x/.f.mesh-tmp",
  "relative/../../x",
];

Deno.test("join, dirname, basename and resolve equal node:path's", () => {
  for (const a of SAMPLES) {
    assertEquals(dirname(a), node.posix.dirname(a), `dirname(${JSON.stringify(a)})`);
    assertEquals(basename(a), node.posix.basename(a), `basename(${JSON.stringify(a)})`);
    assertEquals(join(a), node.posix.join(a), `join(${JSON.stringify(a)})`);
    assertEquals(resolve(a), node.posix.resolve(a), `resolve(${JSON.stringify(a)})`);
    for (const b of SAMPLES) {
      const what = `(${JSON.stringify(a)}, ${JSON.stringify(b)})`;
      assertEquals(join(a, b), node.posix.join(a, b), `join${what}`);
      assertEquals(resolve(a, b), node.posix.resolve(a, b), `resolve${what}`);
    }
  }
  assertEquals(join(), node.posix.join());
  assertEquals(resolve(), node.posix.resolve());
  assertEquals(join("a", "", "b", "../c"), node.posix.join("a", "", "b", "../c"));
});

Deno.test("join, dirname, basename and resolve equal node:path's on random paths", () => {
  const alphabet = ["/", ".", "a", "b"];
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const path = () =>
    Array.from({ length: Math.floor(random() * 9) }, () => alphabet[Math.floor(random() * 4)])
      .join("");
  for (let i = 0; i < 5000; i++) {
    const a = path();
    const b = path();
    assertEquals(dirname(a), node.posix.dirname(a), `dirname(${JSON.stringify(a)})`);
    assertEquals(basename(a), node.posix.basename(a), `basename(${JSON.stringify(a)})`);
    assertEquals(join(a, b), node.posix.join(a, b), `join(${JSON.stringify([a, b])})`);
    assertEquals(resolve(a, b), node.posix.resolve(a, b), `resolve(${JSON.stringify([a, b])})`);
  }
});
