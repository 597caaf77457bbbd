/**
 * `mesh-host bundle`: show and validate the carried bundle, the same path `reconcile` applies,
 * as a dry run: nothing changed, exit 4 when applying it would change something (as every dry
 * run), 0 when it would change nothing.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { applyDeclaration } from "../apply.ts";
import { loadBundle } from "../bundle.ts";
import { joinedText, readJoined } from "../joined.ts";
import { applyText } from "../render.ts";
import { DEFAULT_DECLARATIONS_DIR } from "../sources.ts";
import { VERSION } from "../version.ts";
import { exitCodeOf, type HostContext, migration } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** What `bundle`'s options parse to (host/options.ts BUNDLE_OPTIONS). */
interface BundleOptions {
  json?: boolean;
  stateDir: string;
}

/**
 * Runs `bundle` (its options are declared in the command table, host/cli.ts): a plain invocation
 * runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, BundleOptions> = async (ctx, _args, opts) => {
  const bundle = await loadBundle(ctx.build.bundle, ctx.build.system.name);
  const joined = await readJoined(opts.stateDir);
  if (joined !== undefined) {
    // Never applied on a node that joined a mesh: there is no plan to show, and that is said.
    const why = joinedText(joined, opts.stateDir);
    ctx.out(
      opts.json
        ? jsonText(
          {
            system: bundle.system,
            says: bundle.says,
            declaration: bundle.declaration,
            joined,
            why,
          },
          2,
        ) + "\n"
        : `bundle substrate-${bundle.system} (${bundle.declaration.resources.length} resources, ${bundle.digest})\n${bundle.says}\n\nNot shown: ${why}.\n`,
    );
    ctx.code = 0;
    return;
  }
  const result = await applyDeclaration(bundle.declaration, {
    system: ctx.build.system,
    stateDir: opts.stateDir,
    digest: bundle.digest,
    dryRun: true,
    version: VERSION,
    source: "bundle",
    origin: "bundle",
    migration: migration(ctx, opts.stateDir, DEFAULT_DECLARATIONS_DIR),
  });
  if (opts.json) {
    ctx.out(
      jsonText(
        { system: bundle.system, says: bundle.says, declaration: bundle.declaration, result },
        2,
      ) + "\n",
    );
  } else {
    ctx.out(
      `bundle substrate-${bundle.system} (${bundle.declaration.resources.length} resources, ${bundle.digest})\n${bundle.says}\n\n${
        applyText(result)
      }`,
    );
  }
  // A dry run like any other: 4 when applying the bundle would change something.
  ctx.code = exitCodeOf([result]);
};
