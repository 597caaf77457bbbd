import { assertEquals } from "../support/assert.ts";
import { type DuplicateKey, duplicateKeys } from "../../lib/json_keys.ts";

/** The scan's answer as `at key count` lines, after checking the text is JSON. */
function scan(text: string): string[] {
  JSON.parse(text);
  return duplicateKeys(text).map((d: DuplicateKey) => `${d.at} ${d.key} ${d.count}`);
}

Deno.test("duplicateKeys: escaped quotes and backslashes in keys and values are skipped exactly", () => {
  // A value ending in a backslash, a value holding an escaped quote, keys with both.
  assertEquals(scan(String.raw`{"a\\":1,"b":"x\\","a\\":2}`), [String.raw`["a\\"] a\ 2`]);
  assertEquals(scan(String.raw`{"q\"":1,"v":"\",\"q\\\"\":","q\"":2}`), [`["q\\""] q" 2`]);
  assertEquals(scan(String.raw`{"v":"{\"a\":1,\"a\":2}","w":"\\\\"}`), []);
  // Distinct keys that differ only in an escape are distinct.
  assertEquals(scan(String.raw`{"a\\":1,"a":2,"a\"":3}`), []);
});

Deno.test("duplicateKeys: keys equal once unescaped are one key, as JSON.parse reads them", () => {
  assertEquals(scan(String.raw`{"a":1,"\u0061":2}`), ["a a 2"]);
  assertEquals(scan(String.raw`{"\u0061":1,"a":2,"\u0061":3}`), ["a a 3"]);
  assertEquals(scan(String.raw`{"é":1,"\u00e9":2}`), [`["é"] é 2`]);
  assertEquals(scan(String.raw`{"😀":1,"\ud83d\ude00":2}`), [`["😀"] 😀 2`]);
  assertEquals(scan(String.raw`{"\n":1,"\u000a":2}`), [`["\\n"] \n 2`]);
  // In an object of many keys (the scan's Set) as well.
  const many = Array.from({ length: 20 }, (_, i) => `"k${i}":${i}`).join(",");
  assertEquals(scan(`{${many},"\\u006b3":0}`), ["k3 k3 2"]);
});

Deno.test("duplicateKeys: keys whose hashes collide are still told apart", () => {
  // "Aa" and "BB" have one 31-polynomial hash (the scan confirms a hash match by characters, and
  // recounts an object it suspects by its decoded keys, so a collision costs time, never a word).
  assertEquals(scan(`{"Aa":1,"BB":2}`), []);
  assertEquals(scan(`{"Aa":1,"BB":2,"Aa":3}`), ["Aa Aa 2"]);
});

Deno.test("duplicateKeys: paths through nested arrays of objects, with inner objects first", () => {
  assertEquals(
    scan(`{"r":[{"a":1},{"a":1,"b":[{},{"c":1,"c":2,"c":3}],"a":2}],"r":0}`),
    ["r[1].b[1].c c 3", "r[1].a a 2", "r r 2"],
  );
  // Within one object, repeated keys in the order of their first occurrence.
  assertEquals(scan(`{"b":1,"a":1,"a":2,"b":2}`), ["b b 2", "a a 2"]);
  // A parent key that needs quoting and escaping in the path.
  assertEquals(scan(String.raw`{"x.y\"":{"z":1,"z":2}}`), [`["x.y\\""].z z 2`]);
  assertEquals(scan(`[[1,{"a":1}],[{"b":[],"b":{}}]]`), ["[1][0].b b 2"]);
  assertEquals(scan(`[{"a":1},{"a":2}]`), []);
});

Deno.test("duplicateKeys: empty objects and arrays, whitespace, scalars", () => {
  assertEquals(scan(`{}`), []);
  assertEquals(scan(` { "a" : { } , "b" : [ ] , "a" : [ { } ] } `), ["a a 2"]);
  assertEquals(scan(`{"":1,"":2}`), [`[""]  2`]);
  assertEquals(scan(`"{\\"a\\":1,\\"a\\":2}"`), []);
  assertEquals(scan(`[1,true,null,-2.5e3,"s"]`), []);
});

Deno.test("duplicateKeys: deep nesting keeps every level's path", () => {
  const depth = 2000;
  const text = `${'{"k":['.repeat(depth)}{"d":1,"d":2}${"]}".repeat(depth)}`;
  const found = duplicateKeys(text);
  assertEquals(found.length, 1);
  assertEquals(found[0]!.path.length, 2 * depth + 1);
  assertEquals(found[0]!.at, `${"k[0].".repeat(depth)}d`);
});

Deno.test("duplicateKeys: an object past the linear scan finds a late repeat of an early key", () => {
  const keys = Array.from({ length: 50 }, (_, i) => `"k${i}":${i}`);
  assertEquals(scan(`{${keys.join(",")}}`), []);
  assertEquals(scan(`{${keys.join(",")},"k0":0,"k49":1,"k0":2}`), ["k0 k0 3", "k49 k49 2"]);
  // The repeat falls exactly on the switch from the linear scan to the Set.
  for (let n = 1; n <= 12; n++) {
    const some = keys.slice(0, n).join(",");
    assertEquals(scan(`{${some},"k0":0}`), ["k0 k0 2"], `after ${n} keys`);
    assertEquals(scan(`{${some},"k${n - 1}":0}`), [`k${n - 1} k${n - 1} 2`], `after ${n} keys`);
  }
});
