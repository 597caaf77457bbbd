// The fast registry read (reconcile/registry_fast.ts) against the full one (the `yaml` package):
// whenever the fast read accepts a text, the `yaml` package finds no problem in it and gives the
// same data; what it declines is left to the full read. Held on every scalar form that resolves
// differently between parsers, on the fixtures, and on thousands of random edits of a registry.

import { parseDocument } from "yaml";
import { assert, assertEquals } from "../support/assert.ts";
import { quickLoad } from "../../reconcile/registry_fast.ts";
import { parseRegistry, RegistryError } from "../../reconcile/registry.ts";
import { MAX_YAML_DEPTH, MAX_YAML_LINE } from "../../lib/text_bounds.ts";

/** The `yaml` package's verdict: its data, or `undefined` when it finds any problem. */
function fullLoad(text: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) return undefined;
  try {
    return doc.toJS({ maxAliasCount: 1000 });
  } catch {
    return undefined;
  }
}

/** Asserts the fast read either declines `text` or agrees with the full read exactly. */
function agrees(text: string): "fast" | "declined" {
  const quick = quickLoad(text);
  if (quick === undefined) return "declined";
  const full = fullLoad(text);
  assert(full !== undefined, `the fast read accepted what the yaml package refuses:\n${text}`);
  assertEquals(quick, full, `the two reads differ on:\n${text}`);
  return "fast";
}

const SCALARS = [
  "1_000",
  "0b101",
  "0o17",
  "017",
  "0x1F",
  "0X1F",
  "+0x1",
  "+12",
  "-0",
  "00",
  "1e3",
  "1E3",
  "1.5e+3",
  "-.5e-3",
  ".5",
  "5.",
  "+.5",
  ".inf",
  "-.Inf",
  "+.INF",
  ".NaN",
  ".nan",
  "-.nan",
  "NaN",
  "inf",
  "yes",
  "no",
  "on",
  "off",
  "y",
  "True",
  "TRUE",
  "tRue",
  "false",
  "~",
  "Null",
  "NULL",
  "nULL",
  "null",
  "",
  "2001-12-14",
  "2001-12-14T21:59:43.10-05:00",
  "12:30:45",
  "1:20",
  "0",
  "1,000",
  "0xG",
  "0o8",
  "99999999999999999999",
  "1e400",
  "'quoted 1'",
  '"2"',
  '"a\\tb"',
  "!!str 12",
  "!!int '7'",
  "!!float 1",
  "!!bool yes",
  "!!null ''",
  "<<",
  "= ",
  "'~'",
  "-",
  "- ",
  "[1, 0x10, .5]",
  "{a: 1, b: ~}",
  "|\n  block\n  text\n",
  ">-\n  folded\n  text\n",
];

Deno.test("the fast read resolves every plain scalar as the yaml package's core schema does", () => {
  let fast = 0;
  for (const scalar of SCALARS) {
    if (agrees(`k: ${scalar}\n`) === "fast") fast++;
    agrees(`- ${scalar}\n`);
  }
  // Most forms are read fast; a test that only ever declined would prove nothing.
  assert(fast > SCALARS.length - 12, `only ${fast} of ${SCALARS.length} read fast`);
});

Deno.test("the fast read declines repeated keys, aliases, several documents and YAML errors", () => {
  for (
    const text of [
      "a: 1\na: 2\n",
      "services:\n  web: {kind: site}\n  web: {kind: site}\n",
      "base: &b {x: 1}\nother: *b\n",
      "a: [*x]\n",
      "a: 1\n---\nb: 2\n",
      "a: 1\n b: 2\n",
      "a:\n\t- 1\n",
      "a: 'open\n",
      "a: !custom 1\n",
      "key: value: other\n",
      "[a, b\n",
    ]
  ) {
    assertEquals(quickLoad(text), undefined, `the fast read accepted:\n${text}`);
  }
});

Deno.test("a __proto__ key is data in both reads, not a prototype", () => {
  const text = "__proto__: {polluted: true}\nx: 1\n";
  const quick = quickLoad(text) as Record<string, unknown> | undefined;
  if (quick !== undefined) {
    assertEquals(({} as Record<string, unknown>).polluted, undefined);
    agrees(text);
  }
});

