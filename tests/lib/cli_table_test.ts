/**
 * The command tables (lib/cli_table.ts) of mesh-host, mesh-control and mesh-reconcile: the help a
 * table prints without loading commander is the help commander prints for the whole program; a
 * group's subcommands in the table are the ones its module defines; the program's help, its
 * `--version` and a bare invocation load no command; a command loads its own module only.
 *
 * @module
 */

import type { Command } from "commander";
import { buildProgram, runTable } from "../../lib/cli.ts";
import {
  type CommandAction,
  type CommandEntry,
  commandHelp,
  commandPaths,
  type CommandSpec,
  declaredCommand,
  declaredGroup,
  dispatch,
  isOptionsOf,
  type OptionsOf,
  type OptionSpec,
  parseCommand,
  parseSubcommand,
  programHelp,
  type ProgramTable,
  subcommandEntry,
} from "../../lib/cli_table.ts";
import { hostTable } from "../../host/cli.ts";
import { CONTROL_TABLE } from "../../control/main.ts";
import { RECONCILE_TABLE } from "../../reconcile/main.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { loadedAtStart } from "../support/module_graph.ts";

// deno-lint-ignore no-explicit-any
const TABLES: [string, ProgramTable<any>, () => unknown][] = [
  ["host", hostTable("debian"), () => ({ out: () => {}, err: () => {}, code: 0 })],
  ["control", CONTROL_TABLE, () => ({ out: () => {}, err: () => {}, code: 0, cleanups: [] })],
  ["reconcile", RECONCILE_TABLE, () => ({ out: () => {}, err: () => {}, code: 0 })],
];

/** What `args` prints through commander with every command of `table` loaded. */
async function commanderSays<C>(table: ProgramTable<C>, context: C, args: string[]) {
  let out = "";
  let err = "";
  const code = await runTable(table, undefined, args, {
    out: (s) => out += s,
    err: (s) => err += s,
    context,
    code: () => 0,
    usageCode: 2,
    onError: () => 2,
  });
  return { code, out, err };
}

Deno.test("a table's help is commander's help of the whole program", async () => {
  for (const [name, table, context] of TABLES) {
    const full = await commanderSays(table, context(), ["--help"]);
    assertEquals(full.code, 0, name);
    assertEquals(programHelp(table, { after: true }), full.out, name);
    // A bare invocation: the help without what follows it, on stderr.
    let err = "";
    const bare = await dispatch(table, [], {
      out: () => {},
      err: (s) => err += s,
      usageCode: 2,
      run: () => Promise.reject(new Error("nothing is run")),
    });
    assertEquals(bare, 2);
    const program: Command = await buildProgram(table, table.commands, {
      out: () => {},
      err: () => {},
      context: context(),
    });
    assertEquals(err, program.helpInformation(), name);
  }
});

Deno.test("a group's subcommands in the table are those its module defines", async () => {
  for (const [name, table, context] of TABLES) {
    const program: Command = await buildProgram(table, table.commands, {
      out: () => {},
      err: () => {},
      context: context(),
    });
    for (const entry of table.commands as CommandEntry<unknown>[]) {
      const command = program.commands.find((c) => c.name() === entry.name);
      assert(command, `${name} ${entry.name}`);
      assertEquals(
        command.commands.map((c) => c.name()),
        [...entry.subcommands ?? []],
        `${name} ${entry.name}`,
      );
    }
  }
});

Deno.test("help and --version are answered from the table; a command loads its module only", async () => {
  for (const [name, table] of TABLES) {
    const ran: (string | undefined)[] = [];
    const said: string[] = [];
    const io = {
      out: (s: string) => said.push(s),
      err: (s: string) => said.push(s),
      usageCode: 2,
      run: (entry: CommandEntry<unknown> | undefined) => {
        ran.push(entry?.name);
        return Promise.resolve(0);
      },
    };
    for (const args of [["--help"], ["-h"], ["help"], ["--version"], ["-V"], ["--verbose", "-h"]]) {
      assertEquals(await dispatch(table, args, io), 0, `${name} ${args.join(" ")}`);
    }
    assertEquals(ran, [], name);
    const first = table.commands[0]!;
    await dispatch(table, [first.name, "--help"], io);
    await dispatch(table, ["help", first.name], io);
    await dispatch(table, ["--verbose", first.name], io);
    // A command declared as data has its help answered from the table too.
    const loaded = first.options ? [first.name] : [first.name, first.name, first.name];
    assertEquals(ran, loaded, name);
    // What the table does not know goes to commander with every command, to be said as before.
    await dispatch(table, ["no-such-command"], io);
    await dispatch(table, ["--no-such-option"], io);
    assertEquals(ran.slice(loaded.length), [undefined, undefined], name);
  }
});

