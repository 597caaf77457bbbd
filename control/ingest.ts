/**
 * Reports from the broker into the inventory: consume `mesh.reports`, check each report against
 * its routing key (the broker lets a node publish only under its own), insert in batches and
 * acknowledge a batch only after its transaction committed, so a report is never lost between
 * the two. A report delivered twice (a lost acknowledgement, a lost publisher confirm, a broker
 * member failing over) is recorded once: its identity is the sha256 of its bytes (the link sends
 * its journaled file unchanged), unique per node (migration 0005_scale_out).
 *
 * The pipeline (docs/mesh-control.md, "ingest"): each delivery is decoded, checked and hashed as
 * it arrives, while earlier batches' transactions run (they overlap, in order: see
 * {@linkcode recordBatch}); a batch is written when it is full or
 * 20 ms after its first delivery, in one transaction of four statements whatever its size (the
 * enrolled nodes, one multi-row insert, the drift summaries), and the node's current state
 * (`last_reports`, migration 0006_node_state) is kept by the inventory's trigger in that same
 * transaction. Acknowledgements go out in delivery order, each one `multiple` for its batch, only
 * after that batch committed. `--drain` ends once the queue has no ready message: the reports
 * still unacknowledged were delivered to this consumer and are written before it returns.
 *
 * @module
 */

import type { ConfirmChannel, ConsumeMessage } from "amqplib";
import { createHash } from "node:crypto";
import { MessageError, nodeOfReportKey, type ReportMessage, REPORTS_QUEUE } from "../lib/broker.ts";
import type { Sql } from "./db.ts";
import { recordDrift } from "./drift.ts";
import { type DecodedReport, readReport } from "./report_check.ts";

/** A report not recorded, and why. */
export interface Dropped {
  routingKey: string;
  reason: string;
}

/** What an ingest did. */
export interface IngestResult {
  ingested: number;
  dropped: Dropped[];
  /** Reports delivered again that were recorded already (acknowledged, not recorded twice). */
  duplicates: number;
}

/** Options for {@linkcode ingestReports}. */
export interface IngestOptions {
  /** Stop once the queue is empty (default: run until `signal` aborts). */
  drain?: boolean;
  /** Stop consuming when aborted. */
  signal?: AbortSignal;
  /** Reports per transaction at most (default 500). */
  batch?: number;
  /** Called with each dropped report as it is dropped (the CLI prints it). */
  onDrop?: (dropped: Dropped) => void;
  /** Called after each committed batch. */
  onBatch?: (count: number) => void;
}

/** A delivery checked on arrival: a report to record, or the reason it is dropped. */
interface Checked {
  message: ConsumeMessage;
  report?: ReportMessage;
  /** The JSON text of the report's changes and problems, as stored. */
  texts?: { changes: string; problems: string };
  identity?: string;
  reason?: string;
}

/** What one batch's transaction did, applied to the result once it committed. */
interface Recorded {
  ingested: number;
  duplicates: number;
  dropped: Dropped[];
}

/** A batch handed to the database, as the batch after it waits for it. */
interface Stage {
  /** Settles once the batch's insert returned (its report ids drawn), or it failed before. */
  inserted: Promise<void>;
  /** Whether the batch committed (false: it, or a batch before it, failed and rolled back). */
  committed: Promise<boolean>;
}

/** Thrown inside a batch's transaction to roll it back when a batch before it failed. */
class EarlierBatchFailed extends Error {}

/**
 * Consumes reports into the `reports` table.
 *
 * A report that does not decode, whose body names another node than its routing key, whose
 * node is not enrolled, or that is not of its node's current epoch ({@linkcode epochProblem}) is
 * dropped (acknowledged, not recorded) and told through `onDrop`, never silently.
 *
 * @throws the database's error when a batch cannot be inserted (its reports, and any delivered
 *   after them, stay unacknowledged and return to the queue when the channel closes).
 */
