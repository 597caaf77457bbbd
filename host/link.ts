/**
 * The link: the host's connection to the control plane over the broker.
 *
 * - Consumes the node's own queue (prefetch 1). A declaration arriving goes through `parse`
 *   (actions refused) and is applied; the result is journaled on disk as a report, then the
 *   message is acknowledged, then the report is published with a publisher confirm and removed
 *   from the journal. Neither the agent dying nor the broker restarting loses a report: what is
 *   journaled is sent when the broker is back (oldest first).
 * - The last accepted declaration is kept (`link/declaration.json`) and applied, as source
 *   `link`, at start and at every interval, whether or not the broker is there, in one run with
 *   the other sources (the carried bundle and the local declarations), each on its own
 *   footprint. A push applies the link's declaration alone. Only the link's results are
 *   reported to the control plane (with `source: "link"`); the others are said locally.
 * - A declaration is verified before anything else is done with it (lib/signing.ts): signed by the
 *   control plane's key the node holds (or by a key it handed over to, which then replaces the
 *   held one), for this node, and newer than the kept one ({@linkcode replayReason}). Anything
 *   else is refused and reported with why, nothing applied; the kept declaration stays and is
 *   reconciled at every interval (docs/design.md, "Signed declarations"). Reports carry the epoch
 *   of the declaration they are about; a refusal, that of the kept one.
 *
 * Observing and acting stay in the appliers; this module only moves declarations and reports.
 *
 * @module
 */

import { join } from "../lib/path.ts";
import type { ConsumeMessage } from "amqplib";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
// The names and the plain reads, not lib/broker.ts: its zod schemas load only for a message that
// is not valid (lib/broker_read.ts).
import type { DeclarationMessage, ReportMessage } from "../lib/broker.ts";
import {
  EXCHANGE,
  MAX_DECLARATION_MESSAGE_BYTES,
  MessageError,
  nodeQueue,
  reportKey,
} from "../lib/broker_names.ts";
import { checkReportMessage, readDeclarationMessage } from "../lib/broker_read.ts";
import { fitProblems, MAX_REPORT_BYTES } from "../lib/report_rules.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import { type BrokerSession, openBroker, publishConfirmed, refusedBody } from "../lib/amqp.ts";
import { redactUrl } from "../lib/url.ts";
import { type ControlKey, publicKeyPem, verifyDeclaration } from "../lib/signing.ts";
import {
  type ApplyResult,
  applySources,
  readSource,
  recordKnownGood,
  type SourceInput,
} from "./apply.ts";
import { declarationDigest, MAX_KEPT_DECLARATION_BYTES } from "../lib/declaration_base.ts";
import { makeStateDir, type Migration, StoreError } from "./store.ts";
import { readDriftSummary, ResultWatch } from "./drift_summary.ts";
import { joinedText, recordJoined } from "./joined.ts";
import type { System } from "./system.ts";

/** The link's directory inside the state directory. */
export const LINK_DIR = "link";
/** sha256 of no bytes: the `declaration` of a report made with no declaration (`undeclared`). */
export const NO_BYTES_DIGEST =
  "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** The kept declaration (the last accepted {@linkcode DeclarationMessage}). */
export const KEPT_FILE = "declaration.json";
/** Reports journaled and not yet confirmed by the broker, one file each. */
export const OUTBOX_DIR = "outbox";