Deno.test("an unknown command is misuse said by commander, with every command known", async () => {
  for (const [name, table, context] of TABLES) {
    const r = await commanderSays(table, context(), ["aply"]);
    assertEquals(r.code, 2, name);
    assertStringIncludes(r.err, "unknown command 'aply'");
  }
});

Deno.test("a program's help, --version and bare start load no npm package, node: module or command", async () => {
  for (
    const entry of [
      "systems/debian/main.ts",
      "control/main.ts",
      "reconcile/main.ts",
      "builder/main.ts",
    ]
  ) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 3, `${entry}: ${loaded.join(" ")}`);
    assertEquals(
      loaded.filter((s) =>
        /^npm:|^node:|\/commands\/|\/systems\/(?!mod\.ts|[a-z]+\/main\.ts)/.test(s)
      ),
      [],
      entry,
    );
  }
});

Deno.test("mesh-host apply, reconcile, link and their runner load no commander, apply no node: module", async () => {
  const commands = [
    "host/commands/apply.ts",
    "host/commands/reconcile.ts",
    "host/commands/runner.ts",
    "systems/debian/mod.ts",
  ];
  for (const entry of [...commands, "host/commands/link.ts"]) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 3, `${entry}: ${loaded.join(" ")}`);
    assertEquals(loaded.filter((s) => /commander/.test(s)), [], entry);
    // The link's amqplib is CommonJS and loads Deno's Node layer (node:buffer, node:net...).
    if (commands.includes(entry)) assertEquals(loaded.filter((s) => /^node:/.test(s)), [], entry);
  }
});

/** Invocations a command declared as data parses itself, and those it leaves to commander. */
const INVOCATIONS: Record<string, { plain: string[][]; misuse: string[][] }> = {
  apply: {
    plain: [
      ["apply", "f.json"],
      ["apply", "help"],
      ["--verbose", "apply", "f.json", "--verbose"],
      ["apply", "--json", "f.json", "--dry-run"],
      ["apply", "f.json", "--source", "web", "--take-from", "local"],
      ["apply", "f.json", "--source=web", "--state-dir=/s//", "--declarations", "/d"],
      ["apply", "f.json", "--source="],
      ["apply", "f.json", "--state-dir", "/", "--json"],
    ],
    misuse: [
      [],
      ["apply"],
      ["help", "apply"],
      ["apply", "--help"],
      ["apply", "f.json", "-h"],
      ["apply", "f.json", "-V"],
      ["apply", "f.json", "--version"],
      ["apply", "a", "b"],
      ["apply", "f.json", "--bogus"],
      ["apply", "f.json", "--source"],
      ["apply", "f.json", "--source", "--json"],
      ["apply", "f.json", "--source", "-x"],
      ["apply", "f.json", "--source", "a", "--source", "b"],
      ["apply", "f.json", "--dry-run=1"],
      ["apply", "f.json", "--state-dir", "relative"],
      ["apply", "--", "f.json"],
      ["apply", "-", "f.json"],
      ["--json", "apply", "f.json"],
      ["owned"],
    ],
  },
  reconcile: {
    plain: [
      ["reconcile"],
      ["reconcile", "--no-bundle"],
      ["reconcile", "--json", "--dry-run", "--state-dir", "/s/"],
      ["reconcile", "--every", "15m", "--declarations=/d"],
      ["reconcile", "--every=90s", "--verbose", "--no-bundle", "--json"],
    ],
    misuse: [
      ["reconcile", "x"],
      ["reconcile", "--bundle"],
      ["reconcile", "--no-bundle=1"],
      ["reconcile", "--every", "soon"],
      ["reconcile", "--every=90"],
      ["reconcile", "--every"],
      ["reconcile", "--no-bundle", "--no-bundle"],
      ["reconcile", "--help"],
    ],
  },
  link: {
    plain: [
      ["link"],
      ["link", "--broker", "amqp://n:p@h"],
      ["link", "--broker=amqp://a@h, amqp://b@h", "--node", "x", "--every", "2s", "--json"],
      ["link", "--reconcile-result", "none", "--every=7d", "--state-dir", "/s"],
    ],
    misuse: [
      ["link", "x"],
      ["link", "--broker", "amqp://a@h", "--broker", "amqp://b@h"],
      ["link", "--every", "0.5s"],
      ["link", "--every", "8d"],
      ["link", "--node"],
    ],
  },
  owned: {
    plain: [["owned"], ["owned", "--json", "--state-dir", "/s", "--declarations=/d"]],
    misuse: [["owned", "x"], ["owned", "--dry-run"], ["owned", "--state-dir", "s"]],
  },
  bundle: {
    plain: [["bundle"], ["bundle", "--json", "--state-dir=/s"]],
    misuse: [["bundle", "x"], ["bundle", "--declarations", "/d"], ["bundle", "--json=1"]],
  },
  inventory: {
    plain: [["inventory"], ["inventory", "--json"]],
    misuse: [["inventory", "--json", "--json"], ["inventory", "x"]],
  },
  schema: {
    plain: [["schema"], ["--verbose", "schema"]],
    misuse: [["schema", "--json"], ["schema", "x"], ["schema", "-h"]],
  },
};