export async function ingestReports(
  sql: Sql,
  channel: ConfirmChannel,
  options: IngestOptions = {},
): Promise<IngestResult> {
  const batchSize = options.batch ?? 500;
  const result: IngestResult = { ingested: 0, dropped: [], duplicates: 0 };
  // Nothing waiting: a drain is done before it starts.
  if (options.drain && (await channel.checkQueue(REPORTS_QUEUE)).messageCount === 0) return result;
  // Batches' transactions overlap (as many as the pool has connections), the next ones arriving.
  await channel.prefetch(batchSize * 3);
  let buffer: Checked[] = [];
  // The last batch handed to the database: each batch's insert starts after the one before it
  // inserted (report ids follow delivery order), its drift summaries and its commit come after
  // the one before it committed, and its acknowledgement after the one before it acknowledged.
  let previous: Stage = { inserted: Promise.resolve(), committed: Promise.resolve(true) };
  let acknowledged: Promise<void> = Promise.resolve();
  let failure: unknown;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const drop = (dropped: Dropped) => {
    result.dropped.push(dropped);
    options.onDrop?.(dropped);
  };

  const flush = () => {
    if (timer !== undefined) clearTimeout(timer), timer = undefined;
    const taken = buffer;
    buffer = [];
    if (taken.length === 0 || failure !== undefined) return acknowledged;
    const before = previous;
    let inserted!: () => void;
    const stage: Stage = {
      inserted: new Promise<void>((resolve) => inserted = resolve),
      committed: Promise.resolve(false),
    };
    const recording = recordBatch(sql, taken, before, inserted);
    stage.committed = recording.then((r) => r !== undefined, () => false);
    previous = stage;
    // Never rejects: a failure is kept in `failure`, thrown by the loop below. It settles only
    // after every batch before it settled (acknowledged or failed) and this one's transaction
    // ended: a batch failing while the one before it is still committing neither ends ingest
    // before that one ends nor keeps that one, once committed, from being acknowledged.
    acknowledged = acknowledged.then(() => recording).then((recorded) => {
      // A batch before this one failed: this one rolled back and stays unacknowledged.
      if (recorded === undefined) return;
      try {
        result.ingested += recorded.ingested;
        result.duplicates += recorded.duplicates;
        for (const dropped of recorded.dropped) drop(dropped);
        // Committed, after every batch before it: this batch, and every delivery before it,
        // acknowledged at once.
        channel.ack(taken[taken.length - 1]!.message, true);
        options.onBatch?.(taken.length);
      } catch (error) {
        failure ??= error;
      }
    }, (error) => {
      failure ??= error;
    });
    return acknowledged;
  };

  const { consumerTag } = await channel.consume(REPORTS_QUEUE, (message) => {
    if (message === null) {
      failure ??= new Error("The broker cancelled the reports consumer");
      return;
    }
    let checked: Checked;
    try {
      checked = check(message);
    } catch (error) {
      // Not a problem of the report (those are dropped): stop, leaving it unacknowledged.
      failure ??= error;
      return;
    }
    if (checked.reason !== undefined) {
      drop({ routingKey: message.fields.routingKey, reason: checked.reason });
    }
    buffer.push(checked);
    if (buffer.length >= batchSize) void flush();
    else timer ??= setTimeout(() => void flush(), 20);
  }, { noAck: false });

  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, options.drain ? 25 : 50));
      if (failure !== undefined) throw failure;
      if (options.signal?.aborted) break;
      // Nothing ready in the queue: every report left was delivered to this consumer already
      // (unacknowledged ones are not counted), and arrives before the cancel below completes.
      if (options.drain && (await channel.checkQueue(REPORTS_QUEUE)).messageCount === 0) break;
    }
  } finally {
    await channel.cancel(consumerTag).catch(() => {});
    await flush();
  }
  if (failure !== undefined) throw failure;
  return result;
}

/**
 * Checks a delivery against its routing key and the report schema (a valid report without zod:
 * control/report_check.ts), and hashes its body.
 */
