/**
 * The machine's TLS listeners (scripts/bootstrap.sh, docs/testing.md "TLS"): RabbitMQ's AMQPS on
 * 127.0.0.1:5671 and its management API over HTTPS on 127.0.0.1:15671, PostgreSQL with
 * `ssl = on` on 127.0.0.1:5432, each with a certificate for `localhost` and `127.0.0.1` from the
 * test CA in /etc/mesh-test/ca.crt; and what puts a wrong certificate or a wrong name in front of
 * them: a TCP forwarder on another loopback address (the real listener's certificate, not issued
 * for it), a TLS terminator presenting a given certificate (AMQP, HTTP), and a PostgreSQL
 * front that answers the SSLRequest and presents a given certificate.
 *
 * @module
 */

import net from "node:net";
import tls from "node:tls";

/** The test CA's certificate: what the machine's TLS listeners' certificates are issued by. */
export const TEST_CA_FILE = Deno.env.get("MESH_TEST_CA_FILE") ?? "/etc/mesh-test/ca.crt";
/** RabbitMQ's AMQPS listener, administrative account, vhost `/` (append `?cacertfile=`). */
export const AMQPS_BASE = "amqps://guest:guest@127.0.0.1:5671";
/** RabbitMQ's management API over HTTPS. */
export const API_HTTPS_BASE = "https://guest:guest@127.0.0.1:15671";
/** PostgreSQL with TLS (the same server as the plain one: trust from 127.0.0.1). */
export const PG_TLS_BASE = "postgres://postgres@127.0.0.1:5432";

/** A listener that passes connections on; closed with {@linkcode Front.close}. */
export interface Front {
  /** The address it listens on. */
  hostname: string;
  port: number;
  /** Stops listening and ends every connection it passed on. */
  close(): void;
}

function pipeBoth(a: Deno.Conn, b: Deno.Conn, open: Set<Deno.Conn>): void {
  open.add(a);
  open.add(b);
  const end = () => {
    for (const c of [a, b]) {
      try {
        c.close();
      } catch { /* closed */ }
      open.delete(c);
    }
  };
  a.readable.pipeTo(b.writable).catch(() => {}).finally(end);
  b.readable.pipeTo(a.writable).catch(() => {}).finally(end);
}

/**
 * Forwards TCP from `hostname` (default 127.0.0.2, a loopback address no test certificate names)
 * on a free port to 127.0.0.1:`toPort`, bytes unchanged: a client connecting to it meets the real
 * listener's TLS under a name its certificate is not issued for.
 */
export function forwarder(toPort: number, hostname = "127.0.0.2"): Front {
  const listener = Deno.listen({ hostname, port: 0 });
  const open = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      try {
        pipeBoth(conn, await Deno.connect({ hostname: "127.0.0.1", port: toPort }), open);
      } catch {
        conn.close();
      }
    }
  })().catch(() => {});
  return {
    hostname,
    port: (listener.addr as Deno.NetAddr).port,
    close: () => {
      listener.close();
      for (const c of [...open]) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

/**
 * Terminates TLS on 127.0.0.1 (a free port) with `cert` and `key` (PEM file paths) and passes the
 * clear bytes to 127.0.0.1:`toPort` (the plain AMQP or HTTP listener): a client meets that
 * certificate in front of the real broker.
 */
export function terminator(files: { cert: string; key: string }, toPort: number): Front {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(files.cert),
    key: Deno.readTextFileSync(files.key),
  });
  const open = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      try {
        pipeBoth(conn, await Deno.connect({ hostname: "127.0.0.1", port: toPort }), open);
      } catch {
        conn.close();
      }
    }
  })().catch(() => {});
  return {
    hostname: "127.0.0.1",
    port: (listener.addr as Deno.NetAddr).port,
    close: () => {
      listener.close();
      for (const c of [...open]) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

/**
 * A PostgreSQL front on 127.0.0.1 (a free port) that answers a client's SSLRequest with `S` and
 * presents `cert` (PEM file paths) in the TLS handshake that follows; it never gets further (a
 * client that accepts the certificate waits for an answer and times out). For the certificates
 * the real server cannot present (expired).
 */
export async function pgTlsFront(files: { cert: string; key: string }): Promise<Front> {
  const cert = Deno.readTextFileSync(files.cert);
  const key = Deno.readTextFileSync(files.key);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.once("data", () => {
      socket.write("S");
      const secure = new tls.TLSSocket(socket, { isServer: true, cert, key });
      secure.on("error", () => {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    hostname: "127.0.0.1",
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