/** Options for {@linkcode runLink}. */
export interface LinkOptions {
  system: System;
  /**
   * The node's broker URL, with its own credential; several are the members of one cluster
   * (the link fails over between them, starting after the member it lost).
   */
  broker: string | readonly string[];
  /** The node's name (its queue and routing key); the URL's account name by default. */
  node: string;
  /**
   * The control plane's public key the node verifies every declaration with, and the file it was
   * read from (`--control-key`): a rotation signed by this key replaces it there, atomically.
   */
  controlKey: { path: string; key: ControlKey };
  stateDir: string;
  /** The host's version, in reports and known-good. */
  version: string;
  /** Reconcile the kept declaration this often (ms). */
  every: number;
  /** Wait this long before the first reconnect (ms); doubles up to 60 s. */
  retry: number;
  /** Stops the link (between applies) when aborted. */
  signal: AbortSignal;
  /** Each finished apply, for the CLI to print. */
  onApplied?: (report: ReportMessage) => void;
  /** The link's own news (connected, broker away, refused a declaration message, a new key). */
  onNews?: (line: string) => void;
  /** Checked at every interval: a reason to stand aside (the binary was replaced), or undefined. */
  replaced?: () => string | undefined;
  /**
   * mesh-reconcile's result file: summarised into every report (`drift`), and a new result brings
   * the next interval forward so the drift travels when it is found. Absent: reports carry none.
   */
  reconcileResult?: string;
  /**
   * The other sources kept converged at start and at every interval, in the same run as the
   * link's kept declaration: the bundle and the local declarations, read afresh each time.
   */
  others?: () => Promise<SourceInput[]>;
  /** The local declarations' directory: a source whose file left it is removed (see apply.ts). */
  declarationsDir?: string;
  /** How a store of format 1 gives its records a source. */
  migration?: () => Promise<Migration>;
  /** Each other source's result (they are not reported to the control plane), for the CLI. */
  onOther?: (result: ApplyResult, trigger: ReportMessage["trigger"]) => void;
}

/** How often the link looks whether a new reconcile result appeared (ms). */
const RESULT_LOOK_EVERY = 2000;
/**
 * The longest the link's loop sleeps (ms) when nothing is due sooner. It sleeps until the next
 * thing due (the interval, a reconnect, a look for a new reconcile result) and is woken at once
 * when the connection is lost, a push was handled or failed, or it is stopped: an idle link
 * wakes about once a minute, where it woke five times a second (1,000 links in one process, the
 * fleet bench, spent 15 % of a core on those wakes).
 */
const MAX_NAP_MS = 60_000;

/** Why the link stopped. */
export type LinkStop =
  | { reason: "signal" }
  | { reason: "replaced"; detail: string };

/**
 * A full garbage collection of V8's heap, when the program runs with `gc` exposed (the one-file
 * host starts its link with `--v8-flags=--expose-gc`, scripts/host_flags.ts); else nothing. Called
 * when an apply's report is journaled: an apply of 1,100 resources passes ~17 MiB through the
 * heap, which V8 collects only as the heap grows again, so without it the garbage of the last
 * apply stays resident through the idle interval (2-7 MiB; over 1,000 applies the link's median
 * is 60.3 MiB with its flags, 63.5 without: bench/README.md, the standing table). A collection of
 * the link's ~8 MiB live heap takes 10-30 ms an interval (wall, on a loaded 2-core VM), and saves
 * the larger collections the garbage would have needed.
 */
