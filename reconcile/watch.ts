/**
 * The remote watcher: one look at a stamp (a file, or a `stamp serve` over HTTP), judged against
 * `--max-age` and `--grace`, remembered in a state file, told to a webhook once per transition.
 * docs/design.md rule 11: silence is the alarm, so the watcher alerts when the stamp grows old and
 * refreshes a stamp of its own so that it can be watched in turn.
 *
 * Each part in its own module under `./watch/`: its words (`words.ts`), observing a source
 * (`source.ts`), judging it (`verdict.ts`), remembering and owing notifications (`state.ts`) and
 * telling the webhook (`notify.ts`); observing, judging and remembering are pure of effects
 * apart from reading. {@linkcode watch}, here, acts (writes the state, notifies, writes its own
 * stamp) and returns what happened, and {@linkcode watchJson} / {@linkcode watchText} render it.
 * Nothing here prints.
 *
 * @module
 */

import { hostname } from "node:os";
import { assertWritablePath, messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { redactUrl } from "../lib/url.ts";
import { watchedStampLine } from "./stamp.ts";
import { WATCH_EXIT } from "./watch/words.ts";
import { observeSource, parseSource, sourceName, WatchInputError } from "./watch/source.ts";
import { judge, stateWords, type Thresholds } from "./watch/verdict.ts";
import { caFileFor, readTrustAnchor } from "../lib/wire_trust.ts";
import { advance, loadWatchState, type WatchNotification } from "./watch/state.ts";
import type { WatchResult } from "./watch/result.ts";
import { deliver } from "./watch/notify.ts";

export * from "./watch/words.ts";
export * from "./watch/source.ts";
export * from "./watch/verdict.ts";
export * from "./watch/state.ts";
export * from "./watch/notify.ts";
export * from "./watch/render.ts";
export * from "./watch/result.ts";

/** Options for {@linkcode watch}. */
export interface WatchOptions extends Thresholds {
  /** Time limit for the source's request and for each notification, milliseconds. */
  timeoutMs: number;
  /** The state file (`--state`); without it there are no transitions and no notifications. */
  statePath?: string;
  /** The webhook (`--notify`); needs `statePath`. */
  notifyUrl?: string;
  /** The watcher's own stamp (`--stamp`). */
  stampPath?: string;
  /** This machine's clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
  /** This machine's name in notifications; default the host name. */
  watcher?: string;
  /**
   * The mesh's CA certificate an `https://` source is verified against (`--ca`); default
   * `$MESH_CA_FILE`, then /etc/mesh/ca.crt when it exists, else the system's trusted roots.
   */
  caFile?: string;
  /** Allow an `http://` source whose host is not loopback (`--allow-plain-http`). */
  allowPlainHttp?: boolean;
}

/**
 * One watcher run: reads the kept state, observes the source, judges it, keeps the new state
 * (atomically, owed notification included, before sending it), delivers what is owed, keeps the
 * state again, and refreshes its own stamp unless a notification is still owed.
 *
 * @throws {WatchInputError} for a bad source (plain HTTP to an address that is not loopback
 *   included, unless allowed), `caFile` for a source that is not `https://`, `notifyUrl` without
 *   `statePath`, a notify URL that is not http(s), or a state file kept for another source.
 * @throws {TrustFileError} naming the mesh CA file found when it is unreadable, writable by group
 *   or others, holds a private key, is not a certificate or not a CA's (lib/wire_trust.ts
 *   readTrustAnchor): nothing is fetched.
 * @throws {Error} `Cannot read watch state ...` / `Cannot write "<path>": ...` when the state file
 *   cannot be read or written, or the own stamp cannot be written: the run did not complete.
 */
export async function watch(sourceText: string, options: WatchOptions): Promise<WatchResult> {
  const source = parseSource(sourceText, { allowPlainHttp: options.allowPlainHttp ?? false });
  const name = sourceName(source);
  const https = source.kind === "url" && source.url.protocol === "https:";
  if (options.caFile !== undefined && !https) {
    throw new WatchInputError(
      `--ca "${options.caFile}" is for an https:// source; "${name}" is not one`,
    );
  }
  let notifyUrl: URL | undefined;
  if (options.notifyUrl !== undefined) {
    if (options.statePath === undefined) {
      throw new WatchInputError(
        "--notify needs --state: transitions are known only from the state kept between runs",
      );
    }
    try {
      notifyUrl = new URL(options.notifyUrl);
    } catch (error) {
      throw new WatchInputError(
        `Cannot notify "${redactUrl(options.notifyUrl)}": ${messageOf(error)}`,
      );
    }
    if (notifyUrl.protocol !== "http:" && notifyUrl.protocol !== "https:") {
      throw new WatchInputError(
        `Cannot notify "${redactUrl(options.notifyUrl)}": only http(s) URLs are webhooks`,
      );
    }
  }
  // Unusable output paths are refused before anything is looked at.
  if (options.statePath !== undefined) await assertWritablePath(options.statePath);
  if (options.stampPath !== undefined) await assertWritablePath(options.stampPath);
  const kept = options.statePath === undefined
    ? undefined
    : await loadWatchState(options.statePath);
  if (kept !== undefined && kept.source !== name) {
    throw new WatchInputError(
      `Cannot use watch state "${options.statePath}": it is kept for "${kept.source}", not "${name}"`,
    );
  }
  // The CA is read before anything is looked at: a bad CA file is bad input (exit 2), not a verdict.
  const caFile = https ? caFileFor(options.caFile) : undefined;
  const ca = caFile === undefined ? undefined : await readTrustAnchor(caFile);
  const now = options.now ?? Date.now;
  const checkedAt = new Date(now()).toISOString();
  const observation = await observeSource(source, {
    timeoutMs: options.timeoutMs,
    now,
    ...(ca !== undefined ? { ca } : {}),
  });
  const thresholds = { maxAgeMs: options.maxAgeMs, graceMs: options.graceMs };
  const verdict = judge(observation, thresholds);
  const result: WatchResult = {
    source: name,
    checkedAt,
    verdict,
    exitCode: WATCH_EXIT[verdict.state],
    thresholds,
    dropped: 0,
  };
  let owed: WatchNotification[] = [];
  if (options.statePath !== undefined) {
    const step = advance(kept, verdict, {
      source: name,
      at: checkedAt,
      thresholds,
      watcher: options.watcher ?? hostname(),
      notify: notifyUrl !== undefined,
    });
    result.dropped = step.droppedNow;
    result.memory = {
      path: options.statePath,
      transition: step.transition,
      ...(step.previous !== undefined ? { previous: step.previous } : {}),
      since: step.record.since,
    };
    // Kept before sending: a watcher killed mid-delivery sends again (at least once), never not.
    await writeFileAtomic(options.statePath, JSON.stringify(step.record, null, 2) + "\n");
    owed = step.record.owed;
    if (notifyUrl !== undefined) {
      const delivery = owed.length === 0
        ? { delivered: [], owed: [] }
        : await deliver(owed, notifyUrl, { timeoutMs: options.timeoutMs, now });
      result.notify = {
        url: redactUrl(notifyUrl.href),
        delivered: delivery.delivered,
        owed: delivery.owed,
        ...("error" in delivery && delivery.error !== undefined ? { error: delivery.error } : {}),
      };
      if (delivery.delivered.length > 0) {
        await writeFileAtomic(
          options.statePath,
          JSON.stringify({ ...step.record, owed: delivery.owed }, null, 2) + "\n",
        );
      }
      owed = delivery.owed;
    }
  }
  if (options.stampPath !== undefined) {
    if (owed.length > 0) {
      result.ownStamp = {
        path: options.stampPath,
        state: "withheld",
        detail: `${owed.length} notification${
          owed.length === 1 ? " is" : "s are"
        } owed: this watcher's alerts are not getting through`,
      };
    } else {
      const line = watchedStampLine(
        checkedAt,
        `${name} is ${stateWords(verdict.state, verdict.problem)}`,
      );
      await writeFileAtomic(options.stampPath, line);
      result.ownStamp = { path: options.stampPath, state: "refreshed", detail: line.trimEnd() };
    }
  }
  return result;
}
