/**
 * `mesh-reconcile`: the estate drift detector's command line. The only layer that prints.
 *
 * Exit codes: 0 clean (the stamp is refreshed), 1 drift found, 2 something could not be
 * observed or the input is bad (nothing written).
 *
 * @module
 */

import { Command, CommanderError, Option } from "commander";
import { assertWritablePath, messageOf, writeAll, writeFileAtomic } from "../lib/atomic.ts";
import { parseDuration } from "../lib/duration.ts";
import { adoptRegistry } from "./adopt.ts";
import { loadRegistry, RegistryError, registryJsonSchema } from "./registry.ts";
import { lastCleanFrom, stampLine, toJson, toText, toTextfile } from "./report.ts";
import { NO_PROXY, observe, reconcile } from "./run.ts";

/** Exit code: clean. */
export const EXIT_CLEAN = 0;
/** Exit code: drift found. */
export const EXIT_DRIFT = 1;
/** Exit code: could not observe, or bad input. */
export const EXIT_UNOBSERVABLE = 2;

class UsageError extends Error {}

/** Refuses output paths that are the same file as another path given (the registry, say). */
async function assertDistinct(paths: Record<string, string | undefined>): Promise<void> {
  const seen = new Map<string, string>();
  for (const [flag, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    const { resolve } = await import("node:path");
    const real = await Deno.realPath(path).catch(() => resolve(path));
    const other = seen.get(real);
    if (other !== undefined) throw new UsageError(`${flag} "${path}" is the same file as ${other}`);
    seen.set(real, `${flag} "${path}"`);
  }
}

function durationOption(flag: string) {
  return (value: string) => {
    try {
      return parseDuration(value);
    } catch (error) {
      throw new UsageError(`${flag}: ${messageOf(error)}`);
    }
  };
}

/** Builds the command tree; `io` receives everything printed. */
export function buildProgram(io: { out: (s: string) => void; err: (s: string) => void }) {
  let exitCode = 0;
  const program = new Command()
    .name("mesh-reconcile")
    .description(
      "Compare the registry of what should run on this machine with what does, both ways.",
    )
    .addHelpText(
      "after",
      "\nExit codes: 0 clean (stamp refreshed), 1 drift found, 2 could not observe or bad input.",
    )
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError(false);

  program.command("run")
    .description(
      "observe the machine, compare with the registry, report; refresh the stamp only when clean",
    )
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option("--stamp <path>", "file refreshed (atomically) only after a clean run")
    .option("--textfile <path>", "node_exporter textfile written (atomically) after each run")
    .option(
      "--caddy-admin <addr>",
      `Caddy admin API address, or "${NO_PROXY}" when this machine runs no proxy`,
      "localhost:2019",
    )
    .addOption(
      new Option(
        "--cert-warn <duration>",
        "a certificate expiring within this is a finding (e.g. 14d, 36h)",
      )
        .default(14 * 86_400_000, "14d").argParser(durationOption("--cert-warn")),
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
    .action(async (opts: {
      registry: string;
      json?: boolean;
      stamp?: string;
      textfile?: string;
      caddyAdmin: string;
      certWarn: number;
      timeout: number;
    }) => {
      const registry = await loadRegistry(opts.registry);
      // Refuse unusable output paths before any work, so bad input writes nothing.
      if (opts.stamp !== undefined) await assertWritablePath(opts.stamp);
      if (opts.textfile !== undefined) await assertWritablePath(opts.textfile);
      await assertDistinct({
        "--registry": opts.registry,
        "--stamp": opts.stamp,
        "--textfile": opts.textfile,
      });
      const result = await reconcile(registry, {
        registryPath: opts.registry,
        caddyAdmin: opts.caddyAdmin,
        certWarnMs: opts.certWarn,
        timeoutMs: opts.timeout,
      });
      if (opts.textfile !== undefined) {
        const previous = await Deno.readTextFile(opts.textfile).catch(() => undefined);
        await writeFileAtomic(opts.textfile, toTextfile(result, lastCleanFrom(previous)));
      }
      if (result.clean && opts.stamp !== undefined) {
        await writeFileAtomic(opts.stamp, stampLine(result));
      }
      io.out(opts.json ? JSON.stringify(toJson(result), null, 2) + "\n" : toText(result));
      exitCode = result.exitCode;
    });

  program.command("check-registry")
    .description("validate a registry file; every problem is listed with its line and column")
    .argument("<file>", "the registry")
    .action(async (file: string) => {
      const registry = await loadRegistry(file);
      io.out(
        `${file}: valid, ${Object.keys(registry.services).length} entries, accounts ${
          registry.accounts.join(", ")
        }\n`,
      );
    });

  program.command("schema")
    .description("print the registry's JSON Schema (for editors)")
    .action(() => {
      io.out(JSON.stringify(registryJsonSchema(), null, 2) + "\n");
    });

  program.command("init")
    .description(
      "write a starting registry from the live machine (each entry marked note: adopted)",
    )
    .option(
      "--output <file>",
      "write here (refused if it exists, unless --force) instead of printing",
    )
    .option("--force", "replace an existing --output file")
    .option(
      "--accounts <names>",
      "comma-separated accounts whose containers are asked about",
      "root",
    )
    .option("--caddy-admin <addr>", `Caddy admin API address, or "${NO_PROXY}"`, "localhost:2019")
    .action(
      async (opts: { output?: string; force?: boolean; accounts: string; caddyAdmin: string }) => {
        const accounts = opts.accounts.split(",").map((s) => s.trim()).filter(Boolean);
        if (accounts.length === 0) throw new UsageError("--accounts: name at least one account");
        if (opts.output !== undefined) {
          await assertWritablePath(opts.output);
          if (!opts.force && await Deno.stat(opts.output).then(() => true, () => false)) {
            throw new UsageError(
              `Cannot write registry "${opts.output}": it exists (use --force to replace it)`,
            );
          }
        }
        const observation = await observe(accounts, { caddyAdmin: opts.caddyAdmin });
        const text = adoptRegistry(observation, { accounts, hostname: Deno.hostname() });
        if (opts.output !== undefined) {
          await writeFileAtomic(opts.output, text);
          io.err(`wrote ${opts.output}\n`);
        } else io.out(text);
      },
    );

  return { program, exitCode: () => exitCode };
}

/** Runs the command line with `args` and returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const io = {
    out: (s: string) => writeAll(Deno.stdout, s),
    err: (s: string) => writeAll(Deno.stderr, s),
  };
  const { program, exitCode } = buildProgram(io);
  try {
    if (args.length === 0) {
      // Nothing asked is not something done: say what can be asked, and fail.
      io.err(program.helpInformation());
      return 2;
    }
    await program.parseAsync(args, { from: "user" });
    return exitCode();
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === "commander.helpDisplayed" || error.code === "commander.version" ||
        error.code === "commander.help"
      ) return 0;
      return EXIT_UNOBSERVABLE; // commander already printed what was wrong
    }
    if (error instanceof RegistryError || error instanceof UsageError) {
      io.err(`mesh-reconcile: ${error.message}\n`);
    } else {
      io.err(`mesh-reconcile: ${messageOf(error)}\n`);
    }
    return EXIT_UNOBSERVABLE;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
