/**
 * `mesh-reconcile run`: observe the machine, compare with the registry, report.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { assertWritablePath, messageOf, writeFileAtomic } from "../../lib/atomic.ts";
import { readRegularTextFile } from "../../lib/regular_file.ts";
import { loadRegistry } from "../registry_load.ts";
import type { BootView } from "../options.ts";
import { startObserving } from "../observe/start.ts";
import { repoCheckFromFlags } from "../repo_check.ts";
import { assertRegistryOutsideCode } from "../registry_place.ts";
import { saveRepoSeen } from "../repo_seen.ts";
import { assertDistinct, type ReconcileContext, UsageError } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/** What `run`'s options parse to (reconcile/options.ts RUN_OPTIONS). */
interface RunOptions {
  registry: string;
  json?: boolean;
  stamp?: string;
  textfile?: string;
  result?: string;
  interval?: number;
  caddyAdmin: string;
  boot: BootView;
  certWarn: number;
  timeout: number;
  repo?: string;
  behindDays?: string;
  stateDir?: string;
  registryInCheckout?: boolean;
}

/**
 * Runs `run` (its options are declared in the command table, reconcile/main.ts): a plain
 * invocation runs without commander (lib/cli_table.ts parseCommand). Once the input is accepted,
 * the containers are asked about (reconcile/observe/start.ts) while the modules that observe the
 * rest, compare and render (reconcile/run.ts, reconcile/report.ts) load: nothing is asked before
 * bad input is refused.
 */
export const action: CommandAction<ReconcileContext, RunOptions> = async (ctx, _args, opts) => {
  const registry = await loadRegistry(opts.registry);
  if (!opts.registryInCheckout) {
    await assertRegistryOutsideCode(opts.registry, { repo: opts.repo });
  }
  let repo;
  try {
    repo = await repoCheckFromFlags(opts, opts.registry);
  } catch (error) {
    throw new UsageError(messageOf(error));
  }
  // Refuse unusable output paths before any work, so bad input writes nothing.
  if (opts.stamp !== undefined) await assertWritablePath(opts.stamp);
  if (opts.textfile !== undefined) await assertWritablePath(opts.textfile);
  if (opts.interval !== undefined && opts.result === undefined) {
    throw new UsageError("--interval is only used with --result (it goes in the result file)");
  }
  if (opts.result !== undefined) {
    if (opts.interval === undefined) {
      throw new UsageError(
        "--result needs --interval (how often this run is repeated), so that whoever reads the result can tell a late one",
      );
    }
    await assertWritablePath(opts.result);
  }
  await assertDistinct({
    "--registry": opts.registry,
    "--stamp": opts.stamp,
    "--textfile": opts.textfile,
    "--result": opts.result,
  });
  // The input is accepted: the first subprocess starts now, and the rest loads meanwhile.
  const started = startObserving(registry.accounts, { timeoutMs: opts.timeout });
  const [{ reconcile }, { lastCleanFrom, stampLine, toJson, toResultFile, toText, toTextfile }] =
    await Promise.all([import("../run.ts"), import("../report.ts")]);
  const result = await reconcile(registry, {
    started,
    registryPath: opts.registry,
    caddyAdmin: opts.caddyAdmin,
    bootView: opts.boot,
    certWarnMs: opts.certWarn,
    timeoutMs: opts.timeout,
    ...(repo ? { repo: repo.options } : {}),
  });
  if (repo && result.repoSeen) await saveRepoSeen(repo.seenPath, result.repoSeen);
  if (opts.textfile !== undefined) {
    // This program's own previous textfile (a few lines): anything else is written over.
    const previous = await readRegularTextFile(opts.textfile, { maxBytes: 1 << 20 })
      .catch(() => undefined);
    await writeFileAtomic(opts.textfile, toTextfile(result, lastCleanFrom(previous)));
  }
  if (opts.result !== undefined) {
    // After every run, clean or not: the link carries the verdict, whatever it is.
    await writeFileAtomic(
      opts.result,
      JSON.stringify(toResultFile(result, opts.interval!)) + "\n",
    );
  }
  if (result.clean && opts.stamp !== undefined) {
    await writeFileAtomic(opts.stamp, stampLine(result));
  }
  ctx.out(opts.json ? jsonText(toJson(result), 2) + "\n" : toText(result));
  ctx.code = result.exitCode;
};
