/**
 * The broker contract, defined once and imported by the control plane, the host's link and the
 * builder (docs/design.md, "Broker"): the exchange, queue names, routing keys, the rule a node name
 * keeps so that it can be a routing-key word, a queue-name part and a broker account, and the
 * two message formats that travel over AMQP 0-9-1.
 *
 * This module does not load an AMQP client: a program that only needs a name pays nothing.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage } from "./text_bounds.ts";
import { z } from "zod";
import { MAX_INTERVAL_MS } from "./link_interval.ts";
import { formatPath } from "./json_path.ts";
import { DriftSummary } from "./drift.ts";
import { duplicateKeyMessage, duplicateKeys } from "./json_keys.ts";
import { MessageError, NODE_NAME } from "./broker_names.ts";
import { KEY_ID, PUBLIC_KEY_B64, SIGNATURE } from "./signing.ts";
import {
  CHANGE_KINDS,
  DIGEST,
  EPOCH,
  isReportTime,
  MAX_CHANGES,
  MAX_HOST_VERSION_LENGTH,
  MAX_PROBLEM_MESSAGE_LENGTH,
  MAX_PROBLEM_PLACE_LENGTH,
  MAX_PROBLEMS,
  MAX_PROBLEMS_JSON_LENGTH,
  MAX_REPORT_BYTES,
  MAX_REPORT_INT,
  OUTCOMES,
  problemsFit,
  REPORT_TEXT,
  REPORT_TEXT_PROBLEM,
  REPORT_TIME_PROBLEM,
  SOURCE,
  TRIGGERS,
} from "./report_rules.ts";

export {
  BUILD_QUEUE,
  BUILD_REQUEST_KEY,
  declarationKey,
  declarationMessageBytes,
  EXCHANGE,
  MAX_DECLARATION_MESSAGE_BYTES,
  MessageError,
  NODE_NAME,
  NODE_QUEUE_ARGUMENTS,
  nodeNameProblem,
  nodeOfReportKey,
  nodeQueue,
  REPORT_BINDING,
  reportKey,
  REPORTS_QUEUE,
} from "./broker_names.ts";

export { DEFAULT_INTERVAL_MS, MAX_INTERVAL_MS } from "./link_interval.ts";
export {
  MAX_CHANGES,
  MAX_PROBLEM_MESSAGE_LENGTH,
  MAX_PROBLEM_PLACE_LENGTH,
  MAX_PROBLEMS,
  MAX_PROBLEMS_JSON_LENGTH,
  MAX_REPORT_BYTES,
  MAX_REPORT_INT,
} from "./report_rules.ts";

const digest = z.string().regex(DIGEST, "expected sha256:<64 hex digits>");

/**
 * A report's free text, at most `max` characters when given: no NUL character and no lone
 * surrogate, which PostgreSQL cannot store (lib/report_rules.ts {@linkcode REPORT_TEXT}).
 */
function reportText(max?: number) {
  return (max === undefined ? z.string() : z.string().max(max)).regex(
    REPORT_TEXT,
    REPORT_TEXT_PROBLEM,
  );
}
const time = z.iso.datetime({ offset: true });

/**
 * A declaration sent to a node: the declaration's exact JSON text (so the node's digest of the
 * bytes it applies equals the control plane's), its digest and generation.
 */
export const DeclarationMessage = z.strictObject({
  kind: z.literal("declaration"),
  node: z.string().regex(NODE_NAME),
  /** Counts up per node, from 1; a node ignores a generation older than one it has seen. */
  generation: z.int().min(1),
  digest,
  /** When the control plane published it (ISO 8601). */
  pushedAt: time,
  /**
   * The node's epoch ({@linkcode EPOCH}): minted at enroll, new when the name is enrolled again
   * after a removal. A node holding a declaration of another epoch takes this one at once,
   * whatever its generation; generations are compared only within one epoch. Absent from a
   * control plane older than epochs (then generations alone are compared, as they were).
   */
  epoch: z.string().regex(EPOCH, "expected a UUID (lowercase)").optional(),
  /** The declaration (JSON, version 1), as text. */
  declaration: z.string(),
  /**
   * The id of the control plane's key that signed it (lib/signing.ts). Optional in the schema so
   * that a link reads an unsigned message and refuses it saying so; a link applies none without.
   */
  keyId: z.string().regex(KEY_ID, "expected ed25519:<32 hex digits>").optional(),
  /** The Ed25519 signature over lib/signing.ts `declarationSignedBytes` (base64, 88 characters). */
  signature: z.string().regex(SIGNATURE, "expected 64 bytes in base64").optional(),
  /**
   * A key rotation (lib/signing.ts `Handoff`): the new key, signed by the previous one; carried by
   * every push after `mesh-control key rotate`.
   */
  handoff: z.strictObject({
    from: z.string().regex(KEY_ID, "expected ed25519:<32 hex digits>"),
    to: z.string().regex(KEY_ID, "expected ed25519:<32 hex digits>"),
    key: z.string().regex(PUBLIC_KEY_B64, "expected 44 bytes in base64"),
    signature: z.string().regex(SIGNATURE, "expected 64 bytes in base64"),
  }).optional(),
});
/** A declaration sent to a node. */
export type DeclarationMessage = z.infer<typeof DeclarationMessage>;

