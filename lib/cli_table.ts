/**
 * A program's command table: the list of its commands, each a name, a one-line summary and a
 * loader of the module that implements it. The program's own help, `--version` and a bare
 * invocation are answered from the table alone, without loading commander or any command; any
 * other invocation loads commander (lib/cli.ts) and the one command it names, so a command loads
 * only what it uses.
 *
 * This module must stay cheap to load: it imports nothing at run time (the commander types are
 * erased) and loads lib/cli.ts only when a command runs.
 *
 * @module
 */

import type { Command } from "commander";

/**
 * Exit code of an unexpected error: a defect of the program (EX_SOFTWARE of sysexits.h), never
 * 1, which means drift, partly applied, or nodes not doing what they were told.
 */
export const EXIT_DEFECT = 70;

/**
 * One line of a program's exit code table: the code, what it means, and the commands (paths
 * below the program, e.g. `"render caddy"`) it is used by; every command when not given.
 */
export interface ExitCode {
  code: number;
  meaning: string;
  commands?: readonly string[];
}

/** The line every exit code table ends with. */
export const DEFECT_EXIT: ExitCode = {
  code: EXIT_DEFECT,
  meaning: "unexpected error: a defect of the program (--verbose prints the cause chain and stack)",
};

/** Renders exit code lines as help text ("Exit codes:", one code a line, wrapped at 80). */
export function exitCodesHelp(codes: readonly ExitCode[], withCommands = false): string {
  const lines = codes.map((c) => {
    const text = `${withCommands && c.commands ? `${c.commands.join(", ")}: ` : ""}${c.meaning}`;
    const wrapped: string[] = [];
    let line = "";
    for (const word of text.split(" ")) {
      if (line !== "" && line.length + 1 + word.length > 74) {
        wrapped.push(line);
        line = word;
      } else line = line === "" ? word : `${line} ${word}`;
    }
    wrapped.push(line);
    return `  ${String(c.code).padStart(2)}  ${wrapped.join("\n      ")}`;
  });
  return "\nExit codes:\n" + lines.join("\n");
}

/**
 * Adds one command to `parent` (a commander program): `parent.command(entry.name)` with its
 * description (`entry.summary`), arguments, options, subcommands and action. `context` is what
 * the program shares with its commands (its output, its exit code, its connections).
 */
export type DefineCommand<C> = (parent: Command, entry: CommandEntry<C>, context: C) => void;

/** What a command's module exports. */
export interface CommandModule<C> {
  /** Defines the command (and a group's subcommands) with its action. */
  define: DefineCommand<C>;
}

/** One line of a program's command table. */
export interface CommandEntry<C> {
  /** The command's name, e.g. `"apply"`. */
  name: string;
  /** What it does, in one sentence: its description in help. */
  summary: string;
  /**
   * Its arguments as the program's help lists them after the name, e.g. `"[options] <file>"`
   * (commander's own term: `[options]` when it has options, then its arguments).
   */
  usage?: string;
  /** A command group's subcommands, by name (the group itself has no action). */
  subcommands?: readonly string[];
  /** Loads the module implementing it (a dynamic `import()` of a static specifier). */
  load: () => Promise<CommandModule<C>>;
}

/** A program's command table. */
export interface ProgramTable<C> {
  /** The program's name, e.g. `"mesh-control"`. */
  name: string;
  /** Its description, the second paragraph of its help. */
  description: string;
  /** The version `--version` prints. */
  version: string;
  /** The help of `--version`. */
  versionHelp: string;
  /** Text printed after the program's help, before its exit codes. */
  helpAfter?: string;
  /** The commands, in the order help lists them. */
  commands: readonly CommandEntry<C>[];
  /** What each exit code means, by command. */
  exitCodes: readonly ExitCode[];
}

/** The help line of `--verbose`, every program's option. */
export const VERBOSE_HELP = "on an unexpected error, print its cause chain and stack";

/**
 * Every command path of `table` (`"apply"`, `"render caddy"`): a group's subcommands, any other
 * command itself.
 */
export function commandPaths<C>(table: ProgramTable<C>): string[] {
  return table.commands.flatMap((c) =>
    c.subcommands ? c.subcommands.map((s) => `${c.name} ${s}`) : [c.name]
  );
}

/**
 * Throws when an exit code line names a command the table does not have.
 *
 * @throws {Error} naming the code and the command: the table drifted.
 */
export function checkExitCodes<C>(table: ProgramTable<C>): void {
  const paths = new Set(commandPaths(table));
  for (const line of table.exitCodes) {
    for (const c of line.commands ?? []) {
      if (!paths.has(c)) throw new Error(`Exit code ${line.code} names no command "${c}"`);
    }
  }
}

