/**
 * The board's properties (DESIGN.md, "Board (control output)"; seeds/control-board-builder.txt),
 * asserted against the REAL command line over a real inventory seeded with one node in every
 * state: ok, refused (0 of 8), failed (3 of 8), outstanding (pushed generation 2, last report
 * about generation 1), never spoke but pushed, never spoke and never pushed.
 *
 * Each property is its own step, and each was confirmed to fail when the property is removed
 * from control/report.ts or control/state.ts (see the report of the change that added this file):
 * - nothing is null, anywhere, in `board --json` or `status --json`;
 * - a node that never spoke carries no time at all (no time-named key, no date-like value, no
 *   date on its text line), while a node that spoke does carry `lastReportAt`;
 * - refused and failed stay distinct and carry how much applied, in JSON and in text;
 * - no key is named like a secret;
 * - text and JSON agree (counts, machines, words, order);
 * - status lists exactly the nodes not doing what they were told, with four distinct words,
 *   and exits 1; all ok exits 0 with a sentence; no nodes exits 0 with a sentence;
 * - a problem text from a node cannot forge a line or an escape sequence in text output.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import type { CliResult } from "../support/mod.ts";
import { controlCli, freshInventory, type TestInventory } from "./support.ts";

// ---------------------------------------------------------------------------------------------
// The seeded estate.

const OK = "web-ok";
const REFUSED = "web-refused";
const FAILED = "web-failed";
const OUTSTANDING = "web-outstanding";
/** Never spoke, but a declaration was pushed to it. */
const PUSHED_SILENT = "web-pushed-silent";
/** Never spoke, never pushed. */
const SILENT = "web-silent";
const NEVER_SPOKE = [PUSHED_SILENT, SILENT];
const NOT_OK = [REFUSED, FAILED, OUTSTANDING, PUSHED_SILENT, SILENT];

/** The first problem of the failed node: a newline that would forge the ok node's line, an ANSI
 * escape and a bidi override. */
const FORGERY = `no such package\n${
  OK.padEnd(20)
} ok           8 of 8     gen 1\u001b[31m red \u202eevil`;

const digest = (c: string) => `sha256:${c.repeat(64)}`;

/** Seeds the six nodes directly with SQL. */
async function seedEstate(inv: TestInventory): Promise<void> {
  const sql = inv.sql;
  await sql`insert into nodes (name, system) values
    (${OK}, 'debian'), (${REFUSED}, 'debian'), (${FAILED}, 'alpine'), (${OUTSTANDING}, 'arch'),
    (${PUSHED_SILENT}, 'debian'), (${SILENT}, 'android')`;
  await sql`insert into modules (name, version, digest, body, origin) values
    ('base', 1, ${digest("1")}, '{"version":1,"resources":[]}', 'handed-over'),
    ('extra', 2, ${digest("2")}, '{"version":1,"resources":[]}', 'handed-over')`;
  await sql`insert into assignments (node, module) values
    (${OK}, 'base'), (${FAILED}, 'base'), (${FAILED}, 'extra'), (${SILENT}, 'extra')`;
  await sql`insert into declarations (node, generation, digest, body, total) values
    (${OK}, 1, ${digest("a")}, '{}', 8),
    (${REFUSED}, 1, ${digest("b")}, '{}', 8),
    (${FAILED}, 1, ${digest("c")}, '{}', 8),
    (${OUTSTANDING}, 1, ${digest("d")}, '{}', 8),
    (${OUTSTANDING}, 2, ${digest("e")}, '{}', 8),
    (${PUSHED_SILENT}, 1, ${digest("f")}, '{}', 5)`;
  await report(inv, OK, 1, digest("a"), "applied", 8, []);
  await report(inv, REFUSED, 1, digest("b"), "refused", 0, [
    { path: "resources[2].mode", message: "expected an octal mode like 0755" },
    { path: "resources[5].path", message: "expected an absolute path" },
  ]);
  await report(inv, FAILED, 1, digest("c"), "failed", 3, [
    { id: "pkg-missing", message: FORGERY },
  ]);
  await report(inv, OUTSTANDING, 1, digest("d"), "applied", 8, []);
}

