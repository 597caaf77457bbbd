/**
 * The read of a valid report without zod held equal to the schema (`ReportMessage`,
 * lib/broker.ts): the validator generated from it (lib/report_validators.js) accepts exactly what
 * the schema accepts, and the read around it (lib/broker_read.ts `plainReport`, which ingest's
 * `readReport` and the host's link call) gives what `decodeMessage(ReportMessage, ...)` gives,
 * the same report or the same error message. Seeded mutations of valid reports (each field set to
 * values that break a rule and to some that keep it, keys added and removed, changes, problems and
 * drift broken inside, problems at and past each bound of lib/report_rules.ts) cover the near
 * misses; fixed cases cover repeated keys, bodies that are not what JSON.stringify writes, and
 * bodies at and past the largest a report may be.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { decodeMessage, ReportMessage } from "../../lib/broker.ts";
import {
  MAX_PROBLEM_MESSAGE_LENGTH as MESSAGE,
  MAX_PROBLEM_PLACE_LENGTH as PLACE,
  MAX_PROBLEMS_JSON_LENGTH as PROBLEMS_JSON,
  MAX_REPORT_BYTES,
} from "../../lib/report_rules.ts";
import { decodeReport, readReport } from "../../control/report_check.ts";
import { plainReport } from "../../lib/broker_read.ts";
import { isReportMessage } from "../../lib/report_validators.js";
import { type Rng, rng } from "../support/rng.ts";

type Obj = Record<string, unknown>;

/**
 * Problems whose JSON text is exactly `length` characters, each message written with `fill`
 * (one character, perhaps one JSON escapes) and none longer than a message may be.
 */
function problemsOfLength(length: number, fill = "x"): Obj[] {
  // How many characters `fill` is as JSON text.
  const e = JSON.stringify(fill).length - 2;
  // The longest a message's JSON text is made here (its padding included, within MESSAGE).
  const most = (MESSAGE - e) * e;
  // The list is 1 + 15 characters a problem ({"message":""} and a comma) + its messages' texts.
  let n = 1;
  while (length - 1 - 15 * n > n * most) n++;
  const sum = length - 1 - 15 * n;
  const problems: Obj[] = [];
  for (let i = 0; i < n; i++) {
    const t = Math.floor(sum / n) + (i < sum % n ? 1 : 0);
    const k = Math.floor(t / e);
    problems.push({ message: fill.repeat(k) + "y".repeat(t - k * e) });
  }
  if (JSON.stringify(problems).length !== length) {
    throw new Error(`Made ${JSON.stringify(problems).length} characters, not ${length}`);
  }
  return problems;
}

/** Problem lists at and just past the bound of their JSON text, plain and escaped. */
const AT_BOUND: Obj[][] = [
  problemsOfLength(PROBLEMS_JSON),
  problemsOfLength(PROBLEMS_JSON + 1),
  problemsOfLength(PROBLEMS_JSON, "\u0001"),
  problemsOfLength(PROBLEMS_JSON + 1, "\u0001"),
  problemsOfLength(PROBLEMS_JSON - 1, "\n"),
  problemsOfLength(PROBLEMS_JSON + 2, "\n"),
];

const DRIFTS: Obj[] = [
  {
    status: "drift",
    ranAt: "2024-02-29T10:00:00+01:00",
    intervalSeconds: 900,
    registry: "r",
    entries: 3,
    findings: [{ check: "port", direction: "rogue", count: 2 }],
  },
  { status: "unreadable", path: "/x", problem: "missing" },
  {
    status: "unobservable",
    ranAt: "2026-12-01T10:00:00Z",
    intervalSeconds: 1,
    registry: "r",
    entries: 0,
    findings: [],
    unobserved: ["docker@root"],
  },
];

