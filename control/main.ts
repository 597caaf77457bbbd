/**
 * `mesh-control`: the control plane's command line. This file is its command table: each
 * command (or command group) is implemented in its own module under control/commands/, loaded
 * only when that command runs; the program's help and `--version` load none of them
 * (lib/cli_table.ts). Every command and subcommand is declared as data (control/options.ts):
 * its help is answered, and a plain invocation parsed, without loading commander. The command line is the only layer that prints. The database and broker
 * clients are loaded only by the commands that use them.
 *
 * Exit codes: 0 done; 1 `status` found nodes not doing what they were told; 2 refused (bad input,
 * a database or broker that does not answer or refuses, nothing half-written).
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
import type { ControlContext } from "./commands/context.ts";
import {
  BOARD_OPTIONS,
  BROKER_COMMANDS,
  BUILDER_COMMANDS,
  CA_COMMANDS,
  INGEST_OPTIONS,
  KEY_COMMANDS,
  MIGRATE_OPTIONS,
  MODULE_COMMANDS,
  NODE_COMMANDS,
  PRUNE_OPTIONS,
  PUSH_ARGUMENTS,
  PUSH_OPTIONS,
  STATUS_OPTIONS,
} from "./options.ts";

/** The connections every command takes, after the program's help. */
const CONNECTIONS_HELP = `
Connections (each option also read from the environment; the option wins):
  --database URL       MESH_DATABASE_URL       postgres://user@host:5432/inventory
  --broker URL         MESH_BROKER_URL         amqp://user:pass@host:5672/vhost (repeat it,
                                               or separate URLs with commas, for a cluster)
  --broker-api URL     MESH_BROKER_API_URL     http://user:pass@host:15672 (management API)
  --database-read URL  MESH_DATABASE_READ_URL  a hot standby status and board read from
A connection that is not given is refused, never defaulted.`;

/** What each exit code means, by command: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: 0, meaning: "done" },
  {
    code: 1,
    meaning: "some nodes are not doing what they were told (refused, failed, unknown claim, " +
      "silent, outstanding, never spoke; an episodic node away, or a node not pushed, is no alarm)",
    commands: ["status"],
  },
  { code: 1, meaning: "the build failed", commands: ["module build"] },
  {
    code: 1,
    meaning: "--check: the certificate is due (said why); nothing written",
    commands: ["ca renew"],
  },
  {
    code: 1,
    meaning: "--behind: some behind nodes could not be pushed (each named, the rest were pushed)",
    commands: ["push"],
  },
  {
    code: 2,
    meaning: "refused: bad input, or a database or broker that does not answer or refuses " +
      "(nothing is half-written: database work runs in transactions)",
  },
];

/**
 * `mesh-control`'s commands: each a name, a summary and the module implementing it, its
 * arguments and options (or a group's subcommands) declared as data (control/options.ts); each
 * action takes what its options parse to (lib/cli_table.ts declaredCommand, declaredGroup).
 */
export const CONTROL_COMMANDS: readonly CommandEntry<ControlContext>[] = [
  declaredCommand({
    name: "migrate",
    usage: "[options]",
    summary: "create the inventory database if missing and apply pending migrations",
    arguments: [],
    options: MIGRATE_OPTIONS,
    load: () => import("./commands/migrate.ts"),
  }),
  declaredGroup({
    name: "broker",
    summary: "broker topology",
    declared: BROKER_COMMANDS,
    load: () => import("./commands/broker.ts"),
  }),
  declaredGroup({
    name: "node",
    summary: "nodes and their modules",
    declared: NODE_COMMANDS,
    load: () => import("./commands/node.ts"),
  }),
  declaredGroup({
    name: "key",
    summary: "the control plane's signing key (declarations are signed with it)",
    declared: KEY_COMMANDS,
    load: () => import("./commands/key.ts"),
  }),
  declaredGroup({
    name: "module",
    summary: "the module catalogue",
    declared: MODULE_COMMANDS,
    load: () => import("./commands/module.ts"),
  }),
  declaredGroup({
    name: "builder",
    summary: "build machines' accounts",
    declared: BUILDER_COMMANDS,
    load: () => import("./commands/builder.ts"),
  }),
  declaredGroup({
    name: "ca",
    summary: "the mesh's CA and the server certificates it issues",
    declared: CA_COMMANDS,
    load: () => import("./commands/ca.ts"),
  }),
  declaredCommand({
    name: "push",
    usage: "[options] [node]",
    summary:
      "render a node's declaration from its modules and publish it; or, with --behind, to every node whose last report is not a clean apply of its current declaration",
    arguments: PUSH_ARGUMENTS,
    options: PUSH_OPTIONS,
    load: () => import("./commands/push.ts"),
  }),
  declaredCommand({
    name: "status",
    usage: "[options]",
    summary:
      "the nodes not doing what they were told (refused, failed, unknown claim, silent, outstanding, never spoke) or whose drift is an alarm (drift, unobservable, unreadable, stale); and episodic nodes away and nodes not pushed (no alarm)",
    arguments: [],
    options: STATUS_OPTIONS,
    load: () => import("./commands/status.ts"),
  }),
  declaredCommand({
    name: "board",
    usage: "[options]",
    summary:
      "every node: its kind, what it was told, what it last said, how much applied, when last heard, and its drift verdict",
    arguments: [],
    options: BOARD_OPTIONS,
    load: () => import("./commands/board.ts"),
  }),
  declaredCommand({
    name: "prune",
    usage: "[options]",
    summary:
      "delete reports received longer ago than --keep, except each node's latest (bounds the inventory's growth)",
    arguments: [],
    options: PRUNE_OPTIONS,
    load: () => import("./commands/prune.ts"),
  }),
  declaredCommand({
    name: "ingest",
    usage: "[options]",
    summary: "record reports from the broker in the inventory (runs until stopped)",
    arguments: [],
    options: INGEST_OPTIONS,
    load: () => import("./commands/ingest.ts"),
  }),
];

/** `mesh-control`'s command table. */
export const CONTROL_TABLE: ProgramTable<ControlContext> = {
  name: "mesh-control",
  description: "mesh control plane: inventory, push, status, board, broker accounts",
  version: VERSION,
  versionHelp: VERSION_FLAG_HELP,
  helpAfter: CONNECTIONS_HELP,
  commands: CONTROL_COMMANDS,
  exitCodes: EXIT_CODES,
};

/**
 * Runs `mesh-control` with `args` and returns its exit code. Only the command `args` name is
 * loaded (control/commands/).
 */
export async function controlMain(args: string[]): Promise<number> {
  return await dispatch(CONTROL_TABLE, args, {
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    usageCode: 2,
    run: async (entry) => {
      const { runControl } = await import("./commands/runner.ts");
      return await runControl(CONTROL_TABLE, args, entry);
    },
  });
}

if (import.meta.main) {
  Deno.exit(await controlMain(Deno.args));
}
