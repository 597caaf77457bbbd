/**
 * `mesh-reconcile`: the estate drift detector's command line. This file is its command table:
 * each command (or command group) is implemented in its own module under reconcile/commands/,
 * loaded only when that command runs; the program's help and `--version` load none of them
 * (lib/cli_table.ts). The command line is the only layer that prints.
 *
 * Exit codes: 0 clean (the stamp is refreshed), 1 drift found, 2 something could not be
 * observed or the input is bad (nothing written).
 *
 * @module
 */

import {
  type CommandEntry,
  declaredCommand,
  declaredGroup,
  dispatch,
  type ExitCode,
  type ProgramTable,
} from "../lib/cli_table.ts";
import { writeAll } from "../lib/write.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";
import type { ReconcileContext } from "./commands/context.ts";
import {
  BATCH_COMMANDS,
  CHECK_REGISTRY_ARGUMENTS,
  INIT_OPTIONS,
  PORT_COMMANDS,
  RENDER_COMMANDS,
  RUN_OPTIONS,
  STAMP_COMMANDS,
  WATCH_ARGUMENTS,
  WATCH_HELP_AFTER,
  WATCH_OPTIONS,
} from "./options.ts";

/** Exit code: clean. */
export const EXIT_CLEAN = 0;
/** Exit code: drift found. */
export const EXIT_DRIFT = 1;
/** Exit code: could not observe, or bad input. */
export const EXIT_UNOBSERVABLE = 2;

/** What each exit code means, by command: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: EXIT_CLEAN, meaning: "clean (the stamp refreshed)", commands: ["run"] },
  { code: 0, meaning: "the stamp is up (fresh)", commands: ["watch"] },
  { code: 0, meaning: "stopped by SIGTERM or SIGINT", commands: ["stamp serve"] },
  {
    code: 0,
    meaning: "done (printed, written, switched)",
    commands: ["check-registry", "schema", "init", "render caddy", "render backup", "port next"]
      .concat(["batch enable", "batch disable"]),
  },
  { code: EXIT_DRIFT, meaning: "drift found", commands: ["run"] },
  {
    code: 1,
    meaning: "failed (the message says what was undone and what is left)",
    commands: ["batch enable", "batch disable"],
  },
  {
    code: EXIT_UNOBSERVABLE,
    meaning:
      "refused or could not observe: bad input, a bad registry, a path that cannot be written, " +
      "no free port, a server that cannot start, a state file that cannot be read or written " +
      "(nothing written)",
  },
  { code: 3, meaning: "new: never stamped", commands: ["watch"] },
  { code: 4, meaning: "late: past --max-age, within --grace", commands: ["watch"] },
  { code: 5, meaning: "down: past --grace", commands: ["watch"] },
  {
    code: 6,
    meaning: "unreachable: cannot read, a bad answer, or garbage (said which)",
    commands: ["watch"],
  },
];

/**
 * `mesh-reconcile`'s commands: each a name, a summary and the module implementing it. A command
 * declared as data (its arguments and options, reconcile/options.ts) has its help answered and a
 * plain invocation parsed here, without commander or its module's imports (lib/cli_table.ts);
 * its action takes what its options parse to (lib/cli_table.ts declaredCommand).
 */
export const RECONCILE_COMMANDS: readonly CommandEntry<ReconcileContext>[] = [
  declaredCommand({
    name: "run",
    usage: "[options]",
    summary:
      "observe the machine, compare with the registry, report; refresh the stamp only when clean",
    arguments: [],
    options: RUN_OPTIONS,
    load: () => import("./commands/run.ts"),
  }),
  declaredCommand({
    name: "check-registry",
    usage: "<file>",
    summary: "validate a registry file; every problem is listed with its line and column",
    arguments: CHECK_REGISTRY_ARGUMENTS,
    options: [],
    load: () => import("./commands/check_registry.ts"),
  }),
  declaredCommand({
    name: "schema",
    summary: "print the registry's JSON Schema (for editors)",
    arguments: [],
    options: [],
    load: () => import("./commands/schema.ts"),
  }),
  declaredCommand({
    name: "init",
    usage: "[options]",
    summary: "write a starting registry from the live machine (each entry marked note: adopted)",
    arguments: [],
    options: INIT_OPTIONS,
    load: () => import("./commands/init.ts"),
  }),
  declaredGroup({
    name: "stamp",
    summary: "the dead-man stamp that a clean run refreshes",
    declared: STAMP_COMMANDS,
    load: () => import("./commands/stamp.ts"),
  }),
  declaredCommand({
    name: "watch",
    usage: "[options] <source>",
    summary:
      "look once at a stamp (a file, or a stamp serve URL) and say up, new, late, down or unreachable",
    arguments: WATCH_ARGUMENTS,
    options: WATCH_OPTIONS,
    helpAfter: WATCH_HELP_AFTER,
    load: () => import("./commands/watch.ts"),
  }),
  declaredGroup({
    name: "render",
    summary: "what the registry's declarations produce: the edge config, the backup list",
    declared: RENDER_COMMANDS,
    load: () => import("./commands/render.ts"),
  }),
  declaredGroup({
    name: "port",
    summary: "the port table: the registry is it",
    declared: PORT_COMMANDS,
    load: () => import("./commands/port.ts"),
  }),
  declaredGroup({
    name: "batch",
    summary: "switch a timer-driven job on or off and (un)register it in the same step",
    declared: BATCH_COMMANDS,
    load: () => import("./commands/batch.ts"),
  }),
];

/** `mesh-reconcile`'s command table. */
export const RECONCILE_TABLE: ProgramTable<ReconcileContext> = {
  name: "mesh-reconcile",
  description: "Compare the registry of what should run on this machine with what does, both ways.",
  version: VERSION,
  versionHelp: VERSION_FLAG_HELP,
  commands: RECONCILE_COMMANDS,
  exitCodes: EXIT_CODES,
};

/**
 * Runs the command line with `args` and returns the exit code. Only the command `args` name is
 * loaded (reconcile/commands/).
 */
export async function main(args: string[]): Promise<number> {
  return await dispatch(RECONCILE_TABLE, args, {
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    usageCode: EXIT_UNOBSERVABLE,
    run: async (entry) => {
      const { runReconcile } = await import("./commands/runner.ts");
      return await runReconcile(RECONCILE_TABLE, args, entry);
    },
  });
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