function validOne(r: Rng): Obj {
  const report: Obj = {
    kind: "report",
    node: r.pick(["web-1", "a", "n0", "ingest-0001"]),
    generation: r.pick([0, 1, 17, 2 ** 31 - 1]),
    trigger: r.pick(["push", "start", "interval"]),
    at: r.pick([
      "2026-12-02T05:00:00.000Z",
      "2024-02-29T23:59:59+01:00",
      "2026-01-31T00:00:00.5Z",
      // What PostgreSQL's timestamptz holds at its bounds (lib/report_rules.ts isReportTime).
      "0001-01-01T00:00:00.000Z",
      "9999-12-31T23:59:59.999999-15:59",
      "0001-01-01T00:00:00.123456+15:59",
    ]),
    hostVersion: r.pick(["mesh-host 0.1.0", "", "x".repeat(100), "\u{1F600} \u0001"]),
    outcome: r.pick(["applied", "refused", "failed"]),
    applied: r.chance(0.1) ? 2 ** 31 - 1 : r.int(30),
    total: r.chance(0.1) ? 2 ** 31 - 1 : r.int(30),
    declaration: `sha256:${"0123456789abcdef".repeat(4)}`,
    changes: Array.from({ length: r.int(4) }, (_, i) => ({
      id: `f${i}`,
      type: r.pick(["file", "package"]),
      change: r.pick(["created", "updated", "unchanged", "removed", "restored", "forgotten"]),
    })),
    problems: Array.from({ length: r.int(3) }, (_, i) =>
      r.pick([
        { message: `p${i}` },
        { id: `f${i}`, message: "write failed" },
        { path: "resources[0]", message: "m" },
        { id: "x", path: "y", message: "" },
      ])),
  };
  if (r.chance(0.4)) report.intervalMs = r.pick([1000, 60_000, 7 * 24 * 3_600_000]);
  if (r.chance(0.3)) report.source = r.pick(["link", "A.b_c-9"]);
  if (r.chance(0.3)) {
    report.epoch = r.pick([
      "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
      "00000000-0000-0000-0000-000000000000",
    ]);
  }
  if (r.chance(0.3)) report.drift = structuredClone(r.pick(DRIFTS));
  // Problems at their bounds: the longest message, id and path, the longest list as JSON text.
  if (r.chance(0.04)) {
    report.problems = structuredClone(r.pick(AT_BOUND.filter((_, i) => i % 2 === 0)));
  } else if (r.chance(0.1)) {
    report.problems = [{
      id: "y".repeat(PLACE),
      path: "z".repeat(PLACE),
      message: "m".repeat(MESSAGE),
    }];
  }
  return report;
}

