/**
 * lib/report_rules.ts: a report's text is what PostgreSQL's text holds; the host's `fitProblems`
 * makes any problems fit the bounds, saying what it cut; and the bounds keep a row of a fleet read
 * (control/read_rows.ts) within what PostgreSQL and V8 can hold; a report's integers and time are
 * what ingest's insert casts them to holds.
 */

import postgres from "postgres";
import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { ReportMessage } from "../../lib/broker.ts";
import {
  cutText,
  fitProblems,
  isReportText,
  MAX_PROBLEM_MESSAGE_LENGTH,
  MAX_PROBLEM_PLACE_LENGTH,
  MAX_PROBLEMS,
  MAX_PROBLEMS_JSON_LENGTH,
  MAX_REPORT_INT,
  type Problem,
  REPORT_TEXT,
  reportText,
} from "../../lib/report_rules.ts";
import { NODES_PER_ROW } from "../../control/read_rows.ts";
import { PG_SERVER } from "../control/support.ts";
import { rng } from "../support/rng.ts";

Deno.test("report_rules: a report's text is one without a NUL character or a lone surrogate, whatever is around it", () => {
  const well = (t: string) => t.isWellFormed() && !t.includes("\0");
  const parts = [
    "",
    "a",
    "\0",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\u{1F600}",
    "\uffff",
    "\n",
  ];
  for (const a of parts) {
    for (const b of parts) {
      for (const c of parts) {
        const text = a + b + c;
        assertEquals(isReportText(text), well(text), JSON.stringify(text));
      }
    }
  }
  assertEquals(REPORT_TEXT.flags, "u");
});

/** A report carrying `problems`, as the schema judges it. */
function schemaTakes(problems: Problem[]): boolean {
  return ReportMessage.safeParse({
    kind: "report",
    node: "n",
    generation: 0,
    trigger: "push",
    at: "2026-12-02T05:00:00Z",
    hostVersion: "v",
    outcome: "failed",
    applied: 0,
    total: 1,
    declaration: `sha256:${"a".repeat(64)}`,
    changes: [],
    problems,
  }).success;
}

