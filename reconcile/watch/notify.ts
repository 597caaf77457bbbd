/**
 * Telling the webhook: owed notifications POSTed oldest first, stopping at the first failure.
 *
 * @module
 */

import { messageOf } from "../../lib/atomic.ts";
import { formatDuration } from "../../lib/duration.ts";
import { jsonText, printable } from "../../lib/printable.ts";
import { redactUrl } from "../../lib/url.ts";
import { ANSWER_LIMIT_BYTES, bodyLimited, isTimeout } from "./source.ts";
import type { WatchNotification, WebhookBody } from "./state.ts";

/** The outcome of delivering owed notifications. */
export interface Delivery {
  /** Delivered this run, oldest first. */
  delivered: WatchNotification[];
  /** Still owed (the first one failed), oldest first. */
  owed: WatchNotification[];
  /** Why the first still owed one failed. */
  error?: string;
}

/**
 * POSTs each owed notification, oldest first, as a {@linkcode WebhookBody} (JSON), stopping at the
 * first failure so the order is kept. A delivery is an answer 2xx within `timeoutMs`; another
 * status (redirects are not followed), a timeout or a connection failure is a failure.
 */
export async function deliver(
  owed: WatchNotification[],
  url: URL,
  options: { timeoutMs: number; now?: () => number },
): Promise<Delivery> {
  const now = options.now ?? Date.now;
  const name = redactUrl(url.href);
  const delivered: WatchNotification[] = [];
  for (let i = 0; i < owed.length; i++) {
    const notification = owed[i]!;
    const body: WebhookBody = { ...notification, sentAt: new Date(now()).toISOString() };
    const signal = AbortSignal.timeout(options.timeoutMs);
    let error: string | undefined;
    try {
      const response = await fetch(url, {
        method: "POST",
        signal,
        redirect: "manual",
        headers: { "content-type": "application/json", "user-agent": "mesh-reconcile-watch" },
        body: jsonText(body),
      });
      await bodyLimited(response, ANSWER_LIMIT_BYTES).catch(() => undefined);
      if (response.status < 200 || response.status > 299) {
        error = `HTTP ${response.status} ${printable(response.statusText)}`.trim();
      }
    } catch (cause) {
      error = isTimeout(cause) || signal.aborted
        ? `no answer within ${formatDuration(options.timeoutMs)}`
        : messageOf(cause);
    }
    if (error !== undefined) {
      return {
        delivered,
        owed: owed.slice(i),
        error: `Cannot notify "${name}": ${error}`,
      };
    }
    delivered.push(notification);
  }
  return { delivered, owed: [] };
}
