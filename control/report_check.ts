/**
 * What ingest calls for each delivery: {@linkcode readReport} reads a valid report without zod, by
 * the validator generated from its one schema, `ReportMessage` of lib/broker.ts (lib/broker_read.ts
 * {@linkcode plainReport}, the same read as the host's link's: the size bound, the decode, the
 * validator, the check for a repeated key), and leaves anything else to `decodeMessage` with the
 * schema, which refuses it with the usual messages. So the answer is the schema's, the same
 * report or the same error (tests/control/report_check_test.ts holds the two equal over seeded
 * mutations of valid reports).
 *
 * @module
 */

import { decodeMessage, ReportMessage } from "../lib/broker.ts";
import { type PlainReport, plainReport } from "../lib/broker_read.ts";

/**
 * A report decoded, with the JSON text of its changes and problems (what ingest stores as jsonb):
 * the same JSON values as `JSON.stringify(report.changes)` and `JSON.stringify(report.problems)`,
 * an object's keys perhaps in the body's order rather than the schema's (jsonb keeps no order).
 */
export type DecodedReport = PlainReport;

/**
 * Decodes a report's body (UTF-8 JSON) as `decodeMessage(ReportMessage, body, what)` does, with
 * the same result and the same errors.
 *
 * @throws {MessageError} naming each problem with its path (from `decodeMessage`).
 */
export function decodeReport(body: Uint8Array, what: string): ReportMessage {
  return readReport(body, what).report;
}

/**
 * {@linkcode decodeReport}, with the JSON text of the report's changes and problems (taken from
 * the check for repeated keys when the body is `JSON.stringify`'s own text).
 *
 * @throws {MessageError} naming each problem with its path (from `decodeMessage`).
 */
export function readReport(body: Uint8Array, what: string): DecodedReport {
  const plain = plainReport(body);
  if (plain !== undefined) return plain;
  const report = decodeMessage(ReportMessage, body, what);
  return {
    report,
    changes: JSON.stringify(report.changes),
    problems: JSON.stringify(report.problems),
  };
}
