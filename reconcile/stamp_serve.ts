/**
 * `stamp serve`: the stamp, read-only over HTTP, with its age measured on the serving machine so
 * that a watcher's clock does not matter. One file is served: the request's path only chooses
 * between the two names of the one answer (`/` and `/stamp`) and is never joined to a file path.
 * Only GET and HEAD are answered; nothing here prints.
 *
 * @module
 */

import { messageOf } from "../lib/atomic.ts";
import { readStamp, servedStamp } from "./stamp.ts";
import { jsonText } from "../lib/printable.ts";

/** A listen address: an explicit host name or IP and a port (0: any free port). */
export interface ListenAddress {
  hostname: string;
  port: number;
}

/**
 * Parses `HOST:PORT` or `[IPv6]:PORT`. A binding without an address is refused, never defaulted
 * (docs/design.md rule 12): `:8080` and `8080` are errors.
 *
 * @throws {Error} `Cannot use listen address "<text>": ...` naming what is wrong.
 */
export function parseListen(text: string): ListenAddress {
  const refuse = (why: string) => new Error(`Cannot use listen address "${text}": ${why}`);
  const m = /^\[([0-9A-Fa-f:.]+)\]:(\d+)$/.exec(text) ?? /^([^:[\]\s/]+):(\d+)$/.exec(text);
  if (!m) {
    throw refuse(
      "expected HOST:PORT or [IPv6]:PORT with an explicit address, e.g. 127.0.0.1:9470",
    );
  }
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port > 65535) throw refuse(`port ${m[2]} is not 0 to 65535`);
  return { hostname: m[1]!, port };
}

const HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** The paths that name the one answer. */
export const STAMP_PATHS = ["/", "/stamp"] as const;

/** Options for {@linkcode stampHandler} and {@linkcode serveStamp}. */
export interface StampServeOptions {
  /** The serving machine's clock, milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /**
   * Serve HTTPS with this certificate (PEM, the server's first, then any intermediates) and its
   * private key (PEM, PKCS#8); none: plain HTTP.
   */
  tls?: { cert: string; key: string };
}

/**
 * The request handler: GET or HEAD of `/` or `/stamp` answers with {@linkcode servedStamp} for
 * the stamp at `stampPath`, read anew for each request; another path is 404 and another method
 * 405 (with `Allow: GET, HEAD`), each with a JSON `{"error": "..."}`. HEAD answers carry the
 * status and headers of the GET and no body.
 */
export function stampHandler(
  stampPath: string,
  options: StampServeOptions = {},
): (request: Request) => Promise<Response> {
  const now = options.now ?? Date.now;
  return async (request: Request) => {
    const head = request.method === "HEAD";
    const answer = (status: number, body: unknown, extra: Record<string, string> = {}) =>
      new Response(head ? null : jsonText(body) + "\n", {
        status,
        headers: { ...HEADERS, ...extra },
      });
    if (request.method !== "GET" && !head) {
      return answer(405, { error: `${request.method} is not allowed: this server only reads` }, {
        allow: "GET, HEAD",
      });
    }
    const path = new URL(request.url).pathname;
    if (!(STAMP_PATHS as readonly string[]).includes(path)) {
      return answer(404, { error: "not found: the stamp is served at / and /stamp" });
    }
    const reading = await readStamp(stampPath, { now: now() });
    const { status, body } = servedStamp(reading, now());
    return answer(status, body);
  };
}

/** A running `stamp serve`. */
export interface StampServer {
  /** The address bound (the real port when 0 was asked). */
  addr: ListenAddress;
  /** Settles when the server has stopped. */
  finished: Promise<void>;
  /** Stops accepting, lets answers in flight finish, and resolves when stopped. */
  shutdown(): Promise<void>;
}

/**
 * Starts serving the stamp at `stampPath` on `listen` (Deno.serve: HTTP/1.1 and h2c, or HTTPS
 * with `options.tls`).
 *
 * @throws {Error} `Cannot listen on "<host>:<port>": ...` when the address cannot be bound (in
 *   use, not an address of this machine, not permitted), or the certificate and key are not a
 *   pair Deno's TLS accepts (`keys may not be consistent: KeyMismatch`).
 */
export function serveStamp(
  listen: ListenAddress,
  stampPath: string,
  options: StampServeOptions = {},
): Promise<StampServer> {
  const handler = stampHandler(stampPath, options);
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: listen.hostname,
      port: listen.port,
      ...(options.tls !== undefined ? { cert: options.tls.cert, key: options.tls.key } : {}),
      onListen: () => {}, // the command line says where it listens; this module prints nothing
      onError: (error) =>
        new Response(
          jsonText({ error: `Cannot answer: ${messageOf(error)}` }) + "\n",
          { status: 500, headers: HEADERS },
        ),
    }, handler);
  } catch (error) {
    return Promise.reject(
      new Error(`Cannot listen on "${listen.hostname}:${listen.port}": ${messageOf(error)}`, {
        cause: error,
      }),
    );
  }
  return Promise.resolve({
    addr: { hostname: server.addr.hostname, port: server.addr.port },
    finished: server.finished,
    shutdown: () => server.shutdown(),
  });
}
