/**
 * `mesh-builder`'s work: consume the shared build queue with prefetch 1, build, answer through
 * the `mesh` exchange, acknowledge only after the answer was confirmed. Loaded by builder/main.ts
 * only when the builder runs (its help and `--version` do not load the broker client or zod).
 *
 * @module
 */

import type { ConsumeMessage } from "amqplib";
import { messageOf } from "../lib/atomic.ts";
import {
  BUILD_QUEUE,
  BuildAnswer,
  BuildRequest,
  decodeMessage,
  EXCHANGE,
  MessageError,
} from "../lib/broker.ts";
import { AmqpError, type BrokerSession, openBroker, publishConfirmed } from "../lib/amqp.ts";
import { redactUrl } from "../lib/url.ts";
import { sleep } from "../lib/wait.ts";
import { build } from "./build.ts";

/** Options for {@linkcode serve}. */
export interface ServeOptions {
  /** The builder's broker URL; several are the members of one cluster (failed over). */
  broker: string | readonly string[];
  name: string;
  workDir?: string;
  /** The artifact store of the builder's binding file, when it has one (it wins). */
  boundStore?: string;
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
  // The build in hand is finished and answered before stopping, if it ends within the grace
  // (lib/wait.ts STOP_GRACE_MS); past it the program exits, and the request, not acknowledged,
  // goes back to the queue for another builder.
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
    ...(options.boundStore === undefined ? {} : { boundStore: options.boundStore }),
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
