/**
 * `mesh-control ingest`: record reports from the broker in the inventory, until stopped.
 *
 * @module
 */

import { printable } from "../../lib/printable.ts";
import type { CommandAction } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { redactUrl } from "../../lib/url.ts";
import { untilSignalled } from "../../lib/wait.ts";
import { brokers, connect, type Connections, type ControlContext, Refused } from "./context.ts";

/** What `ingest`'s options parse to (control/options.ts INGEST_OPTIONS). */
type IngestOptions = Connections & { drain?: boolean };

/** Runs `ingest` (its options: control/options.ts). */
export const action: CommandAction<ControlContext, IngestOptions> = async (ctx, _args, opts) => {
  const { out, err } = ctx;
  const { database, broker } = connect(ctx);
  const sql = await database(opts);
  const { ingestReports } = await import("../ingest.ts");
  const total = { ingested: 0, dropped: 0, duplicates: 0 };
  let startAt = 0;
  await untilSignalled(async (signal) => {
    // A member that goes away is left for the next one (the reports it held unacknowledged
    // are delivered again there; a report recorded already is recorded once).
    for (let lost = 0;;) {
      const session = await broker(opts, startAt);
      const stop = new AbortController();
      const onAbort = () => stop.abort();
      signal.addEventListener("abort", onAbort);
      let closed = false;
      session.connection.once("close", () => {
        closed = true;
        stop.abort();
      });
      let result: Awaited<ReturnType<typeof ingestReports>> | undefined;
      try {
        result = await ingestReports(sql, session.channel, {
          drain: opts.drain,
          signal: stop.signal,
          // A report's text (an unknown key, a routing key) is quoted in the reason as sent:
          // escaped, so that a report cannot split or colour this line.
          onDrop: (d) =>
            err(
              `mesh-control: dropped a report (${printable(d.routingKey)}): ${
                printable(d.reason)
              }\n`,
            ),
        });
      } catch (error) {
        if (!closed && !/closed/i.test(messageOf(error))) throw error;
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
      if (result !== undefined) {
        total.ingested += result.ingested;
        total.dropped += result.dropped.length;
        total.duplicates += result.duplicates;
      }
      if (!closed) break;
      if (signal.aborted) break;
      lost++;
      if (lost > brokers(opts).length) {
        throw new Refused("The broker closed the connection, on every member in turn");
      }
      err(
        `mesh-control: the broker ${
          redactUrl(session.url)
        } closed the connection; going on with the next member\n`,
      );
      startAt = session.member + 1;
      await session.close();
    }
    out(
      `ingested ${total.ingested} report${total.ingested === 1 ? "" : "s"}${
        total.dropped ? `; dropped ${total.dropped}` : ""
      }${total.duplicates ? `; ${total.duplicates} delivered again, recorded once` : ""}\n`,
    );
  }, {
    onLate: () =>
      err("mesh-control: stopped without waiting for the ingest in hand (past the grace)\n"),
  });
};
