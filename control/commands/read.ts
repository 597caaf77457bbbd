/**
 * What `mesh-control status` and `board` share: their read of the inventory (their options are
 * declared in control/options.ts).
 *
 * @module
 */

import { assertWritablePath, messageOf, writeFileAtomic } from "../../lib/atomic.ts";
import type { Sql } from "../db.ts";
import { connect, type Connections, type ControlContext, Refused } from "./context.ts";

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
  const { readFleet } = await import("../node_state.ts");
  const report = await import("../report.ts");
  // One read, judged by the database on its own clock (the one that stamped each report's
  // receipt): every form (text, --json, --html) is rendered from it. status receives only the
  // nodes it lists (every node is still judged and counted).
  const read = (sql: Sql) => readFleet(sql, { graceMs: opts.grace, listedOnly: kind === "status" });
  // Reads only: from the standby when one is given (every write goes to the primary).
  let source: import("../read_source.ts").ReadSource = { kind: "primary" };
  let sourceText = "";
  let fleet;
  if (opts.databaseRead !== undefined && opts.databaseRead !== "") {
    const standby = await import("../read_source.ts");
    const connected = await standby.connectStandby(opts.databaseRead, { maxLagMs: opts.maxLag });
    ctx.cleanups.push(() => connected.sql.end({ timeout: 5 }));
    source = connected.source;
    sourceText = standby.sourceText(source);
    fleet = await read(connected.sql);
  } else {
    // No query of this read sends or reads an array: the driver's type query is a round trip
    // per connection for nothing. Two connections: the migrations check is sent with the read,
    // not before it. The read is awaited before the command ends: its connections are closed
    // without waiting for the server to close them.
    [, fleet] = await databaseWith(opts, {
      max: READ_CONNECTIONS,
      fetchTypes: false,
      closeWithoutWaiting: true,
    }, read);
  }
  // Where the read came from, in JSON, when not the primary.
  const from = source.kind === "primary" ? {} : { readFrom: source };
  if (kind === "board" && opts.json && opts.html === undefined) {
    // The database's text as it is: no machine is parsed.
    for (const part of report.boardJsonParts(fleet, from)) out(part);
    return;
  }
  const board = report.boardOf(fleet);
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
    if (opts.json) { for (const part of report.boardJsonParts(fleet, from)) out(part); }
    else if (opts.html === undefined) out(sourceText + report.boardText(board));
  } else {
    out(opts.json ? report.statusJson(board, from) : sourceText + report.statusText(board));
    ctx.code = report.attentionMachines(board).length > 0 ? 1 : 0;
  }
};

/** What the options of `status` and `board` parse to (`--html`: `board`'s only). */
export type ReadOptions = Parameters<ReturnType<typeof boardAction>>[0];

/** The connections `status` and `board` read on. */
const READ_CONNECTIONS = 2;
