/**
 * lib/printable.ts, the one definition of what shown text escapes (rule 5 in docs/design.md):
 * a field, a whole output, JSON; and lib/write.ts, through which every program writes.
 *
 * @module
 */

import { assert, assertEquals } from "../support/assert.ts";
import { denoRun, ROOT } from "../support/mod.ts";
import { assertJsonEscaped, assertShown, disguised, DISGUISES } from "../support/disguise.ts";
import { jsonText, printable, printableText } from "../../lib/printable.ts";

Deno.test("printable shows every disguising character of a field as <U+XXXX>", () => {
  for (const d of DISGUISES) {
    assertEquals(printable(`a${d.char}b`), `a${d.shown}b`, d.what);
  }
  assertShown(printable(disguised("field")), "printable");
  // A field's line breaks, a carriage return, an escape and DEL cannot forge or colour a line.
  assertEquals(
    printable("a\nb\rc\x1b[31md\x7fe\u2029f"),
    "a<U+000A>b<U+000D>c<U+001B>[31md<U+007F>e<U+2029>f",
  );
  // Tag characters (above U+FFFF) and a lone surrogate are one escape each.
  assertEquals(printable("a\u{e0041}b\ud800c"), "a<U+E0041>b<U+D800>c");
  // Hangul fillers render as nothing.
  assertEquals(printable("a\u3164b"), "a<U+3164>b");
  // Text that needs nothing is the same string; a tab and ordinary Unicode are kept.
  const plain = "naïve café, 東京, emoji \u{1F600}, tab\there";
  assertEquals(printable(plain), plain);
});

Deno.test("printableText keeps an output's own line feeds and tabs and is idempotent", () => {
  assertEquals(printableText("one\ttwo\nthree\u202e\r\n"), "one\ttwo\nthree<U+202E><U+000D>\n");
  const once = printableText(disguised("text"));
  assertShown(once, "printableText");
  assertEquals(printableText(once), once);
  assertEquals(printableText(printable("a\nb")), "a<U+000A>b");
});

Deno.test("jsonText is the same JSON with every disguising character as a \\u escape", () => {
  const value = {
    name: disguised("name"),
    list: [disguised("item"), "tag \u{e0041} del \x7f"],
    "key\u202e": 1,
  };
  for (const space of [undefined, 2]) {
    const text = jsonText(value, space);
    assertJsonEscaped(text, `jsonText (space ${space})`);
    assertEquals(JSON.parse(text), value, "the JSON means the same");
    assert(text.includes("\\udb40\\udc41"), "a tag character is its surrogate pair");
    assert(text.includes("\\u007f"), "DEL is escaped");
    assertEquals(printableText(text), text, "nothing left for the output to escape");
  }
  assertEquals(jsonText({ a: "plain" }, 2), JSON.stringify({ a: "plain" }, null, 2));
});

Deno.test("writeAll, through which every program writes, shows every disguise", async () => {
  // Each program's stdout and stderr are lib/write.ts writeAll: one process writes a disguised
  // line to both, as a program would.
  const code = `
    import { writeAll } from "${ROOT}lib/write.ts";
    writeAll(Deno.stdout, ${JSON.stringify(disguised("stdout") + "\tend\n")});
    writeAll(Deno.stderr, ${JSON.stringify(disguised("stderr") + "\n")});
  `;
  const dir = await Deno.makeTempDir({ prefix: "mesh-write-" });
  try {
    await Deno.writeTextFile(`${dir}/write.ts`, code);
    const out = await denoRun([`${dir}/write.ts`]);
    assertEquals(out.code, 0, out.stderr);
    assertShown(out.stdout, "stdout");
    assert(out.stdout.endsWith("\tend\n"), "the output's own tab and line feed are kept");
    assertShown(out.stderr, "stderr");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
