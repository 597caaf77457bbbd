/**
 * What mesh-control and mesh-builder print and exit with, held equal to what they printed before
 * their commands were declared as data (when commander built every help and parsed every
 * invocation): every help (the program's, each command's, group's and subcommand's), a bare
 * invocation, and misuse and refusals that need no database or broker. The fixture was written
 * by the programs of commit 957b002; an intended change of the command line regenerates it:
 * `MESH_GOLDEN_FROM=<tree> deno test -A tests/lib/cli_golden_test.ts` (the tree whose programs
 * say what is right: `.` for this one).
 *
 * @module
 */

import { CONTROL_TABLE } from "../../control/main.ts";
import { commandPaths } from "../../lib/cli_table.ts";
import { assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

const FIXTURE = `${ROOT}tests/lib/fixtures/cli_golden.json`;

/** One invocation: the program's entry point and its arguments. */
type Case = [entry: string, args: string[]];

const CONTROL = "control/main.ts";
const BUILDER = "builder/main.ts";

/** Every help of mesh-control, from its table's command paths. */
function controlHelps(): Case[] {
  const groups = CONTROL_TABLE.commands.filter((c) => c.subcommands).map((c) => c.name);
  return [
    [CONTROL, ["--help"]],
    [CONTROL, []],
    ...groups.map((g): Case => [CONTROL, [g, "--help"]]),
    ...groups.map((g): Case => [CONTROL, [g]]),
    ...commandPaths(CONTROL_TABLE).map((p): Case => [CONTROL, [...p.split(" "), "--help"]]),
  ];
}

const CASES: Case[] = [
  ...controlHelps(),
  [CONTROL, ["help", "status"]],
  [CONTROL, ["node", "help", "enroll"]],
  // Misuse, said by commander.
  [CONTROL, ["prune"]],
  [CONTROL, ["prune", "--keep", "30m"]],
  [CONTROL, ["status", "--bogus"]],
  [CONTROL, ["status", "--grace", "soon"]],
  [CONTROL, ["push", "a", "b"]],
  [CONTROL, ["broker", "setup", "--queue-type", "fast"]],
  [CONTROL, ["broker", "convert"]],
  [CONTROL, ["node", "enroll", "n1"]],
  [CONTROL, ["node", "enrol", "n1"]],
  [CONTROL, ["module", "build", "m", "--source", "s", "--commit", "c", "--timeout", "0.5s"]],
  // Refusals of a plain invocation, said by the command.
  [CONTROL, ["status"]],
  [CONTROL, ["board", "--json"]],
  [CONTROL, ["board", "--html", "/nonexistent/dir/board.html"]],
  [CONTROL, ["push"]],
  [CONTROL, ["push", "n1", "--behind"]],
  [CONTROL, ["push", "--behind", "--database", "postgres://u:secret@127.0.0.1:1/x"]],
  [CONTROL, ["node", "kind", "n1", "laptop", "--database", "postgres://d"]],
  [CONTROL, ["node", "enroll", "Bad_Name", "--system", "debian"]],
  [CONTROL, ["node", "enroll", "n1", "--system", "plan9"]],
  [CONTROL, ["broker", "setup"]],
  [CONTROL, ["broker", "check", "--broker", "http://u:secret@h"]],
  [CONTROL, ["module", "add", "/nonexistent.json"]],
  [CONTROL, ["builder", "revoke", "b1", "--broker", "amqp://b@h"]],
  [CONTROL, ["migrate"]],
  [BUILDER, ["--help"]],
  [BUILDER, []],
  [BUILDER, ["--bogus"]],
  [BUILDER, ["x"]],
  [BUILDER, ["--name"]],
  [BUILDER, ["--broker", "http://u:secret@h"]],
  [BUILDER, ["--broker", "amqp://u:p@127.0.0.1:1", "--work-dir", "/nonexistent"]],
];

/** What one case prints and exits with, run by the programs of `tree`, no MESH_ variable set. */
async function run(tree: string, [entry, args]: Case) {
  const keep: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) keep[name] = value;
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${tree}/${entry}`, ...args],
    env: keep,
    clearEnv: true,
    cwd: tree,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** Every case's result in `tree`, a few at a time. */
async function runAll(tree: string) {
  const results: Record<string, Awaited<ReturnType<typeof run>>> = {};
  for (let i = 0; i < CASES.length; i += 4) {
    const batch = CASES.slice(i, i + 4);
    const said = await Promise.all(batch.map((c) => run(tree, c)));
    batch.forEach((c, j) => results[`${c[0]} ${c[1].join(" ")}`] = said[j]!);
  }
  return results;
}

Deno.test("mesh-control and mesh-builder say what they said before, word for word", async () => {
  const from = Deno.env.get("MESH_GOLDEN_FROM");
  if (from !== undefined) {
    const tree = from === "." ? ROOT.replace(/\/$/, "") : from.replace(/\/$/, "");
    await Deno.writeTextFile(FIXTURE, JSON.stringify(await runAll(tree), null, 2) + "\n");
  }
  const expected = JSON.parse(await Deno.readTextFile(FIXTURE));
  const actual = await runAll(ROOT.replace(/\/$/, ""));
  assertEquals(Object.keys(actual).sort(), Object.keys(expected).sort());
  for (const key of Object.keys(expected)) assertEquals(actual[key], expected[key], key);
});
