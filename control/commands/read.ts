/**
 * What `mesh-control status` and `board` share: their read of the inventory (their options are
 * declared in control/options.ts).
 *
 * @module
 */

import { assertWritablePath, messageOf, writeFileAtomic } from "../../lib/atomic.ts";
import type { Sql } from "../db.ts";
import { connect, type Connections, type ControlContext, Refused } from "./context.ts";
import { jsonText } from "../../lib/printable.ts";

/**
 * The action of `status` and `board`: one read of the inventory (or its standby), rendered as
 * text, `--json` or `--html`; `status` exits 1 when a node needs attention.
 */
export const boardAction = (ctx: ControlContext, kind: "status" | "board") =>
async (
  opts: Connections & {
    json?: boolean;
    html?: string;
    databaseRead?: string;
    maxLag: number;
    grace: number;
  },
) => {
  const { out } = ctx;
  const { databaseWith } = connect(ctx);
  if (opts.html !== undefined) {
    // A page that cannot be written is refused before anything is read.
    try {
      await assertWritablePath(opts.html);
    } catch (error) {
      throw new Refused(`--html: ${messageOf(error)}`);
    }
  }
  const { readClock, readNodeStates } = await import("../node_state.ts");
  const { readDrift } = await import("../drift.ts");
  const report = await import("../report.ts");
  // One read; every form (text, --json, --html) is rendered from it. Silence is judged on the
  // database's clock (the one that stamped each report's receipt), read alongside: a clock read
  // a moment before a report's receipt judges that node quiet for 0 s, never silent.
  const read = (sql: Sql) => Promise.all([readNodeStates(sql), readDrift(sql), readClock(sql)]);
  // Reads only: from the standby when one is given (every write goes to the primary).
  let source: import("../read_source.ts").ReadSource = { kind: "primary" };
  let sourceText = "";
  let states, drift, now;
  if (opts.databaseRead !== undefined && opts.databaseRead !== "") {
    const standby = await import("../read_source.ts");
    const connected = await standby.connectStandby(opts.databaseRead, { maxLagMs: opts.maxLag });
    ctx.cleanups.push(() => connected.sql.end({ timeout: 5 }));
    source = connected.source;
    sourceText = standby.sourceText(source);
    [states, drift, now] = await read(connected.sql);
  } else {
    // No query of this read sends or reads an array: the driver's type query is a round trip
    // per connection for nothing. Two connections, opened at once: the migrations check and the
    // three reads are sent together (not the reads after the check), the states and the drift on
    // one each, the check and the clock behind them. Every read is awaited before the command
    // ends: its connections are closed without waiting for the server to close them.
    [, [states, drift, now]] = await databaseWith(opts, {
      max: READ_CONNECTIONS,
      fetchTypes: false,
      closeWithoutWaiting: true,
    }, read);
  }
  // status builds only the machines it lists (every node is still judged and counted).
  const board = (kind === "status" ? report.gatherStatus : report.gatherBoard)(
    states,
    { now, graceMs: opts.grace },
    drift,
  );
  const json = (text: string) =>
    source.kind === "primary"
      ? text
      : jsonText({ ...JSON.parse(text), readFrom: source }, 2) + "\n";
  if (kind === "board") {
    if (opts.html !== undefined) {
      const { boardHtml } = await import("../board_html.ts");
      try {
        await writeFileAtomic(opts.html, boardHtml(board));
      } catch (error) {
        throw new Refused(messageOf(error));
      }
      out(
        `wrote the board of ${board.nodes} node${board.nodes === 1 ? "" : "s"} to ${opts.html}\n`,
      );
    }
    if (opts.json && source.kind === "primary") {
      for (const part of report.boardJsonParts(board)) out(part);
    } else if (opts.json) out(json(report.boardJson(board)));
    else if (opts.html === undefined) out(sourceText + report.boardText(board));
  } else {
    out(opts.json ? json(report.statusJson(board)) : sourceText + report.statusText(board));
    ctx.code = report.attentionMachines(board).length > 0 ? 1 : 0;
  }
};

/** What the options of `status` and `board` parse to (`--html`: `board`'s only). */
export type ReadOptions = Parameters<ReturnType<typeof boardAction>>[0];

/** The connections `status` and `board` read on. */
const READ_CONNECTIONS = 2;