Deno.test("a command declared as data parses a plain invocation as commander does", async () => {
  // deno-lint-ignore no-explicit-any
  const table: ProgramTable<any> = hostTable("debian");
  const declared = table.commands.filter((c) => c.options !== undefined);
  assertEquals(declared.map((c) => c.name).sort(), Object.keys(INVOCATIONS).sort());
  for (const command of declared) {
    assert((await command.load()).action !== undefined, command.name);
    let seen: { args: string[]; options: Record<string, unknown> } | undefined;
    const recording: CommandAction<unknown> = (_ctx, args, options) => {
      seen = { args, options };
      return Promise.resolve();
    };
    const entry: CommandEntry<unknown> = {
      ...command,
      load: () => Promise.resolve({ action: recording }),
    };
    const { plain, misuse } = INVOCATIONS[command.name]!;
    // With and without the environment variables the options read (commander reads them for an
    // option not given, through its parser).
    const env = (command.options ?? []).flatMap((o) => o.env ? [o.env] : []);
    for (const value of [undefined, ...(env.length > 0 ? ["amqp://e@h,amqp://f@h"] : [])]) {
      for (const name of env) {
        if (value === undefined) Deno.env.delete(name);
        else Deno.env.set(name, value);
      }
      try {
        for (const args of [...plain, ...misuse]) {
          const parsed = parseCommand(command, args);
          assertEquals(parsed !== undefined, plain.includes(args), args.join(" "));
          if (parsed === undefined) continue;
          seen = undefined;
          const code = await runTable(table, entry, args, {
            out: () => {},
            err: () => {},
            context: {},
            code: () => 0,
            usageCode: 2,
            onError: () => 2,
          });
          assertEquals(code, 0, args.join(" "));
          assertEquals(parsed, seen, args.join(" "));
          // What the action is given is what its options' declarations type.
          assert(isOptionsOf(command.options!, parsed.options), args.join(" "));
        }
      } finally {
        for (const name of env) Deno.env.delete(name);
      }
    }
  }
});

