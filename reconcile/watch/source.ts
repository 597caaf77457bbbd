/**
 * What the watcher looks at (a stamp file, or the URL of a `stamp serve`) and how it reads it:
 * the file by this machine's clock, the server's answer as served, every answer bounded.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage } from "../../lib/text_bounds.ts";
import { resolve } from "node:path";
import { messageOf } from "../../lib/atomic.ts";
import { concat } from "../../lib/regular_file.ts";
import { formatDuration } from "../../lib/duration.ts";
import { printable } from "../../lib/printable.ts";
import { redactUrl } from "../../lib/url.ts";
import { parseStamp, readStamp, ServedStamp, type Stamp } from "../stamp.ts";
import { isLoopback, PLAIN_ENV, tlsRefusal, type TrustAnchor } from "../../lib/wire_trust.ts";
import type { WatchProblem } from "./words.ts";

/** The largest answer read from a `stamp serve` or a webhook, in bytes. */
export const ANSWER_LIMIT_BYTES = 65_536;

/** Bad input to the watcher: a source or option it cannot use. */
export class WatchInputError extends Error {
  override name = "WatchInputError";
}

/** What is watched: a stamp file, or the URL of a `stamp serve`. */
export type Source =
  | { kind: "file"; path: string }
  | { kind: "url"; url: URL };

/** Options for {@linkcode parseSource}. */
export interface ParseSourceOptions {
  /** Allow an `http://` URL whose host is not loopback (`--allow-plain-http`). */
  allowPlainHttp?: boolean;
}

/**
 * Reads a SOURCE argument: `http://` or `https://` is a `stamp serve` URL, another scheme is
 * refused, anything else is a file path (made absolute). An `http://` URL whose host is not
 * loopback is refused unless `allowPlainHttp`: across a network, the answer is read over HTTPS.
 *
 * @throws {WatchInputError} for an empty source, another URL scheme, a URL that does not parse,
 *   or plain HTTP to an address that is not loopback.
 */
export function parseSource(text: string, options: ParseSourceOptions = {}): Source {
  if (text.trim() === "") throw new WatchInputError("Cannot watch SOURCE: it is empty");
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: "file", path: resolve(text) };
  if (scheme !== "http" && scheme !== "https") {
    throw new WatchInputError(
      `Cannot watch "${redactUrl(text)}": only http(s) URLs and file paths are sources`,
    );
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new WatchInputError(`Cannot watch "${redactUrl(text)}": ${messageOf(error)}`);
  }
  if (url.protocol === "http:" && !isLoopback(url.hostname) && !options.allowPlainHttp) {
    throw new WatchInputError(
      `Cannot watch "${redactUrl(text)}" over plain HTTP: ${url.hostname} is not a loopback ` +
        `address, so anyone on the way could answer for it; use https:// (a stamp serve with a ` +
        `certificate from the mesh CA), or --allow-plain-http (or ${PLAIN_ENV}=1)`,
    );
  }
  return { kind: "url", url };
}

/** The source as it is written in output, the state file and notifications (no password). */
export function sourceName(source: Source): string {
  return source.kind === "file" ? source.path : redactUrl(source.url.href);
}

/** What one look at a source saw, before any judgement. */
export type Observation =
  | {
    seen: "stamped";
    /** The stamp line. */
    stamp: string;
    /** The stamp's own time (ISO). */
    stampedAt: string;
    /** Its age in milliseconds. */
    ageMs: number;
    /** Whose clock measured the age: the serving machine's, or this one's (a file). */
    ageFrom: "server" | "this machine";
  }
  | { seen: "never"; detail: string }
  | { seen: "unreachable"; problem: WatchProblem; detail: string };

/** Options for {@linkcode observeSource}. */
export interface ObserveOptions {
  /** Time limit for the whole request and answer, milliseconds. */
  timeoutMs: number;
  /** This machine's clock (used for a file source only), ms since the epoch; default now. */
  now?: () => number;
  /**
   * The mesh's CA an `https://` source is verified against (lib/wire_trust.ts readTrustAnchor:
   * its certificates and the file they were read from, for words); none: the system's trusted
   * roots, as any HTTPS client.
   */
  ca?: TrustAnchor;
}

/**
 * Looks at a source once. A file is read and its age measured against this machine's clock; a
 * URL is fetched (GET, redirects not followed, within `timeoutMs`) and its `ageSeconds` taken
 * as served: the serving machine measured it, so this machine's clock does not enter. An
 * `https://` source is verified against `ca` when given (Deno.createHttpClient's `caCerts`); a
 * refused certificate is `unreachable` (`untrusted`), said which (another CA, expired, not valid
 * yet, another name: lib/wire_trust.ts tlsRefusal). Failures are observations (`unreachable` with its problem), never thrown.
 */
