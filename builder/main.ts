/**
 * `mesh-builder`: the program a build machine runs. It consumes the shared build queue with
 * prefetch 1 (several builders share the work, each request is done once, one build at a time
 * per builder), builds, and answers through the `mesh` exchange to the asker's reply key with the
 * request's correlation id. A request is acknowledged only after its answer was published and
 * confirmed: a builder that dies mid-build leaves the request on the queue for another.
 *
 * It holds its own broker credential (`mesh-control builder issue NAME`) and nothing else.
 *
 * @module
 */

import { Command, Option } from "commander";
import type { ConsumeMessage } from "amqplib";
import { messageOf, writeAll } from "../lib/atomic.ts";
import {
  BUILD_QUEUE,
  BuildAnswer,
  BuildRequest,
  decodeMessage,
  EXCHANGE,
  MessageError,
} from "../lib/broker.ts";
import { AmqpError, type BrokerSession, openBroker, publishConfirmed } from "../lib/amqp.ts";
import { brokerUrls, collectBrokerUrls } from "../lib/broker_urls.ts";
import { redactUrl } from "../lib/url.ts";
import { addExitCodes, type ExitCode, runProgram, sleep, untilSignalled } from "../lib/cli.ts";
import { build, STORE_VARIABLE } from "./build.ts";
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
      if (!opts.broker || opts.broker.length === 0) {
        throw new Refused("No broker given: pass --broker URL or set MESH_BROKER_URL");
      }
      let brokerUrl: string[];
      try {
        brokerUrl = brokerUrls(opts.broker);
      } catch (error) {
        throw new Refused(`--broker: ${messageOf(error)}`);
      }
      // What every build needs is checked now, not found missing by each request in turn.
      if (opts.workDir !== undefined) await assertWorkDir(opts.workDir);
      const account = decodeURIComponent(new URL(brokerUrl[0]!).username);
      const name = opts.name ?? account;
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

/** Options for {@linkcode serve}. */
export interface ServeOptions {
  /** The builder's broker URL; several are the members of one cluster (failed over). */
  broker: string | readonly string[];
  name: string;
  workDir?: string;
  signal: AbortSignal;
  /** The builder's news, one line each. */
  say: (line: string) => void;
  /** Each answer published. */
  answered: (answer: BuildAnswer) => void;
}

/**
 * Consumes the build queue until `signal` aborts, reconnecting when the broker goes away.
 *
 * @throws {AmqpError} when the first connection is refused (a wrong credential is not retried).
 */
export async function serve(options: ServeOptions): Promise<void> {
  let retry = 1000;
  let first = true;
  let startAt = 0;
  while (!options.signal.aborted) {
    let session: BrokerSession;
    try {
      session = await openBroker(options.broker, { startAt });
    } catch (error) {
      if (first) throw error;
      options.say(`${messageOf(error)}; retrying in ${Math.round(retry / 1000)} s`);
      await sleep(retry, options.signal);
      retry = Math.min(retry * 2, 60_000);
      continue;
    }
    first = false;
    retry = 1000;
    startAt = session.member + 1;
    options.say(`connected to ${redactUrl(session.url)} as ${options.name}`);
    await consume(session, options);
    await session.close();
  }
}

async function consume(session: BrokerSession, options: ServeOptions): Promise<void> {
  const { channel, connection } = session;
  let working: Promise<void> = Promise.resolve();
  const closed = new Promise<void>((resolve) => connection.once("close", () => resolve()));
  const aborted = new Promise<void>((resolve) =>
    options.signal.addEventListener("abort", () => resolve(), { once: true })
  );
  await channel.prefetch(1);
  const { consumerTag } = await channel.consume(BUILD_QUEUE, (message) => {
    if (message === null) return;
    working = working.then(() => handle(session, message, options));
  }, { noAck: false });
  await Promise.race([closed, aborted]);
  await channel.cancel(consumerTag).catch(() => {});
  // The build in hand is finished and answered before stopping.
  await working;
  if (!options.signal.aborted) options.say("the broker went away; reconnecting");
}

async function handle(
  session: BrokerSession,
  message: ConsumeMessage,
  options: ServeOptions,
): Promise<void> {
  const correlationId = message.properties.correlationId as string | undefined;
  let request: BuildRequest;
  try {
    request = decodeMessage(BuildRequest, message.content, "the build request");
  } catch (error) {
    if (!(error instanceof MessageError)) throw error;
    // No reply key can be trusted from a request that does not decode: said, acknowledged.
    options.say(
      `dropped a build request (correlation ${correlationId ?? "none"}): ${error.message}`,
    );
    session.channel.ack(message);
    return;
  }
  options.say(`building ${request.module} at ${request.commit} (request ${request.id})`);
  const answer = await build(request, {
    builder: options.name,
    workDir: options.workDir,
    envStore: Deno.env.get("MESH_ARTIFACT_STORE"),
    onStep: (step) => options.say(`${request.id}: ${step}`),
  });
  try {
    await publishConfirmed(session.channel, [{
      exchange: EXCHANGE,
      routingKey: request.replyTo,
      body: new TextEncoder().encode(JSON.stringify(answer)),
      options: { correlationId: request.id, type: "build-answer" },
    }]);
  } catch (error) {
    if (error instanceof AmqpError && error.unroutable) {
      // Nobody binds that reply key any more: building again would not change that. Said, and
      // acknowledged (the image, if built, is in the store).
      options.say(
        `${request.id}: nobody listens on "${request.replyTo}"; the answer (${answer.outcome}) is dropped`,
      );
      session.channel.ack(message);
      options.answered(answer);
      return;
    }
    // Not acknowledged: the request returns to the queue when this connection closes.
    options.say(`cannot answer ${request.id} (${messageOf(error)}); the request stays queued`);
    await session.close();
    return;
  }
  session.channel.ack(message);
  options.say(
    `${request.id}: ${answer.outcome}${
      answer.outcome === "built" ? ` ${answer.image}` : `: ${answer.reason}`
    }`,
  );
  options.answered(answer);
}

if (import.meta.main) {
  Deno.exit(await builderMain(Deno.args));
}