Deno.test("a command declared as data: its help is commander's, answered without loading it", async () => {
  // deno-lint-ignore no-explicit-any
  const table: ProgramTable<any> = hostTable("debian");
  const declared = table.commands.filter((c) => c.options !== undefined);
  assert(declared.length > 0);
  for (const entry of declared) {
    for (const args of [[entry.name, "--help"], [entry.name, "-h"], ["help", entry.name]]) {
      const commander = await commanderSays(table, {}, args);
      assertEquals(commander.code, 0, args.join(" "));
      assertEquals(commandHelp(table, entry), commander.out, args.join(" "));
      let out = "";
      const code = await dispatch(table, args, {
        out: (s) => out += s,
        err: () => {},
        usageCode: 2,
        run: () => Promise.reject(new Error("nothing is loaded")),
      });
      assertEquals([code, out], [0, commander.out], args.join(" "));
    }
  }
});

/**
 * Invocations of mesh-control's commands and subcommands (by path) that the table parses
 * itself, and those it leaves to commander.
 */
const CONTROL_INVOCATIONS: Record<string, { plain: string[][]; misuse: string[][] }> = {
  migrate: {
    plain: [["migrate"], ["migrate", "--database", "postgres://a@h/i"], ["--verbose", "migrate"]],
    misuse: [["migrate", "x"], ["migrate", "--json"], ["migrate", "--database"], ["migrate", "-h"]],
  },
  push: {
    plain: [
      ["push"],
      ["push", "n1"],
      ["push", "--behind", "--dry-run", "--stuck-after", "2h"],
      ["push", "n1", "--broker", "amqp://a@h,amqp://b@h", "--database=postgres://d"],
      ["push", "--stuck-after=90s"],
    ],
    misuse: [
      ["push", "a", "b"],
      ["push", "--stuck-after", "soon"],
      ["push", "--broker", "amqp://a@h", "--broker", "amqp://b@h"],
      ["push", "--behind=1"],
      ["push", "--", "n1"],
      ["push", "--stuck-after=90"],
    ],
  },
  status: {
    plain: [
      ["status"],
      ["status", "--json"],
      ["status", "--grace", "2m", "--database", "postgres://x"],
      ["--verbose", "status", "--database-read=postgres://r", "--max-lag", "5s", "--verbose"],
      ["status", "--json", "--grace=90s"],
    ],
    misuse: [
      ["status", "x"],
      ["status", "--grace", "soon"],
      ["status", "--html", "/tmp/b.html"],
      ["status", "--json", "--json"],
      ["status", "--grace"],
      ["status", "--max-lag", "-1"],
      ["--json", "status"],
      ["status", "--grace=90"],
    ],
  },
  board: {
    plain: [
      ["board"],
      ["board", "--html", "/tmp/b.html", "--json"],
      ["board", "--max-lag=1m", "--database", "d", "--grace", "30s"],
    ],
    misuse: [["board", "--grace", "x"], ["board", "x"], ["board", "--html"]],
  },
  prune: {
    plain: [["prune", "--keep", "14d"], ["prune", "--keep=2h", "--dry-run"]],
    misuse: [["prune"], ["prune", "--keep", "30m"], ["prune", "--dry-run"], ["prune", "14d"]],
  },
  ingest: {
    plain: [["ingest"], ["ingest", "--drain", "--broker", "amqp://a@h,amqp://b@h"]],
    misuse: [["ingest", "--drain=1"], ["ingest", "--drain", "--drain"]],
  },
  "broker setup": {
    plain: [["broker", "setup"], ["broker", "setup", "--queue-type", "quorum"]],
    misuse: [
      ["broker"],
      ["broker", "setup", "--queue-type", "fast"],
      ["broker", "help", "setup"],
      ["broker", "setup", "x"],
      ["broker", "--verbose", "setup"],
      ["broker", "sertup"],
    ],
  },
  "broker convert": {
    plain: [["broker", "convert", "--queue-type=classic", "--broker-api", "http://a"]],
    misuse: [["broker", "convert"], ["broker", "convert", "--queue-type", "none"]],
  },
  "broker check": {
    plain: [["broker", "check", "--topology"], ["broker", "check"]],
    misuse: [["broker", "check", "--topology", "--topology"]],
  },
  "node enroll": {
    plain: [
      ["node", "enroll", "n1", "--system", "debian"],
      ["--verbose", "node", "enroll", "--episodic", "--system=arch", "n1", "--verbose"],
      ["node", "enroll", "n1", "--system", "plan9"],
    ],
    misuse: [
      ["node", "enroll", "n1"],
      ["node", "enroll", "--system", "debian"],
      ["node", "enrol", "n1", "--system", "debian"],
      ["node", "enroll", "n1", "--system"],
    ],
  },
  "node assign": {
    plain: [["node", "assign", "n", "m"]],
    misuse: [["node", "assign", "n"], ["node", "assign", "n", "m", "x"]],
  },
  "node unassign": {
    plain: [["node", "unassign", "n", "m", "--database", "postgres://d"]],
    misuse: [["node", "unassign", "--database", "postgres://d"]],
  },
  "node kind": {
    plain: [["node", "kind", "n", "episodic"], ["node", "kind", "n", "laptop"]],
    misuse: [["node", "kind", "n"]],
  },
  "node remove": {
    plain: [["node", "remove", "n", "--broker-api", "http://a"]],
    misuse: [["node", "remove"], ["node", "remove", "n", "--system", "debian"]],
  },
  "node rotate": {
    plain: [["node", "rotate", "n"]],
    misuse: [["node", "rotate", "n", "m"], ["node", "rotate", "-h"]],
  },
  "module add": {
    plain: [["module", "add", "f.json"], ["module", "add", "f.json", "--name", "web"]],
    misuse: [["module", "add"], ["module", "add", "f.json", "--name"]],
  },
  "module build": {
    plain: [
      ["module", "build", "m", "--source", "s", "--commit", "c"],
      [
        "module",
        "build",
        "m",
        "--timeout",
        "2s",
        "--asker",
        "a",
        "--store",
        "r:5000",
        "--branch",
        "main",
        "--source=s",
        "--commit",
        "c",
      ],
    ],
    misuse: [
      ["module", "build", "m", "--source", "s"],
      ["module", "build", "m", "--source", "s", "--commit", "c", "--timeout", "0.5s"],
      ["module", "build", "--source", "s", "--commit", "c"],
    ],
  },
  "module list": {
    plain: [["module", "list"], ["module", "list", "--json"]],
    misuse: [["module", "list", "x"], ["module", "list", "--json=yes"]],
  },
  "module remove": {
    plain: [["module", "remove", "m"]],
    misuse: [["module", "remove"]],
  },
  "builder issue": {
    plain: [["builder", "issue", "b1"], ["builder", "issue", "b1", "--broker=amqp://a@h"]],
    misuse: [["builder", "issue"], ["builder", "issue", "b1", "--broker"]],
  },
  "builder revoke": {
    plain: [["builder", "revoke", "b1", "--broker-api", "http://x"]],
    misuse: [["builder", "revoke", "b1", "b2"]],
  },
  "ca init": {
    plain: [["ca", "init"], ["ca", "init", "--dir", "/d"]],
    misuse: [["ca", "init", "x"], ["ca", "init", "--dir"]],
  },
  "ca issue": {
    plain: [
      ["ca", "issue", "broker", "--name", "a.example,127.0.0.1"],
      ["ca", "issue", "broker", "--name=a", "--dir", "/d", "--cert", "/c", "--key", "/k"],
      ["ca", "issue", "store", "--key-group", "postgres", "--name", "a"],
    ],
    misuse: [
      ["ca", "issue", "broker"],
      ["ca", "issue", "--name", "a"],
      ["ca", "issue", "broker", "--name", "a", "--name", "b"],
    ],
  },
  "ca renew": {
    plain: [["ca", "renew", "broker", "--name", "a"], [
      "ca",
      "renew",
      "b",
      "--check",
      "--name",
      "a",
    ]],
    misuse: [["ca", "renew", "broker", "--check"], [
      "ca",
      "renew",
      "b",
      "--name",
      "a",
      "--check=1",
    ]],
  },
  "ca show": {
    plain: [["ca", "show"], ["ca", "show", "--json", "--dir", "/d"]],
    misuse: [["ca", "show", "x"]],
  },
  "key init": {
    plain: [["key", "init"], ["key", "init", "--signing-key", "/s", "--public-key=/p"]],
    misuse: [["key", "init", "x"], ["key", "init", "--signing-key"]],
  },
  "key rotate": {
    plain: [["key", "rotate"], ["key", "rotate", "--signing-key=/s", "--public-key", "/p"]],
    misuse: [["key", "rotate", "x"], ["key", "rotate", "--public-key"]],
  },
  "key show": {
    plain: [["key", "show"], ["key", "show", "--signing-key", "/s"]],
    misuse: [["key", "show", "x"], ["key", "show", "--public-key", "/p"]],
  },
};