function check(message: ConsumeMessage): Checked {
  const key = message.fields.routingKey;
  const node = nodeOfReportKey(key);
  if (node === undefined) return { message, reason: "the routing key is not report.<node>" };
  let decoded: DecodedReport;
  try {
    decoded = readReport(message.content, `report from "${node}"`);
  } catch (error) {
    if (!(error instanceof MessageError)) throw error;
    return { message, reason: error.message };
  }
  const { report, changes, problems } = decoded;
  if (report.node !== node) {
    return {
      message,
      reason: `the report names node "${report.node}" but was published as "${node}"`,
    };
  }
  return {
    message,
    report,
    texts: { changes, problems },
    identity: bodyIdentitySync(message.content),
  };
}

/**
 * Records a batch's reports in one transaction: the nodes enrolled, one insert of every report
 * (a duplicate identity skipped), the drift summaries. Reports of nodes not enrolled are
 * returned as dropped; nothing is told before the transaction committed.
 *
 * It overlaps the batch before it (`before`) and keeps its order: the insert waits for the
 * insert before it (so report ids, and with them each node's last report in `last_reports`,
 * follow delivery order, and a report delivered in both batches waits on the earlier one's
 * identity and is skipped once it committed), the drift summaries and the commit wait for the
 * commit before it (so the later summary wins, and this batch never holds a lock the one before
 * it waits for). `inserted` is called once the insert returned or the batch failed.
 *
 * @returns what it recorded, or undefined when a batch before it failed (rolled back).
 * @throws the database's error when the batch itself fails.
 */
async function recordBatch(
  sql: Sql,
  batch: Checked[],
  before: Stage,
  inserted: () => void,
): Promise<Recorded | undefined> {
  const recorded: Recorded = { ingested: 0, duplicates: 0, dropped: [] };
  const reports = batch.filter((c) => c.report !== undefined);
  try {
    if (reports.length === 0) {
      await before.inserted;
      inserted();
      return await before.committed ? recorded : undefined;
    }
    await sql.begin(async (tx) => {
      const names = [...new Set(reports.map((r) => r.report!.node))];
      // Each node's epoch, and whether its current declaration carries one (pushed since
      // epochs; migration 0009_epochs): what a report must carry to be recorded for it.
      const epochs = new Map(
        (await tx<{ name: string; epoch: string; declared: boolean | null }[]>`
          select n.name, n.epoch::text as epoch, (
            select d.epoch is not null from declarations d where d.node = n.name
            order by d.generation desc limit 1) as declared
          from nodes n where n.name = any(${names})`).map((r) => [r.name, r]),
      );
      const known = new Set(epochs.keys());
      const unknown = names.filter((n) => !known.has(n));
      // A report from a node that was removed is dropped, never re-creating it, and said as such.
      const removed = unknown.length === 0 ? new Map<string, Date>() : new Map(
        (await tx<{ name: string; removed_at: Date }[]>`
          select name, removed_at from removals where what = 'node' and name = any(${unknown})`)
          .map((r) => [r.name, r.removed_at]),
      );
      const rows = [];
      const accepted: { report: ReportMessage; identity: string }[] = [];
      for (const { report, message, identity, texts } of reports) {
        if (!known.has(report!.node)) {
          const when = removed.get(report!.node);
          recorded.dropped.push({
            routingKey: message.fields.routingKey,
            reason: when === undefined
              ? `node "${report!.node}" is not enrolled`
              : `node "${
                report!.node
              }" was removed at ${when.toISOString()}; its report is not recorded`,
          });
          continue;
        }
        const stale = epochProblem(report!, epochs.get(report!.node)!);
        if (stale !== undefined) {
          recorded.dropped.push({ routingKey: message.fields.routingKey, reason: stale });
          continue;
        }
        accepted.push({ report: report!, identity: identity! });
        rows.push({
          node: report!.node,
          generation: report!.generation,
          digest: report!.declaration,
          outcome: report!.outcome,
          applied: report!.applied,
          total: report!.total,
          trigger: report!.trigger,
          problems: texts!.problems,
          changes: texts!.changes,
          host_version: report!.hostVersion,
          interval_ms: report!.intervalMs ?? null,
          reported_at: report!.at,
          identity: identity!,
        });
      }
      const json = JSON.stringify(rows);
      await before.inserted;
      if (rows.length > 0) {
        // One JSON text parameter, problems and changes in it as JSON strings: json_to_recordset
        // and a cast of each to jsonb cost the server less than jsonb_to_recordset of the same
        // rows as nested values (~35 against 45-60 ms of server CPU a 500-row batch, 2026-12-01).
        const fresh = await tx`
          insert into reports (node, generation, digest, outcome, applied, total, trigger,
            problems, changes, host_version, interval_ms, reported_at, identity)
          select x.node, x.generation, x.digest, x.outcome, x.applied, x.total, x.trigger,
            x.problems::jsonb, x.changes::jsonb, x.host_version, x.interval_ms,
            x.reported_at::timestamptz, decode(x.identity, 'hex')
          from json_to_recordset(${json}::text::json) as x(
            node text, generation integer, digest text, outcome text, applied integer,
            total integer, trigger text, problems text, changes text, host_version text,
            interval_ms integer, reported_at text, identity text)
          on conflict (node, identity) where identity is not null do nothing
          returning encode(identity, 'hex') as identity`;
        inserted();
        recorded.ingested = fresh.count;
        recorded.duplicates = rows.length - fresh.count;
        if (!await before.committed) throw new EarlierBatchFailed();
        // A report delivered again says nothing new: its drift summary must not look fresh again.
        const identities = new Set(fresh.map((r) => r.identity as string));
        await recordDrift(
          tx,
          accepted.filter((a) => identities.has(a.identity)).map((a) => a.report),
        );
      } else {
        inserted();
        if (!await before.committed) throw new EarlierBatchFailed();
      }
    });
    return recorded;
  } catch (error) {
    if (error instanceof EarlierBatchFailed) return undefined;
    throw error;
  } finally {
    inserted();
  }
}

