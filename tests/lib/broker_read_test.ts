/**
 * lib/broker_read.ts: the link's plain read of its messages answers as the zod schemas of
 * lib/broker.ts do (the same value, or the same MessageError), and the link loads no zod.
 */

import { z } from "zod";
import { assert, assertEquals } from "../support/assert.ts";
import { loadedAtStart } from "../support/module_graph.ts";
import {
  checkReportMessage,
  plainDeclarationMessage,
  plainReport,
  readDeclarationMessage,
} from "../../lib/broker_read.ts";
import {
  DeclarationMessage,
  decodeMessage,
  MessageError,
  ReportMessage,
} from "../../lib/broker.ts";
import { isReportMessage } from "../../lib/report_validators.js";
import {
  MAX_PROBLEM_MESSAGE_LENGTH,
  MAX_PROBLEM_PLACE_LENGTH,
  MAX_REPORT_BYTES,
} from "../../lib/report_rules.ts";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const DECLARATION = {
  kind: "declaration",
  node: "web-1",
  generation: 3,
  digest: DIGEST,
  pushedAt: "2026-12-02T05:40:00.123Z",
  epoch: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
  declaration: '{"version":1,"resources":[]}',
};
const KEY = `ed25519:${"0a".repeat(16)}`;
const SIG = `${"Ab+/".repeat(21)}Zz==`;
const PUBKEY = `${"K/+9".repeat(14)}K/+=`;
const HANDOFF = {
  from: KEY,
  to: `ed25519:${"1b".repeat(16)}`,
  key: PUBKEY,
  signature: SIG,
};
/** A declaration as control signs it (lib/signing.ts), with a key handoff. */
const SIGNED_DECLARATION = { ...DECLARATION, keyId: KEY, signature: SIG, handoff: HANDOFF };
const REPORT = {
  kind: "report",
  node: "web-1",
  generation: 0,
  trigger: "interval",
  at: "2026-12-02T05:40:00+01:00",
  intervalMs: 60_000,
  hostVersion: "0.1.0",
  source: "link",
  epoch: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
  outcome: "applied",
  applied: 2,
  total: 2,
  declaration: DIGEST,
  changes: [
    { id: "a", type: "file", change: "unchanged" },
    { id: "b", type: "directory", change: "created" },
  ],
  problems: [{ id: "a", path: "resources[0]", message: "m" }, { message: "n" }],
};