/** Every command of `table` declared as data, by path, with its own entry (a group's too). */
function declaredPaths<C>(table: ProgramTable<C>): [string, CommandEntry<C>, CommandSpec][] {
  return table.commands.flatMap((entry) =>
    entry.options !== undefined
      ? [[entry.name, entry, { ...entry, options: entry.options }]]
      : (entry.declared ?? []).map((spec): [string, CommandEntry<C>, CommandSpec] => [
        `${entry.name} ${spec.name}`,
        entry,
        spec,
      ])
  );
}

/** The path and what a plain invocation gives, as the runner parses it; undefined otherwise. */
function parseDeclared<C>(entry: CommandEntry<C>, args: string[]) {
  if (entry.options !== undefined) {
    const parsed = parseCommand(entry, args);
    return parsed && { path: entry.name, args: parsed.args, options: parsed.options };
  }
  const parsed = parseSubcommand(entry, args);
  return parsed &&
    { path: `${entry.name} ${parsed.subcommand}`, args: parsed.args, options: parsed.options };
}

const CONTROL_CONTEXT = () => ({ out: () => {}, err: () => {}, code: 0, cleanups: [] });
// deno-lint-ignore no-explicit-any
const CONTROL: ProgramTable<any> = CONTROL_TABLE;

Deno.test("mesh-control: every command and subcommand is declared as data, with its action", async () => {
  const paths = declaredPaths(CONTROL_TABLE);
  assertEquals(paths.map(([p]) => p), commandPaths(CONTROL_TABLE));
  assertEquals(paths.map(([p]) => p).sort(), Object.keys(CONTROL_INVOCATIONS).sort());
  for (const entry of CONTROL_TABLE.commands) {
    const module = await entry.load();
    if (entry.options) assert(module.action !== undefined, entry.name);
    else {
      assertEquals(Object.keys(module.actions ?? {}), [...entry.subcommands ?? []], entry.name);
      assertEquals(entry.declared?.map((s) => s.name), [...entry.subcommands ?? []], entry.name);
    }
  }
});

