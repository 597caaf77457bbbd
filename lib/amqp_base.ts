/**
 * What every AMQP client of the project shares, with no client library loaded: the error a
 * broker operation throws, its readable part, and the failover across a cluster's members.
 * `lib/amqp.ts` (amqplib: mesh-control, mesh-builder) and `lib/amqp_link.ts` (the host's link,
 * without Deno's Node layer) both open their connections through {@linkcode openFirstMember}.
 *
 * @module
 */

import { messageOf } from "./atomic.ts";
import { BrokerUrlError, brokerUrls } from "./broker_urls.ts";

/** The broker cannot be reached, refused us, or refused or could not route a publish. */
export class AmqpError extends Error {
  /** True when the broker accepted the publish but no queue was bound for it (returned). */
  readonly unroutable: boolean;
  /** The routing keys returned as unroutable. */
  readonly returnedKeys: string[];
  constructor(
    message: string,
    options?: ErrorOptions & { unroutable?: boolean; returnedKeys?: string[] },
  ) {
    super(message, options);
    this.name = "AmqpError";
    this.unroutable = options?.unroutable ?? false;
    this.returnedKeys = options?.returnedKeys ?? [];
  }
}

/** The readable part of a broker error (`ACCESS_REFUSED: why` for a refusal). */
export function brokerMessage(error: unknown): string {
  const text = messageOf(error);
  const refused = /ACCESS_REFUSED - ([^"]+)/.exec(text);
  if (refused) return `ACCESS_REFUSED: ${refused[1]!.trim()}`;
  return text;
}

/**
 * Opens a session on the first of `urls` that answers, trying the members from `startAt` round
 * the list (`open(url, member)` opens one). A single URL's own error is thrown as it is.
 *
 * @throws {AmqpError} when `urls` holds no AMQP URL, or naming every member tried and why each
 *   failed when none answers.
 */
export async function openFirstMember<T>(
  urls: string | readonly string[],
  startAt: number | undefined,
  open: (url: string, member: number) => Promise<T>,
): Promise<T> {
  let list: string[];
  try {
    list = brokerUrls(urls);
  } catch (error) {
    if (error instanceof BrokerUrlError) throw new AmqpError(error.message);
    throw error;
  }
  const start = ((startAt ?? 0) % list.length + list.length) % list.length;
  const failures: string[] = [];
  for (let k = 0; k < list.length; k++) {
    const member = (start + k) % list.length;
    try {
      return await open(list[member]!, member);
    } catch (error) {
      if (list.length === 1) throw error;
      failures.push(messageOf(error));
    }
  }
  throw new AmqpError(
    `Cannot connect to any of the ${list.length} brokers: ${failures.join("; ")}`,
  );
}
