/**
 * `mesh-builder`: the program a build machine runs. It consumes the shared build queue with
 * prefetch 1 (several builders share the work, each request is done once, one build at a time
 * per builder), builds, and answers through the `mesh` exchange to the asker's reply key with the
 * request's correlation id. A request is acknowledged only after its answer was published and
 * confirmed: a builder that dies mid-build leaves the request on the queue for another.
 *
 * It holds its own broker credential (`mesh-control builder issue NAME`) and nothing else.
 *
 * This file is its command line (one command, the program itself, its options declared as data:
 * its help and a plain start load no commander); the work is in builder/serve.ts, loaded only
 * when the builder runs, so its help loads no broker client.
 *
 * @module
 */

import { messageOf, writeAll } from "../lib/atomic.ts";
import { brokerOption, collectBrokerUrls } from "../lib/broker_urls.ts";
import { redactUrl } from "../lib/url.ts";
import {
  answerOptionsProgram,
  type ExitCode,
  exitCodeOfError,
  type OptionSpec,
  type OptionsProgram,
  optionsProgramHelp,
  parseProgramOptions,
} from "../lib/cli_table.ts";
import { untilSignalled } from "../lib/wait.ts";
import { STORE_VARIABLE } from "./store_variable.ts";
import { ARTIFACT_STORE, BINDINGS_DIR, BINDINGS_DIR_VARIABLE } from "../lib/binding_names.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";
import { jsonText } from "../lib/printable.ts";

const HELP = `
Where to publish: a builder that is a module reads its binding first, the file
${BINDINGS_DIR}/${ARTIFACT_STORE}.json the control plane writes on push (${BINDINGS_DIR_VARIABLE}
moves the directory); one that cannot be read or is malformed stops the builder (exit 2). Without
that file (a builder run by hand), the binding each request carries is used, and ${STORE_VARIABLE}
only for a request that carries none. A binding with no address is refused, never replaced.`;

/** What each exit code means: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  {
    code: 0,
    meaning: "stopped (SIGTERM/SIGINT; a build in hand not answered within 1.5 s is left on the " +
      "queue for another builder)",
  },
  {
    code: 2,
    meaning: "refused at start: bad arguments, a --work-dir that cannot be used, an artifact " +
      "store binding file that cannot be read or is malformed, or the broker refused the credential",
  },
];

/** `mesh-builder`'s options, declared as data (its help and a plain start need no commander). */
export const BUILDER_OPTIONS: readonly OptionSpec[] = [
  {
    flags: "--broker <url>",
    description:
      "the builder's own broker URL (mesh-control builder issue); repeat it (or separate URLs with commas) for each member of a cluster",
    env: "MESH_BROKER_URL",
    parse: (value, previous) => collectBrokerUrls(value, previous as string[] | undefined),
  },
  {
    flags: "--name <name>",
    description: "the builder's name in answers (default: the URL's account)",
  },
  {
    flags: "--work-dir <dir>",
    description: "where sources are checked out (default: the temporary directory)",
  },
];

/** `mesh-builder` as its help describes it. */
export const BUILDER_PROGRAM: OptionsProgram = {
  name: "mesh-builder",
  description: "build machine worker: builds requests from the shared build queue and answers",
  version: VERSION,
  versionHelp: VERSION_FLAG_HELP,
  options: BUILDER_OPTIONS,
  helpAfter: HELP,
  exitCodes: EXIT_CODES,
};

/** The options the builder starts with (keyed as lib/cli_table.ts `optionKey`). */
interface BuilderOptions {
  broker?: string[];
  name?: string;
  workDir?: string;
}

/**
 * Runs `mesh-builder` with `args` and returns its exit code. Its help, `--version`, a bare
 * invocation and a plain start (known options only) are answered without commander; anything
 * else goes to commander, built from the same declarations (misuse is said as it always was).
 */
