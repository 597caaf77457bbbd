/**
 * `mesh-host`: the node agent's command line, shared by every system's entry point. This file
 * is its command table: each command is implemented in its own module under host/commands/,
 * loaded only when that command runs; the program's help and `--version` load none of them
 * (lib/cli_table.ts). The command line is the only layer that prints.
 *
 * @module
 */

import {
  type CommandEntry,
  declaredCommand,
  dispatch,
  type ExitCode,
  type ProgramTable,
} from "../lib/cli_table.ts";
import { writeAll } from "../lib/write.ts";
import { VERSION_FLAG_HELP } from "../lib/version.ts";
import type { HostBuild } from "./system.ts";
import { EXIT_APPLIED, EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_PENDING, EXIT_REFUSED } from "./exit.ts";
import type { HostContext } from "./commands/context.ts";
import { VERSION } from "./version.ts";
import {
  APPLY_OPTIONS,
  BUNDLE_OPTIONS,
  INVENTORY_OPTIONS,
  LINK_OPTIONS,
  OWNED_OPTIONS,
  RECONCILE_OPTIONS,
} from "./options.ts";

export { DEFAULT_STATE_DIR } from "./options.ts";

const STORE_COMMANDS = ["apply", "owned", "inventory", "bundle", "reconcile", "link"];

/**
 * What each exit code means, by command: the one table help is rendered from. For several
 * sources in one run, the worst: 1 over 2 over 0.
 */
export const EXIT_CODES: readonly ExitCode[] = [
  {
    code: EXIT_APPLIED,
    meaning: "applied, known-good recorded (several sources: every one applied)",
    commands: ["apply", "reconcile"],
  },
  {
    code: 0,
    meaning: "valid, and applying it would change nothing (a dry run, as always)",
    commands: ["bundle"],
  },
  { code: 0, meaning: "printed", commands: ["owned", "schema", "inventory"] },
  { code: 0, meaning: "stopped (SIGTERM, SIGINT, or a new binary installed)", commands: ["link"] },
  {
    code: EXIT_FAILED,
    meaning: 'failed: accepted and partly applied ("applied N of M" says how much)',
    commands: ["apply", "reconcile"],
  },
  {
    code: EXIT_REFUSED,
    meaning: "refused: nothing applied (invalid input, a shape this system cannot apply, a " +
      "subject another source holds, the wrong machine, no bundle)",
  },
  {
    code: EXIT_CANNOT_RUN,
    meaning: "the host cannot work: its store exists and cannot be read, or cannot be written",
    commands: STORE_COMMANDS,
  },
  {
    code: EXIT_PENDING,
    meaning: "--dry-run (bundle: always a dry run): something would change (nothing was " +
      "changed); a dry run exits 0 only when nothing would change",
    commands: ["apply", "reconcile", "bundle"],
  },
];

/**
 * `mesh-host`'s commands: each a name, a summary and the module implementing it, whose action
 * takes what the options declared here parse to (lib/cli_table.ts declaredCommand).
 */
export const HOST_COMMANDS: readonly CommandEntry<HostContext>[] = [
  declaredCommand({
    name: "apply",
    usage: "[options] <file>",
    summary: "converge this machine to a declaration file as one source (trusted: actions " +
      "allowed); what leaves the file is removed, within that source's footprint only",
    arguments: [{ name: "<file>", description: "the declaration (JSON, version 1)" }],
    options: APPLY_OPTIONS,
    load: () => import("./commands/apply.ts"),
  }),
  declaredCommand({
    name: "owned",
    usage: "[options]",
    summary:
      "list the footprint: what this host applied, for which source, and whether it created it",
    arguments: [],
    options: OWNED_OPTIONS,
    load: () => import("./commands/owned.ts"),
  }),
  declaredCommand({
    name: "schema",
    summary: "print the declaration's JSON Schema",
    arguments: [],
    options: [],
    load: () => import("./commands/schema.ts"),
  }),
  declaredCommand({
    name: "inventory",
    usage: "[options]",
    summary:
      "what this machine can do: service manager, package manager, container runtime, firewall",
    arguments: [],
    options: INVENTORY_OPTIONS,
    load: () => import("./commands/inventory.ts"),
  }),
  declaredCommand({
    name: "bundle",
    usage: "[options]",
    summary: "show and validate the carried bundle: the same path reconcile applies, as a dry " +
      "run (nothing changed; exit 4 when it would change something)",
    arguments: [],
    options: BUNDLE_OPTIONS,
    load: () => import("./commands/bundle.ts"),
  }),
  declaredCommand({
    name: "reconcile",
    usage: "[options]",
    summary: "apply the carried bundle and every local declaration, each as its own source, and " +
      "remove the footprint of a local declaration whose file was removed; with --every, again " +
      "at that interval until the binary is replaced",
    arguments: [],
    options: RECONCILE_OPTIONS,
    load: () => import("./commands/reconcile.ts"),
  }),
  declaredCommand({
    name: "link",
    usage: "[options]",
    summary: "the link to the control plane: apply declarations from the node's queue, report " +
      "each result, and reconcile the kept declaration at an interval even while the broker is " +
      "away",
    arguments: [],
    options: LINK_OPTIONS,
    load: () => import("./commands/link.ts"),
  }),
];

/** The command table of the host built for `system`. */
export function hostTable(system: string): ProgramTable<HostContext> {
  return {
    name: `mesh-host-${system}`,
    description: `mesh node agent for ${system}`,
    version: VERSION,
    versionHelp: VERSION_FLAG_HELP,
    commands: HOST_COMMANDS,
    exitCodes: EXIT_CODES,
  };
}

/**
 * Runs the host's command line and returns its exit code. Only the command `args` name is
 * loaded (host/commands/).
 */
export async function hostMain(args: string[], build: HostBuild): Promise<number> {
  // Captured at start, before anything is loaded: a host notices its binary being replaced.
  const { executableIdentity } = await import("./identity.ts");
  const start = executableIdentity();
  const table = hostTable(build.system.name);
  return await dispatch(table, args, {
    out: (s) => writeAll(Deno.stdout, s),
    err: (s) => writeAll(Deno.stderr, s),
    usageCode: EXIT_REFUSED,
    run: async (entry) => {
      const { runHost } = await import("./commands/runner.ts");
      return await runHost(table, args, build, entry, start);
    },
  });
}