/** Inserts a report as ingest would record it. */
async function report(
  inv: TestInventory,
  node: string,
  generation: number,
  declaration: string,
  outcome: "applied" | "refused" | "failed",
  applied: number,
  problems: { id?: string; path?: string; message: string }[],
): Promise<void> {
  await inv.sql`
    insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
      changes, host_version, reported_at)
    values (${node}, ${generation}, ${declaration}, ${outcome}, ${applied}, 8, 'push',
      ${
    JSON.stringify(problems)
  }::text::jsonb, '[]'::jsonb, '0.1.0-test', now() - interval '1 minute')`;
}

// ---------------------------------------------------------------------------------------------
// Reading what the command line said.

interface Machine {
  name: string;
  verdict: string;
  words: string;
  applied: number;
  total: number;
  modules: string[];
  generation?: number;
  reportedGeneration?: number;
  lastReportAt?: string;
  trigger?: string;
  problems: { id?: string; path?: string; message: string }[];
  [key: string]: unknown;
}

interface BoardOut {
  nodes: number;
  counts: Record<string, number>;
  machines: Machine[];
  behind?: number;
}

function json(result: CliResult, what: string): BoardOut {
  try {
    return JSON.parse(result.stdout);
  } catch (error) {
    throw new Error(`${what} did not print JSON (${error}): ${result.stdout}\n${result.stderr}`);
  }
}

/** Every (path, key, value) in a JSON tree, the root included (key ""). */
function* walk(
  value: unknown,
  path = "$",
  key = "",
): Generator<{ path: string; key: string; value: unknown }> {
  yield { path, key, value };
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* walk(v, `${path}[${i}]`, key);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) yield* walk(v, `${path}.${k}`, k);
  }
}

const TIME_KEY = (key: string) => /At$/.test(key) || /time|date|when|since/i.test(key);
const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/;
const DATE_IN_TEXT = /\d{4}-\d{2}-\d{2}|1970/;
const SECRET_KEY = /pass|token|secret|key|credential|auth|cookie|private/i;

/** A machine's block in text: its line and the indented lines under it. */
interface TextBlock {
  line: string;
  more: string[];
}

/** The header line and each machine's block, in order. */
function textBlocks(
  text: string,
): { header: string; order: string[]; blocks: Map<string, TextBlock> } {
  const lines = text.replace(/\n$/, "").split("\n");
  const header = lines.shift() ?? "";
  const blocks = new Map<string, TextBlock>();
  const order: string[] = [];
  let current: TextBlock | undefined;
  for (const line of lines) {
    if (line.startsWith(" ")) {
      assert(current !== undefined, `an indented line before any machine: ${line}`);
      current.more.push(line.trim());
      continue;
    }
    const name = line.split(/\s+/)[0]!;
    assert(!blocks.has(name), `machine ${name} has two lines in:\n${text}`);
    current = { line, more: [] };
    blocks.set(name, current);
    order.push(name);
  }
  return { header, order, blocks };
}

/** The counts a text header states: "1 refused, 1 failed, ..., 1 ok" keyed by verdict. */
function textCounts(header: string): Record<string, number> {
  const inner = /(\d+ refused, .*\d+ ok)/.exec(header);
  assert(inner, `no counts in the header: ${header}`);
  const counts: Record<string, number> = {};
  for (const part of inner[1]!.split(", ")) {
    const m = /^(\d+) (.+)$/.exec(part);
    assert(m, `a count that is not "N words": ${part}`);
    const verdict = m[2]!.replaceAll(" ", "-");
    assert(!(verdict in counts), `verdict ${verdict} counted twice in: ${header}`);
    counts[verdict] = Number(m[1]);
  }
  return counts;
}