/**
 * Why a report is not of its node's current epoch (docs/design.md, "Hostile inputs", rule 6), or
 * undefined when it is: it carries the node's epoch, or carries none while the node's current
 * declaration carries none either (pushed before epochs, or never pushed), or it is `undeclared`.
 * A report carrying another epoch was made about a declaration pushed before the node was removed
 * and enrolled again; one about a declaration carrying none, once the node's declarations carry
 * its epoch, was made before the removal (or by a host older than epochs, which cannot read a
 * declaration with an epoch). Neither is recorded for the node that holds the name now. An
 * `undeclared` report carries no epoch because its link holds no declaration at all: it claims
 * none, and says only that the link is there (a node pushed whose link has not received the push
 * yet is `outstanding`, not unheard).
 */
export function epochProblem(
  report: Pick<ReportMessage, "node" | "epoch" | "outcome">,
  node: { epoch: string; declared: boolean | null },
): string | undefined {
  if (report.epoch === node.epoch) return undefined;
  if (report.epoch !== undefined) {
    return `the report is of epoch ${report.epoch}, and node "${report.node}" is now of epoch ${node.epoch} (removed and enrolled anew since): not recorded`;
  }
  if (node.declared !== true || report.outcome === "undeclared") return undefined;
  return `the report carries no epoch, and node "${report.node}"'s declarations carry epoch ${node.epoch} (a report from before the node was enrolled anew, or from a host older than epochs): not recorded`;
}

/** A report's identity: the sha256 of its message body, as hex. */
export function bodyIdentity(body: Uint8Array): Promise<string> {
  return Promise.resolve(bodyIdentitySync(body));
}

function bodyIdentitySync(body: Uint8Array): string {
  return createHash("sha256").update(body).digest("hex");
}
