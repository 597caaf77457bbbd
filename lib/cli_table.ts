/**
 * A program's command table: the list of its commands, each a name, a one-line summary and a
 * loader of the module that implements it. The program's own help, `--version` and a bare
 * invocation are answered from the table alone, without loading commander or any command; any
 * other invocation loads commander (lib/cli.ts) and the one command it names, so a command loads
 * only what it uses. A command declared as data (its entry lists its arguments and options) also
 * has its help answered here, and a plain invocation of it parsed here ({@linkcode parseCommand})
 * and run without commander; so does a command group declared as data (its entry lists its
 * subcommands, {@linkcode parseSubcommand}), and a program without commands whose options are
 * declared as data ({@linkcode OptionsProgram}, {@linkcode parseProgramOptions}).
 *
 * Every command is declared here as data: lib/cli.ts makes commander's commands from the same
 * declarations, so the two parsers read one table (tests/lib/cli_table_test.ts holds their
 * answers equal). This parser exists because loading commander costs about 40 ms in Deno (its
 * Node modules), a quarter of a no-op `mesh-host apply`. This module must stay cheap to load: it
 * imports nothing; lib/cli.ts is loaded only when commander is needed.
 *
 * @module
 */

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

/**
 * Whether `error` is a defect of the program rather than a refusal or a state of the world: not
 * an Error at all, or one of the errors the language raises on a programming mistake
 * (ReferenceError, RangeError, EvalError, SyntaxError outside JSON, TypeError other than a failed
 * fetch, an invalid URL or text that is not valid UTF-8, which are the network's or the input's).
 */
export function isDefect(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  if (error instanceof TypeError) {
    return !/fetch failed|error sending request|invalid url|url scheme|network|encoded data/i.test(
      error.message,
    );
  }
  if (error instanceof SyntaxError) return !/JSON/.test(error.message);
  return error instanceof ReferenceError || error instanceof RangeError ||
    error instanceof EvalError;
}

/** The message of `error`, its causes and its stack, for `--verbose`. */
export function describeDefect(error: unknown, verbose: boolean): string {
  const first = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const head = `unexpected error (a defect; exit ${EXIT_DEFECT}): ${first.split("\n")[0]}`;
  if (!verbose) return `${head} (--verbose for the cause chain and stack)\n`;
  const lines = [head];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && depth < 10; depth++) {
    if (depth > 0) {
      lines.push(
        `caused by: ${current instanceof Error ? `${current.name}: ${current.message}` : current}`,
      );
    }
    if (current instanceof Error && current.stack) lines.push(current.stack);
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines.join("\n") + "\n";
}

/** How {@linkcode exitCodeOfError} reports. */
export interface ErrorExitOptions {
  /** Writes to stderr. */
  err: (text: string) => void;
  /** Prints a refusal or a state error and returns its exit code (not called for a defect). */
  onError: (error: unknown) => number;
  /** Applied to a defect's text before it is printed. */
  redact?: (text: string) => string;
}

/**
 * The exit code of `error`, thrown by the program `name`'s command run with `args`: a refusal or
 * a state error is `options.onError`'s; a defect ({@linkcode isDefect}) is said in one line (with
 * its cause chain and stack when `args` hold `--verbose` before any `--`) and exits
 * {@linkcode EXIT_DEFECT}.
 */