export async function observeSource(
  source: Source,
  options: ObserveOptions,
): Promise<Observation> {
  const now = options.now ?? Date.now;
  if (source.kind === "file") {
    const reading = await readStamp(source.path, { now: now() });
    switch (reading.state) {
      case "stamped":
        return {
          seen: "stamped",
          stamp: reading.stamp.line,
          stampedAt: reading.stamp.time,
          ageMs: reading.ageMs,
          ageFrom: "this machine",
        };
      case "never":
        return { seen: "never", detail: `no stamp at "${source.path}"` };
      case "error":
        return {
          seen: "unreachable",
          problem: reading.problem,
          detail: reading.problem === "garbage"
            ? `stamp "${source.path}" holds garbage: ${reading.reason}${
              reading.excerpt !== undefined ? `: ${reading.excerpt}` : ""
            }`
            : `Cannot read stamp "${source.path}": ${reading.reason}`,
        };
    }
  }
  return await fetchServed(source.url, options.timeoutMs, options.ca);
}

/** Reads at most `limit` bytes of a response body; more is an error. */
export async function bodyLimited(response: Response, limit: number): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new RangeError(`the answer is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return concat(chunks, total);
}

export function isTimeout(error: unknown): boolean {
  return error instanceof DOMException &&
    (error.name === "TimeoutError" || error.name === "AbortError");
}

async function fetchServed(
  url: URL,
  timeoutMs: number,
  ca: TrustAnchor | undefined,
): Promise<Observation> {
  const name = redactUrl(url.href);
  const signal = AbortSignal.timeout(timeoutMs);
  const cannot = (why: string): Observation => ({
    seen: "unreachable",
    problem: "cannot-read",
    detail: `Cannot fetch "${name}": ${why}`,
  });
  const bad = (why: string): Observation => ({
    seen: "unreachable",
    problem: "bad-answer",
    detail: `"${name}" is not a stamp serve answer: ${why}`,
  });
  let response: Response;
  let bytes: Uint8Array;
  const client = ca !== undefined && url.protocol === "https:"
    ? Deno.createHttpClient({ caCerts: ca.certs })
    : undefined;
  try {
    response = await fetch(url, {
      signal,
      redirect: "manual",
      headers: { accept: "application/json" },
      ...(client !== undefined ? { client } : {}),
    });
    bytes = await bodyLimited(response, ANSWER_LIMIT_BYTES);
  } catch (error) {
    if (isTimeout(error) || signal.aborted) {
      return cannot(`no answer within ${formatDuration(timeoutMs)}`);
    }
    if (error instanceof RangeError) return bad(error.message);
    const refused = tlsRefusal(error, {
      host: url.hostname.replace(/^\[|\]$/g, ""),
      ...(ca !== undefined ? { caFile: ca.path } : {}),
    });
    if (refused !== undefined) {
      return {
        seen: "unreachable",
        problem: "untrusted",
        detail: `Cannot trust "${name}": ${refused}`,
      };
    }
    return cannot(messageOf(error));
  } finally {
    client?.close();
  }
  if (response.status !== 200 && response.status !== 500) {
    const where = response.headers.get("location");
    return bad(`HTTP ${response.status}${where ? ` (to ${printable(where)}; not followed)` : ""}`);
  }
  let json: unknown;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    json = JSON.parse(text);
  } catch {
    return bad(`HTTP ${response.status} with a body that is not JSON`);
  }
  const deep = jsonTooDeep(text);
  if (deep !== undefined) {
    return bad(`HTTP ${response.status} with a body ${jsonTooDeepMessage(deep)}`);
  }
  const parsed = ServedStamp.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) =>
      `${i.path.length ? i.path.join(".") : "(body)"}: ${i.message}`
    );
    return bad(printable(issues.join("; ")));
  }
  const served = parsed.data;
  const expected = served.state === "error" ? 500 : 200;
  if (response.status !== expected) {
    return bad(`state "${served.state}" came with HTTP ${response.status}, not ${expected}`);
  }
  switch (served.state) {
    case "never":
      return { seen: "never", detail: `"${name}" has no stamp` };
    case "error":
      return {
        seen: "unreachable",
        problem: served.problem,
        detail: `"${name}" says ${printable(served.reason)}`,
      };
    case "stamped": {
      let stamp: Stamp;
      try {
        stamp = parseStamp(served.stamp);
      } catch (error) {
        return bad(`its stamp line is not a stamp: ${messageOf(error)}`);
      }
      if (Date.parse(served.stampedAt) !== stamp.timeMs) {
        return bad(`stampedAt ${served.stampedAt} is not the time of its line (${stamp.time})`);
      }
      return {
        seen: "stamped",
        stamp: stamp.line,
        stampedAt: stamp.time,
        ageMs: served.ageSeconds * 1000,
        ageFrom: "server",
      };
    }
  }
}
