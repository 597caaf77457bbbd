/**
 * The certificates of the registry's TLS ports (an entry's `tls`: a port that speaks TLS from its
 * first byte, such as RabbitMQ's AMQPS 5671 and management HTTPS 15671, with the names clients
 * reach it by), read as the proxy's addresses are (`./proxy.ts`): one TLS handshake to the port on
 * this machine, sending the first DNS name as SNI, every certificate presented read in the order
 * served, the leaf's subject alternative names compared with each name and the chain judged
 * against the trusted roots (`./cert_path.ts`). Nothing is sent after the handshake. A port that
 * asks for TLS first (`starttls: postgres`: PostgreSQL) is sent PostgreSQL's SSLRequest, and
 * the handshake follows its `S`; its `N` (ssl = off) is the probe's error.
 *
 * The address connected to is the port's listener on this machine (`./sockets.ts`): a wildcard
 * (`0.0.0.0`, `::`) is reached at its loopback address, a listener on one address at that address,
 * and a port nothing listens on at 127.0.0.1 (it does not answer, which is the finding).
 *
 * @module
 */

import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { messageOf } from "../../lib/atomic.ts";
import type { CertificateSummary, ChainVerdict, TrustStore } from "./cert_path.ts";
import type { Listener } from "./sockets.ts";
import { presentedChain } from "./proxy.ts";

/** One TLS port the registry declares: its entry, the port and the names to check. */
export interface TlsRequest {
  service: string;
  port: number;
  /** DNS names and IP addresses its certificate must cover (the registry's `tls.name`). */
  names: string[];
  /** `postgres`: TLS is asked for with PostgreSQL's SSLRequest first; absent: TLS at once. */
  starttls?: "postgres";
}

/** PostgreSQL's SSLRequest: length 8, code 80877103 (protocol docs, "SSL Session Encryption"). */
const SSL_REQUEST = new Uint8Array([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** What one TLS port presented. */
export interface TlsProbe extends TlsRequest {
  /** `host:port` connected to. */
  target: string;
  /** Set when the connection or handshake failed; then `certificate` is absent. */
  error?: string;
  certificate?: CertificateSummary & {
    /** The requested names it does not cover, in the registry's order. */
    uncovered: string[];
    /** The served chain judged (absent when no trust store was given). */
    chain?: ChainVerdict;
  };
}

/** Where the port's listener is reached from this machine (see the module's documentation). */
export function tlsTarget(port: number, listeners: readonly Listener[]): string {
  const on = listeners.filter((l) => l.port === port);
  const wild = (a: string) => a === "0.0.0.0" || a === "::" || a === "*";
  const v4 = on.find((l) => l.family === 4);
  const pick = v4 ?? on[0];
  if (pick === undefined) return "127.0.0.1";
  if (!wild(pick.address)) return pick.address;
  return pick.family === 4 ? "127.0.0.1" : "::1";
}

/**
 * Shakes hands with the TLS port `request.port` at `host` (see {@linkcode tlsTarget}) and reads
 * what it presents (after PostgreSQL's SSLRequest with `starttls: postgres`). Never throws: a
 * failure is the probe's `error`. `node:tls`, `node:net`, `node:crypto` and `./cert_path.ts` are
 * loaded on the first probe.
 *
 * @param options.timeoutMs the handshake's time limit; default 10 000.
 * @param options.trust the roots the chain is judged against; not judged without it.
 * @param options.now the time judged at, ms since the epoch; default now.
 */
export async function probeTlsPort(
  request: TlsRequest,
  host: string,
  options: { timeoutMs?: number; trust?: TrustStore; now?: number } = {},
): Promise<TlsProbe> {
  const [{ default: tls }, { default: net }, { X509Certificate }, path] = await Promise.all([
    import("node:tls"),
    import("node:net"),
    import("node:crypto"),
    import("./cert_path.ts"),
  ]);
  const target = `${host.includes(":") ? `[${host}]` : host}:${request.port}`;
  const sni = request.names.find((n) => !path.isIpAddress(n));
  const timeoutMs = options.timeoutMs ?? 10_000;
  return await new Promise<TlsProbe>((resolve) => {
    let settled = false;
    let socket: TLSSocket | undefined;
    let plain: Socket | undefined;
    const done = (probe: TlsProbe) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.destroy();
      plain?.destroy();
      resolve(probe);
    };
    const timer = setTimeout(() => {
      done({ ...request, target, error: `no handshake within ${timeoutMs} ms` });
    }, timeoutMs);
    const failed = (error: Error) => done({ ...request, target, error: messageOf(error) });
    const handshake = (over?: Socket) => {
      socket = tls.connect({
        ...(over !== undefined ? { socket: over } : { host, port: request.port }),
        ...(sni !== undefined ? { servername: sni } : {}),
        rejectUnauthorized: false,
      });
      socket.on("error", failed);
      socket.on("secureConnect", () => read(socket!));
    };
    if (request.starttls === "postgres") {
      plain = net.connect({ host, port: request.port });
      plain.on("error", failed);
      plain.once("connect", () => plain!.write(SSL_REQUEST));
      plain.once("data", (answer: Uint8Array) => {
        if (answer[0] === 0x53 /* S */) handshake(plain);
        else {
          done({
            ...request,
            target,
            error: answer[0] === 0x4e /* N */
              ? "the server does not offer TLS: it answered N to PostgreSQL's SSLRequest (ssl = off)"
              : "the server did not answer PostgreSQL's SSLRequest with S or N",
          });
        }
      });
    } else handshake();
    const read = (socket: TLSSocket) => {
      const served = presentedChain(socket);
      if (served.length === 0) {
        done({ ...request, target, error: "no certificate was presented" });
        return;
      }
      try {
        const chain = served.map((raw) => new X509Certificate(raw));
        const cert = chain[0]!;
        const names = path.subjectAltNames(cert);
        const probe: TlsProbe = {
          ...request,
          target,
          certificate: {
            ...path.summarize(cert, names),
            uncovered: request.names.filter((n) => !path.coversName(names, n)),
            ...(options.trust !== undefined
              ? { chain: path.verifyChain(chain, options.trust, options.now ?? Date.now()) }
              : {}),
          },
        };
        done(probe);
      } catch (error) {
        done({
          ...request,
          target,
          error: `the certificate presented could not be read: ${messageOf(error)}`,
        });
      }
    };
  });
}
