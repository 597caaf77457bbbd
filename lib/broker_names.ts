/**
 * The broker contract's names (docs/design.md, "Broker"): the exchange, queue names, routing keys,
 * the rule a node name keeps, and the error a message that does not match its format is. Split
 * from lib/broker.ts, which re-exports all of it, so that a program that needs only names (the
 * host's link, which reads its messages with lib/broker_read.ts) loads neither zod nor the
 * message schemas.
 *
 * @module
 */

/** The one durable topic exchange everything is published to. */
export const EXCHANGE = "mesh";
/** The control plane's queue of reports, bound to {@linkcode REPORT_BINDING}. */
export const REPORTS_QUEUE = "mesh.reports";
/** The binding that brings every node's report to {@linkcode REPORTS_QUEUE}. */
export const REPORT_BINDING = "report.*";
/** The shared build queue (several builders take turns on it). */
export const BUILD_QUEUE = "mesh.build";
/** The routing key build requests are published under. */
export const BUILD_REQUEST_KEY = "build.request";

/**
 * A node name: 1-63 lowercase letters, digits and inner hyphens (a DNS label). A routing key
 * splits words on `.` and treats `*` and `#` as wildcards, and a queue name and an account name
 * are derived from it, so nothing else is allowed.
 */
export const NODE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Why `name` cannot be a node name, or undefined when it can.
 */
export function nodeNameProblem(name: string): string | undefined {
  if (NODE_NAME.test(name)) return undefined;
  return `node name ${
    JSON.stringify(name)
  } is not 1-63 lowercase letters, digits and inner hyphens (it becomes a routing-key word, a queue name and a broker account, where ".", "*", "#" and other characters mean something else)`;
}

/** The queue a node consumes its declarations from: `mesh.node.<name>`. */
export function nodeQueue(node: string): string {
  return `mesh.node.${node}`;
}

/** The routing key a node's declarations are published under: `declaration.<name>`. */
export function declarationKey(node: string): string {
  return `declaration.${node}`;
}

/** The routing key a node publishes its reports under: `report.<name>`. */
export function reportKey(node: string): string {
  return `report.${node}`;
}

/**
 * The node a report routing key names, or undefined when `key` is not one.
 */
export function nodeOfReportKey(key: string): string | undefined {
  const match = /^report\.(.+)$/.exec(key);
  return match && NODE_NAME.test(match[1]!) ? match[1] : undefined;
}

/**
 * Arguments of every node queue: it holds only the latest declaration (a node that was offline
 * receives what it should be now, not a backlog of what it once should have been).
 */
export const NODE_QUEUE_ARGUMENTS = {
  "x-max-length": 1,
  "x-overflow": "drop-head",
} as const;

/**
 * The largest body of a declaration message, in bytes as sent (64 MiB, a declaration's own bound,
 * lib/declaration_base.ts `MAX_DECLARATION_BYTES`; the message carries the declaration
 * JSON-escaped, so a declaration near its bound may not fit). The control plane renders no
 * declaration whose message would be larger (control/inventory.ts); a node's link refuses a
 * larger one from its content header, before its body arrives (lib/amqp_transport.ts, under `openBroker`), so
 * that refusing it costs no memory (docs/design.md, "Hostile inputs").
 */
export const MAX_DECLARATION_MESSAGE_BYTES = 64 * 1024 * 1024;

/** UTF-8 bytes of `s` (a lone surrogate counts as U+FFFD's three, as TextEncoder writes it). */
function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * The most bytes a declaration message carrying `declaration` to `node` can be (any generation,
 * any push time, with its epoch, signature and a key handoff), as the control plane sends it
 * (`JSON.stringify` of the message, as UTF-8).
 */
export function declarationMessageBytes(node: string, declaration: string): number {
  const envelope = JSON.stringify({
    kind: "declaration",
    node,
    generation: Number.MAX_SAFE_INTEGER,
    digest: `sha256:${"0".repeat(64)}`,
    pushedAt: "+275760-09-13T00:00:00.000Z",
    epoch: "00000000-0000-0000-0000-000000000000",
    declaration: "",
    // The signature's fields (lib/signing.ts), each at its one length.
    keyId: `ed25519:${"0".repeat(32)}`,
    signature: "A".repeat(86) + "==",
    handoff: {
      from: `ed25519:${"0".repeat(32)}`,
      to: `ed25519:${"0".repeat(32)}`,
      key: "A".repeat(59) + "=",
      signature: "A".repeat(86) + "==",
    },
  });
  // The declaration JSON-escaped, its quotes counted in the envelope's "".
  return utf8Bytes(envelope) + utf8Bytes(JSON.stringify(declaration)) - 2;
}

/** A message that does not match its schema; `problems` are `path: message` lines. */
export class MessageError extends Error {
  /** Every problem found, each `path: message`. */
  readonly problems: string[];
  constructor(what: string, problems: string[]) {
    super(`Cannot read ${what}: ${problems.join("; ")}`);
    this.name = "MessageError";
    this.problems = problems;
  }
}