Deno.test("mesh-control: a plain invocation of every command is parsed as commander does", async () => {
  const env = [
    ...new Set(
      declaredPaths(CONTROL_TABLE).flatMap(([, , spec]) =>
        spec.options.flatMap((o) => o.env ? [o.env] : [])
      ),
    ),
  ];
  const saved = env.map((name) => [name, Deno.env.get(name)] as const);
  try {
    for (const value of [undefined, "amqp://e@h,amqp://f@h"]) {
      for (const name of env) {
        if (value === undefined) Deno.env.delete(name);
        else Deno.env.set(name, value);
      }
      for (const [path, group, spec] of declaredPaths(CONTROL_TABLE)) {
        let seen: { path: string; args: string[]; options: Record<string, unknown> } | undefined;
        const recording = (name: string): CommandAction<unknown> => (_ctx, args, options) => {
          seen = { path: name, args, options };
          return Promise.resolve();
        };
        // The command's module, its actions recording what commander gives them.
        const entry: CommandEntry<unknown> = {
          ...group,
          load: () =>
            Promise.resolve(
              group.options ? { action: recording(group.name) } : {
                actions: Object.fromEntries(
                  (group.declared ?? []).map((s) => [s.name, recording(`${group.name} ${s.name}`)]),
                ),
              },
            ),
        };
        const { plain, misuse } = CONTROL_INVOCATIONS[path]!;
        for (const args of [...plain, ...misuse]) {
          const said = `${args.join(" ")} (env ${value})`;
          const parsed = parseDeclared(group, args);
          assertEquals(parsed !== undefined, plain.includes(args), said);
          if (parsed === undefined) continue;
          assertEquals(parsed.path, path, said);
          seen = undefined;
          let err = "";
          const code = await runTable(CONTROL, entry, args, {
            out: () => {},
            err: (s) => err += s,
            context: CONTROL_CONTEXT(),
            code: () => 0,
            usageCode: 2,
            onError: () => 2,
          });
          assertEquals([code, err], [0, ""], said);
          assertEquals(parsed, seen, said);
          assert(isOptionsOf(spec.options, parsed.options), said);
        }
      }
    }
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  }
});