/** Values that break (or, for some, keep) each top-level field's rule. */
const BAD: Record<string, unknown[]> = {
  kind: ["Report", "declaration", null, 1, undefined],
  node: ["", "A", "-a", "a-", "a.b", "a".repeat(64), 1, null, ["a"], undefined],
  generation: [-1, 1.5, 2 ** 31, 2 ** 53, -0, "1", null, Infinity, NaN, undefined],
  trigger: ["Push", "", null, 0, undefined],
  at: [
    "2026-12-02",
    "2026-12-02T05:00:00",
    "2026-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-12-02T05:00:00.Z",
    "2026-12-02T05:00:00+0100",
    "2026-12-02 05:00:00Z",
    // Past what PostgreSQL's timestamptz holds as it is (lib/report_rules.ts isReportTime).
    "0000-01-01T00:00:00Z",
    "0000-02-29T00:00:00.000Z",
    "2026-12-02T05:00:00+16:00",
    "2026-12-02T05:00:00-16:00",
    "2026-12-02T05:00:00+23:59",
    "2026-12-02T05:00:00.1234567Z",
    `2026-12-02T05:00:00.${"1".repeat(200)}Z`,
    1,
    null,
    undefined,
  ],
  intervalMs: [999, 1000, 7 * 24 * 3_600_000 + 1, 1000.5, "1000", null],
  hostVersion: [
    "x".repeat(101),
    "0.1\u0000",
    "\ud800",
    "\udc00",
    "a\udbff",
    "\u{1F600}",
    1,
    null,
    undefined,
  ],
  source: ["", "-x", "a b", "x".repeat(65), null, 1],
  epoch: [
    "",
    "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9",
    "0f1e2d3c4b5a49788695a4b3c2d1e0f9",
    "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9\n",
    null,
    1,
  ],
  outcome: ["ok", null, undefined],
  applied: [-1, 0.5, "1", 2 ** 31, 2 ** 53, null, undefined],
  total: [-1, 2.5, 2 ** 31, null, undefined],
  declaration: [`sha256:${"A".repeat(64)}`, `sha256:${"a".repeat(63)}`, "sha256:", 1, undefined],
  changes: [
    null,
    {},
    "[]",
    [null],
    [[]],
    [{ id: "a\u0000", type: "file", change: "created" }],
    [{ id: "a", type: "\udfff", change: "created" }],
    [{ id: "\u{1F600}", type: "file", change: "created" }],
    Array.from({ length: 100_001 }, () => 1),
    undefined,
  ],
  problems: [
    null,
    {},
    [null],
    [{}],
    [{ message: 1 }],
    [{ message: "m".repeat(MESSAGE + 1) }],
    [{ message: "m", id: "i".repeat(PLACE + 1) }],
    [{ message: "m", path: "p".repeat(PLACE + 1) }],
    [{ message: "\u{1F600}".repeat(MESSAGE / 2) }],
    [{ message: "a\u0000b" }],
    [{ message: "\ud800" }],
    [{ message: "m", id: "\u0000" }],
    [{ message: "m", path: "\udc00x" }],
    [{ message: "m".repeat(MESSAGE + 1) + "\u0000" }],
    ...AT_BOUND,
    Array.from({ length: 10_001 }, () => ({ message: "" })),
    undefined,
  ],
  drift: [
    null,
    {},
    { status: "clean" },
    "clean",
    [],
    { status: "unreadable", path: "/x", problem: "\u0000" },
    { status: "unreadable", path: "/x\ud800", problem: "m" },
  ],
};

/** Breaks one element of changes or problems, or drift, from the inside. */
function mutateInside(r: Rng, d: Obj): void {
  const which = r.int(3);
  if (which === 0 && Array.isArray(d.changes) && d.changes.length > 0) {
    const c = r.pick(d.changes as Obj[]);
    if (typeof c !== "object" || c === null) return;
    const k = r.pick(["id", "type", "change", "extra"]);
    if (r.chance(0.3)) delete c[k];
    else {
      c[k] = r.pick([null, 1, "", "made", "created", ["x"], {}, "\u0000", "a\ud800", "\u{1F600}"]);
    }
  } else if (which === 1 && Array.isArray(d.problems) && d.problems.length > 0) {
    const p = r.pick(d.problems as Obj[]);
    if (typeof p !== "object" || p === null) return;
    const k = r.pick(["id", "path", "message", "extra"]);
    if (r.chance(0.3)) delete p[k];
    else {
      p[k] = r.pick([
        null,
        1,
        "",
        "x",
        undefined,
        {},
        "w".repeat(PLACE),
        "w".repeat(PLACE + 1),
        "w".repeat(MESSAGE),
        "w".repeat(MESSAGE + 1),
        "\u0001".repeat(MESSAGE),
        "\u0000",
        "w\u0000".repeat(PLACE / 2),
        "\ud800",
        "w\udc00",
        "\udbff\udbff",
        "\u{1F600}".repeat(PLACE / 2),
      ]);
    }
  } else if (typeof d.drift === "object" && d.drift !== null) {
    const drift = d.drift as Obj;
    const k = r.pick([
      "status",
      "ranAt",
      "entries",
      "findings",
      "path",
      "problem",
      "registry",
      "unobserved",
      "extra",
    ]);
    drift[k] = r.pick([
      null,
      -1,
      "drift",
      "2026-12-01T10:00:00Z",
      [],
      [{ check: "port" }],
      "\u0000",
      "r\ud800",
      "\u{1F600}",
      ["\udc00"],
      ["a\u0000"],
      ["docker@root"],
    ]);
  }
}

