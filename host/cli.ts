/**
 * `mesh-host`: the node agent's command line, shared by every system's entry point. The only
 * layer that prints.
 *
 * @module
 */

import { Command, Option } from "commander";
import { collectBrokerUrls } from "../lib/broker_urls.ts";
import { runProgram, untilSignalled } from "../lib/cli.ts";
import { printable } from "../lib/printable.ts";
import { messageOf, readRegularFileLimited, writeAll } from "../lib/atomic.ts";
import { parseDuration } from "../lib/duration.ts";
import { MAX_INTERVAL_MS } from "../lib/broker.ts";
import { applyBytes, applyDeclaration, type ApplyResult, recordKnownGood } from "./apply.ts";
import { BundleError, EmptyBundleError, loadBundle, NoBundleError } from "./bundle.ts";
import { DeclarationError, declarationJsonSchema, MAX_DECLARATION_BYTES } from "./declaration.ts";
import { executableIdentity, replacedSince } from "./identity.ts";
import { applyText, ownedText } from "./render.ts";
import { Store, StoreError } from "./store.ts";
import { VERSION } from "./version.ts";
import { DEFAULT_RESULT_PATH } from "../lib/drift.ts";
import { confirmSystem, type System, WrongSystemError } from "../systems/mod.ts";

/** Exit code: applied. */
export const EXIT_APPLIED = 0;
/** Exit code: accepted and partly applied (failed). */
export const EXIT_FAILED = 1;
/** Exit code: refused (invalid input, a shape this system cannot apply, the wrong machine, no bundle). */
export const EXIT_REFUSED = 2;
/** Exit code: the host cannot work (its store cannot be read or written). */
export const EXIT_CANNOT_RUN = 3;

/** The default state directory. */
export const DEFAULT_STATE_DIR = "/var/lib/mesh/host";

const EXIT_HELP = `
Exit codes:
  0  applied (and, for apply and reconcile, known-good recorded)
  1  failed: accepted and partly applied ("applied N of M" says how much)
  2  refused: nothing applied (invalid input, a shape this system cannot apply, the wrong
     machine, no bundle)
  3  the host cannot work: its store exists and cannot be read, or cannot be written`;

/** What a host entry point passes in. */
export interface HostBuild {
  /** The system this host was built for. */
  system: System;
  /** The embedded bundle's text, when this host carries one. */
  bundle?: string;
  /** Where /etc/os-release is read (tests only point this elsewhere). */
  osRelease?: string;
}

class Refused extends Error {}

/**
 * Runs the host's command line and returns its exit code.
 */