/**
 * A problem in a report: where (a resource id or a JSON path) and what, each bounded and without
 * a NUL character or a lone surrogate (lib/report_rules.ts; the host cuts a longer one and says
 * so, and writes a NUL as `\0`).
 */
const ReportProblem = z.strictObject({
  id: reportText(MAX_PROBLEM_PLACE_LENGTH).optional(),
  path: reportText(MAX_PROBLEM_PLACE_LENGTH).optional(),
  message: reportText(MAX_PROBLEM_MESSAGE_LENGTH),
});

/**
 * What a node reports after an apply (docs/design.md, "Apply result", plus who, which generation and
 * why it applied).
 */
export const ReportMessage = z.strictObject({
  kind: z.literal("report"),
  node: z.string().regex(NODE_NAME),
  /**
   * The generation applied; 0 when the node applied a declaration it kept from before. At most
   * {@linkcode MAX_REPORT_INT}, as `applied` and `total` (PostgreSQL's integer).
   */
  generation: z.int().min(0).max(MAX_REPORT_INT),
  /** Why it applied: a declaration arrived, the link started, or the interval came round. */
  trigger: z.enum(TRIGGERS),
  /**
   * When the node finished the apply (the node's clock, ISO 8601): one PostgreSQL's timestamptz
   * holds as it is (a year 0001-9999, an offset within ±15:59, at most 6 digits of a second's
   * fraction; lib/report_rules.ts {@linkcode isReportTime}).
   */
  at: time.refine(isReportTime, REPORT_TIME_PROBLEM),
  /**
   * The node's reconcile interval in ms (its link's `--every`): how often the control plane may
   * expect to hear from it, which is what its silence is judged against. Absent from hosts older
   * than this field (judged as the link's default, {@linkcode DEFAULT_INTERVAL_MS}).
   */
  intervalMs: z.int().min(1000).max(MAX_INTERVAL_MS).optional(),
  /** The host's version. */
  hostVersion: reportText(MAX_HOST_VERSION_LENGTH),
  /**
   * The source of declarations the report is about (`link` for what the control plane sent);
   * absent in reports of hosts from before sources existed.
   */
  source: z.string().regex(SOURCE).optional(),
  /**
   * The epoch of the declaration the report is about ({@linkcode EPOCH}), as it came with the
   * declaration; absent when the link holds none (`undeclared`, a message it could not read) or
   * holds one from a control plane older than epochs. Ingest records a report only of the node's
   * current epoch (docs/design.md, "Hostile inputs", rule 6).
   */
  epoch: z.string().regex(EPOCH, "expected a UUID (lowercase)").optional(),
  outcome: z.enum(OUTCOMES),
  applied: z.int().min(0).max(MAX_REPORT_INT),
  total: z.int().min(0).max(MAX_REPORT_INT),
  /** sha256 of the declaration's bytes. */
  declaration: digest,
  changes: z.array(z.strictObject({
    id: reportText(),
    type: reportText(),
    change: z.enum(CHANGE_KINDS),
  })).max(MAX_CHANGES),
  /**
   * At most {@linkcode MAX_PROBLEMS}, and {@linkcode MAX_PROBLEMS_JSON_LENGTH} characters as JSON
   * text (what a node's line of `status` carries).
   */
  problems: z.array(ReportProblem).max(MAX_PROBLEMS).refine(
    problemsFit,
    `Too big: expected the problems to have <=${MAX_PROBLEMS_JSON_LENGTH} characters as JSON text`,
  ),
  /**
   * The node's latest mesh-reconcile result, summarised (lib/drift.ts); absent when the node's
   * link reads none (`--reconcile-result none`, or a host older than the field).
   */
  drift: DriftSummary.optional(),
});
/** What a node reports after an apply. */
export type ReportMessage = z.infer<typeof ReportMessage>;

/** One strict decoder for every body (a decode without `stream` keeps no state between calls). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The largest body of the messages that have a bound, in bytes: refused before it is decoded. */
const MAX_BODY_BYTES: ReadonlyMap<z.ZodType, number> = new Map([
  [ReportMessage, MAX_REPORT_BYTES],
]);

/**
 * Decodes a message body (UTF-8 JSON) against `schema`, collecting every problem. A body larger
 * than its message's bound (a report: {@linkcode MAX_REPORT_BYTES}) is refused before it is
 * decoded, with that one problem.
 *
 * @throws {MessageError} naming each problem with its path.
 */