export function collect(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Runs the link until `signal` aborts or the binary is replaced.
 *
 * @throws {StoreError} when the state directory, the kept declaration or the journal cannot be
 *   read or written (the host cannot work; the caller exits 3).
 */
export async function runLink(options: LinkOptions): Promise<LinkStop> {
  const dir = join(options.stateDir, LINK_DIR);
  const outbox = join(dir, OUTBOX_DIR);
  try {
    await makeStateDir(options.stateDir);
    await Deno.mkdir(outbox, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new StoreError(`Cannot create the link's journal "${outbox}": ${messageOf(error)}`);
  }
  const news = (line: string) => options.onNews?.(line);
  const runOptions = {
    system: options.system,
    stateDir: options.stateDir,
    ...(options.migration ? { migration: options.migration } : {}),
    // The link keeps the bundle of a node raised from it, and never raises it itself.
    heldOnly: ["bundle"],
  };
  let kept = await readKept(join(dir, KEPT_FILE));
  let controlKey = options.controlKey.key;
  const resultWatch = options.reconcileResult === undefined
    ? undefined
    : new ResultWatch(options.reconcileResult);
  let session: BrokerSession | undefined;
  let stopping = false;
  let fatal: unknown;
  // Ends the loop's sleep at once (see MAX_NAP_MS).
  let wake: (() => void) | undefined;

  // Applies never overlap: a push and an interval take turns.
  let turn: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = turn.then(fn);
    turn = next.catch(() => {});
    return next;
  };

  const refusedLink = { source: "link" } as const;
  const apply = async (
    message: DeclarationMessage | undefined,
    trigger: ReportMessage["trigger"],
    bytesDigest?: string,
    invalid?: MessageError,
  ): Promise<void> => {
    let result: ApplyResult | undefined;
    let generation = message?.generation ?? kept?.generation ?? 0;
    if (invalid !== undefined) {
      result = {
        ...refusedLink,
        outcome: "refused",
        applied: 0,
        total: 0,
        changes: [],
        problems: invalid.problems.map((p) => ({ message: p })),
        declaration: bytesDigest!,
      };
      generation = 0;
    } else if (message === undefined && kept === undefined) {
      // Nothing received yet: the other sources only. The control plane is told the link holds
      // no declaration (`undeclared`), so that a node never pushed is heard (`not pushed`, not
      // `never spoke`) and its silence judged. Journaled and sent like any report; not printed
      // as an apply's report (there was none of the link's own).
      await applyOthers(undefined, trigger);
      const drift = resultWatch &&
        await resultWatch.mark().then(() => readDriftSummary(options.reconcileResult!));
      await journal(outbox, {
        kind: "report",
        node: options.node,
        generation: 0,
        trigger,
        at: new Date().toISOString(),
        intervalMs: options.every,
        hostVersion: options.version,
        source: "link",
        outcome: "undeclared",
        applied: 0,
        total: 0,
        declaration: NO_BYTES_DIGEST,
        changes: [],
        problems: [],
        ...(drift ? { drift } : {}),
      });
      if (trigger === "start") {
        news("no declaration from the control plane yet: reporting that it is linked and waiting");
      }
      return;
    } else {
      const source = message ?? kept!;
      const bytes = new TextEncoder().encode(source.declaration);
      const digest = await declarationDigest(bytes);
      if (digest !== source.digest) {
        result = {
          ...refusedLink,
          outcome: "refused",
          applied: 0,
          total: 0,
          changes: [],
          problems: [{
            message:
              `The declaration's digest is ${digest}, not the ${source.digest} it was sent with`,
          }],
          declaration: digest,
        };
      } else {
        const input = await readSource(bytes, { name: "link", origin: "link", trusted: false });
        if (message !== undefined) {
          // A push applies the link's declaration alone; the others keep their interval.
          result = (await applySources([input], runOptions))[0]!;
          if (result.outcome === "applied") {
            await recordKnownGood(options.stateDir, options.version);
          }
        } else {
          result = await applyOthers(input, trigger);
        }
        if (message !== undefined && result!.outcome !== "refused") {
          // Accepted (applied, or partly): this is what the node should be from now on.
          await keep(join(dir, KEPT_FILE), message);
          kept = message;
        }
      }
    }
    if (result === undefined) return;
    const drift = resultWatch &&
      await resultWatch.mark().then(() => readDriftSummary(options.reconcileResult!));
    // A refusal is about the message refused, and carries the epoch of what the node holds, so
    // that the control plane records it for the node as it is now (control/ingest.ts).
    const epoch = invalid === undefined ? (message ?? kept)?.epoch : kept?.epoch;
    const report = linkReport(result, {
      node: options.node,
      generation,
      ...(epoch !== undefined ? { epoch } : {}),
      trigger,
      intervalMs: options.every,
      hostVersion: options.version,
      ...(drift ? { drift } : {}),
    });
    await journal(outbox, report);
    collect();
    options.onApplied?.(report);
  };

  /**
   * One run of every source: the bundle and the local declarations, and the link's kept
   * declaration when there is one (its result is returned, to be reported); known-good when
   * every one applied.
   */
  async function applyOthers(
    link: SourceInput | undefined,
    trigger: ReportMessage["trigger"],
  ): Promise<ApplyResult | undefined> {
    const others = (await options.others?.()) ?? [];
    const [bundle, locals] = [
      others.filter((o) => o.name === "bundle"),
      others.filter((o) => o.name !== "bundle"),
    ];
    const results = await applySources(
      [...bundle, ...(link ? [link] : []), ...locals],
      {
        ...runOptions,
        ...(options.declarationsDir ? { departedFrom: options.declarationsDir } : {}),
      },
    );
    let linkResult: ApplyResult | undefined;
    for (const r of results) {
      if (r.source === "link") linkResult = r;
      else options.onOther?.(r, trigger);
    }
    if (results.length > 0 && results.every((r) => r.outcome === "applied")) {
      await recordKnownGood(options.stateDir, options.version);
    }
    return linkResult;
  }

  const flush = async () => {
    const s = session;
    if (s === undefined) return;
    try {
      await sendJournaled(outbox, s, options.node);
    } catch (error) {
      if (error instanceof StoreError) throw error;
      news(`cannot send reports now (${messageOf(error)}); they stay journaled`);
    }
  };

  /**
   * Why `message` is not to be applied (unsigned, not signed by the key held or a key it handed
   * over to, altered, or a replay of what the node holds), or undefined when it is; a rotation it
   * carries replaces the held key (in the key file, atomically) once the message is taken.
   */
  const trustProblem = async (message: DeclarationMessage): Promise<string | undefined> => {
    const verdict = await verifyDeclaration(message, controlKey);
    if (!verdict.ok) return verdict.problem;
    const replay = replayReason(message, kept);
    if (replay !== undefined) return replay;
    if (verdict.rotated !== undefined) {
      try {
        await writeFileAtomic(options.controlKey.path, publicKeyPem(verdict.rotated.spki), {
          mode: 0o644,
        });
      } catch (error) {
        throw new StoreError(
          `Cannot keep the control plane's new key in "${options.controlKey.path}": ${
            messageOf(error)
          }`,
        );
      }
      news(
        `took the control plane's new key ${verdict.rotated.keyId}, handed over by key ${controlKey.keyId}; kept in "${options.controlKey.path}"`,
      );
      controlKey = verdict.rotated;
    }
    return undefined;
  };

  const onDelivery = (message: ConsumeMessage | null) => {
    if (message === null) {
      news("the broker cancelled the consumer; reconnecting");
      session?.close();
      return;
    }
    const s = session;
    serial(async () => {
      let declaration: DeclarationMessage | undefined;
      let invalid: MessageError | undefined;
      // A body larger than a declaration message may be never arrived (openBroker's
      // maxBodyBytes): refused unread, with the digest of the bytes that passed.
      const tooLarge = refusedBody(message);
      try {
        if (tooLarge !== undefined) {
          throw new MessageError("the declaration message", [
            `$: the body is ${tooLarge.bytes} bytes, more than the ${tooLarge.max} it may be (not read)`,
          ]);
        }
        declaration = await readDeclarationMessage(message.content, "the declaration message");
        if (declaration.node !== options.node) {
          invalid = new MessageError("the declaration message", [
            `node: addressed to "${declaration.node}", and this is "${options.node}"`,
          ]);
        }
      } catch (error) {
        if (!(error instanceof MessageError)) throw error;
        invalid = error;
      }
      if (invalid === undefined) {
        // Verified before anything is done with it: signed by the control plane for this node,
        // and newer than what the node holds. A refusal is reported like an unreadable message.
        const refusal = await trustProblem(declaration!);
        if (refusal !== undefined) {
          news(`refused a declaration message: ${refusal}`);
          invalid = new MessageError("the declaration message", [refusal]);
        }
      }
      if (
        invalid === undefined && kept !== undefined && declaration!.epoch !== undefined &&
        declaration!.epoch !== kept.epoch
      ) {
        news(
          `took generation ${declaration!.generation} of epoch ${
            declaration!.epoch
          }, pushed after the kept generation ${kept.generation} of ${
            kept.epoch === undefined ? "no epoch" : `epoch ${kept.epoch}`
          } (the node was enrolled anew, or the control plane is new)`,
        );
      }
      const digest = tooLarge?.digest ??
        (invalid ? await declarationDigest(message.content) : undefined);
      await apply(invalid ? undefined : declaration, "push", digest, invalid);
      // Journaled first, acknowledged second: a crash between the two re-applies (a no-op) and
      // reports again, never loses the report.
      try {
        s?.channel.ack(message);
      } catch (error) {
        news(`cannot acknowledge (${messageOf(error)}); the broker will redeliver`);
      }
      await flush();
    }).catch((error) => {
      fatal ??= error;
    }).finally(() => wake?.());
  };

  // After losing a member, the next connect starts with the member after it.
  let startAt = 0;
  const connect = async (): Promise<void> => {
    // Refusing an oversized declaration costs no memory: its body is let go as it arrives.
    const s = await openBroker(options.broker, {
      startAt,
      maxBodyBytes: MAX_DECLARATION_MESSAGE_BYTES,
    });
    try {
      await s.channel.checkQueue(nodeQueue(options.node));
      await s.channel.prefetch(1);
    } catch (error) {
      await s.close();
      startAt = s.member + 1;
      throw new Error(
        `Cannot use queue "${nodeQueue(options.node)}" (is the node enrolled?): ${
          messageOf(error)
        }`,
      );
    }
    session = s;
    s.connection.once("close", (error?: unknown) => {
      if (session === s) session = undefined;
      wake?.();
      startAt = s.member + 1;
      if (stopping) return;
      // A connection the broker closed on purpose (the node removed, its credential rotated)
      // says why; that is news, not just "went away".
      // amqplib gives a close the broker sent its AMQP reply code (a number: 320 when forced);
      // a lost socket (a member stopped, the network) has a system error code or none.
      const forced = typeof (error as { code?: unknown } | undefined)?.code === "number";
      news(
        forced
          ? `the broker closed the connection (${
            messageOf(error)
          }); reconciling the kept declaration meanwhile`
          : `the broker went away${
            error === undefined ? "" : ` (${messageOf(error)})`
          }; reconciling the kept declaration meanwhile`,
      );
    });
    await serial(flush);
    await s.channel.consume(nodeQueue(options.node), onDelivery, { noAck: false });
    news(`connected to ${redactUrl(s.url)}, consuming ${nodeQueue(options.node)}`);
  };

  await serial(() => apply(undefined, "start"));

  let retry = options.retry;
  let joinedKnown = false;
  let nextConnect = 0;
  let nextInterval = Date.now() + options.every;
  let nextResultLook = Date.now() + RESULT_LOOK_EVERY;
  try {
    for (;;) {
      if (fatal !== undefined) throw fatal;
      if (options.signal.aborted) return { reason: "signal" };
      const now = Date.now();
      if (session === undefined && now >= nextConnect) {
        let connected = false;
        try {
          await connect();
          retry = options.retry;
          connected = true;
        } catch (error) {
          news(`${messageOf(error)}; retrying in ${Math.round(retry / 1000)} s`);
          nextConnect = Date.now() + retry;
          retry = Math.min(retry * 2, 60_000);
        }
        if (connected && !joinedKnown) {
          // A node that did not take its bundle joined a mesh: recorded once, durably, so that
          // no later reconcile raises a second substrate (host/joined.ts). A state directory
          // that cannot be written stops the link (StoreError), never ignored.
          const joined = await recordJoined(
            options.stateDir,
            "link",
            session ? redactUrl((session as BrokerSession).url) : undefined,
          );
          if (joined !== undefined) news(`recorded that ${joinedText(joined, options.stateDir)}`);
          joinedKnown = true;
        }
      }
      if (resultWatch !== undefined && kept !== undefined && now >= nextResultLook) {
        // A new reconcile result: report now (through the interval's apply, which changes
        // nothing on a converged machine) rather than at the next interval.
        if (await resultWatch.changed()) nextInterval = now;
        nextResultLook = now + RESULT_LOOK_EVERY;
      }
      if (now >= nextInterval) {
        const why = options.replaced?.();
        if (why !== undefined) return { reason: "replaced", detail: why };
        await serial(async () => {
          await apply(undefined, "interval");
          await flush();
        });
        nextInterval = Date.now() + options.every;
      }
      const due = Math.min(
        nextInterval,
        session === undefined ? nextConnect : Infinity,
        resultWatch !== undefined && kept !== undefined ? nextResultLook : Infinity,
      );
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          options.signal.removeEventListener("abort", done);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, Math.max(10, Math.min(MAX_NAP_MS, due - Date.now())));
        options.signal.addEventListener("abort", done, { once: true });
        wake = done;
      });
    }
  } finally {
    stopping = true;
    await turn;
    await session?.close();
  }
}

