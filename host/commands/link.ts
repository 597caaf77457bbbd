/**
 * `mesh-host link`: the link to the control plane, running until stopped.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { MAX_INTERVAL_MS, nodeNameProblem } from "../../lib/broker.ts";
import { brokerUrls, collectBrokerUrls } from "../../lib/broker_urls.ts";
import { optionOf, untilSignalled } from "../../lib/cli.ts";
import { DEFAULT_RESULT_PATH } from "../../lib/drift.ts";
import { parseDuration } from "../../lib/duration.ts";
import { printable } from "../../lib/printable.ts";
import { replacedSince } from "../identity.ts";
import { runLink } from "../link.ts";
import { applyText } from "../render.ts";
import { bundleSource, readLocalDeclarations } from "../sources.ts";
import { VERSION } from "../version.ts";
import {
  DECLARATIONS_DIR_OPTION,
  type HostContext,
  migration,
  Refused,
  STATE_DIR_OPTION,
} from "./context.ts";

/** Defines `link` on `parent`. */
export function define(parent: Command, entry: CommandEntry<HostContext>, ctx: HostContext): void {
  const { build, out, err } = ctx;
  parent.command(entry.name)
    .description(entry.summary)
    .addOption(
      new Option(
        "--broker <url>",
        "the node's broker URL, with its own credential; repeat it (or separate URLs with commas) for each member of a cluster",
      ).env("MESH_BROKER_URL").argParser(collectBrokerUrls),
    )
    .option("--node <name>", "the node's name (default: the broker URL's account)")
    .option("--json", "print each report as JSON")
    .addOption(optionOf(STATE_DIR_OPTION))
    .addOption(optionOf(DECLARATIONS_DIR_OPTION))
    .addOption(
      new Option(
        "--every <duration>",
        "reconcile the kept declaration, the bundle and the local declarations at this interval (>= 1s)",
      )
        .default(15 * 60 * 1000, "15m")
        .argParser((v) => {
          let ms: number;
          try {
            ms = parseDuration(v, { unit: "s" });
          } catch (error) {
            throw new Refused(`--every: ${messageOf(error)}`);
          }
          if (ms < 1000) throw new Refused(`--every: at least 1s, not "${v}"`);
          // Every report carries it, and the control plane judges silence against it.
          if (ms > MAX_INTERVAL_MS) throw new Refused(`--every: at most 7d, not "${v}"`);
          return ms;
        }),
    )
    .option(
      "--reconcile-result <file>",
      `mesh-reconcile's result file, summarised into each report; "none" when this node runs no mesh-reconcile`,
      DEFAULT_RESULT_PATH,
    )
    .action(
      async (
        opts: {
          broker?: string[];
          node?: string;
          json?: boolean;
          stateDir: string;
          every: number;
          reconcileResult: string;
          declarations: string;
        },
      ) => {
        if (!opts.broker || opts.broker.length === 0) {
          throw new Refused("No broker given: pass --broker URL or set MESH_BROKER_URL");
        }
        let brokerUrl: string[];
        try {
          brokerUrl = brokerUrls(opts.broker);
        } catch (error) {
          throw new Refused(`--broker: ${messageOf(error)}`);
        }
        // Every member carries the node's own account: the first names it.
        const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
        const node = opts.node ?? account;
        const bad = nodeNameProblem(node);
        if (bad !== undefined) throw new Refused(`Cannot link: ${bad}`);
        await untilSignalled(async (signal) => {
          const how = await runLink({
            system: build.system,
            broker: brokerUrl,
            node,
            stateDir: opts.stateDir,
            version: VERSION,
            every: opts.every,
            retry: 2000,
            ...(opts.reconcileResult === "none" ? {} : { reconcileResult: opts.reconcileResult }),
            signal,
            replaced: () => replacedSince(ctx.start),
            others: async () => {
              const { input } = await bundleSource(build.bundle, build.system.name);
              return [
                ...(input ? [input] : []),
                ...await readLocalDeclarations(opts.declarations),
              ];
            },
            declarationsDir: opts.declarations,
            migration: migration(ctx, opts.stateDir, opts.declarations),
            // Said on stderr: stdout is the link's reports (one per line with --json).
            onOther: (result, trigger) =>
              err(
                `mesh-host link: ${trigger} ${
                  opts.json ? JSON.stringify(result) + "\n" : applyText(result)
                }`,
              ),
            onNews: (line) => err(`mesh-host link: ${line}\n`),
            onApplied: (report) =>
              out(
                opts.json
                  ? JSON.stringify(report) + "\n"
                  : `${report.at} ${report.trigger} source link generation ${report.generation}: ${report.outcome} ${report.applied} of ${report.total}${
                    report.problems[0]
                      ? `: ${printable(report.problems[0].message.split("\n")[0]!)}`
                      : ""
                  }${report.drift ? `; drift ${report.drift.status}` : ""}\n`,
              ),
          });
          if (how.reason === "replaced") {
            err(`mesh-host: ${how.detail}; exiting to stand aside for the new binary\n`);
          }
          ctx.code = 0;
        });
      },
    );
}
