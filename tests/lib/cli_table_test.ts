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
  dispatch,
  parseCommand,
  programHelp,
  type ProgramTable,
} from "../../lib/cli_table.ts";
import { hostTable } from "../../host/cli.ts";
import { CONTROL_TABLE } from "../../control/main.ts";
import { RECONCILE_TABLE } from "../../reconcile/main.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

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

/** The modules `entry` loads before it runs anything: its static imports, not the dynamic ones. */
async function loadedAtStart(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `${ROOT}${entry}`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; isDynamic?: boolean }[];
    }[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const d of bySpecifier.get(specifier)?.dependencies ?? []) {
      // A type-only import has no `code`; a dynamic one is loaded when it runs.
      if (d.code?.specifier !== undefined && !d.isDynamic) visit(d.code.specifier);
    }
  };
  visit(info.roots[0]!);
  return [...seen];
}

Deno.test("a program's help, --version and bare start load no npm package, node: module or command", async () => {
  for (const entry of ["host/debian.ts", "control/main.ts", "reconcile/main.ts"]) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 3, `${entry}: ${loaded.join(" ")}`);
    assertEquals(
      loaded.filter((s) => /^npm:|^node:|\/commands\/|\/systems\/(?!mod\.ts)/.test(s)),
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
    "systems/debian.ts",
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
