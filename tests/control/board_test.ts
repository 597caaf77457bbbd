/**
 * The board's properties (docs/design.md, "Board (control output)"),
 * asserted against the REAL command line over a real inventory seeded with one node in every
 * state: ok, refused (0 of 8), failed (3 of 8), outstanding (pushed generation 2, last report
 * about generation 1), never spoke but pushed, never spoke and never pushed, a server silent for
 * two hours (its last report a clean apply, its interval one minute), an episodic node away for
 * as long with a declaration waiting for it, and three unknown claims (docs/design.md, "Hostile
 * inputs", rule 7): a node never pushed reporting generation 1 with another node's digest, a node
 * reporting its generation with another node's digest, and one reporting a generation never
 * pushed to it, each a clean apply as it claims.
 *
 * Each property is its own step, and each was confirmed to fail when the property is removed
 * from control/report.ts or control/state.ts (see the report of the change that added this file):
 * - nothing is null, anywhere, in `board --json` or `status --json`;
 * - a node that never spoke carries no time at all (no time-named key, no date-like value, no
 *   date on its text line), while a node that spoke does carry `lastReportAt`;
 * - refused and failed stay distinct and carry how much applied, in JSON and in text;
 * - no key is named like a secret;
 * - text and JSON agree (counts, machines, words, order);
 * - status lists exactly the nodes not doing what they were told, with five distinct words,
 *   and the away node (not counted as behind), and exits 1; all ok exits 0 with a sentence;
 *   ok and away exits 0; no nodes exits 0 with a sentence;
 * - a silent or away node carries when it was last heard, its interval and the allowance; every
 *   node carries its kind;
 * - a problem text from a node cannot forge a line or an escape sequence in text output.
 *
 * @module
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import type { CliResult } from "../support/mod.ts";
import { controlCli, freshInventory, type TestInventory } from "./support.ts";
import {
  attentionMachines,
  behindMachines,
  boardJson,
  boardJsonParts,
  boardOf,
  statusJson,
  statusMachines,
  statusText,
} from "../../control/report.ts";
import { readFleet } from "../../control/node_state.ts";
import { VERDICTS } from "../../control/state.ts";
import { DRIFT_VERDICTS } from "../../control/drift.ts";
import { type GivenNode, judgeNodes, writeNodes } from "./judge.ts";

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
/** A server whose last report (a clean apply) arrived two hours ago; it reports every minute. */
const QUIET = "web-quiet";
/** An episodic node last heard two hours ago, with generation 2 pushed since and waiting. */
const AWAY = "phone-away";
/** Linked and reporting that it holds no declaration; never pushed one. */
const LINKED = "web-linked";
/** Never pushed; reports a clean apply of generation 1 with the ok node's digest (the field case). */
const CLAIMED = "web-claimed";
/** Pushed generation 1; reports a clean apply of generation 1 with the ok node's digest. */
const CLAIMED_DIGEST = "web-claimed-digest";
/** Pushed generation 1; reports a clean apply of generation 2, never pushed, with its digest. */
const CLAIMED_GENERATION = "web-claimed-generation";
const CLAIMED_ALL = [CLAIMED, CLAIMED_DIGEST, CLAIMED_GENERATION];
const NEVER_SPOKE = [PUSHED_SILENT, SILENT];
const NOT_OK = [REFUSED, FAILED, QUIET, OUTSTANDING, PUSHED_SILENT, SILENT, ...CLAIMED_ALL];

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
    (${PUSHED_SILENT}, 'debian'), (${SILENT}, 'android'), (${QUIET}, 'debian')`;
  await sql`insert into nodes (name, system, kind) values (${AWAY}, 'android', 'episodic')`;
  await sql`insert into nodes (name, system) values (${LINKED}, 'debian')`;
  await sql`insert into nodes (name, system) values
    (${CLAIMED}, 'debian'), (${CLAIMED_DIGEST}, 'debian'), (${CLAIMED_GENERATION}, 'debian')`;
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
    (${PUSHED_SILENT}, 1, ${digest("f")}, '{}', 5),
    (${QUIET}, 1, ${digest("0")}, '{}', 8),
    (${AWAY}, 1, ${digest("3")}, '{}', 8),
    (${AWAY}, 2, ${digest("4")}, '{}', 8),
    (${CLAIMED_DIGEST}, 1, ${digest("6")}, '{}', 8),
    (${CLAIMED_GENERATION}, 1, ${digest("7")}, '{}', 8)`;
  await report(inv, OK, 1, digest("a"), "applied", 8, []);
  await report(inv, REFUSED, 1, digest("b"), "refused", 0, [
    { path: "resources[2].mode", message: "expected an octal mode like 0755" },
    { path: "resources[5].path", message: "expected an absolute path" },
  ]);
  await report(inv, FAILED, 1, digest("c"), "failed", 3, [
    { id: "pkg-missing", message: FORGERY },
  ]);
  await report(inv, OUTSTANDING, 1, digest("d"), "applied", 8, []);
  await report(inv, LINKED, 0, digest("5"), "undeclared", 0, []);
  // Claims of what was never pushed to the node, each a clean apply as it says.
  await report(inv, CLAIMED, 1, digest("a"), "applied", 8, []);
  await report(inv, CLAIMED_DIGEST, 1, digest("a"), "applied", 8, []);
  await report(inv, CLAIMED_GENERATION, 2, digest("7"), "applied", 8, []);
  // Heard two hours ago, by the control plane's clock; they said they report every minute.
  for (const [node, d] of [[QUIET, digest("0")], [AWAY, digest("3")]] as const) {
    await report(inv, node, 1, d, "applied", 8, []);
    await inv.sql`update reports set received_at = now() - interval '2 hours', interval_ms = 60000
                  where node = ${node}`;
  }
}

