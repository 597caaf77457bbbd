/**
 * Broker URLs as the programs take them: several members of one cluster, from repeated options
 * or comma-separated in one value (an environment variable). No AMQP client is loaded here, so
 * a command line can parse its options without paying for one.
 *
 * @module
 */

import { redactUrl } from "./url.ts";

/** A broker URL that is not one, or no URL at all. */
export class BrokerUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BrokerUrlError";
  }
}

/**
 * The broker URLs in `values`: each value may hold several URLs separated by commas (a cluster's
 * members, e.g. from one environment variable); blanks around them are dropped. Each must be an
 * `amqp://` or `amqps://` URL with a host.
 *
 * A password holding a comma must be %-encoded (`%2C`), as any reserved character in a URL.
 *
 * @throws {BrokerUrlError} naming the position and the (redacted) value of each URL that is not one,
 *   all at once, or saying that none was given.
 */
export function brokerUrls(values: string | readonly string[]): string[] {
  const urls = (typeof values === "string" ? [values] : values)
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
  if (urls.length === 0) throw new BrokerUrlError("No broker URL given");
  const problems: string[] = [];
  urls.forEach((url, i) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      problems.push(`broker ${i + 1} ("${redactUrl(url)}") is not a URL`);
      return;
    }
    if (parsed.protocol !== "amqp:" && parsed.protocol !== "amqps:") {
      problems.push(
        `broker ${i + 1} ("${
          redactUrl(url)
        }") is not an amqp:// or amqps:// URL (${parsed.protocol})`,
      );
    } else if (parsed.hostname === "") {
      problems.push(`broker ${i + 1} ("${redactUrl(url)}") names no host`);
    }
  });
  if (problems.length > 0) {
    throw new BrokerUrlError(`Cannot use the broker URLs: ${problems.join("; ")}`);
  }
  return [...new Set(urls)];
}

/**
 * The URLs a program's `--broker` option (or `MESH_BROKER_URL`) gave, for a program that needs
 * one: {@linkcode brokerUrls} of `given`.
 *
 * @throws {BrokerUrlError} "No broker given: pass --broker URL or set MESH_BROKER_URL" when none
 *   was, or "--broker: " and what {@linkcode brokerUrls} says is wrong.
 */
export function brokerOption(given: readonly string[] | undefined): string[] {
  if (!given || given.length === 0) {
    throw new BrokerUrlError("No broker given: pass --broker URL or set MESH_BROKER_URL");
  }
  try {
    return brokerUrls(given);
  } catch (error) {
    throw new BrokerUrlError(`--broker: ${(error as Error).message}`);
  }
}

/**
 * A commander argument parser for a repeatable `--broker` option: each use (and the environment
 * variable, which commander passes through the same parser) adds its comma-separated URLs.
 */
export function collectBrokerUrls(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(",").map((v) => v.trim()).filter((v) => v !== "")];
}

/**
 * `url` (an AMQP URL) with its account replaced by `account` and `password` (both %-encoded),
 * keeping the scheme, host, port and vhost. For handing a new account every member of a cluster.
 */
export function withCredential(url: string, account: string, password: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(account);
  u.password = encodeURIComponent(password);
  return u.href;
}
