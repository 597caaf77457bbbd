/**
 * The host's link's read of its two messages (a {@linkcode DeclarationMessage} it consumes or
 * keeps, a {@linkcode ReportMessage} it journaled and checks before sending) without zod: a
 * message that is valid is read by the validator generated from its schema (by
 * scripts/validators.ts: ./broker_validators.js, ./report_validators.js); anything else (not
 * UTF-8 JSON, a repeated key, a problem) is left to the zod schema of lib/broker.ts, loaded only
 * then, which decides and says every problem. So the answer and the errors are the schema's, and
 * a link whose messages are valid never loads zod (1.7 MiB less at the link's median, an apply 3 %
 * cheaper: 2026-12-02). Ingest reads a report the same way ({@linkcode plainReport}, then the
 * schema: control/report_check.ts).
 *
 * A validator accepts exactly what its schema accepts (tests/lib/broker_read_test.ts,
 * tests/control/report_check_test.ts): a report's refinements are the predicates of
 * lib/report_rules.ts, which the schema and the generated code both call.
 *
 * @module
 */

import type { DeclarationMessage, ReportMessage } from "./broker.ts";
import { duplicateKeys } from "./json_keys.ts";
import { isDeclarationMessage } from "./broker_validators.js";
import { isReportMessage } from "./report_validators.js";
import { MAX_REPORT_BYTES } from "./report_rules.ts";

/** One strict decoder for every body (a decode without `stream` keeps no state between calls). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Whether `v` is a {@linkcode DeclarationMessage}, by the validator generated from the schema
 * (./broker_validators.js, made by scripts/validators.ts from lib/broker.ts): exactly what the
 * schema accepts (false: let the schema say why).
 */
export function plainDeclarationMessage(v: unknown): v is DeclarationMessage {
  return isDeclarationMessage(v);
}

/**
 * A valid report read without zod: the report, and the JSON text of its changes and problems
 * (what ingest stores as jsonb).
 */
export interface PlainReport {
  /**
   * The report: the schema's value (`ReportMessage` has no default and no transform, so it is
   * the body's JSON value), its keys in the body's order rather than the schema's. Nothing reads
   * the order: ingest's insert takes its fields by name and stores its changes, problems and drift
   * summary as jsonb, which keeps none.
   */
  report: ReportMessage;
  /** The JSON text of `report.changes` (the same JSON value as its `JSON.stringify`). */
  changes: string;
  /** The JSON text of `report.problems` (the same JSON value as its `JSON.stringify`). */
  problems: string;
}

/**
 * A report's body (UTF-8 JSON) read without zod when it is a valid report: the size bound, the
 * decode, the validator generated from `ReportMessage` (./report_validators.js) and the check for
 * a repeated key; undefined when any of them refuses (let the schema's decode say why).
 *
 * A repeated key is found without scanning the text when the body is the JSON.stringify of what it
 * parses to (the link journals and publishes `JSON.stringify(report) + "\n"`): an object's keys in
 * that output are its own keys, each once, so such a body repeats none. Any other body is scanned
 * (lib/json_keys.ts). The texts of the changes and problems are taken from that JSON.stringify.
 * Depth is not scanned: the validator accepts only a report's own shapes, a few levels deep.
 */
export function plainReport(body: Uint8Array): PlainReport | undefined {
  // Larger than a report may be: the schema's decode refuses it before reading it.
  if (body.length > MAX_REPORT_BYTES) return undefined;
  let text: string;
  let value: unknown;
  try {
    text = UTF8.decode(body);
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isReportMessage(value)) return undefined;
  const report = value as ReportMessage;
  const canonical = canonicalOf(report);
  if (isCanonical(text, canonical.text)) {
    return { report, changes: canonical.changes, problems: canonical.problems };
  }
  if (duplicateKeys(text).length > 0) return undefined;
  return {
    report,
    changes: JSON.stringify(report.changes),
    problems: JSON.stringify(report.problems),
  };
}

/**
 * `JSON.stringify(value)` of a report (an object JSON.parse made, so its keys stringify in
 * `Object.keys` order and none is undefined), written key by key so that the text of its changes
 * and problems is kept rather than written a second time.
 */
function canonicalOf(value: object): { text: string; changes: string; problems: string } {
  let text = "{";
  let changes = "";
  let problems = "";
  let first = true;
  for (const k of Object.keys(value)) {
    const json = JSON.stringify((value as Record<string, unknown>)[k]);
    if (k === "changes") changes = json;
    else if (k === "problems") problems = json;
    text += `${first ? "" : ","}${JSON.stringify(k)}:${json}`;
    first = false;
  }
  return { text: `${text}}`, changes, problems };
}

/** Whether `text` is `canonical`, or `canonical` and a newline (what the link publishes). */
function isCanonical(text: string, canonical: string): boolean {
  return text === canonical ||
    (text.length === canonical.length + 1 && text.endsWith("\n") && text.startsWith(canonical));
}

/**
 * The body's JSON value, or undefined when it is not UTF-8 JSON or repeats a key. Its depth is
 * not scanned here: the validator accepts only the message's own shape, a few levels deep,
 * and anything else goes to the schema's decode, which bounds it (lib/broker.ts).
 */
function plainJson(body: Uint8Array): unknown {
  try {
    const text = UTF8.decode(body);
    const value = JSON.parse(text);
    return duplicateKeys(text).length === 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads a declaration message (UTF-8 JSON) as `decodeMessage(DeclarationMessage, body, what)` of
 * lib/broker.ts does, loading zod only for a body that is not a valid one.
 *
 * @param what the message, as the error names it ("the declaration message").
 * @throws {MessageError} naming each problem with its path (the schema's).
 */
export async function readDeclarationMessage(
  body: Uint8Array,
  what: string,
): Promise<DeclarationMessage> {
  const v = plainJson(body);
  if (plainDeclarationMessage(v)) {
    // The schema's value: its keys in the schema's order, whatever the body's.
    return {
      kind: v.kind,
      node: v.node,
      generation: v.generation,
      digest: v.digest,
      pushedAt: v.pushedAt,
      ...(v.epoch !== undefined ? { epoch: v.epoch } : {}),
      declaration: v.declaration,
      ...(v.keyId !== undefined ? { keyId: v.keyId } : {}),
      ...(v.signature !== undefined ? { signature: v.signature } : {}),
      ...(v.handoff !== undefined
        ? {
          handoff: {
            from: v.handoff.from,
            to: v.handoff.to,
            key: v.handoff.key,
            signature: v.handoff.signature,
          },
        }
        : {}),
    };
  }
  const { decodeMessage, DeclarationMessage } = await import("./broker.ts");
  return decodeMessage(DeclarationMessage, body, what);
}

/**
 * Checks a report message (UTF-8 JSON) as `decodeMessage(ReportMessage, body, what)` of
 * lib/broker.ts does, without making its value (the link sends the body as it is), loading zod
 * only for a body that is not a valid report ({@linkcode plainReport}).
 *
 * @param what the message, as the error names it.
 * @throws {MessageError} naming each problem with its path (the schema's).
 */
export async function checkReportMessage(body: Uint8Array, what: string): Promise<void> {
  if (plainReport(body) !== undefined) return;
  const { decodeMessage, ReportMessage } = await import("./broker.ts");
  decodeMessage(ReportMessage, body, what);
}