/** Who reports an apply of the link's declaration, and when and why it applied. */
export interface ReportAbout {
  node: string;
  /** The generation applied; 0 for a message refused. */
  generation: number;
  /** The epoch the applied declaration came with; absent when it carried none. */
  epoch?: string;
  trigger: ReportMessage["trigger"];
  /** The link's interval (`--every`), in ms. */
  intervalMs: number;
  hostVersion: string;
  /** The node's latest mesh-reconcile result, summarised; absent when the link reads none. */
  drift?: ReportMessage["drift"];
}

/**
 * The report the link journals for one apply of its declaration (`source: "link"`, the time now).
 * Its problems are fitted to the report's bounds and texts (lib/report_rules.ts
 * {@linkcode fitProblems}): a long message (a command's output, a refused message quoting what it
 * refused) is cut and marked, a NUL character or a lone surrogate (a command's stderr) replaced,
 * so the node still reports and the inventory can store what it says.
 */
export function linkReport(result: ApplyResult, about: ReportAbout): ReportMessage {
  return {
    kind: "report",
    node: about.node,
    generation: about.generation,
    trigger: about.trigger,
    at: new Date().toISOString(),
    intervalMs: about.intervalMs,
    hostVersion: about.hostVersion,
    source: "link",
    ...(about.epoch !== undefined ? { epoch: about.epoch } : {}),
    outcome: result.outcome,
    applied: result.applied,
    total: result.total,
    declaration: result.declaration,
    changes: result.changes.map(({ id, type, change }) => ({ id, type, change })),
    problems: fitProblems(result.problems),
    ...(about.drift ? { drift: about.drift } : {}),
  };
}

