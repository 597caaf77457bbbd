/**
 * A report read without zod when it is valid: {@linkcode decodeReport} is what ingest calls for
 * each delivery. The one definition of a report stays `ReportMessage` (lib/broker.ts); this plain
 * check is a precompiled copy of its rules for the common case, reading the same keys, values and
 * bounds (lib/report_rules.ts), and everything it is unsure of (a key it does not expect, a value
 * out of a rule, a repeated key, text that is not JSON, a body larger than a report may be) goes to
 * `decodeMessage` with the schema, which refuses it with the usual messages or accepts it. So a
 * report this check accepts is one the schema accepts with the same values
 * (tests/control/report_check_test.ts holds the two equal over seeded mutations of valid reports).
 *
 * A repeated key is found without scanning the text when the body is the JSON.stringify of what it
 * parses to (the link publishes `JSON.stringify(report) + "\n"`): an object's keys in that output
 * are its own keys, each once, so such a body repeats none. Any other body is scanned
 * (lib/json_keys.ts).
 *
 * @module
 */

import { decodeMessage, MAX_INTERVAL_MS, NODE_NAME, ReportMessage } from "../lib/broker.ts";
import { DriftSummary } from "../lib/drift.ts";
import { duplicateKeys } from "../lib/json_keys.ts";
import {
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
  problemsFit,
  REPORT_KEYS,
  REPORT_OPTIONAL_KEYS,
  SOURCE,
  TRIGGERS,
} from "../lib/report_rules.ts";

/** The same strict decoder as `decodeMessage`'s (a decode without `stream` keeps no state). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The pattern of `ReportMessage.at` (zod's ISO date-time with an offset), taken from the schema. */
const AT = patternOf(ReportMessage.shape.at);

/** Every key a report may have (`ReportMessage` is strict). */
const ALL_KEYS: ReadonlySet<string> = new Set([...REPORT_KEYS, ...REPORT_OPTIONAL_KEYS]);
const TRIGGER: ReadonlySet<unknown> = new Set(TRIGGERS);
const OUTCOME: ReadonlySet<unknown> = new Set(OUTCOMES);
const CHANGE: ReadonlySet<unknown> = new Set(CHANGE_KINDS);

function patternOf(schema: unknown): RegExp {
  const pattern = (schema as { _zod?: { pattern?: unknown } })._zod?.pattern;
  if (!(pattern instanceof RegExp)) {
    throw new Error("Cannot read the pattern of ReportMessage.at from its schema");
  }
  return pattern;
}

type Raw = Record<string, unknown>;

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** zod's `z.int().min(min).max(max)`: a safe integer at least `min` and at most `max`. */
function isInt(value: unknown, min: number, max: number): value is number {
  return Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
}

/**
 * One change: exactly `{id, type, change}`, strings (a report's text: no NUL, no lone surrogate),
 * `change` one of the kinds.
 */
function validChange(c: unknown): boolean {
  if (!isObject(c)) return false;
  let keys = 0;
  for (const k in c) {
    if (k !== "id" && k !== "type" && k !== "change") return false;
    keys++;
  }
  return keys === 3 && typeof c.id === "string" && isReportText(c.id) &&
    typeof c.type === "string" && isReportText(c.type) && CHANGE.has(c.change);
}

/**
 * One problem: `message`, and `id` and `path` when present, strings within their lengths and a
 * report's text (no NUL, no lone surrogate); nothing else.
 */
function validProblem(p: unknown): boolean {
  if (!isObject(p)) return false;
  for (const k in p) {
    const v = p[k];
    if (k === "message") {
      if (
        typeof v !== "string" || v.length > MAX_PROBLEM_MESSAGE_LENGTH || !isReportText(v)
      ) return false;
    } else if (k === "id" || k === "path") {
      if (typeof v !== "string" || v.length > MAX_PROBLEM_PLACE_LENGTH || !isReportText(v)) {
        return false;
      }
    } else return false;
  }
  return typeof p.message === "string";
}

/**
 * `value` as `ReportMessage.parse` returns it when the plain check is sure it is valid, else
 * undefined (it may still be valid: ask the schema). The values are those of `value` (the schema
 * returns the same values, its keys in its own order); a drift summary is the schema's
 * `DriftSummary` result.
 */
