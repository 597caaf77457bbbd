/**
 * `mesh-reconcile watch`: look once at a stamp and say up, new, late, down or unreachable.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { assertDistinct, type ReconcileContext } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** What `watch`'s options parse to (reconcile/options.ts WATCH_OPTIONS). */
interface WatchOptions {
  maxAge: number;
  grace: number;
  state?: string;
  notify?: string;
  stamp?: string;
  timeout: number;
  json?: boolean;
  ca?: string;
  allowPlainHttp?: boolean;
}

/**
 * Runs `watch` (its argument and options are declared in the command table, reconcile/main.ts):
 * a plain invocation runs without commander (lib/cli_table.ts parseCommand).
 */
export const action: CommandAction<ReconcileContext, WatchOptions> = async (
  ctx,
  [source],
  opts,
) => {
  const { watch, watchJson, watchText } = await import("../watch.ts");
  const { plainAllowed } = await import("../../lib/wire_trust.ts");
  const sourceFile = /^[a-z][a-z0-9+.-]*:\/\//i.test(source!) ? undefined : source;
  await assertDistinct({
    SOURCE: sourceFile,
    "--state": opts.state,
    "--stamp": opts.stamp,
    "--ca": opts.ca,
  });
  const result = await watch(source!, {
    maxAgeMs: opts.maxAge,
    graceMs: opts.grace,
    timeoutMs: opts.timeout,
    ...(opts.state !== undefined ? { statePath: opts.state } : {}),
    ...(opts.notify !== undefined ? { notifyUrl: opts.notify } : {}),
    ...(opts.stamp !== undefined ? { stampPath: opts.stamp } : {}),
    ...(opts.ca !== undefined ? { caFile: opts.ca } : {}),
    allowPlainHttp: plainAllowed(opts.allowPlainHttp),
  });
  ctx.out(opts.json ? jsonText(watchJson(result), 2) + "\n" : watchText(result));
  if (result.notify?.error !== undefined) {
    ctx.err(
      `mesh-reconcile: ${result.notify.error}; ${result.notify.owed.length} owed, retried on the next run\n`,
    );
  }
  ctx.code = result.exitCode;
};
