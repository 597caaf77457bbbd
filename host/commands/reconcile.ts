/**
 * `mesh-host reconcile`: apply the carried bundle and every local declaration, each as its own
 * source, once or at an interval.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { optionOf } from "../../lib/cli.ts";
import { messageOf } from "../../lib/atomic.ts";
import { parseDuration } from "../../lib/duration.ts";
import { applySources } from "../apply.ts";
import { loadBundle } from "../bundle.ts";
import { replacedSince } from "../identity.ts";
import { bundleSource, readLocalDeclarations } from "../sources.ts";
import { Store } from "../store.ts";
import {
  DECLARATIONS_DIR_OPTION,
  finish,
  type HostContext,
  migration,
  Refused,
  STATE_DIR_OPTION,
} from "./context.ts";

/** Defines `reconcile` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  const { build, err } = ctx;
  parent.command(entry.name)
    .description(entry.summary)
    .option("--json", "print each result as JSON (one object per line and source)")
    .option(
      "--dry-run",
      "change nothing; say what every source would change (exit 4 when something would): a drift check",
    )
    .addOption(optionOf(STATE_DIR_OPTION))
    .addOption(optionOf(DECLARATIONS_DIR_OPTION))
    .option(
      "--no-bundle",
      "leave the carried bundle alone (neither applied nor removed): a node that is not its mesh's first node, kept by local declarations only",
    )
    .addOption(
      new Option("--every <duration>", "reconcile again at this interval (e.g. 15m)").argParser(
        (v) => {
          try {
            return parseDuration(v, { unit: "s" });
          } catch (error) {
            throw new Refused(`--every: ${messageOf(error)}`);
          }
        },
      ),
    )
    .action(
      async (
        opts: {
          json?: boolean;
          dryRun?: boolean;
          stateDir: string;
          every?: number;
          declarations: string;
          bundle: boolean;
        },
      ) => {
        if (opts.dryRun && opts.every !== undefined) {
          throw new Refused("--dry-run reconciles once: it cannot be given --every");
        }
        for (;;) {
          // Read afresh every time: a local declaration added, changed or removed is seen at the
          // next reconcile.
          const { input: bundle, absent } = opts.bundle
            ? await bundleSource(build.bundle, build.system.name)
            : { input: undefined, absent: undefined };
          const locals = await readLocalDeclarations(opts.declarations);
          const known = await Store.load(opts.stateDir, {
            readOnly: true,
            migration: () => Promise.resolve({ claims: [] }),
          })
            .then((s) => (s.close(), s.sources().size), () => 0);
          if (opts.bundle && bundle === undefined && locals.length === 0 && known === 0) {
            // Nothing to keep converged at all: said, as before sources existed.
            await loadBundle(build.bundle, build.system.name);
          }
          if (bundle === undefined && absent !== undefined) {
            err(`mesh-host: ${absent}; reconciling the local declarations only\n`);
          }
          const results = await applySources([...(bundle ? [bundle] : []), ...locals], {
            system: build.system,
            stateDir: opts.stateDir,
            departedFrom: opts.declarations,
            migration: migration(ctx, opts.stateDir, opts.declarations),
            dryRun: opts.dryRun,
          });
          if (!opts.bundle && locals.length === 0 && results.length === 0) {
            // Nothing to keep this time; a declaration put in the directory later is seen then.
            // (A source whose file left the directory is applied empty: its result says so.)
            err(
              `mesh-host: nothing to reconcile: no declaration in "${opts.declarations}", and the ` +
                `bundle is left alone (--no-bundle)\n`,
            );
          }
          await finish(ctx, results, { json: opts.json, stateDir: opts.stateDir, lines: true });
          if (opts.every === undefined) return;
          await new Promise((r) => setTimeout(r, opts.every));
          const why = replacedSince(ctx.start);
          if (why !== undefined) {
            err(`mesh-host: ${why}; exiting to stand aside for the new binary\n`);
            ctx.code = 0;
            return;
          }
        }
      },
    );
}