/**
 * Why a declaration arriving, signed and verified, is refused as a replay, in words, or undefined
 * when it is newer than the kept one (docs/design.md, "Signed declarations"):
 *
 * - of the kept one's epoch: a later generation is taken; the same generation with the same digest
 *   and push time is the same declaration delivered again (taken: applying it again changes
 *   nothing); the same generation otherwise, or an older one, is refused;
 * - of another epoch (the node was removed and enrolled again, or the kept one is from before
 *   epochs): taken only when pushed later than the kept one, whatever its generation, so that a
 *   removed node's declarations, signed as they were, cannot be replayed onto the name enrolled
 *   again.
 *
 * The epoch, generation and push time compared are signed (lib/signing.ts).
 */
export function replayReason(
  message: DeclarationMessage,
  kept: DeclarationMessage | undefined,
): string | undefined {
  if (kept === undefined) return undefined;
  const of = (m: DeclarationMessage) =>
    `generation ${m.generation}${
      m.epoch === undefined ? "" : ` of epoch ${m.epoch}`
    } (pushed ${m.pushedAt})`;
  if (message.epoch === kept.epoch) {
    if (message.generation > kept.generation) return undefined;
    if (message.generation === kept.generation) {
      if (message.digest === kept.digest && message.pushedAt === kept.pushedAt) return undefined;
      return `a replay: ${of(message)} is not the ${
        of(kept)
      } this node holds (digest ${message.digest}, not ${kept.digest}): one generation is one declaration`;
    }
    return `a replay: ${of(message)} is older than the ${of(kept)} this node holds`;
  }
  if (Date.parse(message.pushedAt) > Date.parse(kept.pushedAt)) return undefined;
  return `a replay: ${of(message)} is of another epoch than the ${
    of(kept)
  } this node holds, and was not pushed after it`;
}

