/**
 * `mesh-reconcile render`: `caddy`, `backup`: what the registry's declarations produce.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { loadRegistry } from "../registry_load.ts";
import { type ReconcileContext, UsageError } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** Defines `render` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  const render = parent.command(entry.name)
    .description(entry.summary);
  render.command("caddy")
    .description("print a Caddyfile with a site block for every declared web address")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .addHelpText(
      "after",
      "\nA redirect renders redir to its target, a port reverse_proxy to 127.0.0.1:<first port>," +
        "\na site's state directory file_server from it.",
    )
    .action(async (opts: { registry: string }) => {
      const { renderCaddyfile } = await import("../render.ts");
      const registry = await loadRegistry(opts.registry);
      ctx.out(renderCaddyfile(registry, opts.registry));
    });
  render.command("backup")
    .description("list the state directories and databases the registry declares, to back up")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the list as JSON")
    .option(
      "--files-from",
      "print only the state directories, one a line, for restic backup --files-from",
    )
    .action(async (opts: { registry: string; json?: boolean; filesFrom?: boolean }) => {
      const { backupFiles, backupText, renderBackup } = await import("../render.ts");
      if (opts.json && opts.filesFrom) {
        throw new UsageError("Cannot render backup: --json and --files-from are two forms");
      }
      const plan = renderBackup(await loadRegistry(opts.registry), opts.registry);
      ctx.out(
        opts.json
          ? jsonText(plan, 2) + "\n"
          : opts.filesFrom
          ? backupFiles(plan)
          : backupText(plan),
      );
    });
}
