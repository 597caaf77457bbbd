/**
 * `mesh-host reconcile`: apply the carried bundle and every local declaration, each as its own
 * source, once or at an interval.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { applySources } from "../apply.ts";
import { loadBundle } from "../bundle.ts";
import { replacedSince } from "../identity.ts";
import { joinedText, readJoined, recordJoined } from "../joined.ts";
import { bundleSource, keptLinkSource, readLocalDeclarations } from "../sources.ts";
import { Store } from "../store.ts";
import { finish, type HostContext, migration, Refused } from "./context.ts";

/** What `reconcile`'s options parse to. */
interface ReconcileOptions {
  json?: boolean;
  dryRun?: boolean;
  stateDir: string;
  every?: number;
  declarations: string;
  bundle: boolean;
}

/**
 * Runs `reconcile` (its options are declared in the command table, host/cli.ts): a plain
 * invocation runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, ReconcileOptions> = async (ctx, _args, opts) => {
  const { build, err } = ctx;
  if (opts.dryRun && opts.every !== undefined) {
    throw new Refused("--dry-run reconciles once: it cannot be given --every");
  }
  let said = false;
  for (;;) {
    // A node that joined a mesh (host/joined.ts) never applies the carried bundle: its own
    // sources are its local declarations and the link's kept declaration. `--no-bundle` on a
    // node that did not take its bundle records that it joined (not in a dry run, which writes
    // nothing). Read every time: a file removed by the operator is seen at the next reconcile.
    const joined = !opts.bundle && !opts.dryRun
      ? await recordJoined(opts.stateDir, "reconcile --no-bundle")
      : await readJoined(opts.stateDir);
    if (joined !== undefined && opts.bundle && !said) {
      err(`mesh-host: ${joinedText(joined, opts.stateDir)}\n`);
      said = true;
    }
    const withBundle = opts.bundle && joined === undefined;
    // Read afresh every time: a local declaration added, changed or removed is seen at the
    // next reconcile.
    const { input: bundle, absent } = withBundle
      ? await bundleSource(build.bundle, build.system.name)
      : { input: undefined, absent: undefined };
    const link = joined !== undefined ? await keptLinkSource(opts.stateDir) : undefined;
    const locals = [...(link ? [link] : []), ...await readLocalDeclarations(opts.declarations)];
    const known = await Store.load(opts.stateDir, {
      readOnly: true,
      migration: () => Promise.resolve({ claims: [] }),
    })
      .then((s) => (s.close(), s.sources().size), () => 0);
    if (withBundle && bundle === undefined && locals.length === 0 && known === 0) {
      // Nothing to keep converged at all: said, as before sources existed.
      await loadBundle(build.bundle, build.system.name);
    }
    if (bundle === undefined && absent !== undefined) {
      err(`mesh-host: ${absent}; reconciling the local declarations only\n`);
    }
    const inputs = [...(bundle ? [bundle] : []), ...locals];
    const results = await applySources(inputs, {
      system: build.system,
      stateDir: opts.stateDir,
      departedFrom: opts.declarations,
      migration: migration(ctx, opts.stateDir, opts.declarations),
      dryRun: opts.dryRun,
    });
    if (!withBundle && locals.length === 0 && results.length === 0) {
      // Nothing to keep this time; a declaration put in the directory later is seen then.
      // (A source whose file left the directory is applied empty: its result says so.)
      err(
        `mesh-host: nothing to reconcile: no declaration in "${opts.declarations}", and the ` +
          `bundle is left alone (${
            joined !== undefined ? "this node joined a mesh" : "--no-bundle"
          })\n`,
      );
    }
    const files = new Map(inputs.flatMap((i) => i.file !== undefined ? [[i.name, i.file]] : []));
    await finish(ctx, results, { json: opts.json, stateDir: opts.stateDir, lines: true, files });
    if (opts.every === undefined) return;
    await new Promise((r) => setTimeout(r, opts.every));
    const why = replacedSince(ctx.start);
    if (why !== undefined) {
      err(`mesh-host: ${why}; exiting to stand aside for the new binary\n`);
      ctx.code = 0;
      return;
    }
  }
};
