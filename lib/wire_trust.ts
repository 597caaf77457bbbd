/**
 * Trust on the wire, one rule for every program (the host's link, mesh-control, mesh-builder):
 *
 * - A TLS connection (`amqps://`, the management API over `https://`, PostgreSQL with
 *   `sslmode=verify-full`) verifies the server's certificate against the mesh's CA: the file an
 *   explicit option or URL parameter names (AMQP `cacertfile=PATH`, PostgreSQL `sslrootcert=PATH`),
 *   else `MESH_CA_FILE`, else {@linkcode DEFAULT_CA_FILE} when it exists, else the system's roots.
 *   The host name (or address) the URL names must be one the certificate is issued for.
 * - A connection in clear text (`amqp://`, `http://`, PostgreSQL without TLS) is refused to any
 *   host that is not this machine (loopback: `localhost`, 127.0.0.0/8, `::1`, a Unix socket),
 *   unless `MESH_ALLOW_PLAIN=1` is set in the program's environment ({@linkcode PLAIN_ENV}).
 * - A refused certificate reads as a sentence saying what was wrong (another CA, expired, not
 *   valid yet, another name): {@linkcode tlsRefusal}.
 *
 * @module
 */

import { messageOf } from "./atomic.ts";
import { printable } from "./printable.ts";
import { DEFAULT_CA_FILE, pemBlocks, TrustFileError } from "./trust_file.ts";

export { DEFAULT_CA_FILE };
/** The environment variable naming the CA certificate file. */
export const CA_ENV = "MESH_CA_FILE";
/** The environment variable that, set to `1`, allows clear text to a host that is not loopback. */
export const PLAIN_ENV = "MESH_ALLOW_PLAIN";

/**
 * A CA certificate file that cannot be read, is not a certificate, or is too open
 * (lib/trust_file.ts's class, which every program maps to exit 2).
 */
export { TrustFileError } from "./trust_file.ts";

/** A connection in clear text to a host that is not this machine, not allowed. */
export class PlainRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PlainRefusedError";
  }
}

/** The CA a connection verifies against: its file and its certificates (PEM). */
export interface TrustAnchor {
  /** The file the certificates were read from. */
  path: string;
  /** Each certificate of the file, PEM (`-----BEGIN CERTIFICATE-----` ...). */
  certs: string[];
}

/**
 * The CA certificate file a connection uses: `explicit` (an option or URL parameter), else
 * `MESH_CA_FILE`, else {@linkcode DEFAULT_CA_FILE} when something is there, else undefined (the
 * system's roots: a machine with no mesh needs none). An empty `explicit` or `MESH_CA_FILE` is
 * not given. An explicit or environment path is returned even when nothing is there, so that
 * reading it ({@linkcode readTrustAnchor}) says so. Nothing here reads the file (an `lstat` of
 * the default only).
 *
 * @param options.defaultFile the default looked at instead of {@linkcode DEFAULT_CA_FILE}
 *   (tests).
 */
export function caFileFor(
  explicit: string | undefined,
  options: { defaultFile?: string } = {},
): string | undefined {
  if (explicit !== undefined && explicit !== "") return explicit;
  const env = Deno.env.get(CA_ENV);
  if (env !== undefined && env !== "") return env;
  const fallback = options.defaultFile ?? DEFAULT_CA_FILE;
  try {
    Deno.lstatSync(fallback);
    return fallback;
  } catch {
    return undefined;
  }
}

/**
 * Reads the CA certificates of `path` (PEM, one or more, each a CA certificate: lib/mesh_ca.ts's
 * `readCaCert`, through the bounded reader) from a file not writable by group or others (who
 * could change what this program trusts) and holding no private key.
 *
 * @throws {TrustFileError} `Cannot use CA certificate "PATH": ...` or `Cannot read CA certificate
 *   "PATH": ...` naming what is wrong (missing, unreadable, not a regular file, writable by
 *   others with its mode, holds a private key, not a certificate or not a CA's).
 */
