/**
 * `mesh-host`: the node agent's command line, shared by every system's entry point. The only
 * layer that prints.
 *
 * @module
 */

import { Command, Option } from "commander";
import { collectBrokerUrls } from "../lib/broker_urls.ts";
import { addExitCodes, type ExitCode, runProgram, untilSignalled } from "../lib/cli.ts";
import { printable } from "../lib/printable.ts";
import { messageOf, readRegularFileLimited, writeAll } from "../lib/atomic.ts";
import { parseDuration } from "../lib/duration.ts";
import { MAX_INTERVAL_MS } from "../lib/broker.ts";
import {
  applyBytes,
  applyDeclaration,
  type ApplyResult,
  applySources,
  recordKnownGood,
} from "./apply.ts";
import {
  bundleSource,
  DEFAULT_DECLARATIONS_DIR,
  migrationFor,
  originOfFile,
  readLocalDeclarations,
  sourceNameProblem,
} from "./sources.ts";
import { resolve } from "node:path";
import { BundleError, EmptyBundleError, loadBundle, NoBundleError } from "./bundle.ts";
import { DeclarationError, declarationJsonSchema, MAX_DECLARATION_BYTES } from "./declaration.ts";
import { executableIdentity, replacedSince } from "./identity.ts";
import { applyText, ownedText } from "./render.ts";
import { Store, StoreError } from "./store.ts";
import { VERSION } from "./version.ts";
import { DEFAULT_RESULT_PATH } from "../lib/drift.ts";
import { VERSION_FLAG_HELP } from "../lib/version.ts";
import { confirmSystem, type System, WrongSystemError } from "../systems/mod.ts";

/** Exit code: applied. */
export const EXIT_APPLIED = 0;
/** Exit code: accepted and partly applied (failed). */
export const EXIT_FAILED = 1;
/** Exit code: refused (invalid input, a shape this system cannot apply, the wrong machine, no bundle). */
export const EXIT_REFUSED = 2;
/** Exit code: the host cannot work (its store cannot be read or written). */
export const EXIT_CANNOT_RUN = 3;
/**
 * Exit code of a dry run that found changes pending (nothing was changed); a dry run exits 0
 * only when nothing would change, so a timer can use it as a drift check.
 */
export const EXIT_PENDING = 4;

/** The default state directory. */
export const DEFAULT_STATE_DIR = "/var/lib/mesh/host";

const STORE_COMMANDS = ["apply", "owned", "inventory", "bundle", "reconcile", "link"];

/**
 * What each exit code means, by command: the one table help is rendered from. For several
 * sources in one run, the worst: 1 over 2 over 0.
 */
