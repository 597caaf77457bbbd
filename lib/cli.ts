/**
 * What every mesh command line does the same way: run a commander program and turn what happened
 * into an exit code, run until SIGTERM or SIGINT, and wait without outliving a stop.
 *
 * The convention, the same for the four programs:
 * - `--help` (and `help`) prints on stdout and exits 0; `--version` too.
 * - Misuse (no arguments, a command group without its subcommand, an unknown command or option, a
 *   missing argument or required option, a bad option value) is said on stderr and exits with the
 *   program's usage code (2). An unknown option is named before a missing required one: a
 *   misspelt `--registy` is reported as unknown, not as `--registry` missing.
 * - An unexpected error (a defect of the program, not a refusal or a state it knows) exits
 *   {@linkcode EXIT_DEFECT} with one line; `--verbose` adds the cause chain and the stack.
 *
 * @module
 */

import { Command, CommanderError, Option } from "commander";
import {
  checkExitCodes,
  type CommandAction,
  type CommandEntry,
  type CommandSpec,
  DEFECT_EXIT,
  describeDefect,
  EXIT_DEFECT,
  type ExitCode,
  exitCodeOfError,
  exitCodesHelp,
  isDefect,
  optionKey,
  type OptionSpec,
  type ProgramTable,
  VERBOSE_HELP,
} from "./cli_table.ts";

export { DEFECT_EXIT, describeDefect, EXIT_DEFECT, type ExitCode, exitCodesHelp, isDefect };
export { sleep, untilSignalled } from "./wait.ts";

/** Options for {@linkcode runProgram}. */
export interface RunProgramOptions {
  /** Writes to stderr. */
  err: (text: string) => void;
  /** The exit code the action left (read after it ran). */
  code: () => number;
  /** Exit code of a usage error commander found (an unknown option, a missing argument). */
  usageCode: number;
  /**
   * Prints `error` and returns its exit code: a refusal or a state error. Not called for a
   * defect ({@linkcode isDefect}), which exits {@linkcode EXIT_DEFECT}.
   */
  onError: (error: unknown) => number;
  /** Run the default action with no arguments (its settings all come from the environment). */
  runWithoutArguments?: boolean;
  /** Applied to a defect's text before it is printed (a password in a URL, say). */
  redact?: (text: string) => string;
}

/**
 * Lists exit codes in help from the program's one table: the whole table (with the commands
 * each line is for) after the program's help, and after every command's help the lines for that
 * command. The defect line ({@linkcode EXIT_DEFECT}) ends every list. With `partial`, the
 * program holds only some of its commands and the table is not checked against them.
 *
 * @throws {Error} when a line names a command the program does not have (the table drifted).
 */
export function addExitCodes(
  program: Command,
  table: readonly ExitCode[],
  options: { partial?: boolean } = {},
): void {
  const paths = new Set<string>();
  const visit = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      const here = [...path, sub.name()];
      if (sub.commands.length > 0) visit(sub, here);
      else {
        const key = here.join(" ");
        paths.add(key);
        const mine = table.filter((c) => !c.commands || c.commands.includes(key));
        sub.addHelpText("after", exitCodesHelp([...mine, DEFECT_EXIT]));
      }
    }
  };
  visit(program, []);
  // A program built with only the command that runs (runTable) is checked from its table.
  if (options.partial) return;
  for (const line of table) {
    for (const c of line.commands ?? []) {
      if (!paths.has(c)) throw new Error(`Exit code ${line.code} names no command "${c}"`);
    }
  }
  program.addHelpText("after", exitCodesHelp([...table, DEFECT_EXIT], true));
}

/**
 * Commander checks required options before it checks for unknown ones, so a misspelt
 * `--registy x` was reported as `--registry` missing. This moves every required option's check
 * after commander's own (unknown options, arguments, excess arguments): a preAction hook on the
 * command that declares it.
 */
function deferMandatoryOptions(command: Command): void {
  const mandatory = command.options.filter((o) => o.mandatory);
  for (const option of mandatory) option.makeOptionMandatory(false);
  if (mandatory.length > 0) {
    command.hook("preAction", (self) => {
      for (const option of mandatory) {
        if (self.getOptionValue(option.attributeName()) === undefined) {
          self.error(`error: required option '${option.flags}' not specified`, {
            code: "commander.missingMandatoryOptionValue",
          });
        }
      }
    });
  }
  for (const sub of command.commands) deferMandatoryOptions(sub);
}

/**
 * Parses `args` and runs the chosen action. No arguments at all is help on stderr and
 * `usageCode` (nothing asked is not something done); `--help` and `--version` are 0; a command
 * group without its subcommand is help on stderr and `usageCode`.
 */
export async function runProgram(
  program: Command,
  args: string[],
  options: RunProgramOptions,
): Promise<number> {
  const name = program.name();
  try {
    deferMandatoryOptions(program);
    if (!program.options.some((o) => o.long === "--verbose")) {
      program.addOption(
        new Option("--verbose", VERBOSE_HELP),
      );
    }
    if (args.length === 0 && !options.runWithoutArguments) {
      options.err(program.helpInformation());
      return options.usageCode;
    }
    await program.parseAsync(args, { from: "user" });
    return options.code();
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help, --version and `help` exit 0; help shown because something was missing (a
      // command group without its subcommand) is misuse.
      return error.exitCode === 0 ? 0 : options.usageCode;
    }
    return exitCodeOfError(name, error, args, options);
  }
}

