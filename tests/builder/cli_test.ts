/**
 * mesh-builder's command line, declared as data (builder/main.ts): the help it prints without
 * commander is commander's, built from the same declarations, and a plain start is parsed as
 * commander parses it. No broker is needed (the start itself is tests/builder/builder_test.ts's).
 *
 * @module
 */

import { Command } from "commander";
import { addExitCodes, optionOf, runProgram } from "../../lib/cli.ts";
import {
  answerOptionsProgram,
  optionKey,
  optionsProgramHelp,
  parseProgramOptions,
} from "../../lib/cli_table.ts";
import { BUILDER_OPTIONS, BUILDER_PROGRAM, EXIT_CODES } from "../../builder/main.ts";
import { VERSION } from "../../lib/version.ts";
import { assertEquals } from "../support/assert.ts";

/** mesh-builder's program as commander has it, its action recording the options it is given. */
function commanderProgram(out: (s: string) => void, seen: (opts: unknown) => void): Command {
  const program = new Command()
    .name(BUILDER_PROGRAM.name)
    .version(BUILDER_PROGRAM.version, "-V, --version", BUILDER_PROGRAM.versionHelp)
    .description(BUILDER_PROGRAM.description)
    .addHelpText("after", BUILDER_PROGRAM.helpAfter!)
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: () => {} });
  for (const option of BUILDER_OPTIONS) program.addOption(optionOf(option));
  program.action((opts: unknown) => seen(opts));
  addExitCodes(program, EXIT_CODES);
  return program;
}

/** What commander prints and gives the action for `args`. */
async function commanderSays(args: string[]) {
  let out = "";
  let given: unknown;
  const program = commanderProgram((s) => out += s, (opts) => given = opts);
  const code = await runProgram(program, args, {
    err: () => {},
    code: () => 0,
    usageCode: 2,
    runWithoutArguments: true,
    onError: () => 2,
  });
  return { code, out, given, program };
}

Deno.test("mesh-builder's help and --version are commander's, answered without it", async () => {
  for (const args of [["--help"], ["-h"], ["--verbose", "--help"], ["-h", "--verbose"]]) {
    const commander = await commanderSays(args);
    assertEquals(commander.code, 0, args.join(" "));
    assertEquals(answerOptionsProgram(BUILDER_PROGRAM, args), commander.out, args.join(" "));
  }
  // A bare invocation: the help without what follows it (on stderr).
  assertEquals(
    optionsProgramHelp(BUILDER_PROGRAM),
    (await commanderSays(["--verbose", "-V"])).program.helpInformation(),
  );
  for (const args of [["--version"], ["-V"], ["--verbose", "-V"]]) {
    const commander = await commanderSays(args);
    assertEquals([commander.code, commander.out], [0, `${VERSION}\n`], args.join(" "));
    assertEquals(answerOptionsProgram(BUILDER_PROGRAM, args), commander.out, args.join(" "));
  }
  // Anything else is not answered here.
  for (const args of [["--help", "--version"], ["help"], ["--name", "x", "--help"], []]) {
    assertEquals(answerOptionsProgram(BUILDER_PROGRAM, args), undefined, args.join(" "));
  }
});

/** Starts mesh-builder parses itself, and those it leaves to commander. */
const PLAIN = [
  [],
  ["--broker", "amqp://b@h"],
  ["--broker=amqp://a@h, amqp://b@h", "--name", "b1", "--work-dir", "/tmp"],
  ["--verbose", "--name=b1", "--verbose"],
  ["--work-dir", "relative/dir"],
];
const MISUSE = [
  ["x"],
  ["help"],
  ["--bogus"],
  ["--name"],
  ["--name", "--verbose"],
  ["--broker", "amqp://a@h", "--broker", "amqp://b@h"],
  ["--name", "a", "--name", "b"],
  ["--help"],
  ["-V"],
  ["--", "--name", "x"],
];

Deno.test("mesh-builder parses a plain start as commander does", async () => {
  const saved = Deno.env.get("MESH_BROKER_URL");
  try {
    for (const value of [undefined, "amqp://e@h,amqp://f@h"]) {
      if (value === undefined) Deno.env.delete("MESH_BROKER_URL");
      else Deno.env.set("MESH_BROKER_URL", value);
      for (const args of [...PLAIN, ...MISUSE]) {
        const said = `${args.join(" ")} (env ${value})`;
        const parsed = parseProgramOptions(BUILDER_OPTIONS, args);
        assertEquals(parsed !== undefined, PLAIN.includes(args), said);
        if (parsed === undefined) continue;
        const commander = await commanderSays(args);
        assertEquals(commander.code, 0, said);
        // What the builder is started with: its declared options (--verbose is the program's).
        const given = commander.given as Record<string, unknown>;
        const declared = Object.fromEntries(
          BUILDER_OPTIONS.map((o) => optionKey(o.flags))
            .filter((key) => given[key] !== undefined)
            .map((key) => [key, given[key]]),
        );
        assertEquals(parsed, declared, said);
      }
    }
  } finally {
    if (saved === undefined) Deno.env.delete("MESH_BROKER_URL");
    else Deno.env.set("MESH_BROKER_URL", saved);
  }
});