/** Inserts a report as ingest would record it. */
async function report(
  inv: TestInventory,
  node: string,
  generation: number,
  declaration: string,
  outcome: "applied" | "refused" | "failed" | "undeclared",
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

/**
 * The same escaping the text output promises (C0/C1 controls but tab, DEL, format characters
 * such as the bidi controls, line and paragraph separators, lone surrogates, invisible fillers):
 * each as `<U+XXXX>`.
 */
function escaped(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0]/gu,
    (c) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}>`,
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

    await t.step("the estate is what was seeded (twelve nodes, every verdict)", () => {
      assertEquals([boardJ.code, boardT.code], [0, 0], "board exits 0 whatever it shows");
      assertEquals(board.nodes, 12);
      assertEquals(board.machines.length, 12);
      assertEquals(
        Object.fromEntries(board.machines.map((m) => [m.name, m.verdict])),
        {
          [OK]: "ok",
          [REFUSED]: "refused",
          [FAILED]: "failed",
          [OUTSTANDING]: "outstanding",
          [PUSHED_SILENT]: "never-spoke",
          [SILENT]: "never-spoke",
          [QUIET]: "silent",
          [AWAY]: "away",
          [LINKED]: "not-pushed",
          [CLAIMED]: "unknown-claim",
          [CLAIMED_DIGEST]: "unknown-claim",
          [CLAIMED_GENERATION]: "unknown-claim",
        },
      );
      assertEquals(
        Object.values(board.counts).every((n) => n >= 1),
        true,
        `every verdict: ${JSON.stringify(board.counts)}`,
      );
    });

    await t.step("an unknown claim is never ok: its reason in JSON and text, an alarm", () => {
      const reasons = {
        [CLAIMED]: `its last report claims generation 1 with digest ${
          digest("a")
        }, and nothing was ever pushed to it`,
        [CLAIMED_DIGEST]: `its last report claims generation 1 with digest ${
          digest("a")
        }, which was never pushed to it (its generation 1 has digest ${digest("6")})`,
        [CLAIMED_GENERATION]: `its last report claims generation 2 with digest ${
          digest("7")
        }, and the last generation pushed to it is 1`,
      };
      const { blocks } = textBlocks(statusT.stdout);
      for (const [name, reason] of Object.entries(reasons)) {
        const m = byName.get(name)!;
        assertEquals([m.words, m.claim, m.applied], ["unknown claim", reason, 0], name);
        assertEquals(status.machines.find((x) => x.name === name)?.claim, reason, name);
        assert(blocks.get(name)!.more.includes(reason), `${name}: ${statusT.stdout}`);
      }
      assertEquals(board.counts["unknown-claim"], 3);
      assertEquals(byName.get(OK)!.claim, undefined);
      assertEquals(byName.get(OUTSTANDING)!.claim, undefined);
    });

    await t.step("a silent or away node says when it was last heard, and the rule", () => {
      for (const [what, tree] of [["board --json", board], ["status --json", status]] as const) {
        for (const name of [QUIET, AWAY]) {
          const m = tree.machines.find((x) => x.name === name);
          assert(m !== undefined, `${what}: ${name} missing`);
          const heard = Date.parse(m.lastReportAt!);
          const generated = Date.parse((tree as unknown as { generatedAt: string }).generatedAt);
          const quiet = generated - heard;
          assert(
            quiet > 2 * 3600_000 - 60_000 && quiet < 2 * 3600_000 + 600_000,
            `${what}: ${name} last heard ${m.lastReportAt}, ${quiet} ms before the board`,
          );
          assertEquals([m.intervalMs, m.intervalStated, m.quietAllowedMs], [60_000, true, 180_000]);
        }
        const quiet = tree.machines.find((x) => x.name === QUIET)!;
        assertEquals([quiet.kind, quiet.said], ["server", "ok"], what);
        const away = tree.machines.find((x) => x.name === AWAY)!;
        assertEquals([away.kind, away.said, away.generation], ["episodic", "outstanding", 2], what);
      }
      for (const m of board.machines) {
        assertEquals(m.kind, m.name === AWAY ? "episodic" : "server", `${m.name}'s kind`);
      }
      for (const [what, text] of [["board", boardT.stdout], ["status", statusT.stdout]] as const) {
        const { blocks } = textBlocks(text);
        const quiet = blocks.get(QUIET)!;
        assertMatch(quiet.line, /^web-quiet\s+silent\s+8 of 8\s+server\s+gen 1\s/);
        const at = board.machines.find((m) => m.name === QUIET)!.lastReportAt!;
        assert(
          quiet.more.some((l) =>
            l.startsWith(`last heard ${at}, quiet 2h`) &&
            l.includes("reports every 1m, heard for 3m after (2 intervals + 1m grace)") &&
            l.endsWith("its last report said ok")
          ),
          `${what}: ${JSON.stringify(quiet.more)}`,
        );
        const away = blocks.get(AWAY)!;
        assertMatch(away.line, /^phone-away\s+away\s+0 of 8\s+episodic\s+gen 2\s/);
        assert(
          away.more.some((l) =>
            l.includes("generation 2 pushed ") &&
            l.endsWith("is waiting for it; episodic, no alarm")
          ),
          `${what}: ${JSON.stringify(away.more)}`,
        );
      }
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
      for (const name of [OK, REFUSED, FAILED, OUTSTANDING, QUIET, AWAY]) {
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
        [QUIET]: "silent",
        [CLAIMED]: "unknown claim",
        [CLAIMED_DIGEST]: "unknown claim",
        [CLAIMED_GENERATION]: "unknown claim",
      };
      assertEquals(statusT.code, 1);
      assertEquals(statusJ.code, 1);
      const { blocks } = textBlocks(statusT.stdout);
      // The away node is listed (with when it was last heard), after the alarms, not behind.
      assertEquals([...blocks.keys()].sort(), [...NOT_OK, AWAY, LINKED].sort(), statusT.stdout);
      assertEquals(textBlocks(statusT.stdout).order.at(-1), AWAY);
      for (const [name, words] of Object.entries(expected)) {
        const line = blocks.get(name)!.line;
        assert(
          new RegExp(`^${name}\\s+${words}\\s+\\d+ of \\d+`).test(line),
          `status: ${name} is not "${words}": ${line}`,
        );
      }
      assertEquals(new Set(Object.values(expected)).size, 6, "six distinct words");
      assertEquals(status.behind, 9);
      assertEquals(
        Object.fromEntries(status.machines.map((m) => [m.name, m.words])),
        { ...expected, [AWAY]: "away", [LINKED]: "not pushed" },
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
        assertStringIncludes(text, "no such package<U+000A>");
        assertStringIncludes(text, "<U+001B>[31m");
        assertStringIncludes(text, "<U+202E>");
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

Deno.test("an episodic node away raises no alarm; a server as quiet does", async () => {
  const inv = await freshInventory();
  try {
    await inv.sql`insert into nodes (name, system, kind) values
      ('db-1', 'debian', 'server'), ('phone-1', 'android', 'episodic')`;
    await inv.sql`insert into declarations (node, generation, digest, body, total) values
      ('db-1', 1, ${digest("a")}, '{}', 8), ('phone-1', 1, ${digest("b")}, '{}', 8)`;
    await report(inv, "db-1", 1, digest("a"), "applied", 8, []);
    await report(inv, "phone-1", 1, digest("b"), "applied", 8, []);
    await inv.sql`update reports set received_at = now() - interval '1 day', interval_ms = 60000
                  where node = 'phone-1'`;
    const text = await controlCli(["status"], inv.env);
    assertEquals(text.code, 0, text.stdout + text.stderr);
    assert(
      text.stdout.startsWith(
        "all 2 nodes are doing what they were told or are away (episodic, no alarm)",
      ),
      text.stdout,
    );
    assertMatch(text.stdout, /\nphone-1\s+away\s+8 of 8\s+episodic\s/);
    const j = json(await controlCli(["status", "--json"], inv.env), "status --json");
    assertEquals([j.behind, j.machines.map((m) => m.verdict)], [0, ["away"]]);

    // The same silence from a server is an alarm, whatever its last report said.
    await inv.sql`update nodes set kind = 'server' where name = 'phone-1'`;
    const server = await controlCli(["status"], inv.env);
    assertEquals(server.code, 1, server.stdout);
    assertMatch(server.stdout, /^1 of 2 nodes are not doing what they were told/);
    assertMatch(server.stdout, /\nphone-1\s+silent\s+8 of 8\s+server\s/);

    // An episodic node whose reports said it failed stays failed when it goes away.
    await inv.sql`update nodes set kind = 'episodic' where name = 'phone-1'`;
    await inv.sql`update reports set outcome = 'failed', applied = 3 where node = 'phone-1'`;
    const failed = await controlCli(["status"], inv.env);
    assertEquals(failed.code, 1, failed.stdout);
    assertMatch(failed.stdout, /\nphone-1\s+failed\s+3 of 8\s+episodic\s/);
    assertMatch(failed.stdout, /its last report said failed/);
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
    assertEquals(Object.values(board.counts), [0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assertEquals([...walk(board)].filter((n) => n.value === null), []);
  } finally {
    await inv.drop();
  }
});

Deno.test("the board orders by verdict, drift verdict and name, across the read's rows", async () => {
  const now = new Date("2026-12-01T12:00:00Z");
  const digest = `sha256:${"a".repeat(64)}`;
  const names = ["b-2", "a-10", "a-9", "c", "a-1", "b-10", "b", "a"];
  const nodes: GivenNode[] = names.map((name, i) => ({
    name,
    declaration: { generation: 1, digest, total: 3, pushedAt: now },
    ...(i % 3 === 0 ? {} : {
      report: {
        generation: 1,
        digest,
        outcome: i % 3 === 1 ? "applied" : "failed",
        applied: 3,
        total: 3,
        trigger: "push",
        problems: [],
        reportedAt: now,
        receivedAt: now,
      },
    }),
    ...(i % 2 === 0
      ? {
        drift: {
          summary: {
            status: "drift" as const,
            ranAt: now.toISOString(),
            intervalSeconds: 900,
            registry: "/r",
            entries: 1,
            findings: [{ check: "port" as const, direction: "rogue" as const, count: 1 }],
          },
          reportedAt: now,
          receivedAt: now,
        },
      }
      : {}),
  }));
  const inv = await freshInventory();
  try {
    const { board } = await judgeNodes(inv.sql, nodes, { now });
    const rank = (
      m: { verdict: string; drift: { verdict: string } },
    ) => [VERDICTS.indexOf(m.verdict as never), DRIFT_VERDICTS.indexOf(m.drift.verdict as never)];
    const reference = board.machines
      .map((m) => ({ name: m.name, rank: rank(m) }))
      .sort((a, b) =>
        a.rank[0]! - b.rank[0]! || a.rank[1]! - b.rank[1]! || (a.name < b.name ? -1 : 1)
      )
      .map((m) => m.name);
    assertEquals(new Set(reference).size, names.length);
    // One node a row and two: the rows come in any order, the machines in the board's.
    for (const nodesPerRow of [1, 2, 1000]) {
      const fleet = await readFleet(inv.sql, { now, nodesPerRow });
      assertEquals(boardOf(fleet).machines.map((m) => m.name), reference, `${nodesPerRow} a row`);
    }
  } finally {
    await inv.drop();
  }
});

Deno.test("status's read says what the whole board says, over every verdict and drift verdict", async () => {
  // Every declaration verdict (silent and away by a report two hours old), both kinds, every
  // drift verdict (stale by a result two hours old): status built from the read of the nodes it
  // lists, against status built from the whole board.
  const now = new Date("2026-12-01T12:00:00Z");
  const old = new Date(now.getTime() - 2 * 3_600_000);
  const digest = `sha256:${"a".repeat(64)}`;
  const other = `sha256:${"b".repeat(64)}`;
  const reportOf = (over: Partial<NonNullable<GivenNode["report"]>>) => ({
    generation: 2,
    digest,
    outcome: "applied" as const,
    applied: 3,
    total: 3,
    trigger: "interval" as const,
    problems: [{ id: "app", message: "it broke" }],
    intervalMs: 60_000,
    reportedAt: now,
    receivedAt: now,
    ...over,
  });
  const reports: (GivenNode["report"] | undefined)[] = [
    undefined,
    reportOf({ problems: [] }),
    reportOf({ outcome: "refused", applied: 0 }),
    reportOf({ outcome: "failed", applied: 1 }),
    // Outstanding: a report of an earlier generation pushed to it.
    reportOf({ generation: 1, digest: other, pushed: true }),
    // An unknown claim: a digest never pushed to it.
    reportOf({ digest: other }),
    reportOf({ problems: [], receivedAt: old, reportedAt: old }),
    reportOf({ outcome: "failed", applied: 1, receivedAt: old, reportedAt: old }),
  ];
  const summary = { ranAt: now.toISOString(), intervalSeconds: 900, registry: "/r", entries: 4 };
  const drifts: GivenNode["drift"][] = [
    undefined,
    { summary: { status: "clean", ...summary, findings: [] }, reportedAt: now, receivedAt: now },
    {
      summary: {
        status: "drift",
        ...summary,
        findings: [{ check: "port", direction: "rogue", count: 2 }],
      },
      reportedAt: now,
      receivedAt: now,
    },
    {
      summary: { status: "unobservable", ...summary, findings: [], unobserved: ["podman@root"] },
      reportedAt: now,
      receivedAt: now,
    },
    {
      summary: { status: "unreadable", path: "/var/lib/r.json", problem: "missing" },
      reportedAt: now,
      receivedAt: now,
    },
    {
      summary: { status: "clean", ...summary, ranAt: old.toISOString(), findings: [] },
      reportedAt: old,
      receivedAt: old,
    },
  ];
  const nodes: GivenNode[] = [];
  for (const [r, report] of reports.entries()) {
    for (const kind of ["server", "episodic"] as const) {
      for (const [d, drift] of drifts.entries()) {
        nodes.push({
          name: `n-${r}-${kind}-${d}`,
          kind,
          modules: ["app"],
          declaration: { generation: 2, digest, total: 3, pushedAt: old },
          ...(report === undefined ? {} : { report }),
          ...(drift === undefined ? {} : { drift }),
        });
      }
    }
  }
  // Linked and never pushed (its link says it holds no declaration), of both kinds.
  for (const kind of ["server", "episodic"] as const) {
    nodes.push({
      name: `linked-${kind}`,
      kind,
      report: reportOf({
        generation: 0,
        outcome: "undeclared",
        applied: 0,
        total: 0,
        problems: [],
      }),
    });
  }
  const inv = await freshInventory();
  try {
    await writeNodes(inv.sql, nodes);
    const wholeFleet = await readFleet(inv.sql, { now });
    const whole = boardOf(wholeFleet);
    const listed = boardOf(await readFleet(inv.sql, { now, listedOnly: true }));
    assertEquals(
      [...VERDICTS, ...DRIFT_VERDICTS].filter((v) =>
        !whole.machines.some((m) => m.verdict === v || m.drift.verdict === v)
      ),
      [],
      "every verdict and drift verdict is in the fixture",
    );
    assertEquals(listed.machines, statusMachines(whole));
    assert(listed.machines.length < whole.machines.length, "some nodes are not listed");
    assertEquals(statusText(listed), statusText(whole));
    assertEquals(statusJson(listed), statusJson(whole));
    assertEquals(attentionMachines(listed), attentionMachines(whole));
    assertEquals(behindMachines(listed), behindMachines(whole));
    assertEquals({ ...listed, machines: [] }, { ...whole, machines: [] });
    // What board --json writes from the database's text is the board: the same value as
    // boardJson's, and text that is JSON with one machine a line.
    const written = boardJsonParts(wholeFleet).join("");
    assertEquals(JSON.parse(written), JSON.parse(boardJson(whole)));
    assertEquals(written.split("\n").length, whole.machines.length + 3);
  } finally {
    await inv.drop();
  }
});
