/**
 * The mesh's own certificate authority: made once, its certificate public
 * (/etc/mesh/ca.crt, lib/wire_trust.ts's `DEFAULT_CA_FILE`), its key 0600 ({@linkcode CA_KEY_FILE}); it issues the server
 * certificates of the broker's AMQPS listener and management API, PostgreSQL and the stamp, for
 * the DNS names and IP addresses nodes use, and says when one is due for renewal.
 *
 * Every key is ECDSA P-256 and every signature ECDSA with SHA-256 (RabbitMQ, PostgreSQL and
 * Deno's rustls accept them). Certificates are made and read with `@peculiar/x509` (RFC 5280)
 * over WebCrypto; keys are PKCS#8 PEM (RFC 5208, RFC 7468 `PRIVATE KEY`), certificates PEM
 * `CERTIFICATE`.
 *
 * This module loads npm and `node:` modules: a lean path (the host's apply) imports
 * {@linkcode TrustFileError} and {@linkcode readSecretKey} from `lib/trust_file.ts` instead (the
 * same class), or imports this module dynamically where it is used.
 *
 * @module
 */

import * as x509 from "@peculiar/x509";
import { createHash } from "node:crypto";
import { pemBlocks } from "./trust_file.ts";

export { readCaCert, readCertificate } from "./cert_file.ts";
export {
  MAX_TRUST_FILE_BYTES,
  readSecretKey,
  readTrustText,
  TrustFileError,
} from "./trust_file.ts";

x509.cryptoProvider.set(crypto);

/** Where the mesh's CA private key is kept (PKCS#8 PEM, mode 0600, root). */
export const CA_KEY_FILE = "/etc/mesh/secrets/ca.key";

/** A certificate and its private key, both PEM (`CERTIFICATE`, PKCS#8 `PRIVATE KEY`). */
export interface PemPair {
  certPem: string;
  keyPem: string;
}

/** A CA certificate's default life, in days (ten years). */
export const CA_DAYS = 3650;
/** A server certificate's default life, in days (the CA/Browser Forum's longest, 397). */
export const SERVER_DAYS = 397;
/** How many days before expiry a certificate is due for renewal by default. */
export const RENEW_BEFORE_DAYS = 30;
/** How far before `now` a certificate's validity starts, in ms: clocks a little behind accept it. */
const BACKDATE_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

const EC_KEY: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNING: EcdsaParams & EcKeyImportParams = {
  name: "ECDSA",
  namedCurve: "P-256",
  hash: "SHA-256",
};

/** A random positive serial number of 16 bytes, hex (RFC 5280 4.1.2.2: at most 20 bytes). */
function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x40; // positive, and 16 bytes long once DER-encoded
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A subject made of one common name, built from parts so that no character of it is syntax. */
const commonName = (cn: string) => new x509.Name([{ CN: [cn] }]);

function checkDays(days: number, what: string): void {
  if (!Number.isFinite(days) || days <= 0 || days > 36500) {
    throw new RangeError(`Cannot make ${what}: days must be between 1 and 36500, not ${days}`);
  }
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY") +
    "\n";
}

/**
 * Makes a CA: an ECDSA P-256 key and a self-signed certificate for it (basicConstraints CA:true
 * with path length 0, critical; keyUsage keyCertSign and cRLSign, critical; a subject key
 * identifier), valid from an hour before `now` for `days`.
 *
 * @param options.name the subject's common name; default `mesh CA <8 random hex digits>` (each
 *   mesh's CA named apart, so that two are never confused by name).
 * @param options.days its life in days, default {@linkcode CA_DAYS} (ten years).
 * @param options.now when it is made; default the current time.
 * @returns the certificate and the key, PEM.
 * @throws {RangeError} when `days` is not between 1 and 36500.
 */
export async function createCa(
  options: { name?: string; days?: number; now?: Date } = {},
): Promise<PemPair> {
  const days = options.days ?? CA_DAYS;
  checkDays(days, "a CA");
  const now = (options.now ?? new Date()).getTime();
  const name = options.name ?? `mesh CA ${randomSerial().slice(0, 8)}`;
  const keys = await crypto.subtle.generateKey(EC_KEY, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: commonName(name),
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + days * DAY_MS),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await pkcs8Pem(keys.privateKey) };
}