/**
 * Reads the kept declaration, or undefined when there is none yet.
 *
 * @throws {StoreError} when it exists and cannot be read (never taken as "none").
 */
export async function readKept(path: string): Promise<DeclarationMessage | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, { maxBytes: MAX_KEPT_DECLARATION_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new StoreError(`Cannot read the kept declaration "${path}": ${messageOf(error)}`);
  }
  try {
    return await readDeclarationMessage(bytes, `the kept declaration "${path}"`);
  } catch (error) {
    throw new StoreError(messageOf(error));
  }
}

async function keep(path: string, message: DeclarationMessage): Promise<void> {
  try {
    await writeFileAtomic(path, JSON.stringify(message) + "\n", { mode: 0o600 });
  } catch (error) {
    throw new StoreError(`Cannot keep the declaration in "${path}": ${messageOf(error)}`);
  }
}

let sequence = 0;

/**
 * Journals a report (atomically, one file, named so that names sort oldest first).
 *
 * @throws {StoreError} when it cannot be written.
 */
export async function journal(outbox: string, report: ReportMessage): Promise<string> {
  const name = `${Date.now().toString().padStart(15, "0")}-${
    (sequence++).toString().padStart(6, "0")
  }-${crypto.randomUUID().slice(0, 8)}.json`;
  const path = join(outbox, name);
  try {
    await writeFileAtomic(path, JSON.stringify(report) + "\n", { mode: 0o600 });
  } catch (error) {
    throw new StoreError(`Cannot journal a report in "${outbox}": ${messageOf(error)}`);
  }
  return path;
}