export function exitCodeOfError(
  name: string,
  error: unknown,
  args: readonly string[],
  options: ErrorExitOptions,
): number {
  if (!isDefect(error)) return options.onError(error);
  const verbose = args.slice(0, args.includes("--") ? args.indexOf("--") : undefined)
    .includes("--verbose");
  const text = describeDefect(error, verbose);
  options.err(`${name}: ${options.redact ? options.redact(text) : text}`);
  return EXIT_DEFECT;
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
 * One option of a command declared as data ({@linkcode CommandSpec}): what commander's `Option`
 * is given, without loading commander.
 */
export interface OptionSpec {
  /**
   * Its flags as commander takes them: `"--dry-run"` (a switch), `"--no-bundle"` (a switch that
   * sets `bundle` false, true when not given) or `"--source <name>"`.
   */
  flags: string;
  /** Its help line. */
  description: string;
  /** Its value when not given (not passed through `parse`, as commander does). */
  default?: unknown;
  /** How help shows the default (`"15m"`); its JSON when not given. */
  defaultDescription?: string;
  /** The environment variable giving its value when the option is not given. */
  env?: string;
  /**
   * Turns the given value into the option's value (`previous`: its value so far, the default);
   * throws to refuse it (the error is the command's, as from its action).
   */
  parse?: (value: string, previous: unknown) => unknown;
  /** The only values it takes (commander's `choices`; not with `parse`). */
  choices?: readonly string[];
  /** Required: misuse when neither given nor set in its environment variable. */
  mandatory?: boolean;
}

/**
 * One argument of a command declared as data: required (`"<file>"`) or optional (`"[node]"`,
 * only after the required ones), with its help line (empty for none: help lists a command's
 * arguments only when one of them has a line, as commander does).
 */
export interface ArgumentSpec {
  name: string;
  description: string;
}

/**
 * A subcommand of a command group declared as data (its group's entry lists it in `declared`):
 * its name, summary, arguments and options, as a {@linkcode CommandEntry} declares them.
 */
export interface CommandSpec {
  name: string;
  summary: string;
  arguments?: readonly ArgumentSpec[];
  options: readonly OptionSpec[];
  /** Text its help prints after its options, before exit codes. */
  helpAfter?: string;
}

/**
 * Runs a command declared as data with its arguments and its options (keyed by camel-cased long
 * name, {@linkcode optionKey}): `O`, what its options parse to ({@linkcode OptionsOf} its
 * declarations); untyped in a table ({@linkcode CommandEntry}), where every command's is.
 */
export type CommandAction<C, O = Record<string, unknown>> = (
  context: C,
  args: string[],
  options: O,
) => Promise<void>;

/** The long flag of `F`: `"--source"` of `"--source <name>"` and of `"-s, --source <name>"`. */
type LongFlag<F extends string> = F extends `${string}, ${infer R}` ? LongFlag<R>
  : F extends `${infer L} ${string}` ? L
  : F;

/** `S` camel-cased at each `-`: `"take-from"` is `"takeFrom"`. */
type Camel<S extends string> = S extends `${infer A}-${infer B}` ? `${A}${Capitalize<Camel<B>>}`
  : S;

/**
 * The key an option with the flags `F` is kept under, as {@linkcode optionKey} gives it at run
 * time: `"dryRun"` of `"--dry-run"`, `"bundle"` of `"--no-bundle"`; never for flags that are not
 * a literal type.
 */
export type OptionKey<F extends string> = LongFlag<F> extends `--no-${infer N}` ? Camel<N>
  : LongFlag<F> extends `--${infer N}` ? Camel<N>
  : never;

/** What the option `O` is when given: its parser's result, one of its choices, its text, true. */
type GivenValue<O extends OptionSpec> = O["flags"] extends `${string} <${string}>` ? (
    O extends { parse: (...args: never[]) => infer R } ? R
      : O extends { choices: readonly (infer V)[] } ? V
      : string
  )
  : true;

/** What the option `O` is in what an action is given: a `--no-` switch is a boolean. */
type OptionValue<O extends OptionSpec> = O["flags"] extends `--no-${string}` ? boolean
  : GivenValue<O> | (O extends { default: infer D } ? D : never);

/** Whether the option `O` always has a value: it has a default, is mandatory, or a `--no-`. */
type Always<O extends OptionSpec> = O extends
  { default: NonNullable<unknown> } | { mandatory: true } | { flags: `--no-${string}` } ? true
  : false;

/** `T` with its intersections merged (what an editor shows). */
type Merged<T> = { [K in keyof T]: T[K] } & NonNullable<unknown>;

/**
 * What the options declared by `S` parse to, as {@linkcode parseCommand} and commander give them
 * to the action: each keyed as {@linkcode OptionKey}; present when it has a default, is mandatory
 * or is a `--no-` switch, optional otherwise. `S` must keep its literal types (declared `as const
 * satisfies readonly OptionSpec[]`): an option whose flags are a plain `string` gives no key.
 */
export type OptionsOf<S extends readonly OptionSpec[]> = Merged<
  & { [O in S[number] as Always<O> extends true ? OptionKey<O["flags"]> : never]: OptionValue<O> }
  & { [O in S[number] as Always<O> extends true ? never : OptionKey<O["flags"]>]?: OptionValue<O> }
>;

/**
 * The actions of a command group declared as data, by subcommand: each typed by the options its
 * declaration in `D` gives ({@linkcode OptionsOf}).
 */
export type GroupActions<C, D extends readonly CommandSpec[]> = {
  readonly [N in D[number]["name"]]: CommandAction<
    C,
    OptionsOf<Extract<D[number], { name: N }>["options"]>
  >;
};

/**
 * Whether `options` are what the options declared by `specs` parse to ({@linkcode OptionsOf}):
 * no key but theirs; a switch true (or its default), a `--no-` switch a boolean, a value without a
 * parser its text (one of its choices, when it has them) or its default; an option that has a
 * default or is mandatory present. What a parser returns is taken to be what its type says.
 */
export function isOptionsOf<S extends readonly OptionSpec[]>(
  specs: S,
  options: Readonly<Record<string, unknown>>,
): options is Readonly<Record<string, unknown>> & OptionsOf<S> {
  const keys = new Set(specs.map((o) => optionKey(o.flags)));
  if (Object.keys(options).some((k) => !keys.has(k))) return false;
  return specs.every((o) => {
    const value = options[optionKey(o.flags)];
    if (o.flags.startsWith("--no-")) return typeof value === "boolean";
    if (value === undefined) return o.default === undefined && !o.mandatory;
    if (value === o.default || o.parse !== undefined) return true;
    if (!o.flags.includes(" <")) return value === true;
    return typeof value === "string" && (o.choices === undefined || o.choices.includes(value));
  });
}

/**
 * `action`, typed by the options `specs` declare, as a table's untyped action: what it is given
 * is checked to be what they parse to ({@linkcode isOptionsOf}) before it runs.
 *
 * @throws {TypeError} from the action returned (rejected), when its options are not what `specs`
 * parse to: a defect ({@linkcode parseCommand} and commander both give what they declare).
 */
function checkedAction<C, S extends readonly OptionSpec[]>(
  name: string,
  specs: S,
  action: CommandAction<C, OptionsOf<S>>,
): CommandAction<C> {
  return async (context, args, options) => {
    if (!isOptionsOf(specs, options)) {
      throw new TypeError(
        `Cannot run "${name}": its options (${
          Object.keys(options).join(", ")
        }) are not what its declaration parses to`,
      );
    }
    await action(context, args, options);
  };
}

/** What a table entry declares of itself besides its options, subcommands and module. */
type EntryHead<C> = Omit<CommandEntry<C>, "options" | "declared" | "subcommands" | "load">;

/**
 * The table entry of a command declared as data whose module's action is typed by its options:
 * `entry.load` must give an action taking what `entry.options` parse to ({@linkcode OptionsOf}),
 * else the table does not type-check; the entry's module gives that action, its options checked
 * ({@linkcode isOptionsOf}) each time it runs. The module is loaded only by the entry's `load`.
 */
export function declaredCommand<C, const S extends readonly OptionSpec[]>(
  entry: EntryHead<C> & {
    options: S;
    load: () => Promise<{ action: CommandAction<C, OptionsOf<NoInfer<S>>> }>;
  },
): CommandEntry<C> {
  return {
    ...entry,
    load: async () => ({
      action: checkedAction(entry.name, entry.options, (await entry.load()).action),
    }),
  };
}

/**
 * The table entry of a command group declared as data (`entry.declared`, its subcommands in the
 * same order) whose module's actions are typed by their options: `entry.load` must give one
 * action a subcommand, each taking what that subcommand's options parse to
 * ({@linkcode GroupActions}), else the table does not type-check; the entry's module gives those
 * actions, each one's options checked ({@linkcode isOptionsOf}) each time it runs.
 */
export function declaredGroup<C, const D extends readonly CommandSpec[]>(
  entry: EntryHead<C> & {
    declared: D;
    load: () => Promise<{ actions: GroupActions<C, NoInfer<D>> }>;
  },
): CommandEntry<C> {
  return {
    ...entry,
    subcommands: entry.declared.map((s) => s.name),
    load: async () => {
      const { actions } = await entry.load();
      const checked: Record<string, CommandAction<C>> = {};
      for (const spec of entry.declared) {
        checked[spec.name] = checkedSubcommand(entry.name, entry.declared, spec.name, actions);
      }
      return { actions: checked };
    },
  };
}

/**
 * The action of the subcommand `name` of the group `group` declared by `declared`, as a table's
 * untyped action ({@linkcode checkedAction}).
 */
function checkedSubcommand<C, D extends readonly CommandSpec[], N extends D[number]["name"]>(
  group: string,
  declared: D,
  name: N,
  actions: GroupActions<C, D>,
): CommandAction<C> {
  const spec = declared.find((s): s is Extract<D[number], { name: N }> => s.name === name);
  if (spec === undefined) throw new TypeError(`${group} declares no subcommand "${name}"`);
  return checkedAction<C, Extract<D[number], { name: N }>["options"]>(
    `${group} ${name}`,
    spec.options,
    actions[name],
  );
}

/**
 * What a command's module exports: the action of a command (its entry has `options`), or the
 * actions of a group's subcommands (its entry has `declared`). Every command is declared as
 * data in its program's table; lib/cli.ts makes commander's commands from those declarations.
 */
export interface CommandModule<C> {
  /** The action of a command declared as data. */
  action?: CommandAction<C>;
  /** A group declared as data (its entry has `declared`): each subcommand's action, by name. */
  actions?: Readonly<Record<string, CommandAction<C>>>;
}

/** The key an option's value is kept under: its long name camel-cased (as commander). */
export function optionKey(flags: string): string {
  const long = flags.split(/[ ,|]+/).find((f) => f.startsWith("--"))!;
  return long.slice(2).replace(/^no-/, "").replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Parses the invocation `args` of the command `entry` declares as data, when it is a plain one:
 * the command's name, then exactly its arguments and its known options (each at most once, a
 * value given after it or with `=`, not starting with `-`), `--verbose` anywhere. Anything else
 * (help, `--version`, `--`, an unknown or repeated option, a missing value, a wrong number of
 * arguments, a value its `parse` refuses) is undefined: commander parses it, and says what is
 * wrong as it always has. tests/lib/cli_table_test.ts holds what it returns equal to what
 * commander passes the action.
 */
export function parseCommand<C>(
  entry: CommandEntry<C>,
  args: readonly string[],
): { args: string[]; options: Record<string, unknown> } | undefined {
  if (entry.options === undefined) return undefined;
  const spec = { arguments: entry.arguments ?? [], options: entry.options };
  const at = args.indexOf(entry.name);
  if (at === -1 || args.slice(0, at).some((a) => a !== "--verbose")) return undefined;
  const byFlag = new Map<string, OptionSpec>();
  for (const option of spec.options) {
    const [long] = option.flags.split(" ");
    if (!long!.startsWith("--") || long!.includes(",")) return undefined;
    byFlag.set(long!, option);
  }
  const operands: string[] = [];
  const given = new Map<OptionSpec, string | true>();
  for (let i = at + 1; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--verbose") continue;
    if (!arg.startsWith("-")) {
      operands.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const option = byFlag.get(eq === -1 ? arg : arg.slice(0, eq));
    if (option === undefined || given.has(option)) return undefined;
    const takesValue = option.flags.includes(" <");
    if (!takesValue) {
      if (eq !== -1) return undefined;
      given.set(option, true);
      continue;
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value.startsWith("-")) return undefined;
    given.set(option, value);
  }
  const required = spec.arguments.filter((a) => a.name.startsWith("<")).length;
  if (operands.length < required || operands.length > spec.arguments.length) return undefined;
  const options: Record<string, unknown> = {};
  for (const option of spec.options) {
    const value = given.get(option);
    const key = optionKey(option.flags);
    // Commander reads the environment variable of an option not given, through its parser.
    const fromEnv = value === undefined && option.env !== undefined
      ? Deno.env.get(option.env)
      : undefined;
    if (fromEnv !== undefined && !option.flags.includes(" <")) return undefined;
    if (option.flags.startsWith("--no-")) options[key] = value === undefined;
    else if (value === undefined && fromEnv === undefined) {
      if (option.default !== undefined) options[key] = option.default;
    } else if (value === true) options[key] = value;
    else {
      const given = (value ?? fromEnv) as string;
      // A value outside the choices is commander's to refuse.
      if (option.choices && !option.choices.includes(given)) return undefined;
      try {
        options[key] = option.parse ? option.parse(given, option.default) : given;
      } catch {
        return undefined;
      }
    }
    // A required option missing is commander's to say.
    if (option.mandatory && options[key] === undefined) return undefined;
  }
  return { args: operands, options };
}

/**
 * Parses the invocation `args` of a subcommand of the group `entry` declares as data
 * (`declared`), when it is a plain one: the group's name, the subcommand's name right after it,
 * then what {@linkcode parseCommand} takes. Anything else is undefined: commander parses it.
 * tests/lib/cli_table_test.ts holds what it returns equal to what commander passes the action.
 */
export function parseSubcommand<C>(
  entry: CommandEntry<C>,
  args: readonly string[],
): { subcommand: string; args: string[]; options: Record<string, unknown> } | undefined {
  if (entry.declared === undefined) return undefined;
  const at = args.indexOf(entry.name);
  if (at === -1 || args.slice(0, at).some((a) => a !== "--verbose")) return undefined;
  const spec = entry.declared.find((s) => s.name === args[at + 1]);
  if (spec === undefined) return undefined;
  const parsed = parseCommand({ ...spec, load: entry.load }, [
    ...args.slice(0, at),
    ...args.slice(at + 1),
  ]);
  return parsed && { subcommand: spec.name, ...parsed };
}

/**
 * What `args` run without commander: the action of `entry`'s command (or of the group's
 * subcommand they name) with what they give it, when they are a plain invocation
 * ({@linkcode parseCommand}, {@linkcode parseSubcommand}); undefined otherwise (commander's to
 * parse). Loads the entry's module.
 */
export async function plainInvocation<C>(
  entry: CommandEntry<C> | undefined,
  args: string[],
): Promise<
  | { action: CommandAction<C>; args: string[]; options: Record<string, unknown> }
  | undefined
> {
  if (entry === undefined || (entry.options === undefined && entry.declared === undefined)) {
    return undefined;
  }
  const module = await entry.load();
  if (entry.options !== undefined) {
    const parsed = parseCommand(entry, args);
    return module.action && parsed && { action: module.action, ...parsed };
  }
  const parsed = parseSubcommand(entry, args);
  const action = parsed && module.actions?.[parsed.subcommand];
  return action && { action, args: parsed.args, options: parsed.options };
}

/**
 * The subcommand `spec` of the group `entry` as an entry of its own, named by its path
 * (`"node enroll"`): what {@linkcode commandHelp} renders (its usage and its exit codes).
 */
export function subcommandEntry<C>(entry: CommandEntry<C>, spec: CommandSpec): CommandEntry<C> {
  return { ...spec, name: `${entry.name} ${spec.name}`, load: entry.load };
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
  /**
   * A command declared as data: its arguments (with `options`). Its module exports its
   * `action`; lib/cli.ts defines it on commander from these, and this module parses a plain
   * invocation ({@linkcode parseCommand}) and answers its help ({@linkcode commandHelp}) without
   * commander.
   */
  arguments?: readonly ArgumentSpec[];
  /**
   * A command declared as data: its options, in the order help lists them. An entry made with
   * {@linkcode declaredCommand} has its module's action typed by them.
   */
  options?: readonly OptionSpec[];
  /** A command declared as data: text its help prints after its options, before exit codes. */
  helpAfter?: string;
  /**
   * A command group declared as data: its subcommands (named in `subcommands`, in the same
   * order). Its module exports their `actions`; lib/cli.ts defines them on commander from
   * these, and this module parses a plain invocation of one ({@linkcode parseSubcommand}) and
   * answers its help without commander. An entry made with {@linkcode declaredGroup} has its
   * module's actions typed by their options.
   */
  declared?: readonly CommandSpec[];
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
  const item = ([term, description]: [string, string]) =>
    helpItem(term, description, termWidth, width);
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

/** Commander's help line of `description` with `term`, terms padded to `termWidth`. */
function helpItem(term: string, description: string, termWidth: number, width: number): string {
  // As commander: a term without a description is the term alone.
  if (description === "") return `  ${term}`;
  const remaining = width - termWidth - 4;
  const text = remaining < 40
    ? description
    : boxWrap(description, remaining).replace(/\n/g, "\n" + " ".repeat(termWidth + 2));
  return `  ${term.padEnd(termWidth)}  ${text.replace(/\n/g, "\n  ")}`;
}

/**
 * The help of the command `entry` declares as data, as commander prints it (usage, summary,
 * arguments, options, then the exit codes of that command), `helpWidth` columns wide.
 * tests/lib/cli_table_test.ts holds it equal to commander's own.
 */
export function commandHelp<C>(
  table: ProgramTable<C>,
  entry: CommandEntry<C>,
  options: { helpWidth?: number } = {},
): string {
  const width = options.helpWidth ?? 80;
  // As commander: the arguments are listed when one of them has a description.
  const listed = (entry.arguments ?? []).some((a) => a.description !== "");
  const argumentItems = (listed ? entry.arguments ?? [] : []).map((a): [string, string] => [
    a.name.slice(1, -1),
    a.description,
  ]);
  const optionItems: [string, string][] = [
    ...(entry.options ?? []).map(optionItem),
    ["-h, --help", "display help for command"],
  ];
  const termWidth = Math.max(...[...argumentItems, ...optionItems].map(([t]) => t.length));
  const item = ([term, description]: [string, string]) =>
    helpItem(term, description, termWidth, width);
  const lines = [
    // Commander's usage of the command itself: `[options]` always (its help is one).
    `Usage: ${table.name} ${entry.name} ${
      ["[options]", ...(entry.arguments ?? []).map((a) => a.name)].join(" ")
    }`,
    "",
    boxWrap(entry.summary, width),
    "",
    ...(argumentItems.length > 0 ? ["Arguments:", ...argumentItems.map(item), ""] : []),
    "Options:",
    ...optionItems.map(item),
    "",
  ];
  const mine = table.exitCodes.filter((c) => !c.commands || c.commands.includes(entry.name));
  const after = entry.helpAfter !== undefined ? `${entry.helpAfter}\n` : "";
  return `${lines.join("\n")}${after}${exitCodesHelp([...mine, DEFECT_EXIT])}\n`;
}

/** The help line of an option as commander shows it: its flags, and its description. */
function optionItem(o: OptionSpec): [string, string] {
  // As commander: its choices, the default of an option taking a value, its environment variable.
  const extra = [
    ...(o.choices ? [`choices: ${o.choices.map((c) => JSON.stringify(c)).join(", ")}`] : []),
    ...(o.default !== undefined && o.flags.includes(" <")
      ? [`default: ${o.defaultDescription ?? JSON.stringify(o.default)}`]
      : []),
    ...(o.env !== undefined ? [`env: ${o.env}`] : []),
  ];
  return [o.flags, extra.length > 0 ? `${o.description} (${extra.join(", ")})` : o.description];
}

/**
 * A program without commands (the program is its one command, e.g. `mesh-builder`): what its
 * help says, and its options declared as data.
 */
export interface OptionsProgram {
  /** The program's name, e.g. `"mesh-builder"`. */
  name: string;
  /** Its description, the second paragraph of its help. */
  description: string;
  /** The version `--version` prints. */
  version: string;
  /** The help of `--version`. */
  versionHelp: string;
  /** Its options, in the order help lists them (after `--version`). */
  options: readonly OptionSpec[];
  /** Text printed after the program's help, before its exit codes. */
  helpAfter?: string;
  /** What each exit code means. */
  exitCodes: readonly ExitCode[];
}

/**
 * The help of a program without commands as commander prints it (usage, description, options
 * with `--verbose` after the program's own), `helpWidth` columns wide; with `after`, followed by
 * the text after it and the exit code table. tests/builder/cli_test.ts holds it equal to
 * commander's own.
 */
export function optionsProgramHelp(
  program: OptionsProgram,
  options: { helpWidth?: number; after?: boolean } = {},
): string {
  const width = options.helpWidth ?? 80;
  const items: [string, string][] = [
    ["-V, --version", program.versionHelp],
    ...program.options.map(optionItem),
    ["--verbose", VERBOSE_HELP],
    ["-h, --help", "display help for command"],
  ];
  const termWidth = Math.max(...items.map(([t]) => t.length));
  const lines = [
    `Usage: ${program.name} [options]`,
    "",
    boxWrap(program.description, width),
    "",
    "Options:",
    ...items.map(([term, description]) => helpItem(term, description, termWidth, width)),
    "",
  ];
  let text = lines.join("\n");
  if (options.after) {
    if (program.helpAfter) text += `${program.helpAfter}\n`;
    text += `${exitCodesHelp([...program.exitCodes, DEFECT_EXIT], true)}\n`;
  }
  return text;
}

/**
 * What a program without commands answers itself: its help (`--help`, `-h`: help on stdout),
 * `--version` (`-V`), each alone or after `--verbose`; undefined for anything else.
 */
export function answerOptionsProgram(
  program: OptionsProgram,
  args: readonly string[],
  stdout: { isTerminal(): boolean } = Deno.stdout,
): string | undefined {
  const flags = args.filter((a) => a !== "--verbose");
  if (flags.length !== 1 || args.length > 2) return undefined;
  if (flags[0] === "--version" || flags[0] === "-V") return `${program.version}\n`;
  if (flags[0] === "--help" || flags[0] === "-h") {
    return optionsProgramHelp(program, { helpWidth: helpWidth(stdout), after: true });
  }
  return undefined;
}

/**
 * Parses the invocation `args` of a program without commands, when it is a plain one: its
 * known options only, as {@linkcode parseCommand} takes a command's (no arguments). Anything
 * else is undefined: commander parses it.
 */
export function parseProgramOptions(
  options: readonly OptionSpec[],
  args: readonly string[],
): Record<string, unknown> | undefined {
  // The program's options are parsed as those of a command named by a string no argument can
  // hold: argv holds C strings, which end at a NUL.
  const name = "\0";
  const parsed = parseCommand({
    name,
    summary: "",
    arguments: [],
    options,
    load: () => Promise.reject(new Error("a program's options load no module")),
  }, [name, ...args]);
  return parsed?.options;
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
 * `-V`, no arguments at all: help on stderr and the usage code, and the help of a command
 * declared as data: `CMD --help`, `CMD -h`, `help CMD`); anything else goes to `options.run`
 * with the command it names, whose module only is loaded.
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
      const rest = args.slice(at);
      const helpAsked = rest.length === 2 &&
        (rest[0] === "help" || rest[1] === "--help" || rest[1] === "-h");
      if (entry?.options && helpAsked && flags.length === 0) {
        checkExitCodes(table);
        options.out(commandHelp(table, entry, { helpWidth: helpWidth(Deno.stdout) }));
        return 0;
      }
      // A subcommand of a group declared as data: `GROUP SUB --help`, `-h`, `GROUP help SUB`.
      const sub = entry?.declared && flags.length === 0 && rest.length === 3 && args[at] === name
        ? rest[1] === "help" ? rest[2] : rest[2] === "--help" || rest[2] === "-h" ? rest[1] : ""
        : undefined;
      const spec = sub === undefined ? undefined : entry!.declared!.find((s) => s.name === sub);
      if (spec !== undefined) {
        checkExitCodes(table);
        options.out(
          commandHelp(table, subcommandEntry(entry!, spec), { helpWidth: helpWidth(Deno.stdout) }),
        );
        return 0;
      }
      if (entry) return await options.run(entry);
    }
  }
  return await options.run(undefined);
}