/** A name for a SAN: a DNS name or an IP address, in one spelling. */
interface SanName {
  type: "dns" | "ip";
  value: string;
  /** Compared on: a DNS name lowercased without a final dot, an address as its bytes (hex). */
  key: string;
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address literal, or `undefined` when it is not one. */
export function ipBytes(text: string): Uint8Array | undefined {
  const v4 = (s: string): number[] | undefined => {
    const parts = s.split(".");
    if (parts.length !== 4) return undefined;
    const out: number[] = [];
    for (const p of parts) {
      if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
      out.push(Number(p));
    }
    return out;
  };
  const four = v4(text);
  if (four !== undefined) return Uint8Array.from(four);
  if (!text.includes(":") || !/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  let head = text;
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    // An IPv4 tail (`::ffff:192.0.2.1`) is its two last groups.
    const b = v4(dotted[1]!);
    if (b === undefined) return undefined;
    const group = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    head = text.slice(0, -dotted[1]!.length) + `${group(b[0]!, b[1]!)}:${group(b[2]!, b[3]!)}`;
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => s === "" ? [] : s.split(":");
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if ([...left, ...right].some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  const known = left.length + right.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return undefined;
  const words = [
    ...left.map((g) => parseInt(g, 16)),
    ...Array(halves.length === 2 ? 8 - known : 0).fill(0),
    ...right.map((g) => parseInt(g, 16)),
  ];
  return Uint8Array.from(words.flatMap((w) => [w >> 8, w & 0xff]));
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * `name` as a SAN: an address literal as an IP address, else a DNS name (labels of letters,
 * digits and hyphens, not starting or ending with a hyphen, at most 253 characters; a leading
 * `*.` label allowed, the last label not all digits).
 *
 * @throws {Error} `... "x y" is neither a DNS name nor an IP address`.
 */
function sanName(name: string): SanName {
  const ip = ipBytes(name);
  if (ip !== undefined) {
    const value = ip.length === 4 ? Array.from(ip).join(".") : ipv6Text(ip);
    return { type: "ip", value, key: `ip:${hex(ip)}` };
  }
  const dns = name.toLowerCase().replace(/\.$/, "");
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
  const labels = dns.split(".");
  // A last label of digits only is a mistyped address, never a name (RFC 3696 2).
  const ok = dns.length > 0 && dns.length <= 253 && !/^\d+$/.test(labels[labels.length - 1]!) &&
    labels.every((l, i) => label.test(l) || (i === 0 && l === "*" && labels.length > 2));
  if (!ok) {
    throw new Error(
      `Cannot issue a certificate: ${JSON.stringify(name)} is neither a DNS name nor an IP address`,
    );
  }
  return { type: "dns", value: dns, key: `dns:${dns}` };
}

/** An IPv6 address's 16 bytes as RFC 5952 text (lowercase, the longest zero run as `::`). */
function ipv6Text(bytes: Uint8Array): string {
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const text = (ws: number[]) => ws.map((w) => w.toString(16)).join(":");
  if (best < 0) return text(words);
  return `${text(words.slice(0, best))}::${text(words.slice(best + bestLength))}`;
}

/**
 * Checks that each of `names` is a DNS name or an IPv4/IPv6 address a certificate can carry
 * (as {@linkcode issueServerCert} takes them), and that there is at least one.
 *
 * @throws {Error} `Cannot issue a certificate: "x y" is neither a DNS name nor an IP address`.
 */
export function checkNames(names: readonly string[]): void {
  if (names.length === 0) throw new Error("Cannot issue a certificate: no name or address given");
  names.forEach(sanName);
}

/** The keys names are compared on, sorted and without repeats. */
function nameKeys(names: readonly string[]): string[] {
  return [...new Set(names.map((n) => sanName(n).key))].sort();
}

/** `certPem`'s first certificate, parsed. @throws {Error} when it holds none. */
function parseCert(certPem: string): x509.X509Certificate {
  const block = pemBlocks(certPem).find((b) => b.label === "CERTIFICATE");
  if (block === undefined) throw new Error("it holds no PEM CERTIFICATE block");
  try {
    return new x509.X509Certificate(block.der);
  } catch (error) {
    throw new Error(`its CERTIFICATE block is not an X.509 certificate: ${messageOf(error)}`);
  }
}

const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error);

/**
 * Issues a server certificate from `ca`: a new ECDSA P-256 key, and a certificate for it whose
 * subject alternative names are `options.names` (each DNS name a `dNSName`, each IPv4/IPv6
 * address an `iPAddress`; clients match those, never the common name), extended key usage
 * serverAuth, keyUsage digitalSignature (critical), basicConstraints CA:false (critical), a random
 * 16-byte serial, authority and subject key identifiers. Valid from an hour before `now` for
 * `days`, but never past the CA's own end.
 *
 * @param ca the CA's certificate and key (as {@linkcode createCa} returns them).
 * @param options.names the names and addresses clients use; at least one.
 * @param options.days its life in days, default {@linkcode SERVER_DAYS}.
 * @param options.now when it is issued; default the current time.
 * @param options.commonName the subject's common name; default the first name.
 * @returns the certificate and its key, PEM.
 * @throws {Error} when `names` is empty or holds something that is neither a DNS name nor an
 *   IP address, or `ca` is not a CA certificate with its matching key.
 * @throws {RangeError} when `days` is not between 1 and 36500.
 */
export async function issueServerCert(
  ca: PemPair,
  options: { names: readonly string[]; days?: number; now?: Date; commonName?: string },
): Promise<PemPair> {
  const days = options.days ?? SERVER_DAYS;
  checkDays(days, "a server certificate");
  if (options.names.length === 0) {
    throw new Error("Cannot issue a certificate: no name or address given");
  }
  const sans = options.names.map(sanName).filter((s, i, all) =>
    all.findIndex((o) => o.key === s.key) === i
  );
  let caCert: x509.X509Certificate;
  try {
    caCert = parseCert(ca.certPem);
  } catch (error) {
    throw new Error(`Cannot issue a certificate: the CA certificate: ${messageOf(error)}`);
  }
  if (caCert.getExtension(x509.BasicConstraintsExtension)?.ca !== true) {
    throw new Error(
      "Cannot issue a certificate: the CA certificate is not a CA (basicConstraints)",
    );
  }
  const caKey = await importCaKey(ca.keyPem, caCert);
  const now = (options.now ?? new Date()).getTime();
  const notAfter = Math.min(now + days * DAY_MS, caCert.notAfter.getTime());
  const keys = await crypto.subtle.generateKey(EC_KEY, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: commonName(options.commonName ?? sans[0]!.value),
    issuer: caCert.subjectName,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(notAfter),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(
        sans.map((s) => ({ type: s.type, value: s.value })),
        false,
      ),
      await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await pkcs8Pem(keys.privateKey) };
}

/** The CA's private key, imported for signing, after checking it is the certificate's own. */
async function importCaKey(keyPem: string, caCert: x509.X509Certificate): Promise<CryptoKey> {
  const block = pemBlocks(keyPem).find((b) => b.label === "PRIVATE KEY");
  let jwk: JsonWebKey;
  try {
    if (block === undefined) throw new Error("it holds no PEM PRIVATE KEY block");
    const key = await crypto.subtle.importKey("pkcs8", block.der, SIGNING, true, ["sign"]);
    jwk = await crypto.subtle.exportKey("jwk", key);
  } catch (error) {
    throw new Error(
      `Cannot issue a certificate: the CA key is not a PKCS#8 ECDSA P-256 key: ${messageOf(error)}`,
    );
  }
  const pub = await crypto.subtle.exportKey(
    "jwk",
    await caCert.publicKey.export(SIGNING, ["verify"]),
  );
  if (pub.x !== jwk.x || pub.y !== jwk.y) {
    throw new Error("Cannot issue a certificate: the CA key is not the CA certificate's key");
  }
  delete jwk.key_ops;
  return await crypto.subtle.importKey("jwk", jwk, SIGNING, false, ["sign"]);
}

/** What a certificate says, as {@linkcode describeCert} reads it. */
export interface CertDescription {
  /** Its subject, RFC 4514 text, e.g. `CN=broker.example`. */
  subject: string;
  /** Its issuer, RFC 4514 text. */
  issuer: string;
  /** Its subject alternative names: DNS names, then IP addresses, each in the order written. */
  names: string[];
  notBefore: Date;
  notAfter: Date;
  /** SHA-256 of its DER, lowercase hex without separators (`openssl x509 -fingerprint -sha256`). */
  fingerprint: string;
  /** Whether its basicConstraints say it is a CA. */
  isCa: boolean;
  /** Its serial number, lowercase hex. */
  serial: string;
}

/**
 * What the first certificate of `certPem` says.
 *
 * @throws {Error} when `certPem` holds no PEM CERTIFICATE block, or it is not a certificate.
 */
export function describeCert(certPem: string): CertDescription {
  const cert = parseCert(certPem);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const items = san?.names.items ?? [];
  return {
    subject: cert.subject,
    issuer: cert.issuer,
    names: [
      ...items.filter((n) => n.type === "dns").map((n) => n.value),
      ...items.filter((n) => n.type === "ip").map((n) => n.value),
    ],
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    fingerprint: createHash("sha256").update(new Uint8Array(cert.rawData)).digest("hex"),
    isCa: cert.getExtension(x509.BasicConstraintsExtension)?.ca === true,
    serial: cert.serialNumber.toLowerCase(),
  };
}

/**
 * Why the first certificate of `certPem` is due for renewal, or `undefined` when it is not: it
 * has fewer than `beforeDays` days left at `now` (`it expires at ... (N days left, fewer than
 * 30)` or `it expired at ...`), or `names` is given and differs from its subject alternative
 * names as a set (`its names are a, b; wanted a, c`; DNS names compared case-insensitively,
 * addresses by value).
 *
 * @param options.now the time judged at; default the current time.
 * @param options.beforeDays the days left below which it is due; default
 *   {@linkcode RENEW_BEFORE_DAYS}.
 * @param options.names the names it should carry; not compared when absent.
 * @throws {Error} when `certPem` is not a certificate, or `names` holds something that is
 *   neither a DNS name nor an IP address.
 */
export function renewalReason(
  certPem: string,
  options: { now?: Date; beforeDays?: number; names?: readonly string[] } = {},
): string | undefined {
  const d = describeCert(certPem);
  const now = (options.now ?? new Date()).getTime();
  const left = (d.notAfter.getTime() - now) / DAY_MS;
  const before = options.beforeDays ?? RENEW_BEFORE_DAYS;
  if (left <= 0) return `it expired at ${d.notAfter.toISOString()}`;
  if (left < before) {
    return `it expires at ${d.notAfter.toISOString()} (${
      Math.floor(left)
    } days left, fewer than ${before})`;
  }
  if (options.names !== undefined) {
    const have = nameKeys(d.names);
    const want = nameKeys(options.names);
    if (have.join(" ") !== want.join(" ")) {
      return `its names are ${d.names.join(", ") || "(none)"}; wanted ${options.names.join(", ")}`;
    }
  }
  return undefined;
}

/**
 * Whether the first certificate of `certPem` is due for renewal: see {@linkcode renewalReason}
 * (true when it gives a reason).
 */
export function renewalDue(
  certPem: string,
  options: { now?: Date; beforeDays?: number; names?: readonly string[] } = {},
): boolean {
  return renewalReason(certPem, options) !== undefined;
}

/**
 * Whether the PKCS#8 key `keyPem` is the private half of the first certificate of `certPem`'s
 * public key (an ECDSA P-256 key compared by its point). False when either cannot be read or the
 * key is of another kind.
 */
export async function keyMatchesCert(certPem: string, keyPem: string): Promise<boolean> {
  try {
    const cert = parseCert(certPem);
    const block = pemBlocks(keyPem).find((b) => b.label === "PRIVATE KEY");
    if (block === undefined) return false;
    const key = await crypto.subtle.importKey("pkcs8", block.der, SIGNING, true, ["sign"]);
    const jwk = await crypto.subtle.exportKey("jwk", key);
    const pub = await crypto.subtle.exportKey(
      "jwk",
      await cert.publicKey.export(SIGNING, ["verify"]),
    );
    return pub.x === jwk.x && pub.y === jwk.y;
  } catch {
    return false;
  }
}

/**
 * Whether the first certificate of `certPem` was issued by one of the certificates of `caPem`:
 * its issuer name is that CA's subject and that CA's key verifies its signature. False when
 * either cannot be read.
 */
export async function issuedBy(certPem: string, caPem: string): Promise<boolean> {
  let cert: x509.X509Certificate;
  try {
    cert = parseCert(certPem);
  } catch {
    return false;
  }
  for (const b of pemBlocks(caPem).filter((b) => b.label === "CERTIFICATE")) {
    try {
      const ca = new x509.X509Certificate(b.der);
      if (ca.subject !== cert.issuer) continue;
      if (await cert.verify({ publicKey: ca.publicKey, signatureOnly: true })) return true;
    } catch { /* not this one */ }
  }
  return false;
}