/** Wraps `text` at whitespace to `width` columns, keeping its line breaks (as commander does). */
function boxWrap(text: string, width: number): string {
  if (width < 40) return text;
  const wrapped: string[] = [];
  for (const line of text.split(/\r\n|\n/)) {
    const chunks = line.match(/\s*\S+/g);
    if (chunks === null) {
      wrapped.push("");
      continue;
    }
    let sum = chunks.shift()!;
    for (const chunk of chunks) {
      if (sum.length + chunk.length <= width) sum += chunk;
      else {
        wrapped.push(sum);
        sum = chunk.trimStart();
      }
    }
    wrapped.push(sum);
  }
  return wrapped.join("\n");
}

/**
 * The program's help as commander prints it for the whole program (usage, description, options,
 * commands), `helpWidth` columns wide; with `after`, followed by the text after it and the exit
 * code table. tests/lib/cli_table_test.ts holds it equal to commander's own.
 */
export function programHelp<C>(
  table: ProgramTable<C>,
  options: { helpWidth?: number; after?: boolean } = {},
): string {
  const width = options.helpWidth ?? 80;
  const optionItems: [string, string][] = [
    ["-V, --version", table.versionHelp],
    ["--verbose", VERBOSE_HELP],
    ["-h, --help", "display help for command"],
  ];
  const commandItems: [string, string][] = [
    ...table.commands.map((c): [string, string] => [
      c.usage ? `${c.name} ${c.usage}` : c.name,
      c.summary,
    ]),
    ["help [command]", "display help for command"],
  ];
  const termWidth = Math.max(...[...optionItems, ...commandItems].map(([t]) => t.length));
  const item = ([term, description]: [string, string]) => {
    const remaining = width - termWidth - 4;
    const text = remaining < 40
      ? description
      : boxWrap(description, remaining).replace(/\n/g, "\n" + " ".repeat(termWidth + 2));
    return `  ${term.padEnd(termWidth)}  ${text.replace(/\n/g, "\n  ")}`;
  };
  const lines = [
    `Usage: ${table.name} [options] [command]`,
    "",
    boxWrap(table.description, width),
    "",
    "Options:",
    ...optionItems.map(item),
    "",
    "Commands:",
    ...commandItems.map(item),
    "",
  ];
  let text = lines.join("\n");
  if (options.after) {
    if (table.helpAfter) text += `${table.helpAfter}\n`;
    text += `${exitCodesHelp([...table.exitCodes, DEFECT_EXIT], true)}\n`;
  }
  return text;
}

/** How {@linkcode dispatch} writes and which code misuse exits with. */
export interface DispatchOptions<C> {
  /** Writes to stdout. */
  out: (text: string) => void;
  /** Writes to stderr. */
  err: (text: string) => void;
  /** Exit code of misuse (the program's usage code). */
  usageCode: number;
  /**
   * Runs the program through commander with `entry` defined (every command when `entry` is not
   * given: an invocation the table does not answer, an unknown command, say) and returns its
   * exit code.
   */
  run: (entry: CommandEntry<C> | undefined) => Promise<number>;
}

/** The width help is wrapped to: the terminal's, 80 when the stream is not one. */
function helpWidth(stream: { isTerminal(): boolean }): number {
  try {
    if (stream.isTerminal()) return Deno.consoleSize().columns;
  } catch {
    // Not a console after all.
  }
  return 80;
}

/**
 * Answers what the table can (the program's help with `--help`, `-h` or `help`, `--version`,
 * `-V`, and no arguments at all: help on stderr and the usage code); anything else goes to
 * `options.run` with the command it names, whose module only is loaded.
 */
export async function dispatch<C>(
  table: ProgramTable<C>,
  args: string[],
  options: DispatchOptions<C>,
): Promise<number> {
  const end = args.includes("--") ? args.indexOf("--") : args.length;
  const at = args.slice(0, end).findIndex((a) => !a.startsWith("-"));
  const flags = args.slice(0, at === -1 ? end : at);
  const known = ["--help", "-h", "--version", "-V", "--verbose"];
  if (args.length === 0) {
    checkExitCodes(table);
    options.err(programHelp(table, { helpWidth: helpWidth(Deno.stderr) }));
    return options.usageCode;
  }
  if (flags.every((f) => known.includes(f))) {
    // Commander answers the first of help and version it meets.
    const first = flags.find((f) => f !== "--verbose");
    if (first === "--version" || first === "-V") {
      options.out(`${table.version}\n`);
      return 0;
    }
    const asked = first !== undefined || (at !== -1 && args[at] === "help" && at + 1 === end);
    if (asked) {
      checkExitCodes(table);
      options.out(programHelp(table, { helpWidth: helpWidth(Deno.stdout), after: true }));
      return 0;
    }
    if (at !== -1) {
      const name = args[at] === "help" ? args[at + 1] : args[at];
      const entry = table.commands.find((c) => c.name === name);
      if (entry) return await options.run(entry);
    }
  }
  return await options.run(undefined);
}
