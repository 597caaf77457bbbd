/**
 * `mesh-reconcile run`: observe the machine, compare with the registry, report.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { assertWritablePath, messageOf, writeFileAtomic } from "../../lib/atomic.ts";
import { loadRegistry } from "../registry.ts";
import { lastCleanFrom, stampLine, toJson, toResultFile, toText, toTextfile } from "../report.ts";
import { BOOT_VIEWS, type BootView, NO_PROXY, reconcile } from "../run.ts";
import { repoCheckFromFlags } from "../repo_check.ts";
import { assertRegistryOutsideCode, IN_CHECKOUT_FLAG } from "../registry_place.ts";
import { saveRepoSeen } from "../repo_seen.ts";
import {
  assertDistinct,
  durationOption,
  IN_CHECKOUT_HELP,
  type ReconcileContext,
  UsageError,
} from "./context.ts";

/** Defines `run` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option("--stamp <path>", "file refreshed (atomically) only after a clean run")
    .option("--textfile <path>", "node_exporter textfile written (atomically) after each run")
    .option(
      "--result <path>",
      "JSON result written (atomically) after each run, for the node's link (needs --interval)",
    )
    .addOption(
      new Option(
        "--interval <duration>",
        "how often this run is repeated by its timer or mesh-every (e.g. 15m); goes in --result",
      ).argParser((v) => {
        const ms = durationOption("--interval")(v);
        if (!(ms >= 1000 && ms <= 366 * 86_400_000) || ms % 1000 !== 0) {
          throw new UsageError(
            `--interval: whole seconds between 1s and 366d, not "${v}"`,
          );
        }
        return ms / 1000;
      }),
    )
    .option(
      "--caddy-admin <addr>",
      `Caddy admin API address, or "${NO_PROXY}" when this machine runs no proxy`,
      "localhost:2019",
    )
    .addOption(
      new Option(
        "--boot <view>",
        "what a reboot would produce: read from systemd, or none (not checked, e.g. under OpenRC)",
      ).default("systemd").argParser((v): BootView => {
        if (!(BOOT_VIEWS as readonly string[]).includes(v)) {
          throw new UsageError(`--boot: one of ${BOOT_VIEWS.join(", ")}, not "${v}"`);
        }
        return v as BootView;
      }),
    )
    .addOption(
      new Option(
        "--cert-warn <duration>",
        "a certificate expiring within this is a finding (e.g. 14d, 36h)",
      )
        .default(14 * 86_400_000, "14d").argParser(durationOption("--cert-warn", "d")),
    )
    .addOption(
      new Option("--timeout <duration>", "time limit for each command and request")
        .default(30_000, "30s").argParser((v) => {
          const ms = durationOption("--timeout")(v);
          if (!(ms >= 1 && ms <= 2_147_483_647)) {
            throw new UsageError(`--timeout: must be between 1ms and 24d, not "${v}"`);
          }
          return ms;
        }),
    )
    .option("--repo <dir>", "also check the deployment repository (the checkout's top)")
    .option(
      "--behind-days <days>",
      "with --repo: commits waiting longer on the upstream are a finding (default 7)",
    )
    .option(
      "--state-dir <dir>",
      "with --repo: keep first sightings of upstream commits here (default: the registry's)",
    )
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(async (opts: {
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
    }) => {
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
      const result = await reconcile(registry, {
        registryPath: opts.registry,
        caddyAdmin: opts.caddyAdmin,
        bootView: opts.boot,
        certWarnMs: opts.certWarn,
        timeoutMs: opts.timeout,
        ...(repo ? { repo: repo.options } : {}),
      });
      if (repo && result.repoSeen) await saveRepoSeen(repo.seenPath, result.repoSeen);
      if (opts.textfile !== undefined) {
        const previous = await Deno.readTextFile(opts.textfile).catch(() => undefined);
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
      ctx.out(opts.json ? JSON.stringify(toJson(result), null, 2) + "\n" : toText(result));
      ctx.code = result.exitCode;
    });
}
