/**
 * `mesh-reconcile watch`: look once at a stamp and say up, new, late, down or unreachable.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { assertDistinct, durationOption, type ReconcileContext, UsageError } from "./context.ts";

/** Defines `watch` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  const stampAge = (flag: string, least: number) => (value: string) => {
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) {
      throw new UsageError(`${flag}: name a unit (e.g. 45m, 2h), not "${value}"`);
    }
    const ms = durationOption(flag)(value);
    if (!(ms >= least && ms <= 2_147_483_647_000)) {
      throw new UsageError(`${flag}: must be at least ${least}ms, not "${value}"`);
    }
    return ms;
  };
  parent.command(entry.name)
    .description(entry.summary)
    .argument("<source>", "a stamp file, or the http(s) URL of a `stamp serve`")
    .addOption(
      new Option("--max-age <duration>", "a stamp older than this is late (e.g. 45m)")
        .makeOptionMandatory().argParser(stampAge("--max-age", 1)),
    )
    .addOption(
      new Option("--grace <duration>", "late for this long past max-age, then down")
        .default(0, "0s: no late, past max-age is down").argParser(stampAge("--grace", 0)),
    )
    .option("--state <file>", "keep the last state here (JSON, atomic); needed for --notify")
    .option("--notify <url>", "POST JSON here once on each transition (and on recovery)")
    .option(
      "--stamp <path>",
      "this watcher's own stamp, refreshed after each completed run (it can be watched too)",
    )
    .addOption(
      new Option("--timeout <duration>", "time limit for the request and each notification")
        .default(10_000, "10s").argParser((v) => {
          const ms = durationOption("--timeout")(v);
          if (!(ms >= 1 && ms <= 2_147_483_647)) {
            throw new UsageError(`--timeout: must be between 1ms and 24d, not "${v}"`);
          }
          return ms;
        }),
    )
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      "\nA file's age is measured by this machine's clock; a URL's age is the server's.",
    )
    .action(async (source: string, opts: {
      maxAge: number;
      grace: number;
      state?: string;
      notify?: string;
      stamp?: string;
      timeout: number;
      json?: boolean;
    }) => {
      const { watch, watchJson, watchText } = await import("../watch.ts");
      const sourceFile = /^[a-z][a-z0-9+.-]*:\/\//i.test(source) ? undefined : source;
      await assertDistinct({ SOURCE: sourceFile, "--state": opts.state, "--stamp": opts.stamp });
      const result = await watch(source, {
        maxAgeMs: opts.maxAge,
        graceMs: opts.grace,
        timeoutMs: opts.timeout,
        ...(opts.state !== undefined ? { statePath: opts.state } : {}),
        ...(opts.notify !== undefined ? { notifyUrl: opts.notify } : {}),
        ...(opts.stamp !== undefined ? { stampPath: opts.stamp } : {}),
      });
      ctx.out(opts.json ? JSON.stringify(watchJson(result), null, 2) + "\n" : watchText(result));
      if (result.notify?.error !== undefined) {
        ctx.err(
          `mesh-reconcile: ${result.notify.error}; ${result.notify.owed.length} owed, retried on the next run\n`,
        );
      }
      ctx.code = result.exitCode;
    });
}
