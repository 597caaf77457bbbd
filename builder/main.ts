/**
 * `mesh-builder`: the program a build machine runs. It consumes the shared build queue with
 * prefetch 1 (several builders share the work, each request is done once, one build at a time
 * per builder), builds, and answers through the `mesh` exchange to the asker's reply key with the
 * request's correlation id. A request is acknowledged only after its answer was published and
 * confirmed: a builder that dies mid-build leaves the request on the queue for another.
 *
 * It holds its own broker credential (`mesh-control builder issue NAME`) and nothing else.
 *
 * This file is its command line (one command, the program itself); the work is in
 * builder/serve.ts, loaded only when the builder runs, so its help loads no broker client.
 *
 * @module
 */

import { Command, Option } from "commander";
import { messageOf, writeAll } from "../lib/atomic.ts";
import { brokerOption, collectBrokerUrls } from "../lib/broker_urls.ts";
import { redactUrl } from "../lib/url.ts";
import { addExitCodes, type ExitCode, runProgram, untilSignalled } from "../lib/cli.ts";
import { STORE_VARIABLE } from "./store_variable.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";

const HELP = `
Where to publish: the artifact store binding the control plane sends with each request wins;
${STORE_VARIABLE} is used only for a request that carries no binding (one made by hand). A
binding with no address is refused, never replaced by the variable.`;

/** What each exit code means: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: 0, meaning: "stopped (SIGTERM/SIGINT, after the build in hand is answered)" },
  {
    code: 2,
    meaning: "refused at start: bad arguments, a --work-dir that cannot be used, or the broker " +
      "refused the credential",
  },
];

/**
 * Runs `mesh-builder` with `args` and returns its exit code.
 */
export async function builderMain(args: string[]): Promise<number> {
  const out = (s: string) => writeAll(Deno.stdout, s);
  const err = (s: string) => writeAll(Deno.stderr, s);
  let code = 0;
  const program = new Command()
    .name("mesh-builder")
    .version(VERSION, "-V, --version", VERSION_FLAG_HELP)
    .description("build machine worker: builds requests from the shared build queue and answers")
    .addHelpText("after", HELP)
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .addOption(
      new Option(
        "--broker <url>",
        "the builder's own broker URL (mesh-control builder issue); repeat it (or separate URLs with commas) for each member of a cluster",
      ).env("MESH_BROKER_URL").argParser(collectBrokerUrls),
    )
    .option("--name <name>", "the builder's name in answers (default: the URL's account)")
    .option("--work-dir <dir>", "where sources are checked out (default: the temporary directory)")
    .action(async (opts: { broker?: string[]; name?: string; workDir?: string }) => {
      let brokerUrl: string[];
      try {
        brokerUrl = brokerOption(opts.broker);
      } catch (error) {
        throw new Refused(messageOf(error));
      }
      // What every build needs is checked now, not found missing by each request in turn.
      if (opts.workDir !== undefined) await assertWorkDir(opts.workDir);
      const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
      const name = opts.name ?? account;
      const { serve } = await import("./serve.ts");
      await untilSignalled((signal) =>
        serve({
          broker: brokerUrl,
          name,
          workDir: opts.workDir,
          signal,
          say: (line) => err(`mesh-builder: ${line}\n`),
          answered: (answer) => out(JSON.stringify(answer) + "\n"),
        })
      );
      code = 0;
    });

  addExitCodes(program, EXIT_CODES);
  return await runProgram(program, args, {
    err,
    code: () => code,
    usageCode: 2,
    redact: (text) => text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"']+/gi, (url) => redactUrl(url)),
    // Its whole configuration may come from the environment (MESH_BROKER_URL).
    runWithoutArguments: (Deno.env.get("MESH_BROKER_URL") ?? "") !== "",
    onError: (error) => {
      err(`mesh-builder: ${messageOf(error)}\n`);
      return 2;
    },
  });
}

class Refused extends Error {}

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