export async function readTrustAnchor(path: string): Promise<TrustAnchor> {
  let mode: number | null = null;
  try {
    mode = (await Deno.stat(path)).mode;
  } catch {
    // Missing or unreadable: readCaCert says so in its words.
  }
  if (mode !== null && (mode & 0o022) !== 0) {
    throw new TrustFileError(
      `Cannot use CA certificate "${path}": its mode is ${
        (mode & 0o7777).toString(8).padStart(4, "0")
      }; it is writable by ${
        (mode & 0o002) !== 0 ? "anyone" : "its group"
      }, who could choose what this program trusts (0644 expected)`,
      { path },
    );
  }
  const { readCaCert } = await import("./cert_file.ts");
  const text = await readCaCert(path);
  if (pemBlocks(text).some((b) => /PRIVATE KEY/.test(b.label))) {
    throw new TrustFileError(
      `Cannot use CA certificate "${path}": it holds a private key; a CA certificate file holds certificates only`,
      { path },
    );
  }
  const certs = [
    ...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g),
  ].map((m) => `${m[0]}\n`);
  return { path, certs };
}

/**
 * The CA a TLS connection verifies against ({@linkcode caFileFor} of `explicit`, read by
 * {@linkcode readTrustAnchor}), or undefined for the system's roots.
 *
 * @throws {TrustFileError} as {@linkcode readTrustAnchor}.
 */
export async function trustAnchorFor(
  explicit: string | undefined,
): Promise<TrustAnchor | undefined> {
  const path = caFileFor(explicit);
  return path === undefined ? undefined : await readTrustAnchor(path);
}

/**
 * Whether `host` (a URL's host name or a listen address's host, IPv6 with or without brackets, or
 * a Unix socket directory) is this machine: `localhost` and names under `.localhost`, an address
 * in 127.0.0.0/8, `::1`, an IPv4-mapped loopback address (`::ffff:127.0.0.1`, written
 * `::ffff:7f00:1` by the URL parser), or a path. A wildcard listen address (`0.0.0.0`, `::`) is
 * not: it listens on every address.
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h.startsWith("/")) return true;
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (h === "::1" || /^(0{0,4}:){7}0{0,3}1$/.test(h)) return true;
  return /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(h);
}

/**
 * Whether clear text to (or, for a server, on) a host that is not loopback is allowed: `option`
 * (a program's own switch, such as mesh-reconcile's `--allow-plain-http`) is true, or the
 * environment says `MESH_ALLOW_PLAIN=1`.
 */
export function plainAllowed(option?: boolean): boolean {
  return option === true || Deno.env.get(PLAIN_ENV) === "1";
}

/**
 * Refuses a connection in clear text to `host` unless it is loopback or
 * {@linkcode plainAllowed}. `what` names the connection ("broker \"amqp://u:***@h/\"") and
 * `tls` how to have TLS instead ("use amqps://").
 *
 * @throws {PlainRefusedError} `Refusing to connect to WHAT in clear text: HOST is not this
 *   machine; TLS ... or set MESH_ALLOW_PLAIN=1`.
 */
export function refusePlain(host: string, what: string, tls: string): void {
  if (isLoopback(host) || plainAllowed()) return;
  throw new PlainRefusedError(
    `Refusing to connect to ${what} in clear text: ${host} is not this machine (${tls}, ` +
      `or set ${PLAIN_ENV}=1 to allow clear text)`,
  );
}

/** What was wrong with a refused certificate, for {@linkcode tlsRefusal}. */
export interface RefusalContext {
  /** The host name or address connected to. */
  host: string;
  /** The CA file verified against; undefined for the system's roots. */
  caFile?: string;
}

/**
 * The sentence saying why the server's certificate was refused, when `error` (or one of its
 * causes) is such a refusal, else undefined. Reads rustls's wording (Deno.connectTls, fetch:
 * `invalid peer certificate: UnknownIssuer`, `Expired...`, `NotValidYet...`, `NotValidForName`
 * or `certificate not valid for name "H"`) and node:tls's codes (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`,
 * `CERT_HAS_EXPIRED`, `ERR_TLS_CERT_ALTNAME_INVALID`, ...). Where rustls says more (checked on
 * Deno 2.9.6: `certificate expired: ... not valid after N (...)`, `certificate not valid yet: ...
 * not valid before N (...)` with N seconds since the epoch, `certificate not valid for name "H";
 * certificate is only valid for DnsName("a") or IpAddress(10.0.0.1)`), the sentence says when it
 * expired, from when it is valid, or which names it is for. The original wording follows in
 * parentheses, made printable.
 */