/** Each value with one thing changed: `[name, value]`. */
function mutations(base: Record<string, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [["as is", base]];
  const odd: unknown[] = [
    null,
    undefined,
    true,
    0,
    -0,
    1,
    -1,
    999,
    1000,
    1.5,
    2 ** 53,
    2 ** 53 - 1,
    1e400,
    "",
    "x",
    "web-1",
    "Web-1",
    "-web",
    "a".repeat(63),
    "a".repeat(64),
    "2026-02-29T00:00:00Z",
    "2028-02-29T00:00:00Z",
    "2026-12-02T24:00:00Z",
    "2026-12-02T05:40:00",
    "2026-12-02T05:40:00.5+14:00",
    "2026-12-02 05:40:00Z",
    // PostgreSQL's integer and timestamptz at and past their bounds (lib/report_rules.ts).
    2 ** 31 - 1,
    2 ** 31,
    "0001-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999-15:59",
    "2026-12-02T05:40:00+16:00",
    "2026-12-02T05:40:00-16:00",
    "2026-12-02T05:40:00.1234567Z",
    `2026-12-02T05:40:00.${"1".repeat(200)}Z`,
    DIGEST,
    DIGEST.toUpperCase(),
    `${DIGEST}0`,
    "v".repeat(100),
    "v".repeat(101),
    "😀".repeat(50),
    "😀".repeat(51),
    "applied",
    "push",
    "created",
    "forgotten",
    "link",
    ".link",
    "l".repeat(64),
    "l".repeat(65),
    // Signatures (lib/signing.ts): key ids, signatures and keys of their one length.
    KEY,
    KEY.toUpperCase(),
    `${KEY}0`,
    SIG,
    SIG.slice(1),
    `${SIG.slice(0, -2)}A=`,
    PUBKEY,
    PUBKEY.slice(0, -1),
    "K/+9".repeat(15),
    HANDOFF,
    { ...HANDOFF, extra: 1 },
    { ...HANDOFF, to: "x" },
    { ...HANDOFF, key: SIG },
    { from: KEY, to: KEY, key: PUBKEY },
    // Epochs (lib/report_rules.ts EPOCH): lowercase with dashes only.
    "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
    "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9",
    "0f1e2d3c4b5a49788695a4b3c2d1e0f9",
    [],
    {},
    [{}],
    [{ message: "m" }],
    [{ id: "a", type: "t", change: "updated" }],
    [{ id: "a", type: "t", change: "updated", extra: 1 }],
    [{ id: 1, type: "t", change: "updated" }],
    [{ message: "m", path: 1 }],
    [{ message: "m", note: "x" }],
    { status: "unreadable", path: "/x", problem: "gone" },
    // Text PostgreSQL cannot store (lib/report_rules.ts isReportText): a NUL character, a lone
    // high or low surrogate; and a surrogate pair, which it can.
    "0.1\u0000",
    "\u0000",
    "\ud800",
    "a\udbff",
    "\udc00a",
    "\udfff\ud800",
    "\ud83d\ude00",
    [{ message: "a\u0000b" }],
    [{ message: "\ud800" }],
    [{ message: "\ud83d\ude00 \u0001" }],
    [{ message: "m", id: "\u0000" }],
    [{ message: "m", id: "x\udc00" }],
    [{ message: "m", path: "resources[0]\u0000" }],
    [{ message: "m", path: "\udbff" }],
    [{ id: "a\u0000", type: "t", change: "updated" }],
    [{ id: "a", type: "\ud800t", change: "updated" }],
    [{ id: "\ud83d\ude00", type: "t", change: "updated" }],
    { status: "unreadable", path: "/x", problem: "gone\u0000" },
    { status: "unreadable", path: "/x\ud800", problem: "gone" },
    // Problems at and past their bounds (lib/report_rules.ts): a message, an id, a path, and the
    // list's JSON text (128 Ki characters: 32 messages of 4,000 fit, 33 do not; escaped, 5 and 6).
    [{ message: "m".repeat(MAX_PROBLEM_MESSAGE_LENGTH) }],
    [{ message: "m".repeat(MAX_PROBLEM_MESSAGE_LENGTH + 1) }],
    [{ message: "m", id: "i".repeat(MAX_PROBLEM_PLACE_LENGTH) }],
    [{ message: "m", id: "i".repeat(MAX_PROBLEM_PLACE_LENGTH + 1) }],
    [{ message: "m", path: "p".repeat(MAX_PROBLEM_PLACE_LENGTH) }],
    [{ message: "m", path: "p".repeat(MAX_PROBLEM_PLACE_LENGTH + 1) }],
    Array.from({ length: 32 }, () => ({ message: "x".repeat(4000) })),
    Array.from({ length: 33 }, () => ({ message: "x".repeat(4000) })),
    Array.from({ length: 5 }, () => ({ message: "\u0001".repeat(4000) })),
    Array.from({ length: 6 }, () => ({ message: "\u0001".repeat(4000) })),
    Array.from({ length: 10_000 }, () => ({ message: "" })),
    Array.from({ length: 10_001 }, () => ({ message: "" })),
  ];
  for (const key of Object.keys(base)) {
    const { [key]: _, ...without } = base;
    out.push([`without ${key}`, without]);
    for (const v of odd) out.push([`${key}: ${JSON.stringify(v)}`, { ...base, [key]: v }]);
  }
  out.push(["an extra key", { ...base, extra: 1 }]);
  out.push(["drift", { ...base, drift: { status: "unreadable", path: "/x", problem: "gone" } }]);
  out.push(["__proto__ key", JSON.parse(`{"__proto__":1,${JSON.stringify(base).slice(1)}`)]);
  out.push(["keys reversed", Object.fromEntries(Object.entries(base).reverse())]);
  out.push(["an array", [base]]);
  out.push(["null", null]);
  out.push(["a string", "x"]);
  return out;
}

/**
 * The schema's answer and the plain read's, for one body: `ok` and the value as JSON (keys in
 * order; `undefined` for a check), or `refused` and the error's message.
 */
async function bothSay<T>(
  schema: z.ZodType<T>,
  read: (body: Uint8Array, what: string) => Promise<T | void>,
  body: Uint8Array,
  valueToo = true,
): Promise<[string, string]> {
  const say = async (f: () => unknown) => {
    try {
      const value = await f();
      return `ok ${valueToo ? JSON.stringify(value) : ""}`;
    } catch (error) {
      assert(error instanceof MessageError, String(error));
      return `refused ${error.message}`;
    }
  };
  return [
    await say(() => decodeMessage(schema, body, "the message")),
    await say(() => read(body, "the message")),
  ];
}

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

