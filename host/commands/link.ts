/**
 * `mesh-host link`: the link to the control plane, running until stopped.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { nodeNameProblem } from "../../lib/broker_names.ts";
import { brokerOption } from "../../lib/broker_urls.ts";
import { untilSignalled } from "../../lib/wait.ts";
import { jsonText, printable } from "../../lib/printable.ts";
import { replacedSince } from "../identity.ts";
import { runLink } from "../link.ts";
import { applyText } from "../render.ts";
import { bundleSource, readLocalDeclarations } from "../sources.ts";
import { VERSION } from "../version.ts";
import { type HostContext, migration, Refused } from "./context.ts";

/** What `link`'s options parse to. */
interface LinkOptions {
  broker?: string[];
  node?: string;
  controlKey: string;
  json?: boolean;
  stateDir: string;
  every: number;
  reconcileResult: string;
  declarations: string;
}

/**
 * Runs `link` (its options are declared in the command table, host/cli.ts): a plain invocation
 * runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<HostContext, LinkOptions> = async (ctx, _args, opts) => {
  const { build, out, err } = ctx;
  let brokerUrl: string[];
  try {
    brokerUrl = brokerOption(opts.broker);
  } catch (error) {
    throw new Refused(messageOf(error));
  }
  // Every member carries the node's own account: the first names it.
  const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
  const node = opts.node ?? account;
  const bad = nodeNameProblem(node);
  if (bad !== undefined) throw new Refused(`Cannot link: ${bad}`);
  // No key, no link: a node that cannot verify a declaration applies none (exit 2, naming the
  // file). Local sources (`apply`, `reconcile`) need no key: only the link's are signed.
  const { readControlKey, KeyFileError } = await import("../../lib/signing.ts");
  let key;
  try {
    key = await readControlKey(opts.controlKey);
  } catch (error) {
    if (error instanceof KeyFileError) throw new Refused(`Cannot link: ${error.message}`);
    throw error;
  }
  await untilSignalled(async (signal) => {
    const how = await runLink({
      system: build.system,
      broker: brokerUrl,
      node,
      controlKey: { path: opts.controlKey, key },
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
          `mesh-host link: ${trigger} ${opts.json ? jsonText(result) + "\n" : applyText(result)}`,
        ),
      onNews: (line) => err(`mesh-host link: ${line}\n`),
      onApplied: (report) =>
        out(
          opts.json
            ? jsonText(report) + "\n"
            : `${report.at} ${report.trigger} source link generation ${report.generation}: ${report.outcome} ${report.applied} of ${report.total}${
              report.problems[0] ? `: ${printable(report.problems[0].message.split("\n")[0]!)}` : ""
            }${report.drift ? `; drift ${report.drift.status}` : ""}\n`,
        ),
    });
    if (how.reason === "replaced") {
      err(`mesh-host: ${how.detail}; exiting to stand aside for the new binary\n`);
    }
    ctx.code = 0;
  }, {
    onLate: () =>
      err("mesh-host link: stopped without waiting for what was in hand (past the grace)\n"),
  });
};
