/**
 * A report's values, bounds and text rules, written once and without zod (docs/design.md, "Apply
 * result"): lib/broker.ts builds the `ReportMessage` schema from them, and the schema's two
 * refinements are the predicates {@linkcode isReportTime} and {@linkcode problemsFit} of this
 * module, which the validator generated from the schema (lib/report_validators.js, by
 * scripts/validators.ts) calls by name. The host's link loads this module at start, so it stays
 * small and imports nothing.
 *
 * The bounds keep one report, and one row of a fleet read (control/read_rows.ts), within what the
 * inventory and the reader can hold: a node's last report's problems travel in its line of `status`
 * and `board`, a row carries the lines of up to 1,000 nodes, and one row must stay under
 * PostgreSQL's 1 GB value and V8's longest string (2^29 - 24 characters). A text's bound is in
 * characters as the schema's `.max` counts them (code points); the host counts UTF-16 code units,
 * never fewer, so what it makes the schema accepts. The problems' JSON text is counted in UTF-16
 * code units. A report's free text holds no NUL character and no lone surrogate, which PostgreSQL
 * cannot store ({@linkcode REPORT_TEXT}); the host writes them visibly ({@linkcode reportText}).
 * Its integers and its time are within what ingest's insert casts them to, PostgreSQL's integer
 * and timestamptz ({@linkcode MAX_REPORT_INT}, {@linkcode isReportTime}).
 *
 * @module
 */

/** Why a node applied: a declaration arrived, the link started, or the interval came round. */
export const TRIGGERS = ["push", "start", "interval"] as const;
/**
 * How an apply ended (docs/design.md, "Apply result"), or `undeclared`: the link holds no
 * declaration from the control plane, so there was nothing of its own to apply (generation 0,
 * nothing applied, the declaration the digest of no bytes); it reports so at start and at each
 * interval, so that a linked node never pushed is heard (`not pushed`, not `never spoke`).
 */
export const OUTCOMES = ["applied", "refused", "failed", "undeclared"] as const;
/** What an apply did to one resource. */
export const CHANGE_KINDS = [
  "created",
  "updated",
  "unchanged",
  "removed",
  "restored",
  "forgotten",
] as const;

/** sha256 of a declaration's bytes: `sha256:<64 hex digits>`. */
export const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * A node's epoch (docs/design.md, "Hostile inputs", rule 6): a random UUID (lowercase, with its
 * dashes) that the control plane mints when it enrolls a node and that its declarations, and the
 * reports about them, carry. Removing a node ends its epoch; the name enrolled again is a new
 * node with a new one.
 */