Deno.test("report_rules: a 1 MB message is cut to its bound, its start and end kept and the cut said", () => {
  const message = `Command apt-get install x exited with code 100: ${
    "e".repeat(1024 * 1024)
  } last line`;
  const [fitted] = fitProblems([{ id: "pkg", message }]);
  assertEquals(fitted!.id, "pkg");
  assert(fitted!.message.length <= MAX_PROBLEM_MESSAGE_LENGTH, `${fitted!.message.length}`);
  assert(fitted!.message.length > MAX_PROBLEM_MESSAGE_LENGTH - 10, `${fitted!.message.length}`);
  assert(fitted!.message.startsWith("Command apt-get install x exited with code 100: eee"));
  assert(fitted!.message.endsWith("eee last line"));
  assertMatch(
    fitted!.message,
    new RegExp(
      ` \\[\\.\\.\\. cut by mesh-host: ${message.length} characters, more than the ${MAX_PROBLEM_MESSAGE_LENGTH} a report carries \\.\\.\\.\\] `,
    ),
  );
  assert(schemaTakes([fitted!]));
  // An id and a path past theirs, cut the same way.
  const [place] = fitProblems([{
    id: "i".repeat(5000),
    path: "p".repeat(MAX_PROBLEM_PLACE_LENGTH + 1),
    message: "m",
  }]);
  assertEquals(place!.id!.length <= MAX_PROBLEM_PLACE_LENGTH, true);
  assertMatch(place!.id!, /^i+ \[\.\.\. cut by mesh-host: 5000 characters/);
  assertMatch(place!.path!, /cut by mesh-host: 1025 characters/);
  assert(schemaTakes([place!]));
});

Deno.test("report_rules: a cut never splits a surrogate pair, and text within its bound is kept as it is", () => {
  for (let n = 0; n < 64; n++) {
    const text = `${"a".repeat(n)}${"😀".repeat(3000)}${"b".repeat(n)}`;
    const cut = cutText(text, MAX_PROBLEM_MESSAGE_LENGTH);
    assert(cut.isWellFormed(), `${n}`);
    assert(cut.length <= MAX_PROBLEM_MESSAGE_LENGTH);
  }
  const exact = "x".repeat(MAX_PROBLEM_MESSAGE_LENGTH);
  assertEquals(cutText(exact, MAX_PROBLEM_MESSAGE_LENGTH), exact);
  const problems = [{ message: "a" }, { id: "f", message: "b" }, {
    id: "g",
    path: "p",
    message: "",
  }];
  assertEquals(fitProblems(problems), problems);
});

Deno.test("report_rules: a NUL is written \\0 and a lone surrogate U+FFFD, so jsonb holds every fitted problem; unfitted, the schema refuses them", async () => {
  const raw: Problem[] = [
    { message: "before\u0000after" },
    { id: "a\ud800", message: "half \udc00 a pair \ud83d" },
    { path: "resources[0]\u0000", message: "\u{1F600} kept, and \\0 as it is" },
  ];
  const fitted = fitProblems(raw);
  assertEquals(fitted, [
    { message: "before\\0after" },
    { id: "a\ufffd", message: "half \ufffd a pair \ufffd" },
    { path: "resources[0]\\0", message: "\u{1F600} kept, and \\0 as it is" },
  ]);
  assert(schemaTakes(fitted));
  for (const p of raw.slice(0, 3)) assert(!schemaTakes([p]), JSON.stringify(p));
  // Written, then cut to the bound: a message of NULs at its bound is twice as long written.
  const nuls = fitProblems([{ message: "\u0000".repeat(MAX_PROBLEM_MESSAGE_LENGTH) }]);
  assert(schemaTakes(nuls));
  // (the head may end in the written NUL's backslash alone: the cut counts characters)
  assert(
    /^(\\0)+\\? \[\.\.\. cut by mesh-host: 8192 characters/.test(nuls[0]!.message),
    nuls[0]!.message.slice(0, 100),
  );
  // Cut to `max` where a pair would be split: its first half as U+FFFD.
  assertEquals(reportText("ab\u{1F600}", 3), "ab\ufffd");
  assertEquals(reportText("ab\u{1F600}", 4), "ab\u{1F600}");
  const sql = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  try {
    for (const p of raw.slice(0, 2)) {
      const refused = await sql`select ${JSON.stringify([p])}::text::jsonb as x`.then(
        () => undefined,
        (error) => String(error),
      );
      assertMatch(
        refused ?? "stored",
        /Unicode|invalid input syntax for type json/,
        JSON.stringify(p),
      );
    }
    const [row] = await sql`select ${JSON.stringify(fitted)}::text::jsonb as x`;
    assertEquals(row!.x, fitted);
  } finally {
    await sql.end();
  }
});

Deno.test("report_rules: too many problems, or too long together: the first that fit, then how many more", () => {
  // 10,000 of the shortest problems are longer than the problems' JSON text may be: that bound
  // is met first.
  const many = Array.from({ length: 20_000 }, (_, i) => ({ id: `r${i}`, message: "bad" }));
  const fitted = fitProblems(many);
  const kept = fitted.length - 1;
  assert(kept > 1000 && kept < MAX_PROBLEMS, `${kept}`);
  assertEquals(fitted.slice(0, -1), many.slice(0, kept));
  assertEquals(
    fitted.at(-1)!.message,
    `${
      20_000 - kept
    } more problems not listed: a report carries at most ${MAX_PROBLEMS} problems and ${MAX_PROBLEMS_JSON_LENGTH} characters of them`,
  );
  assert(JSON.stringify(fitted).length <= MAX_PROBLEMS_JSON_LENGTH);
  assert(schemaTakes(fitted));
  const long = Array.from(
    { length: 100 },
    (_, i) => ({ id: `r${i}`, message: "\u0001".repeat(5000) }),
  );
  const cut = fitProblems(long);
  assert(JSON.stringify(cut).length <= MAX_PROBLEMS_JSON_LENGTH);
  assertMatch(
    cut.at(-1)!.message,
    new RegExp(`^${100 - (cut.length - 1)} more problems not listed`),
  );
  assert(schemaTakes(cut));
  // Exactly as long as the bound: all kept, as they are.
  const exactly = [
    ...Array.from({ length: 32 }, () => ({ message: "x".repeat(4000) })),
    { message: "x".repeat(2576) },
  ];
  assertEquals(JSON.stringify(exactly).length, MAX_PROBLEMS_JSON_LENGTH);
  assertEquals(fitProblems(exactly), exactly);
  // One character more: the first that fit, and the rest said.
  const over = [...exactly.slice(0, -1), { message: "x".repeat(2577) }];
  const said = fitProblems(over);
  assertEquals(said.slice(0, -1), over.slice(0, said.length - 1));
  assertMatch(said.at(-1)!.message, /^[12] more problems? not listed/);
  // The shortest problems: that bound is met before the count's.
  const shortest = fitProblems(Array.from({ length: MAX_PROBLEMS }, () => ({ message: "" })));
  assert(shortest.length < MAX_PROBLEMS && schemaTakes(shortest));
});

Deno.test("report_rules: whatever the problems, fitted they are what the schema takes", () => {
  const r = rng(11);
  const pieces = [
    "",
    "x",
    "\u0001",
    "\n",
    "é",
    "😀",
    "\\",
    '"',
    "\u0000",
    "\ud83d",
    "\ude00",
    "a\u0000",
  ];
  const text = (max: number) => {
    const piece = r.pick(pieces);
    return piece.repeat(r.pick([0, 1, 2, max / 2, max - 1, max, max + 1, 3 * max]));
  };
  for (let n = 0; n < 80; n++) {
    const problems = Array.from({ length: r.pick([0, 1, 5, 40, 400, 1500]) }, () => ({
      ...(r.chance(0.5) ? { id: text(MAX_PROBLEM_PLACE_LENGTH) } : {}),
      ...(r.chance(0.3) ? { path: text(MAX_PROBLEM_PLACE_LENGTH) } : {}),
      message: text(MAX_PROBLEM_MESSAGE_LENGTH),
    }));
    const fitted = fitProblems(problems);
    assert(schemaTakes(fitted), `${n}`);
    // Problems the schema takes are kept as they are, when each text is within its bound in
    // UTF-16 units too (the schema counts code points; the host counts units, never fewer).
    const inUnits = problems.every((p) =>
      p.message.length <= MAX_PROBLEM_MESSAGE_LENGTH &&
      (p.id?.length ?? 0) <= MAX_PROBLEM_PLACE_LENGTH &&
      (p.path?.length ?? 0) <= MAX_PROBLEM_PLACE_LENGTH
    );
    if (schemaTakes(problems) && inUnits) assertEquals(fitted, problems, `${n}`);
  }
});

Deno.test("report_rules: a row of a fleet read, every node's problems at their bounds, stays within half of PostgreSQL's and V8's limits", async () => {
  // The longest jsonb text per character of JSON: short problems with all three keys (jsonb adds
  // a space after each ':' and ','), and in bytes: characters of three UTF-8 bytes.
  const short = fitProblems(
    Array.from({ length: MAX_PROBLEMS + 1 }, () => ({ id: "", path: "", message: "" })),
  );
  const wide = fitProblems(
    Array.from({ length: 40 }, () => ({ message: "€".repeat(MAX_PROBLEM_MESSAGE_LENGTH) })),
  );
  const escaped = fitProblems(
    Array.from({ length: 40 }, () => ({ message: "\u0001".repeat(MAX_PROBLEM_MESSAGE_LENGTH) })),
  );
  const sql = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  try {
    for (const problems of [short, wide, escaped]) {
      assert(schemaTakes(problems));
      // Through text: a JSON text given straight to ::jsonb is stored as one jsonb string.
      const [row] = await sql<{ chars: number; bytes: number; kind: string }[]>`
        select length(x::text) as chars, octet_length(x::text) as bytes, jsonb_typeof(x) as kind
        from (select ${JSON.stringify(problems)}::text::jsonb as x) p`;
      assertEquals(row!.kind, "array");
      // A node's line beside its problems: names, digests, numbers, times (under 1,000 here).
      const line = 1000;
      // PostgreSQL's largest value is 1 GB; V8's longest string 2^29 - 24 characters.
      assert(NODES_PER_ROW * (row!.bytes + line) < (1024 ** 3 - 1) / 2, `${row!.bytes} bytes`);
      assert(NODES_PER_ROW * (row!.chars + line) < (2 ** 29 - 24) / 2, `${row!.chars} chars`);
    }
  } finally {
    await sql.end();
  }
});

Deno.test("report_rules: a report's integers and time are what PostgreSQL's integer and timestamptz hold, and every time a host writes is one", async () => {
  const at = ReportMessage.shape.at;
  // [value, what PostgreSQL says of it: "held" as written, "rounded", or its error]
  const times: [string, string | RegExp][] = [
    ["0001-01-01T00:00:00Z", "held"],
    ["0001-01-01T00:00:00.000+15:59", "held"],
    ["9999-12-31T23:59:59.999999-15:59", "held"],
    ["2026-12-02T05:00:00.123456+15:59", "held"],
    ["2026-12-02T05:00:00.5-15:59", "held"],
    ["0000-01-01T00:00:00Z", /date\/time field value out of range/],
    ["0000-12-31T23:59:59.999Z", /date\/time field value out of range/],
    ["2026-12-02T05:00:00+16:00", /time zone displacement out of range/],
    ["2026-12-02T05:00:00-16:00", /time zone displacement out of range/],
    ["2026-12-02T05:00:00+23:59", /time zone displacement out of range/],
    ["2026-12-02T05:00:00.1234567Z", "rounded"],
    [`2026-12-02T05:00:00.${"1".repeat(200)}Z`, /invalid input syntax for type timestamp/],
  ];
  const sql = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {} });
  try {
    for (const [value, expected] of times) {
      // The microseconds since 1970 PostgreSQL holds, and those the text says (its fraction
      // digits as written, the rest from Date, which reads years 0001-9999 and any offset).
      const said = await sql<{ us: string }[]>`
        select (extract(epoch from ${value}::text::timestamptz) * 1000000)::numeric(30)::text as us`
        .then(([r]) => r!.us, (error) => String(error));
      const [, whole, fraction = ""] = /^(.{19})(?:\.(\d+))?/.exec(value)!;
      const zone = value.slice(19 + (fraction === "" ? 0 : fraction.length + 1));
      const ms = Date.parse(`${whole}${zone}`);
      const written = Number.isNaN(ms) || fraction.length > 6
        ? undefined
        : (BigInt(ms) * 1000n + BigInt(fraction.padEnd(6, "0"))).toString();
      const pg = said === written ? "held" : /^-?\d+$/.test(said) ? "rounded" : said;
      if (typeof expected === "string") assertEquals(pg, expected, value);
      else assertMatch(pg, expected, value);
      assertEquals(at.safeParse(value).success, pg === "held", value);
    }
    const ints = (n: number) =>
      sql`select x.n from json_to_recordset(${JSON.stringify([{ n }])}::text::json) as x(n integer)`
        .then(([r]) => r!.n, (error) => String(error));
    assertEquals(await ints(MAX_REPORT_INT), MAX_REPORT_INT);
    assertMatch(await ints(MAX_REPORT_INT + 1), /out of range for type integer/);
  } finally {
    await sql.end();
  }
  // What a host writes (Date.prototype.toISOString), for any time from 0001 to 9999.
  const r = rng(11);
  for (let n = 0; n < 1000; n++) {
    const t = new Date(0);
    t.setUTCFullYear(n < 2 ? [1, 9999][n]! : 1 + r.int(9999), r.int(12), 1 + r.int(28));
    t.setUTCMilliseconds(n < 2 ? [0, 86_399_999][n]! : r.int(86_400_000));
    assert(at.safeParse(t.toISOString()).success, t.toISOString());
  }
});
