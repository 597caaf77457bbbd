/**
 * `mesh-reconcile init`: write a starting registry from the live machine.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { assertWritablePath, writeFileAtomic } from "../../lib/atomic.ts";
import { adoptRegistry } from "../adopt.ts";
import { NO_PROXY, observe } from "../run.ts";
import { assertRegistryOutsideCode, IN_CHECKOUT_FLAG } from "../registry_place.ts";
import { IN_CHECKOUT_HELP, type ReconcileContext, UsageError } from "./context.ts";

/** Defines `init` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .option(
      "--output <file>",
      "write here (refused if it exists, unless --force) instead of printing",
    )
    .option("--force", "replace an existing --output file")
    .option(
      "--accounts <names>",
      "comma-separated accounts whose containers are asked about",
      "root",
    )
    .option("--caddy-admin <addr>", `Caddy admin API address, or "${NO_PROXY}"`, "localhost:2019")
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(
      async (opts: {
        output?: string;
        force?: boolean;
        accounts: string;
        caddyAdmin: string;
        registryInCheckout?: boolean;
      }) => {
        const accounts = opts.accounts.split(",").map((s) => s.trim()).filter(Boolean);
        if (accounts.length === 0) throw new UsageError("--accounts: name at least one account");
        if (opts.output !== undefined) {
          if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.output);
          await assertWritablePath(opts.output);
          if (!opts.force && await Deno.stat(opts.output).then(() => true, () => false)) {
            throw new UsageError(
              `Cannot write registry "${opts.output}": it exists (use --force to replace it)`,
            );
          }
        }
        const observation = await observe(accounts, { caddyAdmin: opts.caddyAdmin });
        const text = adoptRegistry(observation, { accounts, hostname: Deno.hostname() });
        if (opts.output !== undefined) {
          await writeFileAtomic(opts.output, text);
          ctx.err(`wrote ${opts.output}\n`);
        } else ctx.out(text);
      },
    );
}