export function validReport(value: unknown): ReportMessage | undefined {
  if (!isObject(value)) return undefined;
  for (const k in value) if (!ALL_KEYS.has(k)) return undefined;
  // Own enumerable keys only: JSON.parse gives nothing else (a "__proto__" key is an own key,
  // refused above).
  const r = value;
  if (r.kind !== "report") return undefined;
  if (typeof r.node !== "string" || !NODE_NAME.test(r.node)) return undefined;
  if (!isInt(r.generation, 0, MAX_REPORT_INT)) return undefined;
  if (!TRIGGER.has(r.trigger)) return undefined;
  if (typeof r.at !== "string" || !AT.test(r.at) || !isReportTime(r.at)) return undefined;
  if (
    "intervalMs" in r &&
    !isInt(r.intervalMs, 1000, MAX_INTERVAL_MS)
  ) return undefined;
  if (
    typeof r.hostVersion !== "string" || r.hostVersion.length > MAX_HOST_VERSION_LENGTH ||
    !isReportText(r.hostVersion)
  ) {
    return undefined;
  }
  if ("source" in r && !(typeof r.source === "string" && SOURCE.test(r.source))) {
    return undefined;
  }
  if ("epoch" in r && !(typeof r.epoch === "string" && EPOCH.test(r.epoch))) return undefined;
  if (!OUTCOME.has(r.outcome)) return undefined;
  if (!isInt(r.applied, 0, MAX_REPORT_INT) || !isInt(r.total, 0, MAX_REPORT_INT)) return undefined;
  if (typeof r.declaration !== "string" || !DIGEST.test(r.declaration)) return undefined;
  const changes = r.changes;
  if (!Array.isArray(changes) || changes.length > MAX_CHANGES) return undefined;
  for (const c of changes) if (!validChange(c)) return undefined;
  const problems = r.problems;
  if (!Array.isArray(problems) || problems.length > MAX_PROBLEMS) return undefined;
  for (const p of problems) if (!validProblem(p)) return undefined;
  if (!problemsFit(problems as Problem[])) return undefined;
  if ("drift" in r) {
    const drift = DriftSummary.safeParse(r.drift);
    if (!drift.success) return undefined;
    return { ...r, drift: drift.data } as ReportMessage;
  }
  return r as ReportMessage;
}

/**
 * A report decoded, with the JSON text of its changes and problems (what ingest stores as jsonb):
 * the same JSON values as `JSON.stringify(report.changes)` and `JSON.stringify(report.problems)`,
 * an object's keys perhaps in the body's order rather than the schema's (jsonb keeps no order).
 */
export interface DecodedReport {
  report: ReportMessage;
  /** The JSON text of `report.changes`. */
  changes: string;
  /** The JSON text of `report.problems`. */
  problems: string;
}

/**
 * `JSON.stringify(value)` of a report (an object JSON.parse made, so its keys stringify in
 * `Object.keys` order and none is undefined), written key by key so that the text of its changes
 * and problems is kept for the insert rather than written a second time.
 */
function canonicalOf(value: Raw): { text: string; changes: string; problems: string } {
  let text = "{";
  let changes = "";
  let problems = "";
  let first = true;
  for (const k of Object.keys(value)) {
    const v = JSON.stringify(value[k]);
    if (k === "changes") changes = v;
    else if (k === "problems") problems = v;
    text += `${first ? "" : ","}${JSON.stringify(k)}:${v}`;
    first = false;
  }
  return { text: `${text}}`, changes, problems };
}

/** Whether `text` is `canonical`, or `canonical` and a newline (what the link publishes). */
function isCanonical(text: string, canonical: string): boolean {
  return text === canonical ||
    (text.length === canonical.length + 1 && text.endsWith("\n") && text.startsWith(canonical));
}

/** Whether the JSON `text`, parsed to `value`, repeats a key in one of its objects. */
export function repeatsKey(text: string, value: unknown): boolean {
  if (isCanonical(text, JSON.stringify(value))) return false;
  return duplicateKeys(text).length > 0;
}

/**
 * Decodes a report's body (UTF-8 JSON) as `decodeMessage(ReportMessage, body, what)` does, with
 * the same result and the same errors, the schema asked only about a body the plain check is
 * unsure of.
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
  // Larger than a report may be: refused by the schema's decode before it is read.
  if (body.length > MAX_REPORT_BYTES) return withTexts(decodeMessage(ReportMessage, body, what));
  let text: string;
  let value: unknown;
  try {
    text = UTF8.decode(body);
    value = JSON.parse(text);
  } catch {
    return withTexts(decodeMessage(ReportMessage, body, what));
  }
  // The plain check accepts only a report's own shapes, a few levels deep; anything else goes to
  // the schema's decode, which bounds its depth first (lib/broker.ts).
  const report = validReport(value);
  if (report !== undefined) {
    const canonical = canonicalOf(value as Raw);
    if (isCanonical(text, canonical.text)) {
      return { report, changes: canonical.changes, problems: canonical.problems };
    }
    if (duplicateKeys(text).length === 0) return withTexts(report);
  }
  return withTexts(decodeMessage(ReportMessage, body, what));
}

function withTexts(report: ReportMessage): DecodedReport {
  return {
    report,
    changes: JSON.stringify(report.changes),
    problems: JSON.stringify(report.problems),
  };
}
