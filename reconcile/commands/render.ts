/**
 * `mesh-reconcile render`: `caddy`, `backup`: what the registry's declarations produce.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { RENDER_COMMANDS } from "../options.ts";
import { loadRegistry } from "../registry_load.ts";
import { type ReconcileContext, UsageError } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/**
 * The actions of `render`'s subcommands, by name (declared in reconcile/options.ts), each given
 * what its options there parse to.
 */
export const actions: GroupActions<ReconcileContext, typeof RENDER_COMMANDS> = {
  caddy: async (ctx, _args, opts) => {
    const { renderCaddyfile } = await import("../render.ts");
    const registry = await loadRegistry(opts.registry);
    ctx.out(renderCaddyfile(registry, opts.registry));
  },
  backup: async (ctx, _args, opts) => {
    const { backupFiles, backupText, renderBackup } = await import("../render.ts");
    if (opts.json && opts.filesFrom) {
      throw new UsageError("Cannot render backup: --json and --files-from are two forms");
    }
    const plan = renderBackup(await loadRegistry(opts.registry), opts.registry);
    ctx.out(
      opts.json ? jsonText(plan, 2) + "\n" : opts.filesFrom ? backupFiles(plan) : backupText(plan),
    );
  },
};
