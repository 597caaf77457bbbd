/**
 * `mesh-reconcile`: the estate drift detector's command line. The only layer that prints.
 *
 * Exit codes: 0 clean (the stamp is refreshed), 1 drift found, 2 something could not be
 * observed or the input is bad (nothing written).
 *
 * @module
 */

import { Command, Option } from "commander";
import { addExitCodes, type ExitCode, runProgram } from "../lib/cli.ts";
import { assertWritablePath, messageOf, writeAll, writeFileAtomic } from "../lib/atomic.ts";
import { type DurationUnit, parseDuration } from "../lib/duration.ts";
import { adoptRegistry } from "./adopt.ts";
import { loadRegistry, registryJsonSchema } from "./registry.ts";
import { lastCleanFrom, stampLine, toJson, toResultFile, toText, toTextfile } from "./report.ts";
import { BOOT_VIEWS, type BootView, NO_PROXY, observe, reconcile } from "./run.ts";
import { repoCheckFromFlags } from "./repo_check.ts";
import { assertRegistryOutsideCode, IN_CHECKOUT_FLAG } from "./registry_place.ts";
import { saveRepoSeen } from "./repo_seen.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";

/** Exit code: clean. */
export const EXIT_CLEAN = 0;
/** Exit code: drift found. */
export const EXIT_DRIFT = 1;
/** Exit code: could not observe, or bad input. */
export const EXIT_UNOBSERVABLE = 2;

