/**
 * The host's link's read of its two messages (a {@linkcode DeclarationMessage} it consumes or
 * keeps, a {@linkcode ReportMessage} it journaled and checks before sending) without zod: a
 * message that is valid is read by a fast check; anything else (not UTF-8 JSON, a repeated key, a
 * problem, a report carrying a drift summary) is left to the zod schema of lib/broker.ts, loaded
 * only then, which decides and says every problem. So the answer and the errors are the schema's,
 * and a link whose messages are valid never loads zod (1.7 MiB less at the link's median, an apply
 * 3 % cheaper: 2026-12-02).
 *
 * A declaration message is checked by the validator generated from its schema
 * (./broker_validators.js, by scripts/validators.ts). A report is still checked by hand-written
 * plain checks (its text rules, no NUL and no lone surrogate, are refinements JSON Schema cannot
 * say), reading its keys, values and bounds from lib/report_rules.ts as the schema does. Both
 * accept only what the schema accepts (tests/lib/broker_read_test.ts); where unsure they refuse,
 * and the schema decides.
 *
 * @module
 */

import type { DeclarationMessage, ReportMessage } from "./broker.ts";
import { NODE_NAME } from "./broker_names.ts";
import { duplicateKeys } from "./json_keys.ts";
import { isDeclarationMessage } from "./broker_validators.js";
import { MAX_INTERVAL_MS } from "./link_interval.ts";
import {
  CHANGE_KEYS,
  CHANGE_KINDS,
  DIGEST,
  EPOCH,
  isReportText,
  isReportTime,
  MAX_CHANGES,
  MAX_HOST_VERSION_LENGTH,
  MAX_PROBLEM_MESSAGE_LENGTH,
  MAX_PROBLEM_PLACE_LENGTH,
  MAX_PROBLEMS,
  MAX_REPORT_BYTES,
  MAX_REPORT_INT,
  OUTCOMES,
  type Problem,
  PROBLEM_KEYS,
  PROBLEM_OPTIONAL_KEYS,
  problemsFit,
  REPORT_KEYS,
  REPORT_OPTIONAL_KEYS,
  SOURCE,
  TRIGGERS,
} from "./report_rules.ts";

/** One strict decoder for every body (a decode without `stream` keeps no state between calls). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * What `z.iso.datetime({ offset: true })` accepts (zod 4.6.7's pattern, as it is: a test holds
 * the two equal, so that a zod upgrade that changes it is seen).
 */
export const DATETIME_OFFSET =
  /^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$/;
const TRIGGER: ReadonlySet<unknown> = new Set(TRIGGERS);
const OUTCOME: ReadonlySet<unknown> = new Set(OUTCOMES);
const CHANGE: ReadonlySet<unknown> = new Set(CHANGE_KINDS);

type Plain = Record<string, unknown>;

function isObject(v: unknown): v is Plain {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether `o` has every key of `required`, and no key but those and `optional`. */
function hasKeys(o: Plain, required: readonly string[], optional: readonly string[] = []): boolean {
  let found = 0;
  for (const key in o) {
    if (!Object.hasOwn(o, key)) continue;
    if (required.includes(key)) found++;
    else if (!optional.includes(key)) return false;
  }
  return found === required.length;
}

function isInt(v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= max;
}

function matches(v: unknown, pattern: RegExp): boolean {
  return typeof v === "string" && pattern.test(v);
}

/**
 * Whether `v` is a {@linkcode DeclarationMessage}, by the validator generated from the schema
 * (./broker_validators.js, made by scripts/validators.ts from lib/broker.ts): exactly what the
 * schema accepts (false: let the schema say why).
 */
export function plainDeclarationMessage(v: unknown): v is DeclarationMessage {
  return isDeclarationMessage(v);
}

// `drift` is not among them: a report carrying one is left to the schema.
const REPORT_OPTIONAL = REPORT_OPTIONAL_KEYS.filter((k) => k !== "drift");

/**
 * Whether `v` is a {@linkcode ReportMessage} without a drift summary, by plain checks (false: let
 * the schema say).
 */
export function plainReportMessage(v: unknown): v is ReportMessage {
  if (!isObject(v) || !hasKeys(v, REPORT_KEYS, REPORT_OPTIONAL)) return false;
  if (
    v.kind !== "report" || !matches(v.node, NODE_NAME) || !isInt(v.generation, 0, MAX_REPORT_INT) ||
    !TRIGGER.has(v.trigger) || !matches(v.at, DATETIME_OFFSET) || !isReportTime(v.at as string) ||
    (v.intervalMs !== undefined && !isInt(v.intervalMs, 1000, MAX_INTERVAL_MS)) ||
    typeof v.hostVersion !== "string" || v.hostVersion.length > MAX_HOST_VERSION_LENGTH ||
    !isReportText(v.hostVersion) ||
    (v.source !== undefined && !matches(v.source, SOURCE)) ||
    (v.epoch !== undefined && !matches(v.epoch, EPOCH)) ||
    !OUTCOME.has(v.outcome) || !isInt(v.applied, 0, MAX_REPORT_INT) ||
    !isInt(v.total, 0, MAX_REPORT_INT) ||
    !matches(v.declaration, DIGEST) ||
    !Array.isArray(v.changes) || v.changes.length > MAX_CHANGES ||
    !Array.isArray(v.problems) || v.problems.length > MAX_PROBLEMS
  ) {
    return false;
  }
  for (const c of v.changes as unknown[]) {
    if (
      !isObject(c) || !hasKeys(c, CHANGE_KEYS) || typeof c.id !== "string" ||
      !isReportText(c.id) || typeof c.type !== "string" || !isReportText(c.type) ||
      !CHANGE.has(c.change)
    ) {
      return false;
    }
  }
  for (const p of v.problems as unknown[]) {
    if (
      !isObject(p) || !hasKeys(p, PROBLEM_KEYS, PROBLEM_OPTIONAL_KEYS) ||
      typeof p.message !== "string" || p.message.length > MAX_PROBLEM_MESSAGE_LENGTH ||
      !isReportText(p.message) ||
      (p.id !== undefined &&
        !(typeof p.id === "string" && p.id.length <= MAX_PROBLEM_PLACE_LENGTH &&
          isReportText(p.id))) ||
      (p.path !== undefined &&
        !(typeof p.path === "string" && p.path.length <= MAX_PROBLEM_PLACE_LENGTH &&
          isReportText(p.path)))
    ) {
      return false;
    }
  }
  return problemsFit(v.problems as Problem[]);
}

/**
 * The body's JSON value, or undefined when it is not UTF-8 JSON or repeats a key. Its depth is
 * not scanned here: the plain checks accept only the messages' own shapes, a few levels deep,
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
 * only for a body that is not a valid report without drift.
 *
 * @param what the message, as the error names it.
 * @throws {MessageError} naming each problem with its path (the schema's).
 */
export async function checkReportMessage(body: Uint8Array, what: string): Promise<void> {
  // A body larger than a report may be is not decoded here: the schema's decode refuses it.
  if (body.length <= MAX_REPORT_BYTES && plainReportMessage(plainJson(body))) return;
  const { decodeMessage, ReportMessage } = await import("./broker.ts");
  decodeMessage(ReportMessage, body, what);
}