export const EXIT_CODES: readonly ExitCode[] = [
  {
    code: EXIT_APPLIED,
    meaning: "applied, known-good recorded (several sources: every one applied)",
    commands: ["apply", "reconcile"],
  },
  { code: 0, meaning: "applied", commands: ["bundle"] },
  { code: 0, meaning: "printed", commands: ["owned", "schema", "inventory"] },
  { code: 0, meaning: "stopped (SIGTERM, SIGINT, or a new binary installed)", commands: ["link"] },
  {
    code: EXIT_FAILED,
    meaning: 'failed: accepted and partly applied ("applied N of M" says how much)',
    commands: ["apply", "reconcile"],
  },
  {
    code: EXIT_REFUSED,
    meaning: "refused: nothing applied (invalid input, a shape this system cannot apply, a " +
      "subject another source holds, the wrong machine, no bundle)",
  },
  {
    code: EXIT_CANNOT_RUN,
    meaning: "the host cannot work: its store exists and cannot be read, or cannot be written",
    commands: STORE_COMMANDS,
  },
  {
    code: EXIT_PENDING,
    meaning: "--dry-run only: something would change (nothing was changed); a dry run exits 0 " +
      "only when nothing would change",
    commands: ["apply", "reconcile"],
  },
];

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
    .version(VERSION, "-V, --version", VERSION_FLAG_HELP)
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

  const declarationsDir = () =>
    new Option(
      "--declarations <dir>",
      "the local declarations' directory: each NAME.json in it is source NAME",
    ).default(DEFAULT_DECLARATIONS_DIR).argParser((dir: string) => {
      if (!dir.startsWith("/")) {
        throw new Refused(`--declarations must be an absolute path, not "${dir}"`);
      }
      return dir.replace(/\/+$/, "") || "/";
    });

  /** How a store of format 1 gives its records a source (see host/sources.ts). */
  const migration = (dir: string, declarations: string) => async () => {
    const { input } = await bundleSource(build.bundle, build.system.name);
    return await migrationFor(dir, {
      ...(input?.declaration ? { bundle: input.declaration } : {}),
      locals: await readLocalDeclarations(declarations),
    });
  };

  /**
   * Prints one run's results (one per source; `--json`: `apply`'s one result as one object, as
   * always; `reconcile`'s as one JSON object per line and source) and sets the exit code: 0 when every source applied, 1 when
   * one failed, else 2 when one was refused. Known-good after a clean run only.
   */
  const finish = async (
    results: ApplyResult[],
    json: boolean | undefined,
    dir: string,
    lines = false,
  ) => {
    const clean = results.every((r) => r.outcome === "applied");
    if (clean && results.length > 0 && !results[0]!.dryRun) await recordKnownGood(dir, VERSION);
    if (json) {
      out(
        results.length === 1 && !lines
          ? JSON.stringify(results[0], null, 2) + "\n"
          : results.map((r) => JSON.stringify(r) + "\n").join(""),
      );
    } else out(results.map(applyText).join(""));
    const pending = results.some((r) =>
      r.dryRun && r.changes.some((c) => c.change !== "unchanged")
    );
    code = results.some((r) => r.outcome === "failed")
      ? EXIT_FAILED
      : results.some((r) => r.outcome === "refused")
      ? EXIT_REFUSED
      : pending
      ? EXIT_PENDING
      : EXIT_APPLIED;
  };

  program.command("apply")
    .description(
      "converge this machine to a declaration file as one source (trusted: actions allowed); " +
        "only that source's footprint is removed from",
    )
    .argument("<file>", "the declaration (JSON, version 1)")
    .option("--source <name>", "the source it is applied as", "local")
    .option("--dry-run", "change nothing; show what would change")
    .option("--json", "print the result as JSON")
    .addOption(stateDir())
    .addOption(declarationsDir())
    .action(
      async (
        file: string,
        opts: {
          source: string;
          dryRun?: boolean;
          json?: boolean;
          stateDir: string;
          declarations: string;
        },
      ) => {
        const bad = sourceNameProblem(opts.source);
        if (bad !== undefined) throw new Refused(`--source: ${bad}`);
        let bytes: Uint8Array;
        try {
          bytes = await readRegularFileLimited(file, MAX_DECLARATION_BYTES);
        } catch (error) {
          throw new Refused(`Cannot read declaration "${file}": ${messageOf(error)}`);
        }
        const path = resolve(file);
        const result = await applyBytes(bytes, {
          system: build.system,
          stateDir: opts.stateDir,
          dryRun: opts.dryRun,
          version: VERSION,
          trusted: true,
          source: opts.source,
          origin: originOfFile(path, opts.source, opts.declarations),
          file: path,
          migration: migration(opts.stateDir, opts.declarations),
        });
        await finish([result], opts.json, opts.stateDir);
      },
    );

  program.command("owned")
    .description(
      "list the footprint: what this host applied, for which source, and whether it created it",
    )
    .option("--json", "print as JSON")
    .addOption(stateDir())
    .addOption(declarationsDir())
    .action(async (opts: { json?: boolean; stateDir: string; declarations: string }) => {
      const store = await Store.load(opts.stateDir, {
        readOnly: true,
        migration: migration(opts.stateDir, opts.declarations),
      });
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
      const { detectPlatform, formatPlatform } = await import("./platform.ts");
      // What the appliers use (one detection per process), then what each tool says.
      const [platform, inventory] = await Promise.all([detectPlatform(), takeInventory()]);
      out(
        opts.json
          ? JSON.stringify({ platform, ...inventory }, null, 2) + "\n"
          : `this host uses:\n${formatPlatform(platform)}\n${formatInventory(inventory)}`,
      );
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
        source: "bundle",
        origin: "bundle",
        migration: migration(opts.stateDir, DEFAULT_DECLARATIONS_DIR),
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
      "apply the carried bundle and every local declaration, each as its own source, and remove " +
        "the footprint of a local declaration whose file was removed; with --every, again at " +
        "that interval until the binary is replaced",
    )
    .option("--json", "print each result as JSON (one object per line and source)")
    .option(
      "--dry-run",
      "change nothing; say what every source would change (exit 4 when something would): a drift check",
    )
    .addOption(stateDir())
    .addOption(declarationsDir())
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
          if (!opts.bundle && locals.length === 0) {
            // Nothing to keep this time; a declaration put in the directory later is seen then.
            err(
              `mesh-host: nothing to reconcile: no declaration in "${opts.declarations}", and the ` +
                `bundle is left alone (--no-bundle)\n`,
            );
          }
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
            migration: migration(opts.stateDir, opts.declarations),
            dryRun: opts.dryRun,
          });
          await finish(results, opts.json, opts.stateDir, true);
          if (opts.every === undefined) return;
          await new Promise((r) => setTimeout(r, opts.every));
          const why = replacedSince(start);
          if (why !== undefined) {
            err(`mesh-host: ${why}; exiting to stand aside for the new binary\n`);
            code = 0;
            return;
          }
        }
      },
    );

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
    .addOption(declarationsDir())
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
            others: async () => {
              const { input } = await bundleSource(build.bundle, build.system.name);
              return [
                ...(input ? [input] : []),
                ...await readLocalDeclarations(opts.declarations),
              ];
            },
            declarationsDir: opts.declarations,
            migration: migration(opts.stateDir, opts.declarations),
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
          code = 0;
        });
      },
    );

  addExitCodes(program, EXIT_CODES);
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