/** Options for {@linkcode runTable}: those of {@linkcode runProgram}, and what commands share. */
export interface RunTableOptions<C> extends RunProgramOptions {
  /** Writes to stdout. */
  out: (text: string) => void;
  /** What the program shares with its commands (passed to each command's action). */
  context: C;
  /** Called with the program before it parses (a hook every command runs, say). */
  configure?: (program: Command) => void;
}

/**
 * Builds the commander program of `table` with the commands of `entries` defined (each loaded
 * from its module), their exit codes in their help. With every command of the table, the exit
 * code table is checked against them; with some, against the table's names.
 *
 * @throws {Error} when the exit code table names a command the program lacks.
 */
export async function buildProgram<C>(
  table: ProgramTable<C>,
  entries: readonly CommandEntry<C>[],
  options: Pick<RunTableOptions<C>, "out" | "err" | "context">,
): Promise<Command> {
  const program = new Command()
    .name(table.name)
    .description(table.description)
    .version(table.version, "-V, --version", table.versionHelp)
    .exitOverride()
    .configureOutput({ writeOut: options.out, writeErr: options.err })
    .addOption(new Option("--verbose", VERBOSE_HELP));
  if (table.helpAfter) program.addHelpText("after", table.helpAfter);
  const modules = await Promise.all(entries.map((e) => e.load()));
  entries.forEach((entry, i) => {
    const module = modules[i]!;
    if (entry.options && module.action) defineSpec(program, entry, module.action, options.context);
    else if (entry.declared && module.actions) {
      defineGroup(program, entry, module.actions, options.context);
    } else throw new Error(`${table.name} ${entry.name} declares neither options nor subcommands`);
  });
  const partial = entries.length !== table.commands.length;
  if (partial) checkExitCodes(table);
  addExitCodes(program, table.exitCodes, { partial });
  return program;
}

/** The commander option of `spec`. */
export function optionOf(spec: OptionSpec): Option {
  const option = new Option(spec.flags, spec.description);
  if (spec.default !== undefined) option.default(spec.default, spec.defaultDescription);
  if (spec.env !== undefined) option.env(spec.env);
  if (spec.parse) option.argParser(spec.parse);
  if (spec.choices) option.choices(spec.choices);
  if (spec.mandatory) option.makeOptionMandatory();
  return option;
}

/**
 * Adds the command `entry` declares as data to `parent`: its name, summary, arguments and
 * options, and `action` (given what commander parsed, keyed as {@linkcode optionKey}).
 */
export function defineSpec<C>(
  parent: Command,
  entry: CommandEntry<C>,
  action: CommandAction<C>,
  context: C,
): void {
  defineSpecOn(parent.command(entry.name), entry, action, context);
}

/**
 * Adds the group `entry` declares as data (`declared`) to `parent`: its name and summary, and
 * each subcommand as {@linkcode defineSpec} does, with its action from `actions`.
 *
 * @throws {Error} when a subcommand has no action.
 */
export function defineGroup<C>(
  parent: Command,
  entry: CommandEntry<C>,
  actions: Readonly<Record<string, CommandAction<C>>>,
  context: C,
): void {
  const group = parent.command(entry.name).description(entry.summary);
  for (const spec of entry.declared ?? []) {
    const action = actions[spec.name];
    if (action === undefined) throw new Error(`${entry.name} ${spec.name} has no action`);
    defineSpecOn(group.command(spec.name), spec, action, context);
  }
}

/** Gives `command` the summary, arguments, options and action `spec` declares. */
function defineSpecOn<C>(
  command: Command,
  entry: CommandSpec | CommandEntry<C>,
  action: CommandAction<C>,
  context: C,
): void {
  const spec = { arguments: entry.arguments ?? [], options: entry.options ?? [] };
  command.description(entry.summary);
  for (const a of spec.arguments) command.argument(a.name, a.description);
  for (const o of spec.options) command.addOption(optionOf(o));
  if (entry.helpAfter !== undefined) command.addHelpText("after", entry.helpAfter);
  command.action(async (...given: unknown[]) => {
    const self = given[given.length - 1] as Command;
    const opts = self.opts();
    const options: Record<string, unknown> = {};
    for (const o of spec.options) {
      const key = optionKey(o.flags);
      if (opts[key] !== undefined) options[key] = opts[key];
    }
    // An optional argument not given is left out, as parseCommand leaves it.
    const args = given.slice(0, spec.arguments.length).filter((a) => a !== undefined);
    await action(context, args as string[], options);
  });
}

/**
 * Runs `args` through commander with `entry` only loaded and defined (every command when not
 * given), with the conventions of {@linkcode runProgram}. What lib/cli_table.ts dispatch calls.
 */
export async function runTable<C>(
  table: ProgramTable<C>,
  entry: CommandEntry<C> | undefined,
  args: string[],
  options: RunTableOptions<C>,
): Promise<number> {
  const program = await buildProgram(table, entry ? [entry] : table.commands, options);
  options.configure?.(program);
  return await runProgram(program, args, options);
}