Deno.test("mesh-control: every command's and subcommand's help is commander's, answered without loading it", async () => {
  for (const [path, group, spec] of declaredPaths(CONTROL_TABLE)) {
    const words = path.split(" ");
    const forms = words.length === 1
      ? [[path, "--help"], [path, "-h"], ["help", path]]
      : [[...words, "--help"], [...words, "-h"], [words[0]!, "help", words[1]!]];
    for (const args of forms) {
      const commander = await commanderSays(CONTROL_TABLE, CONTROL_CONTEXT(), args);
      assertEquals(commander.code, 0, args.join(" "));
      const entry = words.length === 1 ? group : subcommandEntry(group, spec);
      assertEquals(commandHelp(CONTROL_TABLE, entry), commander.out, args.join(" "));
      let out = "";
      const code = await dispatch(CONTROL_TABLE, args, {
        out: (s) => out += s,
        err: () => {},
        usageCode: 2,
        run: () => Promise.reject(new Error("nothing is loaded")),
      });
      assertEquals([code, out], [0, commander.out], args.join(" "));
    }
  }
});

Deno.test("mesh-control's commands, their runner and mesh-builder load no commander", async () => {
  const entries = [
    ...[
      "runner",
      "status",
      "board",
      "push",
      "migrate",
      "prune",
      "ingest",
      "broker",
      "node",
      "module",
      "builder",
    ].map((c) => `control/commands/${c}.ts`),
    "builder/main.ts",
    "builder/serve.ts",
  ];
  for (const entry of entries) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 3, `${entry}: ${loaded.join(" ")}`);
    assertEquals(loaded.filter((s) => /commander/.test(s)), [], entry);
  }
  // status and board, and mesh-builder's own command line, load no node: module either.
  for (
    const entry of ["control/commands/status.ts", "control/commands/board.ts", "builder/main.ts"]
  ) {
    assertEquals((await loadedAtStart(entry)).filter((s) => /^node:|^npm:/.test(s)), [], entry);
  }
});

/** Options declared as a table declares them: their literal types kept. */
const TYPED_OPTIONS = [
  { flags: "--source <name>", description: "", default: "local" },
  { flags: "--take-from <source>", description: "" },
  { flags: "--dry-run", description: "" },
  { flags: "--no-bundle", description: "" },
  { flags: "--every <duration>", description: "", parse: (v: string) => Number(v) },
  { flags: "--queue-type <type>", description: "", choices: ["classic", "quorum"] },
  { flags: "--keep <duration>", description: "", mandatory: true, parse: (v: string) => [v] },
] as const satisfies readonly OptionSpec[];

