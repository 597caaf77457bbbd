/**
 * compareNames (reconcile/observe/name_order.ts) sorts as `localeCompare` does, without loading
 * ICU's collator: the same sign on random names over its alphabet and beyond it.
 */

import { assertEquals } from "../support/assert.ts";
import { compareNames } from "../../reconcile/observe/name_order.ts";
import { rng } from "../support/rng.ts";

Deno.test("compareNames gives localeCompare's sign for account and source names, and any other", () => {
  const r = rng(Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16));
  const plain = [..."_-$0123456789abcdefghijklmnopqrstuvwxyz"];
  const other = [...plain, "A", "Z", ".", "/", "@", " ", "é", "\u0000"];
  for (let n = 0; n < 20_000; n++) {
    const chars = n % 5 === 0 ? other : plain;
    const name = () => Array.from({ length: r.int(6) }, () => r.pick(chars)).join("");
    const a = name();
    // Often a prefix of the other, or one character apart.
    const b = r.chance(0.3) ? a + name() : r.chance(0.3) ? a.slice(0, -1) + r.pick(chars) : name();
    const want = Math.sign(a.localeCompare(b));
    assertEquals(compareNames(a, b), want, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    assertEquals(compareNames(b, a), -want || 0, `${JSON.stringify(b)} vs ${JSON.stringify(a)}`);
  }
  assertEquals(
    ["root", "alice", "boot-units", "_x", "a-b", "a_b", "a$", "boot-podman", ""].sort(compareNames),
    ["", "_x", "a_b", "a-b", "a$", "alice", "boot-podman", "boot-units", "root"],
  );
});
