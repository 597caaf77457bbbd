/**
 * `mesh-reconcile init`: write a starting registry from the live machine.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { assertWritablePath, writeFileAtomic } from "../../lib/atomic.ts";
import { adoptRegistry, observeContainerListeners } from "../adopt.ts";
import { observe } from "../run.ts";
import { assertRegistryOutsideCode } from "../registry_place.ts";
import { type ReconcileContext, UsageError } from "./context.ts";

/** What `init`'s options parse to (reconcile/options.ts INIT_OPTIONS). */
interface InitOptions {
  output?: string;
  force?: boolean;
  accounts: string;
  caddyAdmin: string;
  registryInCheckout?: boolean;
}

/**
 * Runs `init` (its options are declared in the command table, reconcile/main.ts): a plain
 * invocation runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<ReconcileContext, InitOptions> = async (ctx, _args, opts) => {
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
  const text = adoptRegistry(observation, {
    accounts,
    hostname: Deno.hostname(),
    containerListeners: await observeContainerListeners(observation),
  });
  if (opts.output !== undefined) {
    await writeFileAtomic(opts.output, text);
    ctx.err(`wrote ${opts.output}\n`);
  } else ctx.out(text);
};