/** The same escaping the text output promises (C0/C1 controls, DEL, bidi controls). */
function escaped(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => {
      const code = c.codePointAt(0)!;
      return code <= 0xff
        ? `\\x${code.toString(16).padStart(2, "0")}`
        : `\\u{${code.toString(16)}}`;
    },
  );
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Asserts a machine's text block says what its JSON says. */
function assertAgrees(m: Machine, block: TextBlock | undefined, form: string): void {
  assert(block !== undefined, `${form}: ${m.name} is in the JSON but not in the text`);
  const head = new RegExp(
    `^${escapeRegex(m.name)}\\s+${escapeRegex(m.words)}\\s+${m.applied} of ${m.total}(\\s|$)`,
  );
  assert(
    head.test(block.line),
    `${form}: ${m.name}'s line does not say ${m.words} ${m.applied} of ${m.total}: ${block.line}`,
  );
  if (m.generation !== undefined) {
    assert(
      block.line.includes(` gen ${m.generation} `) || block.line.endsWith(` gen ${m.generation}`),
      `${form}: ${block.line}`,
    );
  } else {
    assertStringIncludes(block.line, "never pushed");
  }
  if (m.lastReportAt !== undefined) {
    assertStringIncludes(
      block.line,
      `reported ${m.lastReportAt} about gen ${m.reportedGeneration} (${m.trigger})`,
    );
  } else {
    assert(!block.line.includes("reported"), `${form}: ${block.line}`);
  }
  const p = m.problems[0];
  if (p !== undefined && (m.verdict === "refused" || m.verdict === "failed")) {
    const where = p.id ?? p.path;
    const said = escaped(`${where ? `${where}: ` : ""}${p.message}`);
    assert(
      block.more.some((l) => l.startsWith(said)),
      `${form}: ${m.name}'s first problem ${JSON.stringify(said)} is not under its line: ${
        JSON.stringify(block.more)
      }`,
    );
  }
  if (form === "board" && m.modules.length > 0) {
    assert(
      block.more.includes(`modules: ${m.modules.join(", ")}`),
      `${form}: ${JSON.stringify(block.more)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------

Deno.test("board and status over an inventory with a node in every state", async (t) => {
  const inv = await freshInventory();
  try {
    await seedEstate(inv);
    const boardJ = await controlCli(["board", "--json"], inv.env);
    const boardT = await controlCli(["board"], inv.env);
    const statusJ = await controlCli(["status", "--json"], inv.env);
    const statusT = await controlCli(["status"], inv.env);
    // Exit codes are asserted by the steps (status: 1 when some node is not ok).
    for (
      const [what, r] of [
        ["board --json", boardJ],
        ["board", boardT],
        ["status --json", statusJ],
        ["status", statusT],
      ] as const
    ) {
      assert(r.code === 0 || r.code === 1, `${what} exited ${r.code}: ${r.stderr}`);
      assertEquals(r.stderr, "", `${what} wrote to stderr`);
    }
    const board = json(boardJ, "board --json");
    const status = json(statusJ, "status --json");
    const byName = new Map(board.machines.map((m) => [m.name, m]));

    await t.step("the estate is what was seeded (six nodes, every verdict)", () => {
      assertEquals([boardJ.code, boardT.code], [0, 0], "board exits 0 whatever it shows");
      assertEquals(board.nodes, 6);
      assertEquals(board.machines.length, 6);
      assertEquals(
        Object.fromEntries(board.machines.map((m) => [m.name, m.verdict])),
        {
          [OK]: "ok",
          [REFUSED]: "refused",
          [FAILED]: "failed",
          [OUTSTANDING]: "outstanding",
          [PUSHED_SILENT]: "never-spoke",
          [SILENT]: "never-spoke",
        },
      );
    });

    await t.step("nothing is null anywhere in board --json and status --json", () => {
      for (const [what, tree] of [["board --json", board], ["status --json", status]] as const) {
        const nulls = [...walk(tree)].filter((n) => n.value === null).map((n) => n.path);
        assertEquals(nulls, [], `${what} has null at ${nulls.join(", ")}`);
      }
    });

    await t.step("a node that never spoke carries no time; one that spoke does", () => {
      for (const [what, tree] of [["board --json", board], ["status --json", status]] as const) {
        for (const name of NEVER_SPOKE) {
          const m = tree.machines.find((x) => x.name === name);
          assert(m !== undefined, `${what}: ${name} missing`);
          for (const n of walk(m, name)) {
            assert(
              !TIME_KEY(n.key),
              `${what}: ${n.path} is a time field on a node that never spoke`,
            );
            assert(
              !(typeof n.value === "string" && ISO_DATE.test(n.value)),
              `${what}: ${n.path} = ${
                JSON.stringify(n.value)
              } is a date on a node that never spoke`,
            );
          }
        }
      }
      for (const [what, text] of [["board", boardT.stdout], ["status", statusT.stdout]] as const) {
        const { blocks } = textBlocks(text);
        for (const name of NEVER_SPOKE) {
          const block = blocks.get(name);
          assert(block !== undefined, `${what}: ${name} missing`);
          for (const line of [block.line, ...block.more]) {
            assert(
              !DATE_IN_TEXT.test(line),
              `${what}: a date on ${name}, which never spoke: ${line}`,
            );
          }
        }
      }
      // Not vacuous: the nodes that spoke carry when.
      for (const name of [OK, REFUSED, FAILED, OUTSTANDING]) {
        const at = byName.get(name)?.lastReportAt;
        assert(typeof at === "string" && ISO_DATE.test(at), `${name} has no lastReportAt: ${at}`);
        assert(!at.startsWith("1970"), `${name}'s lastReportAt is a zero time: ${at}`);
        assert(DATE_IN_TEXT.test(textBlocks(boardT.stdout).blocks.get(name)!.line));
      }
    });

    await t.step("refused and failed stay distinct and carry applied of total", () => {
      for (const [what, tree] of [["board --json", board], ["status --json", status]] as const) {
        const refused = tree.machines.find((m) => m.name === REFUSED)!;
        const failed = tree.machines.find((m) => m.name === FAILED)!;
        assertEquals(
          {
            verdict: refused.verdict,
            words: refused.words,
            applied: refused.applied,
            total: refused.total,
          },
          { verdict: "refused", words: "refused", applied: 0, total: 8 },
          what,
        );
        assertEquals(
          {
            verdict: failed.verdict,
            words: failed.words,
            applied: failed.applied,
            total: failed.total,
          },
          { verdict: "failed", words: "failed", applied: 3, total: 8 },
          what,
        );
        assertEquals(tree.counts.refused, 1, `${what} counts`);
        assertEquals(tree.counts.failed, 1, `${what} counts`);
      }
      for (const [what, text] of [["board", boardT.stdout], ["status", statusT.stdout]] as const) {
        const { blocks } = textBlocks(text);
        const refused = blocks.get(REFUSED)?.line ?? "";
        const failed = blocks.get(FAILED)?.line ?? "";
        assert(/^web-refused\s+refused\s+0 of 8\s/.test(refused), `${what}: ${refused}`);
        assert(/^web-failed\s+failed\s+3 of 8\s/.test(failed), `${what}: ${failed}`);
        assert(!/\bfailed\b/.test(refused) && !/\brefused\b/.test(failed), `${what}:\n${text}`);
      }
    });

    await t.step("no key anywhere is named like a secret", () => {
      for (const [what, tree] of [["board --json", board], ["status --json", status]] as const) {
        const bad = [...walk(tree)].filter((n) => SECRET_KEY.test(n.key)).map((n) => n.path);
        assertEquals(bad, [], `${what} has keys named like a secret: ${bad.join(", ")}`);
      }
    });

    await t.step("text and JSON agree: counts, machines, words, order", () => {
      // board
      const b = textBlocks(boardT.stdout);
      assertStringIncludes(b.header, `: ${board.nodes} nodes: `);
      assertEquals(
        textCounts(b.header),
        board.counts,
        "board: text counts differ from JSON counts",
      );
      assertEquals(
        b.order,
        board.machines.map((m) => m.name),
        "board: machines differ or in a different order",
      );
      for (const m of board.machines) assertAgrees(m, b.blocks.get(m.name), "board");
      // status
      const s = textBlocks(statusT.stdout);
      assert(
        s.header.startsWith(
          `${status.behind} of ${status.nodes} nodes are not doing what they were told`,
        ),
        s.header,
      );
      assertEquals(
        textCounts(s.header),
        status.counts,
        "status: text counts differ from JSON counts",
      );
      assertEquals(status.counts, board.counts, "status and board count differently");
      assertEquals(
        s.order,
        status.machines.map((m) => m.name),
        "status: machines differ or in a different order",
      );
      for (const m of status.machines) assertAgrees(m, s.blocks.get(m.name), "status");
      // The same machine says the same in both JSON forms.
      for (const m of status.machines) {
        assertEquals(m, byName.get(m.name), `status --json and board --json differ on ${m.name}`);
      }
    });

    await t.step("status lists exactly the nodes not doing what they were told", () => {
      const expected = {
        [REFUSED]: "refused",
        [FAILED]: "failed",
        [OUTSTANDING]: "outstanding",
        [PUSHED_SILENT]: "never spoke",
        [SILENT]: "never spoke",
      };
      assertEquals(statusT.code, 1);
      assertEquals(statusJ.code, 1);
      const { blocks } = textBlocks(statusT.stdout);
      assertEquals([...blocks.keys()].sort(), [...NOT_OK].sort(), statusT.stdout);
      for (const [name, words] of Object.entries(expected)) {
        const line = blocks.get(name)!.line;
        assert(
          new RegExp(`^${name}\\s+${words}\\s+\\d+ of \\d+`).test(line),
          `status: ${name} is not "${words}": ${line}`,
        );
      }
      assertEquals(new Set(Object.values(expected)).size, 4, "four distinct words");
      assertEquals(status.behind, 5);
      assertEquals(
        Object.fromEntries(status.machines.map((m) => [m.name, m.words])),
        expected,
      );
    });

    await t.step("a problem from a node cannot forge a line or an escape in text", () => {
      for (
        const [what, text, okLines] of [
          ["board", boardT.stdout, 1],
          ["status", statusT.stdout, 0],
        ] as const
      ) {
        assert(!text.includes("\u001b"), `${what} printed a raw escape`);
        assert(!text.includes("\u202e"), `${what} printed a raw bidi override`);
        assert(!text.includes("\r"), `${what} printed a raw carriage return`);
        const lines = text.split("\n");
        assertEquals(
          lines.filter((l) => l.trimStart().startsWith(OK)).length,
          okLines,
          `${what}: the node's problem forged a line for ${OK}:\n${text}`,
        );
        assertStringIncludes(text, "no such package\\x0a");
        assertStringIncludes(text, "\\x1b[31m");
        assertStringIncludes(text, "\\u{202e}");
        // The failed node's problem stays on one line under it.
        const { blocks } = textBlocks(text);
        assertEquals(blocks.get(FAILED)!.more.filter((l) => l.includes("pkg-missing")).length, 1);
      }
    });
  } finally {
    await inv.drop();
  }
});

