/**
 * `mesh-reconcile batch`: `enable`, `disable`: switch a timer-driven job on or off and (un)register
 * it.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { assertRegistryOutsideCode, IN_CHECKOUT_FLAG } from "../registry_place.ts";
import { IN_CHECKOUT_HELP, type ReconcileContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** Defines `batch` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  const batch = parent.command(entry.name)
    .description(entry.summary);
  const batchDone = async (
    result: Promise<import("../batch.ts").BatchResult>,
    json: boolean | undefined,
  ) => {
    const r = await result;
    if (json) ctx.out(jsonText(r, 2) + "\n");
    else {
      for (const step of r.steps) ctx.err(`ran: ${step}\n`);
      (r.outcome === "enabled" || r.outcome === "disabled" ? ctx.out : ctx.err)(
        `${r.outcome}: ${r.message}\n`,
      );
    }
    ctx.code = r.outcome === "refused" ? 2 : r.outcome === "failed" ? 1 : 0;
  };
  batch.command("enable")
    .description("systemctl enable --now the timer, then add a batch entry for it")
    .argument("<name>", "the entry's name")
    .requiredOption("--timer <unit>", "the timer unit, e.g. publish.timer")
    .option("--container <name>", "the container the job starts while it runs")
    .option("--user <account>", "the account whose user manager runs it (default: root, system)")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(async (name: string, opts: {
      timer: string;
      container?: string;
      user?: string;
      registry: string;
      json?: boolean;
      registryInCheckout?: boolean;
    }) => {
      if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
      const { batchEnable } = await import("../batch.ts");
      await batchDone(batchEnable(name, opts), opts.json);
    });
  batch.command("disable")
    .description("systemctl disable --now the entry's timer, then remove the entry")
    .argument("<name>", "the entry's name")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(async (name: string, opts: {
      registry: string;
      json?: boolean;
      registryInCheckout?: boolean;
    }) => {
      if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
      const { batchDisable } = await import("../batch.ts");
      await batchDone(batchDisable(name, opts), opts.json);
    });
}