export async function builderMain(args: string[]): Promise<number> {
  const out = (s: string) => writeAll(Deno.stdout, s);
  const err = (s: string) => writeAll(Deno.stderr, s);
  const redact = (text: string) =>
    text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"']+/gi, (url) => redactUrl(url));
  const onError = (error: unknown) => {
    err(`mesh-builder: ${messageOf(error)}\n`);
    return 2;
  };
  // Its whole configuration may come from the environment (MESH_BROKER_URL).
  const runWithoutArguments = (Deno.env.get("MESH_BROKER_URL") ?? "") !== "";
  if (args.length === 0 && !runWithoutArguments) {
    // Nothing asked is not something done: the help without what follows it, on stderr.
    err(optionsProgramHelp(BUILDER_PROGRAM, { helpWidth: stderrWidth() }));
    return 2;
  }
  const answer = answerOptionsProgram(BUILDER_PROGRAM, args);
  if (answer !== undefined) {
    out(answer);
    return 0;
  }
  const plain = parseProgramOptions(BUILDER_OPTIONS, args);
  if (plain !== undefined) {
    try {
      await start(plain as BuilderOptions, out, err);
      return 0;
    } catch (error) {
      return exitCodeOfError("mesh-builder", error, args, { err, onError, redact });
    }
  }
  const { Command } = await import("commander");
  const { addExitCodes, optionOf, runProgram } = await import("../lib/cli.ts");
  const program = new Command()
    .name(BUILDER_PROGRAM.name)
    .version(VERSION, "-V, --version", VERSION_FLAG_HELP)
    .description(BUILDER_PROGRAM.description)
    .addHelpText("after", HELP)
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err });
  for (const option of BUILDER_OPTIONS) program.addOption(optionOf(option));
  program.action((opts: BuilderOptions) => start(opts, out, err));
  addExitCodes(program, EXIT_CODES);
  return await runProgram(program, args, {
    err,
    code: () => 0,
    usageCode: 2,
    redact,
    runWithoutArguments,
    onError,
  });
}

/** The width help is wrapped to on stderr: the terminal's, 80 when it is not one. */
function stderrWidth(): number {
  try {
    if (Deno.stderr.isTerminal()) return Deno.consoleSize().columns;
  } catch {
    // Not a console after all.
  }
  return 80;
}

/**
 * Starts the builder with `opts` and serves until SIGTERM or SIGINT.
 *
 * @throws {Refused} when no broker is given, one is not a broker URL, or the work directory
 *   cannot be used; what serve throws (a broker refusing the credential).
 */
async function start(
  opts: BuilderOptions,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<void> {
  let brokerUrl: string[];
  try {
    brokerUrl = brokerOption(opts.broker);
  } catch (error) {
    throw new Refused(messageOf(error));
  }
  // What every build needs is checked now, not found missing by each request in turn.
  if (opts.workDir !== undefined) await assertWorkDir(opts.workDir);
  // Its own binding first (a builder that is a module): read once, at start; a file that cannot
  // be read or is malformed stops it, never a fallback to the request's store or the variable.
  const boundStore = await readStoreBinding();
  const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
  const name = opts.name ?? account;
  const { serve } = await import("./serve.ts");
  await untilSignalled((signal) =>
    serve({
      broker: brokerUrl,
      name,
      workDir: opts.workDir,
      ...(boundStore === undefined ? {} : { boundStore }),
      signal,
      say: (line) => err(`mesh-builder: ${line}\n`),
      answered: (answer) => out(jsonText(answer) + "\n"),
    }), {
    // A build in hand is not answered past the grace: its request, unacknowledged, is
    // delivered again to a builder that runs.
    onLate: () =>
      err("mesh-builder: stopped without answering the build in hand (past the grace)\n"),
  });
}

class Refused extends Error {}

/**
 * The address of the builder's artifact store binding file, or undefined when there is none.
 *
 * @throws {Refused} "Cannot read binding "PATH": ..." when it cannot be read, is malformed, or
 *   its address is not an artifact store address (host[:port][/path]).
 */
async function readStoreBinding(): Promise<string | undefined> {
  const { bindingPath, readBinding } = await import("../lib/binding.ts");
  const { STORE_ADDRESS } = await import("../lib/broker.ts");
  let binding;
  try {
    binding = await readBinding(ARTIFACT_STORE);
  } catch (error) {
    throw new Refused(messageOf(error));
  }
  if (binding === undefined) return undefined;
  if (!STORE_ADDRESS.test(binding.address)) {
    const dir = Deno.env.get(BINDINGS_DIR_VARIABLE) || BINDINGS_DIR;
    throw new Refused(
      `Cannot read binding "${
        bindingPath(ARTIFACT_STORE, dir)
      }": its address "${binding.address}" is not an artifact store address (host[:port][/path])`,
    );
  }
  return binding.address;
}

/**
 * Refuses a work directory that is not an existing directory this process can create files in.
 *
 * @throws {Refused} naming the directory and what is wrong with it.
 */
async function assertWorkDir(dir: string): Promise<void> {
  let info;
  try {
    info = await Deno.stat(dir);
  } catch (error) {
    throw new Refused(`Cannot use --work-dir "${dir}": ${messageOf(error)}`);
  }
  if (!info.isDirectory) throw new Refused(`Cannot use --work-dir "${dir}": not a directory`);
  try {
    await Deno.remove(await Deno.makeTempDir({ dir, prefix: ".mesh-builder-check-" }));
  } catch (error) {
    throw new Refused(`Cannot use --work-dir "${dir}": ${messageOf(error)}`);
  }
}

if (import.meta.main) {
  Deno.exit(await builderMain(Deno.args));
}