Deno.test("status with every node ok says so and exits 0", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into nodes (name, system) values ('db-1', 'debian'), ('db-2', 'alpine')`;
    await inv.sql`insert into declarations (node, generation, digest, body, total) values
      ('db-1', 1, ${digest("a")}, '{}', 8), ('db-2', 3, ${digest("b")}, '{}', 8)`;
    await report(inv, "db-1", 1, digest("a"), "applied", 8, []);
    await report(inv, "db-2", 3, digest("b"), "applied", 8, []);
    const text = await controlCli(["status"], inv.env);
    assertEquals(text.code, 0, text.stderr);
    assert(
      text.stdout.startsWith("all 2 nodes are doing what they were told"),
      text.stdout,
    );
    assertEquals(text.stdout.trimEnd().split("\n").length, 1, text.stdout);
    const j = await controlCli(["status", "--json"], inv.env);
    assertEquals(j.code, 0, j.stderr);
    const status = json(j, "status --json");
    assertEquals([status.nodes, status.behind, status.machines], [2, 0, []]);
    assertEquals(textCounts(text.stdout), status.counts);
    assertEquals([...walk(status)].filter((n) => n.value === null), []);
  } finally {
    await inv.drop();
  }
});

Deno.test("status and board with no nodes enrolled say so and exit 0", async () => {
  const inv = await freshInventory();
  try {
    const text = await controlCli(["status"], inv.env);
    assertEquals([text.code, text.stdout, text.stderr], [0, "no nodes enrolled\n", ""]);
    const j = await controlCli(["status", "--json"], inv.env);
    assertEquals(j.code, 0, j.stderr);
    const status = json(j, "status --json");
    assertEquals([status.nodes, status.behind, status.machines], [0, 0, []]);
    assertEquals([...walk(status)].filter((n) => n.value === null), []);
    const boardT = await controlCli(["board"], inv.env);
    assertEquals(boardT.code, 0, boardT.stderr);
    assertStringIncludes(boardT.stdout, "no nodes enrolled");
    const boardJ = await controlCli(["board", "--json"], inv.env);
    assertEquals(boardJ.code, 0, boardJ.stderr);
    const board = json(boardJ, "board --json");
    assertEquals([board.nodes, board.machines], [0, []]);
    assertEquals(Object.values(board.counts), [0, 0, 0, 0, 0, 0, 0]);
    assertEquals([...walk(board)].filter((n) => n.value === null), []);
  } finally {
    await inv.drop();
  }
});
