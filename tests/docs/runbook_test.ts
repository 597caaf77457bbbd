/**
 * The runbook reader (tests/support/runbook.ts) on small pages, and on docs/operations.md itself:
 * its marked blocks are found in order, each placeholder it uses is one it lists, and a mark that
 * names no place or is not followed by a block is refused with its line.
 */

import { assert, assertEquals, assertThrows } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { fillIn, readRunbook, uses } from "../support/runbook.ts";

const PAGE = [
  "# A page", // 1
  "", // 2
  "## Values you supply", // 3
  "", // 4
  "| value | what |", // 5
  "| --- | --- |", // 6
  "| `NODE_NAME` | the node |", // 7
  "| `EVERY` | how often |", // 8
  "", // 9
  "## Steps", // 10
  "| `NOT_A_VALUE` | outside the table's section |", // 11
  "<!-- lab: first -->", // 12
  "```sh", // 13
  "echo NODE_NAME every EVERY; echo MESH_NODE_NAME", // 14
  "```", // 15
  "", // 16
  "```sh", // 17
  "echo illustrative", // 18
  "```", // 19
  "<!--  lab:  node   openrc -->", // 20
  "", // 21
  "```sh", // 22
  "rc-update add x", // 23
  "```", // 24
].join("\n");

Deno.test("the reader returns the marked blocks in order, with their fence's line", () => {
  const book = readRunbook(PAGE);
  assertEquals(book.values, ["NODE_NAME", "EVERY"]);
  assertEquals(book.blocks, [
    { target: "first", line: 13, text: "echo NODE_NAME every EVERY; echo MESH_NODE_NAME\n" },
    { target: "node openrc", line: 22, text: "rc-update add x\n" },
  ]);
});

Deno.test("fillIn replaces the listed placeholders as whole words, and nothing else", () => {
  const book = readRunbook(PAGE);
  const text = fillIn(book.blocks[0]!, book.values, { NODE_NAME: "web1", EVERY: "$1 30s" });
  assertEquals(text, "echo web1 every $1 30s; echo MESH_NODE_NAME\n");
  assert(uses(book.blocks[0]!, ["EVERY"]));
  assert(!uses(book.blocks[1]!, book.values));
  const e = assertThrows(() => fillIn(book.blocks[0]!, book.values, { NODE_NAME: "web1" }), Error);
  assertEquals(e.message, "Block at line 13 uses EVERY, which no value was supplied for");
});

Deno.test("the reader refuses an unknown mark, a mark with no block, an unclosed fence", () => {
  const refused = (page: string) => assertThrows(() => readRunbook(page, "p.md"), Error).message;
  assertEquals(
    refused("a\n<!-- lab: laptop -->\n```sh\nx\n```\n"),
    'Cannot read the runbook p.md: line 2: unknown lab mark "laptop" (known: "first", "control", "node", "node systemd", "node openrc")',
  );
  assertEquals(
    refused("<!-- lab: first -->\n\nrun this:\n```sh\nx\n```\n"),
    "Cannot read the runbook p.md: line 1: a lab mark must be followed by a fenced block (blank lines between)",
  );
  assertEquals(
    refused("<!-- lab: first -->"),
    "Cannot read the runbook p.md: line 1: a lab mark must be followed by a fenced block (blank lines between)",
  );
  assertEquals(
    refused("```sh\nx\n"),
    "Cannot read the runbook p.md: line 1: this fence is never closed",
  );
});

Deno.test("docs/operations.md: marked blocks for every place, every placeholder listed", async () => {
  const page = await Deno.readTextFile(`${ROOT}docs/operations.md`);
  const book = readRunbook(page, "docs/operations.md");
  const targets = new Set(book.blocks.map((b) => b.target));
  for (const t of ["first", "control", "node systemd", "node openrc"]) {
    assert(targets.has(t as never), `no block marked ${t}`);
  }
  // An upper-case word that looks like a placeholder in a marked block is a listed value, or a
  // variable the block itself names ($NAME, NAME=).
  for (const block of book.blocks) {
    for (const [word] of block.text.matchAll(/(?<![A-Za-z0-9_$])[A-Z][A-Z0-9]*_[A-Z0-9_]+/g)) {
      const known = book.values.includes(word) || word.startsWith("MESH_");
      assert(known, `docs/operations.md line ${block.line}: ${word} is not a listed value`);
    }
  }
  for (const value of book.values) {
    assert(uses({ target: "first", line: 0, text: page }, [value]));
  }
});
