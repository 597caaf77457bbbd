/**
 * The broker address nodes reach: what `node enroll` and `node rotate` print a node's credential
 * in. Control's own `--broker` is an administrative URL as seen from the control plane (often
 * 127.0.0.1), which a node on another machine cannot use; the public address is given once
 * (`--public-broker URL`, or `MESH_PUBLIC_BROKER_URL`), checked (it resolves and answers), and kept
 * in the inventory (`settings`, migration 0007_settings) for the next enrollments.
 *
 * A public address is an address only: scheme (`amqp` or `amqps`), host, port and vhost. It never
 * carries a credential (the node's own is put in), a query or a fragment. A loopback address
 * (127.0.0.0/8, ::1, localhost) is printed for a node only when told the node is this machine.
 *
 * @module
 */

import { BrokerUrlError, brokerUrls, withCredential } from "../lib/broker_urls.ts";
import { redactUrl } from "../lib/url.ts";
import type { Queryable } from "./db.ts";

/** The `settings` row that keeps the public broker address (comma-separated members). */
export const PUBLIC_BROKER_SETTING = "public_broker";

/** How long the check of a public address may take per member, in ms: the connect and the answer. */
export const PROBE_TIMEOUT_MS = 5_000;

/** A public broker address that cannot be used; its message names it (never with a password). */
export class PublicBrokerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PublicBrokerError";
  }
}

/**
 * The public broker URLs in `given` (an option's values or one comma-separated variable), each
 * checked to be an address only.
 *
 * @throws {PublicBrokerError} naming every URL that is not an `amqp://` or `amqps://` URL with a
 *   host, or that carries a user, a password, a query or a fragment (each masked).
 */
export function publicBrokerUrls(given: string | readonly string[]): string[] {
  let urls: string[];
  try {
    urls = brokerUrls(given);
  } catch (error) {
    if (!(error instanceof BrokerUrlError)) throw error;
    throw new PublicBrokerError(
      `--public-broker: ${error.message.replace(/^Cannot use the broker URLs: /, "")}`,
    );
  }
  const problems: string[] = [];
  for (const url of urls) {
    const u = new URL(url);
    const extra = [
      ...(u.username !== "" || u.password !== "" ? ["a credential"] : []),
      ...(u.search !== "" ? ["a query"] : []),
      ...(u.hash !== "" ? ["a fragment"] : []),
    ];
    if (extra.length > 0) {
      problems.push(
        `"${redactUrl(url)}" carries ${
          extra.join(" and ")
        }; a public broker address is scheme, host, port and vhost only (each node's own credential is put in)`,
      );
    }
  }
  if (problems.length > 0) {
    throw new PublicBrokerError(`--public-broker: ${problems.join("; ")}`);
  }
  return urls;
}

/** Whether `hostname` (a URL's, IPv6 without brackets) is a loopback address or name. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (h === "::1" || /^(0{0,4}:){7}0{0,3}1$/.test(h)) return true;
  // IPv4-mapped IPv6 (`::ffff:127.0.0.1`, written `::ffff:7f00:1` by the URL parser).
  return /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(h);
}

/** The URL `url` with its credential dropped: how a public address is kept and shown. */
export function addressOf(url: string): string {
  const u = new URL(url);
  u.username = "";
  u.password = "";
  return u.href;
}

/** Where a node keeps the mesh's CA certificate: what its broker URL's `cacertfile` names. */
export const NODE_CA_FILE = "/etc/mesh/ca.crt";

/**
 * The public member `url` as a node of a mesh with a CA reaches it: `amqps://`, on port 5671
 * when it named AMQP's plain port (5672) or none, any other port kept (a broker whose TLS
 * listener is elsewhere is given as `amqps://` with its port).
 */
export function tlsAddressOf(url: string): string {
  const u = new URL(url);
  if (u.protocol === "amqps:") return u.href;
  const port = u.port === "" || u.port === "5672" ? "5671" : u.port;
  return new URL(`amqps://${u.host.replace(/:\d+$/, "")}:${port}${u.pathname}`).href;
}

/**
 * `url` (a node's broker URL) naming `caFile` as its `cacertfile` (the RabbitMQ URI spec's
 * name, which lib/amqp.ts verifies the broker against); unchanged for amqp://.
 */
export function withCaFile(url: string, caFile: string = NODE_CA_FILE): string {
  const u = new URL(url);
  if (u.protocol !== "amqps:") return url;
  u.searchParams.set("cacertfile", caFile);
  return u.href;
}