/** What each exit code means, by command: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: EXIT_CLEAN, meaning: "clean (the stamp refreshed)", commands: ["run"] },
  { code: 0, meaning: "the stamp is up (fresh)", commands: ["watch"] },
  { code: 0, meaning: "stopped by SIGTERM or SIGINT", commands: ["stamp serve"] },
  {
    code: 0,
    meaning: "done (printed, written, switched)",
    commands: ["check-registry", "schema", "init", "render caddy", "render backup", "port next"]
      .concat(["batch enable", "batch disable"]),
  },
  { code: EXIT_DRIFT, meaning: "drift found", commands: ["run"] },
  {
    code: 1,
    meaning: "failed (the message says what was undone and what is left)",
    commands: ["batch enable", "batch disable"],
  },
  {
    code: EXIT_UNOBSERVABLE,
    meaning:
      "refused or could not observe: bad input, a bad registry, a path that cannot be written, " +
      "no free port, a server that cannot start, a state file that cannot be read or written " +
      "(nothing written)",
  },
  { code: 3, meaning: "new: never stamped", commands: ["watch"] },
  { code: 4, meaning: "late: past --max-age, within --grace", commands: ["watch"] },
  { code: 5, meaning: "down: past --grace", commands: ["watch"] },
  {
    code: 6,
    meaning: "unreachable: cannot read, a bad answer, or garbage (said which)",
    commands: ["watch"],
  },
];

class UsageError extends Error {}

const IN_CHECKOUT_HELP =
  "accept a registry inside a git work tree or --repo (refused otherwise: a deployment can overwrite it)";

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

function durationOption(flag: string, unit: DurationUnit = "s") {
  return (value: string) => {
    try {
      return parseDuration(value, { unit });
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
    .version(VERSION, "-V, --version", VERSION_FLAG_HELP)
    .description(
      "Compare the registry of what should run on this machine with what does, both ways.",
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
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(
      async (opts: {
        output?: string;
        force?: boolean;
        accounts: string;
        caddyAdmin: string;
        registryInCheckout?: boolean;
      }) => {
        const accounts = opts.accounts.split(",").map((s) => s.trim()).filter(Boolean);
        if (accounts.length === 0) throw new UsageError("--accounts: name at least one account");
        if (opts.output !== undefined) {
          if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.output);
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

  // --- The remote watcher (issue 3, part 7): `stamp serve` and `watch`. Their modules are
  // imported inside the actions, so the other commands do not load them.
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

  program.command("stamp")
    .description("the dead-man stamp that a clean run refreshes")
    .command("serve")
    .description(
      "serve the stamp read-only over HTTP (GET / or /stamp), its age measured on this machine",
    )
    .requiredOption(
      "--listen <addr>",
      "HOST:PORT or [IPv6]:PORT to listen on (an address is required, never defaulted)",
    )
    .option("--stamp <path>", "the stamp to serve", "/var/lib/mesh/reconcile/stamp")
    .addHelpText(
      "after",
      '\nAnswers (JSON): 200 {"state":"stamped","stamp","stampedAt","ageSeconds","servedAt"},' +
        '\n200 {"state":"never"} when no stamp was written, 500 {"state":"error","problem",' +
        '"reason"}\nwhen it cannot be read or holds garbage. Only GET and HEAD. Runs until SIGTERM' +
        " or SIGINT.",
    )
    .action(async (opts: { listen: string; stamp: string }) => {
      const { parseListen, serveStamp } = await import("./stamp_serve.ts");
      let listen;
      try {
        listen = parseListen(opts.listen);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      const { dirname } = await import("node:path");
      const dir = dirname(opts.stamp);
      if (!(await Deno.stat(dir).then((i) => i.isDirectory, () => false))) {
        throw new UsageError(
          `Cannot serve stamp "${opts.stamp}": directory "${dir}" does not exist`,
        );
      }
      const server = await serveStamp(listen, opts.stamp);
      const host = server.addr.hostname.includes(":")
        ? `[${server.addr.hostname}]`
        : server.addr.hostname;
      io.err(`serving stamp "${opts.stamp}" on http://${host}:${server.addr.port}/ (read-only)\n`);
      const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
      const stopped = Promise.withResolvers<Deno.Signal>();
      const listeners = signals.map((signal) => {
        const listener = () => stopped.resolve(signal);
        Deno.addSignalListener(signal, listener);
        return () => Deno.removeSignalListener(signal, listener);
      });
      const signal = await Promise.race([stopped.promise, server.finished.then(() => undefined)]);
      for (const remove of listeners) remove();
      await server.shutdown();
      io.err(`stopped serving${signal ? ` (${signal})` : ""}\n`);
      exitCode = 0;
    });

  program.command("watch")
    .description(
      "look once at a stamp (a file, or a stamp serve URL) and say up, new, late, down or unreachable",
    )
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
      const { watch, watchJson, watchText } = await import("./watch.ts");
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
      io.out(opts.json ? JSON.stringify(watchJson(result), null, 2) + "\n" : watchText(result));
      if (result.notify?.error !== undefined) {
        io.err(
          `mesh-reconcile: ${result.notify.error}; ${result.notify.owed.length} owed, retried on the next run\n`,
        );
      }
      exitCode = result.exitCode;
    });
  // --- end of the remote watcher

  // --- Born covered and the port table (issue 3, parts 5 and 6): `render caddy`, `render
  // backup`, `port next`. Their modules are imported inside the actions.
  const render = program.command("render")
    .description("what the registry's declarations produce: the edge config, the backup list");
  render.command("caddy")
    .description("print a Caddyfile with a site block for every declared web address")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .addHelpText(
      "after",
      "\nA redirect renders redir to its target, a port reverse_proxy to 127.0.0.1:<first port>," +
        "\na site's state directory file_server from it.",
    )
    .action(async (opts: { registry: string }) => {
      const { renderCaddyfile } = await import("./render.ts");
      const registry = await loadRegistry(opts.registry);
      io.out(renderCaddyfile(registry, opts.registry));
    });
  render.command("backup")
    .description("list the state directories and databases the registry declares, to back up")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the list as JSON")
    .action(async (opts: { registry: string; json?: boolean }) => {
      const { backupText, renderBackup } = await import("./render.ts");
      const plan = renderBackup(await loadRegistry(opts.registry), opts.registry);
      io.out(opts.json ? JSON.stringify(plan, null, 2) + "\n" : backupText(plan));
    });

  program.command("port")
    .description("the port table: the registry is it")
    .command("next")
    .description("print the lowest port in the range no entry claims and nothing listens on")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--range <A-B>", "ports to search, inclusive", "8000-8999")
    .addHelpText(
      "after",
      "\nIn use: a listening TCP socket (IPv4 or IPv6) or a port a container of the registry's" +
        "\naccounts publishes.",
    )
    .action(async (opts: { registry: string; range: string }) => {
      const { nextPort, parsePortRange } = await import("./ports.ts");
      let range;
      try {
        range = parsePortRange(opts.range);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      const found = await nextPort(await loadRegistry(opts.registry), { range });
      const failed = found.sources.filter((s) => s.state === "failed");
      const span = `${range.first}-${range.last}`;
      if (failed.length > 0) {
        throw new UsageError(
          `Cannot tell which ports of ${span} are free: could not observe ${
            failed.map((s) => `${s.account ? `${s.source}@${s.account}` : s.source} (${s.detail})`)
              .join(", ")
          }`,
        );
      }
      if (found.port === undefined) {
        throw new UsageError(
          `No free port in ${span}: ${found.claimed.length} claimed by entries, ${found.used.length} in use`,
        );
      }
      io.out(`${found.port}\n`);
    });
  // --- end of born covered and the port table

  // --- Batch jobs registered when switched on (issue 3, part 2): ./batch.ts.
  const batch = program.command("batch")
    .description("switch a timer-driven job on or off and (un)register it in the same step");
  const batchDone = async (
    result: Promise<import("./batch.ts").BatchResult>,
    json: boolean | undefined,
  ) => {
    const r = await result;
    if (json) io.out(JSON.stringify(r, null, 2) + "\n");
    else {
      for (const step of r.steps) io.err(`ran: ${step}\n`);
      (r.outcome === "enabled" || r.outcome === "disabled" ? io.out : io.err)(
        `${r.outcome}: ${r.message}\n`,
      );
    }
    exitCode = r.outcome === "refused" ? 2 : r.outcome === "failed" ? 1 : 0;
  };
  batch.command("enable")
    .description("systemctl enable --now the timer, then add a batch entry for it")
    .argument("<name>", "the entry's name")
    .requiredOption("--timer <unit>", "the timer unit, e.g. publish.timer")
    .option("--container <name>", "the container the job starts while it runs")
    .option("--user <account>", "the account whose user manager runs it (default: root, system)")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(async (name: string, opts: {
      timer: string;
      container?: string;
      user?: string;
      registry: string;
      json?: boolean;
      registryInCheckout?: boolean;
    }) => {
      if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
      const { batchEnable } = await import("./batch.ts");
      await batchDone(batchEnable(name, opts), opts.json);
    });
  batch.command("disable")
    .description("systemctl disable --now the entry's timer, then remove the entry")
    .argument("<name>", "the entry's name")
    .requiredOption("--registry <file>", "the registry (YAML, version 1)")
    .option("--json", "print the result as JSON")
    .option(IN_CHECKOUT_FLAG, IN_CHECKOUT_HELP)
    .action(async (name: string, opts: {
      registry: string;
      json?: boolean;
      registryInCheckout?: boolean;
    }) => {
      if (!opts.registryInCheckout) await assertRegistryOutsideCode(opts.registry);
      const { batchDisable } = await import("./batch.ts");
      await batchDone(batchDisable(name, opts), opts.json);
    });
  // --- end of batch

  addExitCodes(program, EXIT_CODES);
  return { program, exitCode: () => exitCode };
}

/** Runs the command line with `args` and returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const io = {
    out: (s: string) => writeAll(Deno.stdout, s),
    err: (s: string) => writeAll(Deno.stderr, s),
  };
  const { program, exitCode } = buildProgram(io);
  return await runProgram(program, args, {
    err: io.err,
    code: exitCode,
    usageCode: EXIT_UNOBSERVABLE,
    onError: (error) => {
      io.err(`mesh-reconcile: ${messageOf(error)}\n`);
      return EXIT_UNOBSERVABLE;
    },
  });
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