export const EPOCH = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A source of declarations (`link`, `bundle`, a local declaration's name). */
export const SOURCE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/u;

/** The longest `hostVersion`, in characters. */
export const MAX_HOST_VERSION_LENGTH = 100;
/** The most changes a report carries. */
export const MAX_CHANGES = 100_000;
/** The most problems a report carries. */
export const MAX_PROBLEMS = 10_000;
/**
 * The longest problem `message`, in characters: a failed command's message (its argv, how it
 * ended and the last 2,048 bytes of its stderr) fits; the host cuts a longer one
 * ({@linkcode fitProblems}).
 */
export const MAX_PROBLEM_MESSAGE_LENGTH = 4096;
/** The longest problem `id` or `path`, in characters (a declared id is at most 200). */
export const MAX_PROBLEM_PLACE_LENGTH = 1024;
/**
 * The longest the problems of one report may be as JSON text (`JSON.stringify(problems)`), in
 * characters: 128 Ki. A node's line in a fleet read carries them as jsonb's text, at most ~1.2
 * times as long (a space after each `:` and `,`) and 3 bytes a character, so 1,000 nodes' lines
 * stay under ~480 MB and ~160 M characters (tests/lib/report_rules_test.ts holds it).
 */
export const MAX_PROBLEMS_JSON_LENGTH = 128 * 1024;
/**
 * The largest report body, in bytes (UTF-8 JSON): 32 MiB, refused before it is decoded. A report
 * of {@linkcode MAX_CHANGES} changes of declared ids (at most 200 characters) and problems within
 * their bounds is under 26 MB.
 */
export const MAX_REPORT_BYTES = 32 * 1024 * 1024;

/**
 * The largest `generation`, `applied` and `total` a report may state: PostgreSQL's largest
 * integer (2^31 - 1), the type ingest's insert casts them to (control/ingest.ts). A larger one
 * could never be recorded, so the schema refuses it and ingest drops the report, instead of
 * stopping on the database's "value out of range for type integer". (`intervalMs`, also cast to
 * integer, is at most `MAX_INTERVAL_MS` of lib/link_interval.ts, 7 days: well within.)
 */
export const MAX_REPORT_INT = 2_147_483_647;

/**
 * What of an ISO date-time with an offset (zod's `z.iso.datetime({ offset: true })`) PostgreSQL's
 * timestamptz refuses or changes: the year 0000 ("date/time field value out of range"), an offset
 * of 16 hours or more ("time zone displacement out of range"), and more than 6 digits of a
 * second's fraction (rounded to microseconds, and a long one is "invalid input syntax").
 */
const OUT_OF_TIMESTAMPTZ = /^0000-|\.\d{7}|[+-](?:1[6-9]|2\d):\d\d$/;

/**
 * What the schema says of a report's `at` that {@linkcode isReportTime} refuses.
 */
export const REPORT_TIME_PROBLEM =
  "Invalid ISO datetime: expected a year 0001-9999, an offset within \u00b115:59 and at most 6 digits of a second's fraction";

/**
 * Whether `text`, an ISO date-time with an offset (zod's pattern, which the schema checks
 * first), is one PostgreSQL's timestamptz holds as it is, which ingest's insert casts a report's
 * `at` to: a year 0001-9999, an offset within ±15:59 and at most 6 digits of a second's fraction.
 * What a host writes (`Date.prototype.toISOString`, `YYYY-MM-DDTHH:MM:SS.sssZ`, of a year
 * 0001-9999) always is. A text that is not of zod's form is refused by the schema whatever this
 * says.
 */
export function isReportTime(text: string): boolean {
  return !OUT_OF_TIMESTAMPTZ.test(text);
}

/**
 * What the schema says of a report's text that {@linkcode REPORT_TEXT} refuses (zod's words for a
 * string that is not of its form).
 */
export const REPORT_TEXT_PROBLEM =
  "Invalid string: expected text without a NUL character (U+0000) or a lone surrogate";

/**
 * A report's text: no NUL character (U+0000) and no lone UTF-16 surrogate (a high one not followed
 * by a low one, a low one not after a high one). With the `u` flag a surrogate pair is one code
 * point, above U+FFFF, and a lone surrogate is a code point of U+D800-U+DFFF; ajv compiles a JSON
 * Schema pattern with the same flag, so the schema and the validator generated from it agree.
 * PostgreSQL's text and jsonb hold neither (jsonb refuses `\u0000` and an unpaired `\ud800` escape
 * as an "unsupported Unicode escape sequence"), so a report carrying one could never be recorded:
 * the schema refuses it, and ingest drops it as any invalid report, instead of stopping on it.
 * Every free text of a report is of this form (a problem's message, id and path, a change's id and
 * type, the host's version, the drift summary's texts); the others have a pattern that allows
 * neither.
 */
export const REPORT_TEXT = /^[^\0\uD800-\uDFFF]*$/u;

/** Whether `text` can be a report's text ({@linkcode REPORT_TEXT}). */
export function isReportText(text: string): boolean {
  return REPORT_TEXT.test(text);
}

/**
 * `text` as a report can carry it ({@linkcode isReportText}): each NUL character written as the two
 * characters `\0` and each lone surrogate replaced by U+FFFD, then, when `max` is given, cut to at
 * most `max` characters (a surrogate pair cut in two: its first half as U+FFFD). A NUL becomes
 * the visible `\0` (as C and a shell's `printf` write it) rather than U+FFFD: U+FFFD already stands
 * for the bytes of a command's output that are not UTF-8 (how lib/command.ts decodes them), and a
 * NUL is a byte the command did write, worth telling apart. A text that has `\0` already reads the
 * same; nothing else changes.
 */
export function reportText(text: string, max?: number): string {
  let out = isReportText(text) ? text : text.toWellFormed().replaceAll("\0", "\\0");
  if (max !== undefined && out.length > max) out = out.slice(0, max).toWellFormed();
  return out;
}

/** One problem of a report: where (a resource id or a JSON path) and what. */
export interface Problem {
  id?: string;
  path?: string;
  message: string;
}

/**
 * Whether `problems` (each a valid problem: strings in their bounds) are at most
 * {@linkcode MAX_PROBLEMS_JSON_LENGTH} characters as JSON text. Written out only when a bound of
 * it (each character escaped as six, each problem's keys and punctuation as 40) could be over.
 */
export function problemsFit(problems: readonly Problem[]): boolean {
  let bound = 2;
  for (const p of problems) {
    bound += 40 + 6 * (p.message.length + (p.id?.length ?? 0) + (p.path?.length ?? 0));
    if (bound > MAX_PROBLEMS_JSON_LENGTH) {
      return JSON.stringify(problems).length <= MAX_PROBLEMS_JSON_LENGTH;
    }
  }
  return true;
}

/** What the message of a problem whose text was cut says, between the part kept before and after. */
function cutMarker(length: number, max: number): string {
  return ` [... cut by mesh-host: ${length} characters, more than the ${max} a report carries ...] `;
}

/**
 * `text` when it is at most `max` characters, else its beginning and end with a marker between
 * saying it was cut and how long it was (the end of a failed command's message is its stderr's
 * last lines). Never splits a surrogate pair.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = cutMarker(text.length, max);
  const room = Math.max(0, max - marker.length);
  let head = Math.ceil(room / 2);
  let tail = text.length - (room - head);
  // A high surrogate ending the head, a low one starting the tail: left out with their pair.
  if (head > 0 && isHigh(text.charCodeAt(head - 1))) head--;
  if (tail < text.length && isLow(text.charCodeAt(tail))) tail++;
  return `${text.slice(0, head)}${marker}${text.slice(tail)}`.slice(0, max);
}

function isHigh(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLow(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * `problems` as a report carries them: each message, id and path made a report's text
 * ({@linkcode reportText}: a NUL character as `\0`, a lone surrogate as U+FFFD) and cut to its
 * bound ({@linkcode cutText}), and, when there are more than {@linkcode MAX_PROBLEMS} or they are longer
 * than {@linkcode MAX_PROBLEMS_JSON_LENGTH} as JSON text, the first that fit followed by one
 * problem saying how many more there were. Only the three keys are kept.
 */
export function fitProblems(problems: readonly Problem[]): Problem[] {
  const fitted = problems.map((p): Problem => ({
    ...(p.id !== undefined ? { id: cutText(reportText(p.id), MAX_PROBLEM_PLACE_LENGTH) } : {}),
    ...(p.path !== undefined
      ? { path: cutText(reportText(p.path), MAX_PROBLEM_PLACE_LENGTH) }
      : {}),
    message: cutText(reportText(p.message), MAX_PROBLEM_MESSAGE_LENGTH),
  }));
  if (fitted.length <= MAX_PROBLEMS && problemsFit(fitted)) return fitted;
  const out: Problem[] = [];
  // The JSON text so far: "[", then each problem and a comma (the last one's is the "]").
  let length = 1;
  // Room kept for the problem saying what was left out.
  const reserve = 300;
  for (const p of fitted) {
    const more = JSON.stringify(p).length + 1;
    if (out.length < MAX_PROBLEMS - 1 && length + more + reserve <= MAX_PROBLEMS_JSON_LENGTH) {
      out.push(p);
      length += more;
      continue;
    }
    break;
  }
  const left = fitted.length - out.length;
  out.push({
    message: `${left} more problem${
      left === 1 ? "" : "s"
    } not listed: a report carries at most ${MAX_PROBLEMS} problems and ${MAX_PROBLEMS_JSON_LENGTH} characters of them`,
  });
  return out;
}
