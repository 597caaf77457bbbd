/**
 * compareNames (reconcile/observe/name_order.ts): `localeCompare`'s order under the root locale for
 * account and source names, without loading ICU's collator, and a total order on any names,
 * whatever the machine's locale.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { compareAccountKeys, compareNames } from "../../reconcile/observe/name_order.ts";
import { rng } from "../support/rng.ts";

const PLAIN = [..."_-$0123456789abcdefghijklmnopqrstuvwxyz"];
const OTHER = [...PLAIN, "A", "Z", ".", "/", "@", " ", "é", "\u0000", "\ud83d\ude00"];

Deno.test("compareNames gives localeCompare's sign under English for account and source names", () => {
  const r = rng(Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16));
  // An explicit locale: `und` and `localeCompare` follow the machine's LANG.
  const root = new Intl.Collator("en");
  for (let n = 0; n < 20_000; n++) {
    const name = () => Array.from({ length: r.int(6) }, () => r.pick(PLAIN)).join("");
    const a = name();
    // Often a prefix of the other, or one character apart.
    const b = r.chance(0.3) ? a + name() : r.chance(0.3) ? a.slice(0, -1) + r.pick(PLAIN) : name();
    const want = Math.sign(root.compare(a, b));
    assertEquals(compareNames(a, b), want, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assertEquals(compareNames(b, a), -want || 0, `${JSON.stringify(b)} vs ${JSON.stringify(a)}`);
  }
  assertEquals(
    ["root", "alice", "boot-units", "_x", "a-b", "a_b", "a$", "boot-podman", ""].sort(compareNames),
    ["", "_x", "a_b", "a-b", "a$", "alice", "boot-podman", "boot-units", "root"],
  );
});

Deno.test("compareNames is a total order on any names, plain and not mixed", () => {
  const r = rng(Number(Deno.env.get("MESH_FUZZ_SEED") ?? 17));
  const name = () => Array.from({ length: r.int(5) }, () => r.pick(OTHER)).join("");
  for (let n = 0; n < 20_000; n++) {
    const [a, b, c] = [name(), name(), name()];
    const ab = compareNames(a, b);
    assertEquals(compareNames(b, a), -ab || 0, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assertEquals(ab === 0, a === b, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    if (ab < 0 && compareNames(b, c) < 0) {
      assert(compareNames(a, c) < 0, `${JSON.stringify([a, b, c])} is not transitive`);
    }
  }
  // Plain names first within a place, the rest after them by code unit.
  assertEquals(["b", "B", "a.b", "a", "ab", "é"].sort(compareNames), [
    "a",
    "ab",
    "a.b",
    "b",
    "B",
    "é",
  ]);
});

Deno.test("account/name keys order by account, then name", () => {
  assertEquals(
    ["root2/a", "root/c", "alice/b", "root/a", "root/B", "root"].sort(compareAccountKeys),
    ["alice/b", "root", "root/a", "root/c", "root/B", "root2/a"],
  );
});