/** True when `A` and `B` are the same type (a compile-time check). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;

Deno.test("OptionsOf types the options a declaration parses to, keyed as optionKey", () => {
  const same: Same<OptionsOf<typeof TYPED_OPTIONS>, {
    source: string;
    takeFrom?: string;
    dryRun?: true;
    bundle: boolean;
    every?: number;
    queueType?: "classic" | "quorum";
    keep: string[];
  }> = true;
  assert(same);
  const parsed = parseCommand({
    name: "go",
    summary: "",
    options: TYPED_OPTIONS,
    load: () => Promise.reject(new Error("not loaded")),
  }, ["go", "--take-from", "a", "--dry-run", "--every", "5", "--keep", "1d"]);
  assertEquals(parsed?.options, {
    source: "local",
    takeFrom: "a",
    dryRun: true,
    bundle: true,
    every: 5,
    keep: ["1d"],
  });
  assert(isOptionsOf(TYPED_OPTIONS, parsed!.options));
});

Deno.test("isOptionsOf refuses options its declarations do not parse to", () => {
  const base = { source: "local", bundle: false, keep: ["1d"] };
  assert(isOptionsOf(TYPED_OPTIONS, base));
  for (
    const [options, why] of [
      [{ ...base, other: 1 }, "a key no option has"],
      [{ bundle: false, keep: ["1d"] }, "an option with a default missing"],
      [{ source: "local", bundle: false }, "a mandatory option missing"],
      [{ ...base, bundle: undefined }, "a --no- switch not a boolean"],
      [{ ...base, dryRun: "yes" }, "a switch not true"],
      [{ ...base, takeFrom: 1 }, "a value without a parser not text"],
      [{ ...base, queueType: "stream" }, "a value not one of its choices"],
    ] as const
  ) assert(!isOptionsOf(TYPED_OPTIONS, options), why);
});

Deno.test("a declared command's and subcommand's action is given only what its options parse to", async () => {
  const given: unknown[] = [];
  const command = declaredCommand<string, typeof TYPED_OPTIONS>({
    name: "go",
    summary: "",
    options: TYPED_OPTIONS,
    load: () =>
      Promise.resolve({
        action: (_ctx: string, _args: string[], options: { source: string }) => {
          given.push(options.source);
          return Promise.resolve();
        },
      }),
  });
  const { action } = await command.load();
  await action!("ctx", [], { source: "s", bundle: true, keep: [] });
  assertEquals(given, ["s"]);
  const wrong = await action!("ctx", [], { source: 1, bundle: true, keep: [] }).catch((e) => e);
  assert(wrong instanceof TypeError, String(wrong));
  assertStringIncludes(wrong.message, `Cannot run "go"`);
  const group: CommandEntry<string> = declaredGroup({
    name: "g",
    summary: "",
    declared: [
      { name: "a", summary: "", options: [{ flags: "--json", description: "" }] },
      { name: "b", summary: "", options: TYPED_OPTIONS },
    ],
    load: () =>
      Promise.resolve({
        actions: {
          a: (_ctx: string, _args: string[], options: { json?: boolean }) => {
            given.push(options.json);
            return Promise.resolve();
          },
          b: (_ctx: string, _args: string[], options: { keep: string[] }) => {
            given.push(options.keep);
            return Promise.resolve();
          },
        },
      }),
  });
  assertEquals(group.subcommands, ["a", "b"]);
  const { actions } = await group.load();
  assertEquals(Object.keys(actions!), ["a", "b"]);
  await actions!.a!("ctx", [], { json: true });
  await actions!.b!("ctx", [], { source: "s", bundle: true, keep: ["1d"] });
  assertEquals(given, ["s", true, ["1d"]]);
  const misplaced = await actions!.a!("ctx", [], { keep: ["1d"] }).catch((e) => e);
  assert(misplaced instanceof TypeError, String(misplaced));
  assertStringIncludes(misplaced.message, `Cannot run "g a"`);
});

Deno.test("a table entry whose action takes options its declarations do not give is a type error", () => {
  // Type-checked, not run: each entry's module wants an option the declarations lack, or of
  // another type.
  const _entries = (): CommandEntry<string>[] => [
    declaredCommand({
      name: "go",
      summary: "",
      options: TYPED_OPTIONS,
      load: () =>
        // @ts-expect-error: `--format` is not declared.
        Promise.resolve({
          action: (_ctx: string, _args: string[], _options: { format: string }) =>
            Promise.resolve(),
        }),
    }),
    declaredCommand({
      name: "go",
      summary: "",
      options: TYPED_OPTIONS,
      load: () =>
        // @ts-expect-error: `--every` parses to a number.
        Promise.resolve({
          action: (_ctx: string, _args: string[], _options: { every?: string }) =>
            Promise.resolve(),
        }),
    }),
    declaredGroup({
      name: "g",
      summary: "",
      declared: [{ name: "a", summary: "", options: [] }, { name: "b", summary: "", options: [] }],
      load: () =>
        // @ts-expect-error: no action for `b`.
        Promise.resolve({
          actions: { a: (_ctx: string, _args: string[], _options: object) => Promise.resolve() },
        }),
    }),
  ];
  assert(typeof _entries === "function");
});