const VALID = `# the estate
version: 1
accounts: [root, alice, "bob"]
services:
  web:
    kind: service
    user: root
    container: web
    port: [8080, 8443]
    web: [app.example.org]
    state: [/srv/web]
  old:  # only redirects
    kind: site
    web: old.example.org
    redirect: 'https://app.example.org/'
  publish:
    kind: batch
    user: root
    timer: publish.timer
    container: publisher
  db:
    kind: daemon
    user: alice
    unit: postgresql.service
    port: 5432
    note: |
      kept by hand
      since 2024
`;

/** The valid registry and lines only the YAML reads care about (the schema refuses them). */
const BASE = `${VALID}    flags: [a, "two", 'three', 4, -5, 0x1F, .5, ~, yes]
    extra:
      - one  # a comment
      - "two: 2"
      - - nested
      - key: value
        other: >-
          folded
          text
`;

/** A small seeded generator (mulberry32), so a failure names an edit that can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INSERTS = [
  " ",
  "  ",
  "\t",
  ":",
  ": ",
  "-",
  "- ",
  "#",
  '"',
  "'",
  "\n",
  "[",
  "]",
  "{",
  "}",
  ",",
  "&a ",
  "*a",
  "!",
  "!!str ",
  "|",
  ">",
  "?",
  "? ",
  "%",
  "@",
  "`",
  "0x",
  ".",
  "~",
  "---\n",
  "...\n",
  "\\",
  "1",
  "_",
  "e5",
  "\r",
  "\u00a0",
  "\ufeff",
  "null",
  "|2",
  "\\U0011",
  "%YAML 1.1\n",
];

function edit(text: string, next: () => number): string {
  const at = Math.floor(next() * (text.length + 1));
  const lines = text.split("\n");
  switch (Math.floor(next() * 5)) {
    case 0:
      return text.slice(0, at) + INSERTS[Math.floor(next() * INSERTS.length)]! + text.slice(at);
    case 1:
      return text.slice(0, at) + text.slice(at + 1 + Math.floor(next() * 3));
    case 2: {
      const i = Math.floor(next() * lines.length);
      lines.splice(i, 0, lines[i]!);
      return lines.join("\n");
    }
    case 3: {
      const i = Math.floor(next() * lines.length);
      const j = Math.floor(next() * lines.length);
      [lines[i], lines[j]] = [lines[j]!, lines[i]!];
      return lines.join("\n");
    }
    default: {
      const i = Math.floor(next() * lines.length);
      lines[i] = next() < 0.5 ? ` ${lines[i]}` : lines[i]!.replace(/^ /, "");
      return lines.join("\n");
    }
  }
}

Deno.test("on 6,000 random edits of a registry the fast read never disagrees with the full one", () => {
  const next = random(20261201);
  let fast = 0;
  let declined = 0;
  for (let i = 0; i < 6_000; i++) {
    let text = BASE;
    const edits = 1 + Math.floor(next() * 3);
    for (let e = 0; e < edits; e++) text = edit(text, next);
    if (agrees(text) === "fast") fast++;
    else declined++;
  }
  // Both sides are exercised: many edits still parse (and must agree), many do not.
  assert(fast > 600 && declined > 500, `fast ${fast}, declined ${declined}`);
});

/**
 * An edit past lib/text_bounds.ts's bounds (docs/design.md, "Hostile inputs", rule 3): a line
 * longer than MAX_YAML_LINE somewhere, or nesting deeper than MAX_YAML_DEPTH (indentation, dashes,
 * flow collections); what it says the full read must name.
 */
function pastBound(text: string, next: () => number): { text: string; says: string } {
  const lines = text.split("\n");
  const i = Math.floor(next() * lines.length);
  const indent = " ".repeat(lines[i]!.length - lines[i]!.trimStart().length);
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  if (next() < 0.5) {
    const n = MAX_YAML_LINE + 1 + Math.floor(next() * 100_000);
    lines.splice(
      i,
      0,
      pick([
        `${indent}note: ${"a".repeat(n)}`,
        `${indent}# ${"#".repeat(n)}`,
        `${indent}${"k".repeat(n)}: 1`,
        `${indent}- "${"a b".repeat(n / 3)}"`,
      ]),
    );
    return { text: lines.join("\n"), says: "characters long" };
  }
  const depth = MAX_YAML_DEPTH + 1 + Math.floor(next() * 200);
  lines.splice(
    i,
    0,
    pick([
      `${indent}x: ${"[".repeat(depth)}${"]".repeat(depth)}`,
      `${indent}x: ${"{a: ".repeat(depth)}1${"}".repeat(depth)}`,
      `${indent}x:\n${indent}  ${"- ".repeat(depth)}a`,
      Array.from({ length: depth }, (_, d) => `${indent}${" ".repeat(d)}k${d}:`).join("\n"),
    ]),
  );
  return { text: lines.join("\n"), says: "levels deep" };
}