export function tlsRefusal(error: unknown, context: RefusalContext): string | undefined {
  const texts: string[] = [];
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    texts.push(messageOf(current));
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  const text = texts.join(" ");
  const said = texts.map((t) => /invalid peer certificate: [^\n]*/.exec(t)?.[0])
    .find((t) => t !== undefined) ?? texts.find((t) => t !== "") ?? "";
  const anchor = context.caFile === undefined
    ? "any CA this system trusts (no mesh CA file: pass one, set MESH_CA_FILE or install /etc/mesh/ca.crt)"
    : `the mesh CA in "${context.caFile}"`;
  const has = (re: RegExp, ...names: string[]) =>
    re.test(text) || codes.some((c) => names.includes(c));
  let sentence: string | undefined;
  if (
    has(
      /UnknownIssuer|BadSignature|unable to (?:verify|get local issuer)|self[- ]signed/i,
      "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
      "DEPTH_ZERO_SELF_SIGNED_CERT",
      "SELF_SIGNED_CERT_IN_CHAIN",
      "CERT_SIGNATURE_FAILURE",
    )
  ) {
    sentence = `the server's certificate is not signed by ${anchor}`;
  } else if (
    has(
      /invalid peer certificate: (?:Expired|certificate expired)|certificate has expired/i,
      "CERT_HAS_EXPIRED",
    )
  ) {
    const when = isoOf(/not valid after (\d+)\b/.exec(said)?.[1]);
    sentence = `the server's certificate has expired${when ? `: it was valid until ${when}` : ""}`;
  } else if (
    has(
      /invalid peer certificate: (?:NotValidYet|certificate not valid yet)|certificate is not yet valid/i,
      "CERT_NOT_YET_VALID",
    )
  ) {
    const when = isoOf(/not valid before (\d+)\b/.exec(said)?.[1]);
    sentence = `the server's certificate is not valid yet${
      when ? `: it is valid from ${when}` : ""
    }; check this machine's clock`;
  } else if (
    has(
      /NotValidForName|not valid for name|does not match certificate's altnames/i,
      "ERR_TLS_CERT_ALTNAME_INVALID",
    )
  ) {
    const only = /certificate is only valid for ([^\n]*)/.exec(said)?.[1] ?? "";
    const names = [...only.matchAll(/DnsName\("([^"]*)"\)|IpAddress\(([^)]*)\)/g)]
      .map((m) => printable(m[1] ?? m[2]!));
    sentence = `the server's certificate is not issued for "${printable(context.host)}"${
      names.length > 0 ? ` (it is for ${names.join(", ")})` : ""
    }`;
  } else if (/invalid peer certificate/i.test(text)) {
    sentence = `the server's certificate was refused`;
  }
  return sentence === undefined ? undefined : `${sentence} (${printable(said)})`;
}

/** `seconds` since the epoch (a decimal string) as ISO 8601, or undefined. */
function isoOf(seconds: string | undefined): string | undefined {
  if (seconds === undefined) return undefined;
  const ms = Number(seconds) * 1000;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/** What `fetch` is given for one HTTP endpoint: {@linkcode httpTrust}'s answer. */
export interface HttpTrust {
  /** For https:// with a mesh CA: a client verifying against it; else undefined (defaults). */
  client?: Deno.HttpClient;
  /** The CA file the client verifies against; undefined for the system's roots or http://. */
  caFile?: string;
  /** The URL's host name (IPv6 without brackets), for {@linkcode tlsRefusal}. */
  host: string;
}

/**
 * How to reach the HTTP endpoint `url` (the broker's management API) by the rule of this module:
 * https:// verifies against the CA of the URL's `cacertfile=PATH`, else `MESH_CA_FILE`, else
 * /etc/mesh/ca.crt when it exists (a `Deno.createHttpClient` with those `caCerts`), else the
 * system's roots; http:// is refused to a host that is not loopback unless allowed. `what` names
 * the endpoint in a refusal ("the management API http://u:***@h:15672").
 *
 * @throws {TrustFileError} when the CA file is missing, unreadable, too open or not a certificate.
 * @throws {PlainRefusedError} for http:// to another machine, not allowed.
 */
export async function httpTrust(url: URL, what: string): Promise<HttpTrust> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (url.protocol === "http:") {
    refusePlain(host, what, "use https:// (the management API's TLS port, 15671)");
    return { host };
  }
  const anchor = await trustAnchorFor(url.searchParams.get("cacertfile") ?? undefined);
  if (anchor === undefined) return { host };
  return { client: Deno.createHttpClient({ caCerts: anchor.certs }), caFile: anchor.path, host };
}