function mutate(r: Rng, d: Obj): void {
  switch (r.int(4)) {
    case 0: {
      const key = r.pick(Object.keys(BAD));
      // A copy: a later mutation inside it must not change the list of BAD values.
      const value = structuredClone(r.pick(BAD[key]!));
      if (value === undefined) delete d[key];
      else d[key] = value;
      break;
    }
    case 1:
      // An own key, as JSON.parse makes one (a plain assignment to "__proto__" would not).
      Object.defineProperty(d, r.pick(["extra", "__proto__", "constructor", "Kind", "0"]), {
        value: r.pick([1, "x", null, {}]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      break;
    default:
      mutateInside(r, d);
  }
}

/** The schema's answer for `value`: its data, or undefined when it refuses. */
function schemaOf(value: unknown): unknown {
  const parsed = ReportMessage.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The fast read's answer for `value` (a JSON value), its generated validator's: the value itself
 * (the schema has no default and no transform), or undefined. The whole read, from a body, is
 * held to the schema's decode by the `readReport` test below.
 */
function fastOf(value: unknown): unknown {
  return isReportMessage(value) ? value : undefined;
}

Deno.test("a report read without zod is the schema's own: it accepts what zod accepts, with the same values", () => {
  const r = rng(16_4);
  let accepted = 0;
  let refused = 0;
  for (let n = 0; n < 6_000; n++) {
    // Through JSON, as a body is: a key set to undefined drops out, "__proto__" stays an own key.
    const d = JSON.parse(JSON.stringify(validOne(r))) as Obj;
    const mutations = n % 3 === 0 ? 0 : 1 + r.int(2);
    for (let m = 0; m < mutations; m++) mutate(r, d);
    const value = JSON.parse(JSON.stringify(d));
    const fast = fastOf(value);
    const schema = schemaOf(value);
    assertEquals(fast, schema, JSON.stringify(value));
    if (fast !== undefined) accepted++;
    else refused++;
    if (mutations === 0) assert(fast !== undefined, `a valid report refused: ${JSON.stringify(d)}`);
  }
  // Both sides seen often: the mutations are near misses, not all refused.
  assert(accepted > 2_000 && refused > 1_000, `accepted ${accepted}, refused ${refused}`);
});

Deno.test("every top-level field set to each value that breaks a rule: the fast read answers as zod does", () => {
  const r = rng(7);
  for (let n = 0; n < 40; n++) {
    const base = JSON.parse(JSON.stringify(validOne(r))) as Obj;
    for (const [key, values] of Object.entries(BAD)) {
      for (const bad of values) {
        const d = structuredClone(base);
        if (bad === undefined) delete d[key];
        else d[key] = bad;
        const value = JSON.parse(JSON.stringify(d));
        assertEquals(fastOf(value), schemaOf(value), `${key} = ${JSON.stringify(bad)}`);
      }
    }
  }
});

/** decodeReport's outcome and decodeMessage's, side by side. */
function outcomes(body: Uint8Array): [unknown, unknown] {
  const run = (f: () => unknown) => {
    try {
      return { report: f() };
    } catch (error) {
      return { error: `${(error as Error).name}: ${(error as Error).message}` };
    }
  };
  return [
    run(() => {
      // The texts are stored as jsonb, which keeps no key order: the same values are the claim.
      const { report, changes, problems } = readReport(body, 'report from "a"');
      return { report, changes: JSON.parse(changes), problems: JSON.parse(problems) };
    }),
    run(() => {
      const report = decodeMessage(ReportMessage, body, 'report from "a"');
      return {
        report,
        changes: JSON.parse(JSON.stringify(report.changes)),
        problems: JSON.parse(JSON.stringify(report.problems)),
      };
    }),
  ];
}

Deno.test("readReport gives decodeMessage's report, with its changes' and problems' JSON text, or its error, message for message", () => {
  const r = rng(99);
  const encoder = new TextEncoder();
  const texts: string[] = [];
  for (let n = 0; n < 1_500; n++) {
    const d = JSON.parse(JSON.stringify(validOne(r))) as Obj;
    if (n % 2 === 1) mutate(r, d);
    const text = JSON.stringify(d);
    texts.push(text, `${text}\n`, JSON.stringify(d, null, 1));
  }
  const valid = JSON.stringify(validOne(rng(1)));
  texts.push(
    // Repeated keys, at the top and inside, written as JSON.stringify never writes them.
    valid.replace(/^\{/, '{"node":"other",'),
    valid.replace(/^\{/, '{"kind":"report",'),
    valid.replace(
      '"changes":[',
      '"changes":[{"id":"a","id":"b","type":"file","change":"created"},',
    ),
    valid.replace(/^\{/, '{"\\u006bind":"report",'),
    `${valid}\n\n`,
    ` ${valid}`,
    "",
    "{",
    "[]",
    "null",
    valid.replace('"kind":"report"', '"kind":"report","extra":1'),
  );
  for (const text of texts) {
    const [fast, schema] = outcomes(encoder.encode(text));
    assertEquals(fast, schema, text);
  }
  // Not UTF-8, and a byte-order mark.
  for (const body of [new Uint8Array([0x7b, 0xff, 0x7d]), encoder.encode(`\ufeff${valid}`)]) {
    const [fast, schema] = outcomes(body);
    assertEquals(fast, schema);
  }
});

Deno.test("a repeated key is found whether or not the body is JSON.stringify's own text", () => {
  const valid = JSON.stringify(validOne(rng(2)));
  const value = JSON.parse(valid);
  const read = (text: string) => plainReport(new TextEncoder().encode(text))?.report;
  assertEquals(read(valid), value);
  assertEquals(read(`${valid}\n`), value);
  assertEquals(read(JSON.stringify(value, null, 2)), value);
  const twice = valid.replace(/^\{/, '{"node":"other",');
  assertEquals(read(twice), undefined);
  // The same length as the canonical text plus one, but not a trailing newline.
  const spaced = valid.replace(/^\{/, "{ ");
  assertEquals(read(spaced), value);
  const [fast] = outcomes(new TextEncoder().encode(twice));
  assertEquals(
    decodeReport(new TextEncoder().encode(`${valid}\n`), "report"),
    ReportMessage.parse(value),
  );
  assert(
    JSON.stringify(fast).includes('Duplicate key \\"node\\" (2 times in one object)'),
    JSON.stringify(fast),
  );
});

Deno.test("a body larger than a report may be is refused unread, as the schema's decode refuses it; one at the bound is read", () => {
  const valid = JSON.stringify(validOne(rng(3)));
  // Padded with spaces after the value: JSON all the same, and the plain check's own text no more.
  const bytes = new TextEncoder().encode(valid).length;
  const at = new TextEncoder().encode(valid + " ".repeat(MAX_REPORT_BYTES - bytes));
  const over = new TextEncoder().encode(valid + " ".repeat(MAX_REPORT_BYTES + 1 - bytes));
  assertEquals(at.length, MAX_REPORT_BYTES);
  const [fastAt, schemaAt] = outcomes(at);
  assertEquals(fastAt, schemaAt);
  assert("report" in (fastAt as Obj), JSON.stringify(fastAt).slice(0, 300));
  const [fastOver, schemaOver] = outcomes(over);
  assertEquals(fastOver, schemaOver);
  assertEquals(fastOver, {
    error: `MessageError: Cannot read report from "a": $: the body is ${
      MAX_REPORT_BYTES + 1
    } bytes, more than the ${MAX_REPORT_BYTES} it may be (not read)`,
  });
});