export function decodeMessage<T extends z.ZodType>(
  schema: T,
  body: Uint8Array,
  what: string,
): z.infer<T> {
  const max = MAX_BODY_BYTES.get(schema);
  if (max !== undefined && body.length > max) {
    throw new MessageError(what, [
      `$: the body is ${body.length} bytes, more than the ${max} it may be (not read)`,
    ]);
  }
  let text: string;
  let value: unknown;
  try {
    text = UTF8.decode(body);
    value = JSON.parse(text);
  } catch (error) {
    throw new MessageError(what, [`$: not UTF-8 JSON (${(error as Error).message})`]);
  }
  // Bounded in depth before anything walks it (docs/design.md, "Hostile inputs", rule 3).
  const deep = jsonTooDeep(text);
  if (deep !== undefined) throw new MessageError(what, [`$: ${jsonTooDeepMessage(deep)}`]);
  // JSON.parse kept the last of two equal keys: a repeated key refuses the message, with the
  // schema's problems. The text is the one parsed (the body is decoded once).
  const repeated = duplicateKeys(text).map((d) => `${d.at}: ${duplicateKeyMessage(d)}`);
  const parsed = schema.safeParse(value);
  if (!parsed.success || repeated.length > 0) {
    throw new MessageError(what, [
      ...repeated,
      ...(parsed.success
        ? []
        : parsed.error.issues.map((i) =>
          `${formatPath(i.path as (string | number)[]) || "$"}: ${i.message}`
        )),
    ]);
  }
  return parsed.data;
}

// --- Builds ----------------------------------------------------------------------------------

/** The prefix of every build answer's routing key: `build.reply.<asker>`. */
export const BUILD_REPLY_PREFIX = "build.reply.";

/** The routing key answers for `asker` travel under (through {@linkcode EXCHANGE}). */
export function buildReplyKey(asker: string): string {
  return `${BUILD_REPLY_PREFIX}${asker}`;
}

/**
 * The reply queue `asker` declares and binds to {@linkcode buildReplyKey}: named here,
 * deterministically, never left for the broker to name (a builder's permissions cannot be scoped
 * to one broker's `amq.gen-*` convention).
 */
export function buildReplyQueue(asker: string): string {
  return `mesh.build.reply.${asker}`;
}

/**
 * The broker account of the builder `name`: `builder.<name>`. A node name has no `.`, so a
 * builder's account can never be a node's.
 */
export function builderAccount(name: string): string {
  return `builder.${name}`;
}

/** An artifact store address: an OCI registry `host[:port][/path]`. */
export const STORE_ADDRESS = /^[A-Za-z0-9.-]+(:\d{1,5})?(\/[a-z0-9._/-]+)?$/;

/** An artifact store binding: where a build is published. An empty address is refused. */
export const ArtifactStore = z.strictObject({
  /** The OCI registry, `host[:port]` (images go to `<address>/mesh/<module>`). */
  address: z.string().max(255),
});

/** A build request, published to {@linkcode BUILD_REQUEST_KEY} (correlation id = `id`). */
export const BuildRequest = z.strictObject({
  kind: z.literal("build-request"),
  /** The correlation id: the answer carries it. */
  id: z.uuid(),
  /** The module to build (becomes the image's repository name). */
  module: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/),
  /** The git source (a URL or a path git can clone). */
  source: z.string().min(1).max(4096),
  /** The commit to build (a hash or a name git resolves in the source). */
  commit: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$/),
  /**
   * Where to publish, as the control plane binds it. Absent only for a request made by hand
   * (the builder's `MESH_ARTIFACT_STORE` is used then); present with an empty address: refused.
   */
  artifactStore: ArtifactStore.optional(),
  /** The routing key of the answer: `build.reply.<asker>`. */
  replyTo: z.string().regex(/^build\.reply\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/),
  requestedAt: time,
});
/** A build request. */
export type BuildRequest = z.infer<typeof BuildRequest>;

/** A build's answer: `built` with the digest, or `failed` with the reason. Never silence. */
export const BuildAnswer = z.strictObject({
  kind: z.literal("build-answer"),
  /** The request's id (also the AMQP correlation id). */
  id: z.uuid(),
  module: z.string(),
  /** The commit as asked. */
  commit: z.string(),
  /** The full hash it resolved to, when it did. */
  resolved: z.string().regex(/^[0-9a-f]{40}$/).optional(),
  outcome: z.enum(["built", "failed"]),
  /** The image pushed, pinned by digest: `<store>/mesh/<module>@sha256:...` (built only). */
  image: z.string().optional(),
  digest: digest.optional(),
  /** Why it failed (failed only). */
  reason: z.string().max(20_000).optional(),
  /** The builder that answered. */
  builder: z.string().max(200),
  startedAt: time,
  finishedAt: time,
});
/** A build's answer. */
export type BuildAnswer = z.infer<typeof BuildAnswer>;
