/**
 * `mesh-reconcile port`: `next`: the port table.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { loadRegistry } from "../registry_load.ts";
import { type ReconcileContext, UsageError } from "./context.ts";

/** Defines `port` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .command("next")
    .description("print the lowest port in the range no entry claims and nothing listens on")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--range <A-B>", "ports to search, inclusive", "8000-8999")
    .addHelpText(
      "after",
      "\nIn use: a listening TCP socket (IPv4 or IPv6) or a port a container of the registry's" +
        "\naccounts publishes.",
    )
    .action(async (opts: { registry: string; range: string }) => {
      const { nextPort, parsePortRange } = await import("../ports.ts");
      let range;
      try {
        range = parsePortRange(opts.range);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      const found = await nextPort(await loadRegistry(opts.registry), { range });
      const failed = found.sources.filter((s) => s.state === "failed");
      const span = `${range.first}-${range.last}`;
      if (failed.length > 0) {
        throw new UsageError(
          `Cannot tell which ports of ${span} are free: could not observe ${
            failed.map((s) => `${s.account ? `${s.source}@${s.account}` : s.source} (${s.detail})`)
              .join(", ")
          }`,
        );
      }
      if (found.port === undefined) {
        throw new UsageError(
          `No free port in ${span}: ${found.claimed.length} claimed by entries, ${found.used.length} in use`,
        );
      }
      ctx.out(`${found.port}\n`);
    });
}
