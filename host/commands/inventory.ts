/**
 * `mesh-host inventory`: what this machine can do (service manager, package manager, container
 * runtime, firewall).
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { formatInventory, takeInventory } from "../inventory.ts";
import { detectPlatform, formatPlatform } from "../platform.ts";
import type { HostContext } from "./context.ts";

/** Defines `inventory` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  parent.command(entry.name)
    .description(entry.summary)
    .option("--json", "print as JSON")
    .action(async (opts: { json?: boolean }) => {
      // What the appliers use (one detection per process), then what each tool says.
      const [platform, inventory] = await Promise.all([detectPlatform(), takeInventory()]);
      ctx.out(
        opts.json
          ? JSON.stringify({ platform, ...inventory }, null, 2) + "\n"
          : `this host uses:\n${formatPlatform(platform)}\n${formatInventory(inventory)}`,
      );
    });
}