/** The vhost an AMQP URL names: its decoded path, `/` when it has none. */
export function vhostOf(url: string): string {
  const path = new URL(url).pathname.replace(/^\//, "");
  return path === "" ? "/" : decodeURIComponent(path);
}

/**
 * The node's broker URLs: each public member with the node's account and password, keeping the
 * member's scheme, host, port and vhost (one URL per member, comma-separated, as `mesh-host link
 * --broker` and `MESH_BROKER_URL` take them). With `caFile` (the mesh has a CA), each amqps://
 * URL names it as its `cacertfile`: where the node keeps the CA certificate.
 */
export function nodeUrl(
  members: readonly string[],
  account: string,
  password: string,
  caFile?: string,
): string {
  return members.map((m) => {
    const url = withCredential(m, account, password);
    return caFile === undefined ? url : withCaFile(url, caFile);
  }).join(",");
}

/** The kept public broker address (its members), or undefined when none was ever given. */
export async function readPublicBroker(sql: Queryable): Promise<string[] | undefined> {
  const [row] = await sql<{ value: string }[]>`
    select value from settings where name = ${PUBLIC_BROKER_SETTING}`;
  return row === undefined ? undefined : row.value.split(",");
}

/**
 * Keeps `members` as the public broker address (inside the caller's transaction).
 *
 * @returns the address kept before (undefined when none), so that a replacement can be said.
 */
export async function recordPublicBroker(
  sql: Queryable,
  members: readonly string[],
): Promise<string[] | undefined> {
  const before = await readPublicBroker(sql);
  const value = members.map(addressOf).join(",");
  await sql`
    insert into settings (name, value) values (${PUBLIC_BROKER_SETTING}, ${value})
    on conflict (name) do update set value = excluded.value, updated_at = now()`;
  return before;
}

/** What the check of one public member found. */
export interface Probed {
  /** The member, as given (without credential). */
  url: string;
  /** The address the connection reached (what the name resolved to here). */
  remote: string;
  /** How far the check went: `amqp` (the broker answered the AMQP 0-9-1 header) or `tcp`. */
  checked: "amqp" | "tcp";
}

/** The AMQP 0-9-1 protocol header a client opens with. */
const AMQP_HEADER = new Uint8Array([0x41, 0x4d, 0x51, 0x50, 0, 0, 9, 1]);

/**
 * Checks that `url` (a public member) resolves and answers: a TCP connect to its host and port
 * (5672 for `amqp`, 5671 for `amqps` when none is written) within `timeoutMs`; for `amqp`, also the
 * AMQP 0-9-1 protocol header, to which a broker answers with `connection.start` (something else
 * listening there is said). For `amqps` only the TCP connect is made: the TLS handshake would need
 * the mesh's CA, which the control plane may not hold.
 *
 * @throws {PublicBrokerError} naming the URL (credential masked) and why: it does not resolve,
 *   refuses or times out, or answers as something other than an AMQP 0-9-1 broker.
 */
export async function probeBroker(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<Probed> {
  const u = new URL(url);
  const shown = redactUrl(url);
  const hostname = u.hostname.replace(/^\[|\]$/g, "");
  const tls = u.protocol === "amqps:";
  const port = u.port === "" ? (tls ? 5671 : 5672) : Number(u.port);
  const fail = (why: string) =>
    new PublicBrokerError(`the public broker ${shown} (${hostname} port ${port}) ${why}`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(fail(`did not answer within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
  });
  let conn: Deno.TcpConn | undefined;
  const connecting = Deno.connect({ hostname, port });
  try {
    try {
      conn = await Promise.race([connecting, timeout]);
    } catch (error) {
      if (error instanceof PublicBrokerError) {
        connecting.then((c) => c.close(), () => {});
        throw error;
      }
      const message = (error as Error).message;
      throw fail(
        /lookup address|name or service|nodename nor servname|no address/i.test(message)
          ? `does not resolve: ${message}`
          : `refuses connections: ${message}`,
      );
    }
    const remoteAddr = conn.remoteAddr as Deno.NetAddr;
    const remote = remoteAddr.hostname;
    if (tls) return { url, remote, checked: "tcp" };
    const answer = new Uint8Array(11);
    let got = 0;
    try {
      await Promise.race([conn.write(AMQP_HEADER), timeout]);
      while (got < answer.length) {
        const n = await Promise.race([conn.read(answer.subarray(got)), timeout]);
        if (n === null) break;
        got += n;
      }
    } catch (error) {
      if (error instanceof PublicBrokerError) throw error;
      throw fail(`accepted the connection, then failed: ${(error as Error).message}`);
    }
    // A method frame (1) on channel 0 whose method is connection.start (class 10, method 10).
    const start = got === answer.length && answer[0] === 1 && answer[1] === 0 &&
      answer[2] === 0 && answer[7] === 0 && answer[8] === 10 && answer[9] === 0 &&
      answer[10] === 10;
    if (!start) {
      throw fail(
        got === 0
          ? "accepted the connection and closed it without answering the AMQP 0-9-1 header"
          : "answered the AMQP 0-9-1 header with something other than connection.start: it is not an AMQP broker",
      );
    }
    return { url, remote, checked: "amqp" };
  } finally {
    clearTimeout(timer);
    try {
      conn?.close();
    } catch { /* already closed */ }
  }
}