/** The journaled reports' file names, oldest first. */
export async function journaled(outbox: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(outbox)) {
      if (entry.isFile && /^\d{15}-\d{6}-[0-9a-f]{8}\.json$/.test(entry.name)) {
        names.push(entry.name);
      }
    }
  } catch (error) {
    throw new StoreError(`Cannot read the link's journal "${outbox}": ${messageOf(error)}`);
  }
  return names.sort();
}

/**
 * Sends every journaled report, oldest first, each confirmed by the broker before its file is
 * removed. Stops at the first that cannot be sent (the rest wait for the next try).
 *
 * @throws {AmqpError} when the broker refuses or does not confirm a report.
 * @throws {StoreError} when the journal cannot be read or a sent report cannot be removed.
 */
export async function sendJournaled(
  outbox: string,
  session: BrokerSession,
  node: string,
): Promise<number> {
  let sent = 0;
  for (const name of await journaled(outbox)) {
    const path = join(outbox, name);
    let body: Uint8Array;
    try {
      body = await readRegularFile(path, { maxBytes: MAX_REPORT_BYTES });
      await checkReportMessage(body, `the journaled report "${path}"`);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      // A journaled report that cannot be read is set aside (not sent, not deleted) and said;
      // the next flush goes on with the rest.
      await Deno.rename(path, `${path}.unreadable`).catch(() => {});
      throw new Error(`${messageOf(error)}; set aside as "${name}.unreadable"`);
    }
    await publishConfirmed(session.channel, [{
      exchange: EXCHANGE,
      routingKey: reportKey(node),
      body,
      options: { type: "report" },
    }]);
    try {
      await Deno.remove(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        throw new StoreError(`Cannot remove the sent report "${path}": ${messageOf(error)}`);
      }
    }
    sent++;
  }
  return sent;
}