export async function hostMain(args: string[], build: HostBuild): Promise<number> {
  const out = (s: string) => writeAll(Deno.stdout, s);
  const err = (s: string) => writeAll(Deno.stderr, s);
  let code = 0;
  const start = executableIdentity();
  const program = new Command()
    .name(`mesh-host-${build.system.name}`)
    .description(`mesh node agent for ${build.system.name}`)
    .addHelpText("after", EXIT_HELP)
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .hook("preAction", async () => {
      await confirmSystem(build.system, { osRelease: build.osRelease });
    });
  const stateDir = () =>
    new Option("--state-dir <dir>", "the state directory (an absolute path)").default(
      DEFAULT_STATE_DIR,
    )
      .argParser((dir: string) => {
        // An empty or relative state directory would put the footprint wherever the host
        // happened to be started (a checkout, say): refused.
        if (!dir.startsWith("/")) {
          throw new Refused(`--state-dir must be an absolute path, not "${dir}"`);
        }
        return dir.replace(/\/+$/, "") || "/";
      });

  const finish = async (result: ApplyResult, json: boolean | undefined, dir: string) => {
    if (result.outcome === "applied" && !result.dryRun) await recordKnownGood(dir, VERSION);
    out(json ? JSON.stringify(result, null, 2) + "\n" : applyText(result));
    code = result.outcome === "applied"
      ? EXIT_APPLIED
      : result.outcome === "failed"
      ? EXIT_FAILED
      : EXIT_REFUSED;
  };

  program.command("apply")
    .description("converge this machine to a declaration file (trusted: actions allowed)")
    .argument("<file>", "the declaration (JSON, version 1)")
    .option("--dry-run", "change nothing; show what would change")
    .option("--json", "print the result as JSON")
    .addOption(stateDir())
    .action(async (file: string, opts: { dryRun?: boolean; json?: boolean; stateDir: string }) => {
      let bytes: Uint8Array;
      try {
        bytes = await readRegularFileLimited(file, MAX_DECLARATION_BYTES);
      } catch (error) {
        throw new Refused(`Cannot read declaration "${file}": ${messageOf(error)}`);
      }
      const result = await applyBytes(bytes, {
        system: build.system,
        stateDir: opts.stateDir,
        dryRun: opts.dryRun,
        version: VERSION,
        trusted: true,
      });
      await finish(result, opts.json, opts.stateDir);
    });

  program.command("owned")
    .description("list the footprint: what this host applied, and whether it created it")
    .option("--json", "print as JSON")
    .addOption(stateDir())
    .action(async (opts: { json?: boolean; stateDir: string }) => {
      const store = await Store.load(opts.stateDir, { readOnly: true });
      store.close();
      out(
        opts.json
          ? JSON.stringify(store.entries(), null, 2) + "\n"
          : ownedText(store.entries(), store.path),
      );
    });

  program.command("schema")
    .description("print the declaration's JSON Schema")
    .action(() => out(JSON.stringify(declarationJsonSchema(), null, 2) + "\n"));

  program.command("inventory")
    .description(
      "what this machine can do: service manager, package manager, container runtime, firewall",
    )
    .option("--json", "print as JSON")
    .action(async (opts: { json?: boolean }) => {
      const { takeInventory, formatInventory } = await import("./inventory.ts");
      const inventory = await takeInventory();
      out(opts.json ? JSON.stringify(inventory, null, 2) + "\n" : formatInventory(inventory));
    });

  program.command("bundle")
    .description(
      "show and validate the carried bundle: the same path reconcile applies, with nothing changed",
    )
    .option("--json", "print as JSON")
    .addOption(stateDir())
    .action(async (opts: { json?: boolean; stateDir: string }) => {
      const bundle = await loadBundle(build.bundle, build.system.name);
      const result = await applyDeclaration(bundle.declaration, {
        system: build.system,
        stateDir: opts.stateDir,
        digest: bundle.digest,
        dryRun: true,
        version: VERSION,
      });
      if (opts.json) {
        out(
          JSON.stringify(
            { system: bundle.system, says: bundle.says, declaration: bundle.declaration, result },
            null,
            2,
          ) + "\n",
        );
      } else {
        out(
          `bundle substrate-${bundle.system} (${bundle.declaration.resources.length} resources, ${bundle.digest})\n${bundle.says}\n\n${
            applyText(result)
          }`,
        );
      }
      code = result.outcome === "refused" ? EXIT_REFUSED : EXIT_APPLIED;
    });

  program.command("reconcile")
    .description(
      "apply the carried bundle; with --every, again at that interval until the binary is replaced",
    )
    .option("--json", "print each result as JSON")
    .addOption(stateDir())
    .addOption(
      new Option("--every <duration>", "reconcile again at this interval (e.g. 15m)").argParser(
        (v) => {
          try {
            return parseDuration(v, { bareUnit: "s" });
          } catch (error) {
            throw new Refused(`--every: ${messageOf(error)}`);
          }
        },
      ),
    )
    .action(async (opts: { json?: boolean; stateDir: string; every?: number }) => {
      const bundle = await loadBundle(build.bundle, build.system.name);
      for (;;) {
        const result = await applyDeclaration(bundle.declaration, {
          system: build.system,
          stateDir: opts.stateDir,
          digest: bundle.digest,
          version: VERSION,
        });
        await finish(result, opts.json, opts.stateDir);
        if (opts.every === undefined) return;
        await new Promise((r) => setTimeout(r, opts.every));
        const why = replacedSince(start);
        if (why !== undefined) {
          err(`mesh-host: ${why}; exiting to stand aside for the new binary\n`);
          code = 0;
          return;
        }
      }
    });

  program.command("link")
    .description(
      "the link to the control plane: apply declarations from the node's queue, report each result, and reconcile the kept declaration at an interval even while the broker is away",
    )
    .addOption(
      new Option(
        "--broker <url>",
        "the node's broker URL, with its own credential; repeat it (or separate URLs with commas) for each member of a cluster",
      ).env("MESH_BROKER_URL").argParser(collectBrokerUrls),
    )
    .option("--node <name>", "the node's name (default: the broker URL's account)")
    .option("--json", "print each report as JSON")
    .addOption(stateDir())
    .addOption(
      new Option("--every <duration>", "reconcile the kept declaration at this interval (>= 1s)")
        .default(15 * 60 * 1000, "15m")
        .argParser((v) => {
          let ms: number;
          try {
            ms = parseDuration(v, { bareUnit: "s" });
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
        },
      ) => {
        if (!opts.broker || opts.broker.length === 0) {
          throw new Refused("No broker given: pass --broker URL or set MESH_BROKER_URL");
        }
        const { brokerUrls } = await import("../lib/broker_urls.ts");
        let brokerUrl: string[];
        try {
          brokerUrl = brokerUrls(opts.broker);
        } catch (error) {
          throw new Refused(`--broker: ${messageOf(error)}`);
        }
        // Every member carries the node's own account: the first names it.
        const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
        const node = opts.node ?? account;
        const { nodeNameProblem } = await import("../lib/broker.ts");
        const bad = nodeNameProblem(node);
        if (bad !== undefined) throw new Refused(`Cannot link: ${bad}`);
        const { runLink } = await import("./link.ts");
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
            replaced: () => replacedSince(start),
            onNews: (line) => err(`mesh-host link: ${line}\n`),
            onApplied: (report) =>
              out(
                opts.json
                  ? JSON.stringify(report) + "\n"
                  : `${report.at} ${report.trigger} generation ${report.generation}: ${report.outcome} ${report.applied} of ${report.total}${
                    report.problems[0]
                      ? `: ${printable(report.problems[0].message.split("\n")[0]!)}`
                      : ""
                  }${report.drift ? `; drift ${report.drift.status}` : ""}\n`,
              ),
          });
          if (how.reason === "replaced") {
            err(`mesh-host: ${how.detail}; exiting to stand aside for the new binary\n`);
          }
          code = 0;
        });
      },
    );

  return await runProgram(program, args, {
    err,
    code: () => code,
    usageCode: EXIT_REFUSED,
    onError: (error) => {
      err(`mesh-host: ${messageOf(error)}\n`);
      if (error instanceof StoreError) return EXIT_CANNOT_RUN;
      if (
        error instanceof Refused || error instanceof WrongSystemError ||
        error instanceof DeclarationError ||
        error instanceof NoBundleError || error instanceof EmptyBundleError ||
        error instanceof BundleError
      ) return EXIT_REFUSED;
      return EXIT_CANNOT_RUN;
    },
  });
}
