/**
 * `mesh-control push`: render a node's declaration and publish it, or push to every node that is
 * behind.
 *
 * @module
 */

import type { CommandAction } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { redactUrl } from "../../lib/url.ts";
import type { BrokerSession } from "../../lib/amqp.ts";
import { brokers, connect, type Connections, type ControlContext, Refused } from "./context.ts";

/** What `push`'s options parse to (control/options.ts PUSH_OPTIONS). */
type PushOptions = Connections & {
  behind?: boolean;
  stuckAfter: number;
  dryRun?: boolean;
  signingKey: string;
};

/** Runs `push` (its options: control/options.ts). */
export const action: CommandAction<ControlContext, PushOptions> = async (ctx, args, opts) => {
  const [name] = args as [string | undefined];
  const { out, err } = ctx;
  const { database, broker } = connect(ctx);
  if (name !== undefined && opts.behind) {
    throw new Refused(
      `push: naming a node ("${name}") and asking which nodes are behind (--behind) are different requests; give one`,
    );
  }
  if (name === undefined && !opts.behind) {
    throw new Refused("push: name a node, or ask for --behind");
  }
  if (opts.dryRun && !opts.behind) throw new Refused("push: --dry-run goes with --behind");
  // Nothing is published unsigned: the key is read before anything is connected.
  const signer = opts.dryRun
    ? undefined
    : await (await import("../signer.ts")).readSigner(opts.signingKey);
  const sql = await database(opts);
  const push = await import("../push.ts");
  if (name !== undefined) {
    const session = await broker(opts);
    const p = await push.pushNode(sql, { channel: session.channel, ...signer! }, name);
    out(
      `pushed generation ${p.generation} to ${p.node} (${p.total} resources, ${p.digest})\n`,
    );
    return;
  }
  // A member lost during the push rolls its transaction back (nothing recorded, see
  // publishRendered): the push is made again through the next member, once per member.
  const members = opts.dryRun ? 1 : brokers(opts).length;
  let result: Awaited<ReturnType<typeof push.pushBehind>> | undefined;
  let startAt = 0;
  for (let attempt = 1; result === undefined; attempt++) {
    let session: BrokerSession | undefined;
    let closed = false;
    try {
      if (!opts.dryRun) {
        session = await broker(opts, startAt);
        session.connection.once("close", () => closed = true);
        // Reports waiting on the broker first: acting on stale ones would push to nodes
        // that already caught up.
        const { ingestReports } = await import("../ingest.ts");
        await ingestReports(sql, session.channel, {
          drain: true,
          onDrop: (d) => err(`mesh-control: dropped a report (${d.routingKey}): ${d.reason}\n`),
        });
      }
      result = await push.pushBehind(
        sql,
        session === undefined ? undefined : { channel: session.channel, ...signer! },
        {
          stuckAfter: opts.stuckAfter,
          dryRun: opts.dryRun,
        },
      );
    } catch (error) {
      // Only a lost connection is failed over; a refusal or a nack is the answer.
      if (session !== undefined && !closed) await new Promise((r) => setTimeout(r, 200));
      if (!closed || attempt >= members + 1 || session === undefined) throw error;
      err(
        `mesh-control: lost the broker ${redactUrl(session.url)} during the push (${
          messageOf(error)
        }); nothing was recorded, pushing again\n`,
      );
      startAt = session.member + 1;
      await session.close();
    }
  }
  const verb = opts.dryRun ? "would push" : "pushed";
  for (const p of result.pushed) {
    out(
      `${verb}${opts.dryRun ? "" : ` generation ${p.generation}`} to ${p.node}: ${p.why}\n`,
    );
    if (p.stuck !== undefined) out(`  ${p.node}: ${p.stuck}\n`);
  }
  for (const s of result.skipped) out(`not pushed to ${s.node}: ${s.why}\n`);
  for (const s of result.waiting) out(`${s.node}: ${s.why}\n`);
  for (const s of result.unpushable) {
    err(`mesh-control: cannot push to ${s.node}: ${s.why}\n`);
  }
  if (result.unpushable.length > 0) ctx.code = 1;
  const waiting = result.waiting.length
    ? `; ${result.waiting.length} left waiting on what they were pushed`
    : "";
  if (
    result.pushed.length === 0 && result.unpushable.length === 0 &&
    result.waiting.length === 0
  ) {
    out(
      `nothing behind: ${
        result.nodes - result.skipped.length
      } of ${result.nodes} nodes report a clean apply of their current declaration\n`,
    );
  } else {
    out(
      `${verb} to ${result.pushed.length} of ${result.nodes} nodes; ${
        result.nodes - result.pushed.length - result.skipped.length -
        result.unpushable.length - result.waiting.length
      } not behind${waiting}${
        result.unpushable.length ? `; ${result.unpushable.length} behind and not pushed` : ""
      }\n`,
    );
  }
};