Deno.test("on 300 random edits past the line and nesting bounds the fast read declines and the full read names the bound", () => {
  const next = random(28);
  let named = 0;
  for (let i = 0; i < 300; i++) {
    let text = BASE;
    for (let e = Math.floor(next() * 3); e > 0; e--) text = edit(text, next);
    const past = pastBound(text, next);
    const where = `edit ${i}: ${past.says}`;
    if (quickLoad(past.text) !== undefined) {
      // Only nesting written inside a block scalar's text (`note: |`), which nests nothing.
      assertEquals(past.says, "levels deep", where);
      assertEquals(agrees(past.text), "fast", where);
      continue;
    }
    try {
      parseRegistry(past.text, "fuzz.yaml");
      throw new Error(`accepted (${where})`);
    } catch (error) {
      assert(error instanceof RegistryError, `${(error as Error)?.stack} (${where})`);
      const said = error.problems.map((p) => p.message).join("; ");
      assert(!said.includes("call stack"), `${said.slice(0, 500)} (${where})`);
      if (said.includes(past.says)) named++;
    }
  }
  // The other problems of the edits are placed too, but most refusals name the bound.
  assert(named > 200, `${named} of 300 named the bound`);
});

Deno.test("parseRegistry reads a valid registry fast and still places every problem", () => {
  assert(quickLoad(BASE) !== undefined, "the fuzzed registry must take the fast read");
  assert(quickLoad(VALID) !== undefined, "the valid registry must take the fast read");
  const registry = parseRegistry(VALID);
  assertEquals(Object.keys(registry.services), ["web", "old", "publish", "db"]);
  // Valid YAML the schema refuses: the fast read accepts the text, the full read places it.
  const bad = VALID.replace("port: 5432", "port: 'x'");
  assert(quickLoad(bad) !== undefined);
  try {
    parseRegistry(bad, "estate.yaml");
    throw new Error("parseRegistry accepted a bad port");
  } catch (error) {
    assert(error instanceof RegistryError, String(error));
    const port = error.problems.find((p) => p.path === "services.db.port");
    assert(port !== undefined, JSON.stringify(error.problems));
    assertEquals([port.line, port.column], [25, 11]);
  }
});

// Forms a review found the plain-style gate letting through while the two reads differ; each is
// now outside the plain style (declined, so the full read decides).

Deno.test("a %YAML 1.1 directive is left to the full read (it changes the yaml package's schema)", () => {
  agrees("%YAML 1.1\n---\na: yes\nb: 010\nc: 0b11\n");
  const text = `%YAML 1.1\n---\n${VALID.replace("port: 5432", "port: 010")}`;
  assertEquals(quickLoad(text), undefined);
  // What the full read (and mesh before the fast read) gives: 010 is octal under YAML 1.1.
  assertEquals(parseRegistry(text).services.db!.port, [8]);
});

Deno.test("a null key (null, Null, NULL) is left to the full read, which reads it as ''", () => {
  agrees("null: a\n");
  agrees("Null: a\nb: 1\n");
  agrees("- NULL: a\n");
  const text = VALID.replace("  publish:\n", "  null:\n");
  assertEquals(quickLoad(text), undefined);
  assertThrowsRegistry(() => parseRegistry(text));
});

Deno.test("an implicit key over 1,000 characters, a \\U escape and an explicit block indentation are left to the full read", () => {
  agrees(`${"k".repeat(1100)}: v\n`);
  agrees('a: "\\U00110000"\n');
  agrees('a: "\\UFFFFFFFF"\n');
  agrees("a: |2\n    \n");
  agrees("a: |1\n  \n");
  agrees("a: |2-\n    \n");
  for (const text of [`${"k".repeat(1100)}: v\n`, 'a: "\\U00110000"\n', "a: |2\n    \n"]) {
    assertEquals(quickLoad(text), undefined, text);
  }
});

/** Asserts `fn` throws a RegistryError (the full read refusing what it reads). */
function assertThrowsRegistry(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    assert(error instanceof RegistryError, String(error));
    return;
  }
  throw new Error("the registry was accepted");
}
