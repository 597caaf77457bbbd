/**
 * `mesh-host inventory`: what this machine can do (service manager, package manager, container
 * runtime, firewall).
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { formatInventory, takeInventory } from "../inventory.ts";
import { detectPlatform, formatPlatform } from "../platform.ts";
import type { HostContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** What `inventory`'s options parse to (host/options.ts INVENTORY_OPTIONS). */
interface InventoryOptions {
  json?: boolean;
}

/**
 * Runs `inventory` (its options are declared in the command table, host/cli.ts): a plain invocation
 * runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, InventoryOptions> = async (ctx, _args, opts) => {
  // What the appliers use (one detection per process), then what each tool says.
  const [platform, inventory] = await Promise.all([detectPlatform(), takeInventory()]);
  ctx.out(
    opts.json
      ? jsonText({ platform, ...inventory }, 2) + "\n"
      : `this host uses:\n${formatPlatform(platform)}\n${formatInventory(inventory)}`,
  );
};
