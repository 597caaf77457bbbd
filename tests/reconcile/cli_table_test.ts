/**
 * mesh-reconcile's commands declared as data (reconcile/options.ts, reconcile/main.ts's table):
 * a plain invocation is parsed without commander exactly as commander parses it, to the values
 * the commands were given before they were declared as data; misuse is left to commander; each
 * command's help, answered from the table, is commander's and the help the commander-defined
 * commands printed (tests/reconcile/help/, captured from them); `run`'s plain path loads neither
 * commander nor the `yaml` package nor any `node:` module.
 *
 * @module
 */

import { runTable } from "../../lib/cli.ts";
import {
  type CommandAction,
  type CommandEntry,
  commandHelp,
  dispatch,
  isOptionsOf,
  parseCommand,
  parseSubcommand,
  type ProgramTable,
  subcommandEntry,
} from "../../lib/cli_table.ts";
import { RECONCILE_TABLE } from "../../reconcile/main.ts";
import type { ReconcileContext } from "../../reconcile/commands/context.ts";
import { assert, assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { loadedAtStart } from "../support/module_graph.ts";

const TABLE: ProgramTable<ReconcileContext> = RECONCILE_TABLE;

/** A context that prints nothing. */
function quiet(): ReconcileContext {
  return { out: () => {}, err: () => {}, code: 0 };
}

/** Runs `args` through commander with `entry` alone defined, printing nothing: the exit code. */
function runQuietly(entry: CommandEntry<ReconcileContext>, args: string[]): Promise<number> {
  return runTable(TABLE, entry, args, {
    out: () => {},
    err: () => {},
    context: quiet(),
    code: () => 0,
    usageCode: 2,
    onError: () => 2,
  });
}

const DAY = 86_400_000;
/** What `run` was given for every option not named, before it was declared as data. */
const RUN_DEFAULTS = { caddyAdmin: "localhost:2019", boot: "systemd", certWarn: 14 * DAY };
const RUN = { ...RUN_DEFAULTS, timeout: 30_000 };

/**
 * Per command: plain invocations with what the action is given (the arguments and the options,
 * as the commander-defined commands received them), and misuse left to commander.
 */
const INVOCATIONS: Record<string, {
  plain: [string[], { args: string[]; options: Record<string, unknown> }][];
  misuse: string[][];
}> = {
  run: {
    plain: [
      [["run", "--registry", "r.yaml"], { args: [], options: { registry: "r.yaml", ...RUN } }],
      [["run", "--registry="], { args: [], options: { registry: "", ...RUN } }],
      [
        ["--verbose", "run", "--json", "--registry=r", "--caddy-admin", "none", "--verbose"],
        { args: [], options: { registry: "r", json: true, ...RUN, caddyAdmin: "none" } },
      ],
      [
        ["run", "--registry", "r", "--boot", "none", "--cert-warn", "36h", "--timeout", "2m"],
        {
          args: [],
          options: {
            registry: "r",
            ...RUN,
            boot: "none",
            certWarn: 36 * 3_600_000,
            timeout: 120_000,
          },
        },
      ],
      [
        ["run", "--registry", "r", "--cert-warn=3d", "--timeout=250ms", "--interval", "15m"],
        {
          args: [],
          options: { registry: "r", ...RUN, certWarn: 3 * DAY, timeout: 250, interval: 900 },
        },
      ],
      [
        [
          "run",
          "--registry",
          "r",
          "--stamp",
          "s",
          "--textfile",
          "t",
          "--result",
          "j",
          "--interval=90s",
        ],
        {
          args: [],
          options: { registry: "r", ...RUN, stamp: "s", textfile: "t", result: "j", interval: 90 },
        },
      ],
      [
        [
          "run",
          "--registry",
          "r",
          "--repo",
          "/c",
          "--behind-days",
          "3",
          "--state-dir",
          "/s",
          "--registry-in-checkout",
        ],
        {
          args: [],
          options: {
            registry: "r",
            ...RUN,
            repo: "/c",
            behindDays: "3",
            stateDir: "/s",
            registryInCheckout: true,
          },
        },
      ],
    ],
    misuse: [
      ["run"],
      ["run", "--json"],
      ["run", "--registy", "r"],
      ["run", "--registry"],
      ["run", "--registry", "--json"],
      ["run", "--registry", "r", "extra"],
      ["run", "--registry", "a", "--registry", "b"],
      ["run", "--registry", "r", "--boot", "sysv"],
      ["run", "--registry", "r", "--interval", "1.5s"],
      ["run", "--registry", "r", "--interval", "0s"],
      ["run", "--registry", "r", "--timeout", "0s"],
      ["run", "--registry", "r", "--cert-warn", "soon"],
      ["run", "--registry", "r", "--cert-warn", "3"],
      ["run", "--registry", "r", "--interval", "90"],
      ["run", "--registry", "r", "--json=1"],
      ["run", "--registry", "r", "--help"],
      ["run", "--registry", "r", "-h"],
      ["run", "--", "--registry", "r"],
      ["--json", "run", "--registry", "r"],
      ["help", "run"],
    ],
  },
  "check-registry": {
    plain: [
      [["check-registry", "r.yaml"], { args: ["r.yaml"], options: {} }],
      [["--verbose", "check-registry", "r.yaml"], { args: ["r.yaml"], options: {} }],
    ],
    misuse: [["check-registry"], ["check-registry", "a", "b"], ["check-registry", "r", "--json"]],
  },
  schema: {
    plain: [[["schema"], { args: [], options: {} }]],
    misuse: [["schema", "x"], ["schema", "--json"], ["schema", "-h"]],
  },
  init: {
    plain: [
      [["init"], { args: [], options: { accounts: "root", caddyAdmin: "localhost:2019" } }],
      [
        [
          "init",
          "--output",
          "/o",
          "--force",
          "--accounts=root,web",
          "--caddy-admin",
          "none",
          "--registry-in-checkout",
        ],
        {
          args: [],
          options: {
            output: "/o",
            force: true,
            accounts: "root,web",
            caddyAdmin: "none",
            registryInCheckout: true,
          },
        },
      ],
    ],
    misuse: [["init", "x"], ["init", "--output"], ["init", "--force=1"], ["init", "--json"]],
  },
  watch: {
    plain: [
      [["watch", "/s", "--max-age", "45m"], {
        args: ["/s"],
        options: { maxAge: 2_700_000, grace: 0, timeout: 10_000 },
      }],
      [
        ["watch", "--max-age=2h", "https://h/", "--grace", "10m", "--timeout", "5s", "--json"],
        {
          args: ["https://h/"],
          options: { maxAge: 7_200_000, grace: 600_000, timeout: 5000, json: true },
        },
      ],
      [
        [
          "watch",
          "/s",
          "--max-age",
          "1h",
          "--state",
          "/st",
          "--notify",
          "http://n/",
          "--stamp",
          "/w",
        ],
        {
          args: ["/s"],
          options: {
            maxAge: 3_600_000,
            grace: 0,
            timeout: 10_000,
            state: "/st",
            notify: "http://n/",
            stamp: "/w",
          },
        },
      ],
    ],
    misuse: [
      ["watch"],
      ["watch", "/s"],
      ["watch", "/s", "--max-age", "45"],
      ["watch", "/s", "--max-age", "0s"],
      ["watch", "/s", "--max-age", "1h", "--grace", "5"],
      ["watch", "/s", "--max-age", "1h", "--timeout", "0s"],
      ["watch", "a", "b", "--max-age", "1h"],
    ],
  },
};

Deno.test("reconcile's commands declared as data: which they are, each with its action", async () => {
  const declared = TABLE.commands.filter((c) => c.options !== undefined);
  assertEquals(declared.map((c) => c.name).sort(), Object.keys(INVOCATIONS).sort());
  for (const entry of declared) {
    const module = await entry.load();
    assert(module.action !== undefined, entry.name);
  }
  // Every other command is a group declared as data: no command is defined on commander itself.
  const groups = TABLE.commands.filter((c) => c.options === undefined);
  assertEquals(groups.map((c) => c.name).sort(), Object.keys(GROUP_INVOCATIONS).sort());
  for (const entry of groups) {
    const { actions } = await entry.load();
    assertEquals(Object.keys(actions ?? {}), entry.declared?.map((s) => s.name), entry.name);
  }
});

/**
 * Plain invocations of each group's subcommands, with what each was given when the groups were
 * defined on commander by hand (before they were declared as data): the same values now.
 */
const GROUP_INVOCATIONS: Record<string, [string[], string, { args: string[]; options: object }][]> =
  {
    stamp: [
      [["stamp", "serve", "--listen", "127.0.0.1:8080"], "serve", {
        args: [],
        options: { listen: "127.0.0.1:8080", stamp: "/var/lib/mesh/reconcile/stamp" },
      }],
      [
        [
          "stamp",
          "serve",
          "--listen=[::1]:1",
          "--stamp",
          "/s",
          "--cert",
          "/c",
          "--key",
          "/k",
          "--allow-plain-http",
        ],
        "serve",
        {
          args: [],
          options: { listen: "[::1]:1", stamp: "/s", cert: "/c", key: "/k", allowPlainHttp: true },
        },
      ],
    ],
    render: [
      [["render", "caddy", "--registry", "r"], "caddy", { args: [], options: { registry: "r" } }],
      [["render", "backup", "--registry", "r", "--json"], "backup", {
        args: [],
        options: { registry: "r", json: true },
      }],
      [["render", "backup", "--files-from", "--registry", "r"], "backup", {
        args: [],
        options: { registry: "r", filesFrom: true },
      }],
    ],
    port: [
      [["port", "next", "--registry", "r"], "next", {
        args: [],
        options: { registry: "r", range: "8000-8999" },
      }],
      [["port", "next", "--registry", "r", "--range", "1-2"], "next", {
        args: [],
        options: { registry: "r", range: "1-2" },
      }],
    ],
    batch: [
      [["batch", "enable", "job", "--timer", "t.timer", "--registry", "r"], "enable", {
        args: ["job"],
        options: { timer: "t.timer", registry: "r" },
      }],
      [
        [
          "batch",
          "enable",
          "job",
          "--timer",
          "t.timer",
          "--container",
          "c",
          "--user",
          "u",
          "--registry",
          "r",
          "--json",
          "--registry-in-checkout",
        ],
        "enable",
        {
          args: ["job"],
          options: {
            timer: "t.timer",
            container: "c",
            user: "u",
            registry: "r",
            json: true,
            registryInCheckout: true,
          },
        },
      ],
      [["batch", "disable", "job", "--registry", "r"], "disable", {
        args: ["job"],
        options: { registry: "r" },
      }],
    ],
  };

Deno.test("reconcile: a group's plain invocation is parsed as commander parses it, to what it was given", async () => {
  for (const group of TABLE.commands.filter((c) => c.declared !== undefined)) {
    let seen: { subcommand: string; args: string[]; options: Record<string, unknown> } | undefined;
    const recording =
      (subcommand: string): CommandAction<ReconcileContext> => (_c, args, options) => {
        seen = { subcommand, args, options };
        return Promise.resolve();
      };
    const entry: CommandEntry<ReconcileContext> = {
      ...group,
      load: () =>
        Promise.resolve({
          actions: Object.fromEntries(group.declared!.map((s) => [s.name, recording(s.name)])),
        }),
    };
    for (const [args, subcommand, expected] of GROUP_INVOCATIONS[group.name]!) {
      const want = { subcommand, ...expected };
      assertEquals(parseSubcommand(group, args), want, args.join(" "));
      seen = undefined;
      const code = await runQuietly(entry, args);
      assertEquals([code, seen], [0, want], `commander: ${args.join(" ")}`);
    }
    // Misuse is commander's: a required option missing, an unknown one.
    const first = group.declared![0]!;
    assertEquals(parseSubcommand(group, [group.name, first.name]), undefined, group.name);
    assertEquals(
      parseSubcommand(group, [group.name, first.name, "--nope"]),
      undefined,
      group.name,
    );
  }
});

Deno.test("reconcile: a subcommand's help is commander's and the one it printed when defined by hand", async () => {
  for (const group of TABLE.commands.filter((c) => c.declared !== undefined)) {
    for (const spec of group.declared!) {
      const before = await Deno.readTextFile(
        `${ROOT}tests/reconcile/help/${group.name}-${spec.name}.txt`,
      );
      const path = `${group.name} ${spec.name}`;
      assertEquals(commandHelp(TABLE, subcommandEntry(group, spec)), before, path);
      const commander = await commanderSays([group.name, spec.name, "--help"]);
      assertEquals([commander.code, commander.out], [0, before], path);
    }
  }
});

Deno.test("reconcile: a plain invocation is parsed as commander parses it, to what the commands were given", async () => {
  for (const command of TABLE.commands.filter((c) => c.options !== undefined)) {
    let seen: { args: string[]; options: Record<string, unknown> } | undefined;
    const recording: CommandAction<ReconcileContext> = (_ctx, args, options) => {
      seen = { args, options };
      return Promise.resolve();
    };
    const entry: CommandEntry<ReconcileContext> = {
      ...command,
      load: () => Promise.resolve({ action: recording }),
    };
    const { plain, misuse } = INVOCATIONS[command.name]!;
    for (const [args, expected] of plain) {
      const parsed = parseCommand(command, args);
      assertEquals(parsed, expected, args.join(" "));
      assert(isOptionsOf(command.options!, parsed!.options), args.join(" "));
      seen = undefined;
      const code = await runQuietly(entry, args);
      assertEquals(code, 0, args.join(" "));
      assertEquals(seen, expected, `commander: ${args.join(" ")}`);
    }
    for (const args of misuse) assertEquals(parseCommand(command, args), undefined, args.join(" "));
  }
});

/** What `args` prints through commander with every command of the table loaded. */
async function commanderSays(args: string[]) {
  let out = "";
  let err = "";
  const code = await runTable(TABLE, undefined, args, {
    out: (s) => out += s,
    err: (s) => err += s,
    context: quiet(),
    code: () => 0,
    usageCode: 2,
    onError: () => 2,
  });
  return { code, out, err };
}

Deno.test("reconcile: a declared command's help is commander's and the one it printed before, answered without loading it", async () => {
  for (const entry of TABLE.commands.filter((c) => c.options !== undefined)) {
    const before = await Deno.readTextFile(`${ROOT}tests/reconcile/help/${entry.name}.txt`);
    assertEquals(commandHelp(TABLE, entry), before, entry.name);
    for (const args of [[entry.name, "--help"], [entry.name, "-h"], ["help", entry.name]]) {
      const commander = await commanderSays(args);
      assertEquals([commander.code, commander.out], [0, before], args.join(" "));
      let out = "";
      const code = await dispatch(TABLE, args, {
        out: (s) => out += s,
        err: () => {},
        usageCode: 2,
        run: () => Promise.reject(new Error("nothing is loaded")),
      });
      assertEquals([code, out], [0, before], args.join(" "));
    }
  }
});

Deno.test("reconcile: misuse of a declared command is said by commander, as before", async () => {
  const cases: [string[], string][] = [
    [["run"], "error: required option '--registry <file>' not specified\n"],
    [["run", "--registy", "r"], "error: unknown option '--registy'\n(Did you mean --registry?)\n"],
    [
      ["run", "--registry", "r", "x"],
      "error: too many arguments for 'run'. Expected 0 arguments but got 1: x.\n",
    ],
    [["watch", "/s"], "error: required option '--max-age <duration>' not specified\n"],
    [["check-registry"], "error: missing required argument 'file'\n"],
  ];
  for (const [args, said] of cases) {
    const r = await commanderSays(args);
    assertEquals([r.code, r.err], [2, said], args.join(" "));
  }
});

Deno.test("reconcile run, check-registry and their runner load no commander, no yaml package, no node: module", async () => {
  for (
    const entry of [
      "reconcile/commands/runner.ts",
      "reconcile/commands/run.ts",
      // What run loads once its input is accepted, while podman is asked (observe/start.ts).
      "reconcile/run.ts",
      "reconcile/report.ts",
      "reconcile/commands/check_registry.ts",
      "reconcile/options.ts",
    ]
  ) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.length > 2, `${entry}: ${loaded.join(" ")}`);
    assertEquals(loaded.filter((s) => /commander|npm:yaml|^node:/.test(s)), [], entry);
  }
});
