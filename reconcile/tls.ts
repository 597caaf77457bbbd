/**
 * The stamp over the network: which addresses may be spoken to in plain HTTP, where the mesh's
 * CA certificate is found, and what a refused server certificate is in words. Shared by
 * `stamp serve` (reconcile/stamp_serve.ts) and `watch` (reconcile/watch/source.ts). Nothing here
 * prints, and only {@linkcode findCaFile} touches the file system (a stat).
 *
 * @module
 */

import { printable } from "../lib/printable.ts";

/** Where the mesh's CA certificate is kept when nothing else names it (docs/security.md). */
export const DEFAULT_CA_FILE = "/etc/mesh/ca.crt";

/** The environment variable that names the mesh's CA certificate. */
export const CA_FILE_ENV = "MESH_CA_FILE";

/** The option that allows plain HTTP to or from an address that is not loopback. */
export const ALLOW_PLAIN_HTTP = "--allow-plain-http";

/**
 * The environment variable that, set to `1`, allows clear text to or from an address that is not
 * loopback in every mesh program (docs/design.md, the wire); here as {@linkcode ALLOW_PLAIN_HTTP}.
 */
export const PLAIN_ENV = "MESH_ALLOW_PLAIN";

/** Whether plain HTTP off loopback is allowed: `option` given, or `MESH_ALLOW_PLAIN=1`. */
export function plainHttpAllowed(option: boolean | undefined): boolean {
  return option === true || Deno.env.get(PLAIN_ENV) === "1";
}

/**
 * Whether `hostname` (a URL's host or a listen address; IPv6 with or without brackets) is a
 * loopback address or name: `localhost` (and `*.localhost`), `127.0.0.0/8`, `::1`, and
 * IPv4-mapped `::ffff:127.x.y.z`. A wildcard (`0.0.0.0`, `::`) is not: it listens on every
 * address.
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (h === "::1" || /^(0{0,4}:){7}0{0,3}1$/.test(h)) return true;
  // IPv4-mapped IPv6 (`::ffff:127.0.0.1`, written `::ffff:7f00:1` by the URL parser).
  return /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(h);
}

/**
 * Where the mesh's CA certificate is: `explicit` (an option) when given, else `$MESH_CA_FILE`
 * when set and not empty, else `defaultFile` (/etc/mesh/ca.crt) when something exists there,
 * else `undefined` (no mesh CA: a machine with no mesh needs none). Whether the file is a
 * certificate is not looked at here; an explicit or environment path is returned even when
 * nothing is there, so that reading it says so.
 */
export async function findCaFile(
  explicit: string | undefined,
  options: { env?: string | undefined; defaultFile?: string } = {},
): Promise<string | undefined> {
  if (explicit !== undefined) return explicit;
  const env = "env" in options ? options.env : Deno.env.get(CA_FILE_ENV);
  if (env !== undefined && env !== "") return env;
  const fallback = options.defaultFile ?? DEFAULT_CA_FILE;
  return await Deno.lstat(fallback).then(() => fallback, () => undefined);
}

/** What {@linkcode certificateRefusal} is told about the connection. */
export interface RefusalContext {
  /** The CA file the server was verified against; none: the system's trusted roots only. */
  caFile?: string;
}

const UNIX_TIME = (what: string) => new RegExp(`not valid ${what} (\\d+)\\b`);

function isoOf(seconds: string | undefined): string | undefined {
  if (seconds === undefined) return undefined;
  const ms = Number(seconds) * 1000;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/**
 * The server certificate refusal a failed HTTPS request carries, as a sentence about "its
 * certificate" (the caller says whose): from another CA, expired, not valid yet, or for another
 * name; `undefined` when the failure is not a refused certificate.
 *
 * Reads the words of Deno's TLS client (rustls, through reqwest; checked on Deno 2.9.6):
 * `invalid peer certificate: UnknownIssuer`, `... certificate expired: ... but certificate is not
 * valid after N (...)`, `... certificate not valid yet: ... not valid before N (...)` (N: seconds
 * since the epoch), `... certificate not valid for name "H"; certificate is only valid for
 * DnsName("a") or IpAddress(10.0.0.1)`.
 * Another refusal is given in rustls's own words.
 */
export function certificateRefusal(
  message: string,
  context: RefusalContext = {},
): string | undefined {
  const at = message.indexOf("invalid peer certificate: ");
  if (at < 0) return undefined;
  const why = message.slice(at + "invalid peer certificate: ".length);
  if (/^UnknownIssuer\b/.test(why)) {
    return context.caFile === undefined
      ? "its certificate is not issued by a trusted CA (no mesh CA was given: --ca, $MESH_CA_FILE or /etc/mesh/ca.crt)"
      : `its certificate is not issued by the mesh CA "${context.caFile}"`;
  }
  if (/^certificate expired\b/.test(why)) {
    const when = isoOf(UNIX_TIME("after").exec(why)?.[1]);
    return `its certificate expired${when ? ` at ${when}` : ""}`;
  }
  if (/^certificate not valid yet\b/.test(why)) {
    const when = isoOf(UNIX_TIME("before").exec(why)?.[1]);
    return `its certificate is not valid yet${when ? ` (valid from ${when})` : ""}`;
  }
  const name = /^certificate not valid for name "([^"]*)"(?:; certificate is only valid for (.*))?/
    .exec(why);
  if (name) {
    const names = [...(name[2] ?? "").matchAll(/(?:DnsName\("([^"]*)"\)|IpAddress\(([^)]*)\))/g)]
      .map((m) => printable(m[1] ?? m[2]!));
    return `its certificate is not for "${printable(name[1]!)}"${
      names.length > 0 ? ` (it is for ${names.join(", ")})` : ""
    }`;
  }
  return `its certificate is refused: ${printable(why)}`;
}