Deno.test("broker_read: a declaration message reads as the schema reads it, valid or not", async () => {
  let plain = 0;
  for (
    const [name, value] of [
      ...mutations(DECLARATION),
      ...mutations(SIGNED_DECLARATION).map(([n, v]) => [`signed, ${n}`, v] as [string, unknown]),
      ...mutations(HANDOFF).map(([n, v]) =>
        [`handoff ${n}`, { ...SIGNED_DECLARATION, handoff: v }] as [string, unknown]
      ),
    ]
  ) {
    const [schema, read] = await bothSay(DeclarationMessage, readDeclarationMessage, encode(value));
    assertEquals(read, schema, name);
    // The generated validator accepts exactly what the schema accepts.
    assertEquals(plainDeclarationMessage(value), DeclarationMessage.safeParse(value).success, name);
    if (plainDeclarationMessage(value)) plain++;
  }
  assert(plain > 10, `only ${plain} read plainly`);
  assert(plainDeclarationMessage(SIGNED_DECLARATION), "a signed declaration is not read plainly");
});

Deno.test("broker_read: a report message reads as the schema reads it, valid or not", async () => {
  let plain = 0;
  for (const [name, value] of mutations(REPORT)) {
    const [schema, read] = await bothSay(ReportMessage, checkReportMessage, encode(value), false);
    assertEquals(read, schema, name);
    // The generated validator accepts exactly what the schema accepts.
    assertEquals(isReportMessage(value), ReportMessage.safeParse(value).success, name);
    if (isReportMessage(value)) plain++;
  }
  assert(plain > 10, `only ${plain} read plainly`);
  // A report of the link's size (1,100 changes) is read plainly.
  const big = {
    ...REPORT,
    changes: Array.from(
      { length: 1100 },
      (_, i) => ({ id: `r${i}`, type: "file", change: "unchanged" }),
    ),
  };
  assert(plainReport(encode(big)) !== undefined);
});

Deno.test("broker_read: bodies that are not one JSON value are refused as the schema refuses them", async () => {
  const bodies = [
    new Uint8Array([0xff, 0xfe]),
    new TextEncoder().encode(""),
    new TextEncoder().encode("{"),
    new TextEncoder().encode(JSON.stringify(DECLARATION).replace("{", '{"node":"other",')),
    new TextEncoder().encode(JSON.stringify(REPORT).replace("{", '{"kind":"report",')),
  ];
  for (const body of bodies) {
    const [d1, d2] = await bothSay(DeclarationMessage, readDeclarationMessage, body);
    assertEquals(d2, d1);
    assert(d1.startsWith("refused"), d1);
    const [r1, r2] = await bothSay(ReportMessage, checkReportMessage, body, false);
    assertEquals(r2, r1);
    assert(r1.startsWith("refused"), r1);
  }
});

Deno.test("broker_read: a report body larger than a report may be is refused unread, as the schema refuses it", async () => {
  const text = JSON.stringify(REPORT);
  const at = new TextEncoder().encode(text + " ".repeat(MAX_REPORT_BYTES - text.length));
  const over = new TextEncoder().encode(text + " ".repeat(MAX_REPORT_BYTES + 1 - text.length));
  const [a1, a2] = await bothSay(ReportMessage, checkReportMessage, at, false);
  assertEquals([a1, a2], ["ok ", "ok "]);
  const [o1, o2] = await bothSay(ReportMessage, checkReportMessage, over, false);
  assertEquals(o2, o1);
  assertEquals(
    o1,
    `refused Cannot read the message: $: the body is ${
      MAX_REPORT_BYTES + 1
    } bytes, more than the ${MAX_REPORT_BYTES} it may be (not read)`,
  );
});

Deno.test("mesh-host link loads no zod at start (its messages are read plainly)", async () => {
  for (const entry of ["host/commands/link.ts", "host/link.ts", "lib/broker_read.ts"]) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 3 || entry === "lib/broker_read.ts", `${entry}: ${loaded.join(" ")}`);
    assertEquals(loaded.filter((s) => /zod/.test(s)), [], entry);
  }
});
