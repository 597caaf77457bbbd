/**
 * A served certificate chain judged as a careful client judges it: the path from the leaf to a
 * trusted root is built from the certificates served and the trusted roots, trying every
 * alternative (an issuer is any served or trusted certificate whose subject is the certificate's
 * issuer and whose key verifies its signature), and the best path is kept: one that needs no
 * expired, not-yet-valid or non-CA issuer and ends at a trusted root, when there is one. A served
 * certificate the chosen path does not need (an old cross-sign above a trusted root) is never
 * judged. What is wrong with the best path, when every path has something wrong, is said per
 * certificate: its subject, its position in the path and where it came from, and why.
 *
 * The leaf's own validity window is not judged here (the `certificate` check judges it, with its
 * warning before expiry); its name is ({@linkcode coversName}): an IP address against the
 * certificate's IP address SANs, a DNS name against its DNS SANs (case-insensitive; a `*` only as
 * the whole leftmost label, matching exactly one label, never over fewer than two labels), and
 * never the subject's common name, which clients no longer read (RFC 6125, CA/Browser Forum).
 *
 * Certificates are read by Deno's `node:crypto` `X509Certificate` (names, validity,
 * basicConstraints, signature verification) and the subject alternative names by
 * `@peculiar/asn1-x509` from the DER (the printed form of `X509Certificate.subjectAltName` is
 * ambiguous for names holding `, `, and its `checkHost` ignores wildcards in this Deno).
 *
 * @module
 */

import type { X509Certificate } from "node:crypto";
import { AsnConvert } from "@peculiar/asn1-schema";
import { Certificate, id_ce_subjectAltName, SubjectAlternativeName } from "@peculiar/asn1-x509";

/** A trusted root and where it was read from (`the system store /etc/ssl/...`, a registry path). */
export interface TrustAnchor {
  certificate: X509Certificate;
  /** Where it is trusted from, as said in findings, e.g. `the registry's root /etc/mesh/ca.pem`. */
  from: string;
}

/** The roots a client trusts here, and how they were found (for findings about trust). */
export interface TrustStore {
  anchors: TrustAnchor[];
  /** What was trusted, in words, e.g. `the system store (/etc/ssl/certs/ca-certificates.crt)`. */
  described: string;
}

/** The verdict on a served chain. */
export interface ChainVerdict {
  /** The chosen path from the leaf up, each `"SUBJECT" (served 2nd)` or `(... from WHERE)`. */
  path: string[];
  /** What is wrong with it, each a sentence naming the certificate and why; empty when none. */
  problems: string[];
}

/** The longest path tried (leaf included); longer chains are not built by clients either. */
const MAX_DEPTH = 8;
/** The most path steps tried for one chain: a hostile chain of many look-alikes ends here. */
const MAX_STEPS = 512;

interface Node {
  certificate: X509Certificate;
  /** 1-based position in the served chain, when served. */
  served?: number;
  /** Where it is trusted from, when it is a trusted root (or identical to one). */
  trusted?: string;
}

interface Candidate {
  nodes: Node[];
  /** Whether the path ends at a trusted certificate. */
  complete: boolean;
  problems: string[];
}

const ordinal = (n: number) => {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13
    ? "th"
    : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${suffix}`;
};

/** How a certificate in a path is named in a finding: role, subject, position, origin. */
function named(node: Node, position: number, length: number, root: boolean): string {
  const role = position === 0 ? "leaf" : root && position === length - 1 ? "root" : "intermediate";
  const where = [
    `position ${position + 1} in the path`,
    ...(node.served !== undefined ? [`served ${ordinal(node.served)}`] : []),
    ...(node.trusted !== undefined && node.served === undefined ? [`from ${node.trusted}`] : []),
  ].join(", ");
  return `${role} ${dn(node.certificate.subject)} (${where})`;
}

/** A certificate's subject and issuer names, DER, hex (RFC 5280 name chaining compares them). */
const namesOf = new WeakMap<X509Certificate, { subject: string; issuer: string }>();
function names(c: X509Certificate): { subject: string; issuer: string } {
  let n = namesOf.get(c);
  if (n === undefined) {
    const tbs = tbsOf(c);
    const hex = (v: ArrayBuffer) =>
      Array.from(new Uint8Array(v), (b) => b.toString(16).padStart(2, "0")).join("");
    n = {
      subject: hex(AsnConvert.serialize(tbs.subject)),
      issuer: hex(AsnConvert.serialize(tbs.issuer)),
    };
    namesOf.set(c, n);
  }
  return n;
}

function tbsOf(c: X509Certificate) {
  const der = c.raw;
  return AsnConvert.parse(
    der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer,
    Certificate,
  ).tbsCertificate;
}

/**
 * Whether `issuer` issued `subject`: its subject name is the other's issuer name (DER) and its
 * key verifies the other's signature. (`X509Certificate.checkIssued` of this Deno refuses issuers
 * that carry key identifiers, so names and the signature are compared here.)
 */
function issued(issuer: X509Certificate, subject: X509Certificate): boolean {
  try {
    return names(issuer).subject === names(subject).issuer && subject.verify(issuer.publicKey);
  } catch {
    // An algorithm this runtime cannot verify, or names that cannot be read: not an issuer.
    return false;
  }
}

/** Whether `c` signs itself (a root, or a self-signed leaf). */
function selfSigned(c: X509Certificate): boolean {
  return issued(c, c);
}

/** A distinguished name as said in findings: quoted, one line; an empty one said so. */
const dn = (name: string | undefined) => name ? `"${name.replaceAll("\n", ", ")}"` : "(empty name)";

const iso = (text: string) => new Date(text).toISOString();

/** The problems of one path, its issuers' validity and CA flag, and its end. */
function judge(nodes: Node[], complete: boolean, store: TrustStore, now: number): string[] {
  const problems: string[] = [];
  const last = nodes[nodes.length - 1]!;
  const root = complete || selfSigned(last.certificate);
  nodes.forEach((node, i) => {
    if (i === 0) return; // the leaf's window is the certificate check's own
    const c = node.certificate;
    const name = named(node, i, nodes.length, root);
    const from = Date.parse(c.validFrom);
    const to = Date.parse(c.validTo);
    if (to <= now) {
      problems.push(`needs an expired certificate: ${name} expired at ${iso(c.validTo)}`);
    }
    if (from > now) {
      problems.push(
        `needs a certificate not valid yet: ${name} is valid from ${iso(c.validFrom)}`,
      );
    }
    if (!c.ca) {
      problems.push(
        `needs a certificate that may not issue others: ${name} is not a CA (basicConstraints)`,
      );
    }
  });
  if (!complete) {
    const name = named(last, nodes.length - 1, nodes.length, root);
    if (root) {
      problems.push(
        `ends at a root nothing here trusts: ${name} is in neither ${store.described}`,
      );
    } else {
      problems.push(
        `is incomplete: nothing served or trusted issued ${name}; its issuer ${
          dn(last.certificate.issuer)
        } is an intermediate the server does not send, or a root nothing here trusts`,
      );
    }
  }
  return problems;
}

/**
 * Builds every path from the leaf (`served[0]`, then the rest of the chain in the order served)
 * to a trusted root of `store`, and judges the best at `now` (ms since the epoch). Never throws.
 */
export function verifyChain(
  served: X509Certificate[],
  store: TrustStore,
  now: number,
): ChainVerdict {
  if (served.length === 0) return { path: [], problems: ["is empty: no certificate was served"] };
  const trustedFrom = (c: X509Certificate) =>
    store.anchors.find((a) => a.certificate.fingerprint256 === c.fingerprint256)?.from;
  const servedNodes: Node[] = served.map((certificate, i) => {
    const trusted = trustedFrom(certificate);
    return { certificate, served: i + 1, ...(trusted !== undefined ? { trusted } : {}) };
  });
  // Served first, so a first-found builder's choice (the served cross-sign) is tried first too.
  const pool: Node[] = [
    ...servedNodes.slice(1),
    ...store.anchors.map((a) => ({ certificate: a.certificate, trusted: a.from })),
  ];
  const candidates: Candidate[] = [];
  let steps = 0;
  const walk = (nodes: Node[]) => {
    steps++;
    const last = nodes[nodes.length - 1]!;
    if (last.trusted !== undefined) {
      candidates.push({ nodes, complete: true, problems: [] });
      return;
    }
    const used = new Set(nodes.map((n) => n.certificate.fingerprint256));
    const seen = new Set<string>();
    const issuers = pool.filter((n) => {
      const key = n.certificate.fingerprint256;
      if (used.has(key) || seen.has(key)) return false;
      seen.add(key);
      return issued(n.certificate, last.certificate);
    }).map((n) => {
      // A served copy of a trusted root is that root.
      const trusted = n.trusted ?? trustedFrom(n.certificate);
      return trusted !== undefined ? { ...n, trusted } : n;
    });
    const extendable = nodes.length < MAX_DEPTH && !selfSigned(last.certificate);
    if (issuers.length === 0 || !extendable) {
      candidates.push({ nodes, complete: false, problems: [] });
      return;
    }
    for (const issuer of issuers) {
      if (steps >= MAX_STEPS) break;
      walk([...nodes, issuer]);
    }
  };
  walk([servedNodes[0]!]);
  for (const c of candidates) c.problems = judge(c.nodes, c.complete, store, now);
  const best = candidates.reduce((a, b) =>
    b.problems.length < a.problems.length ||
      (b.problems.length === a.problems.length && b.complete && !a.complete)
      ? b
      : a
  );
  const root = best.complete || selfSigned(best.nodes[best.nodes.length - 1]!.certificate);
  return {
    path: best.nodes.map((n, i) => named(n, i, best.nodes.length, root)),
    problems: best.problems,
  };
}

/** The DNS names and IP addresses of a certificate's subject alternative names, from its DER. */
export function subjectAltNames(c: X509Certificate): { dns: string[]; ip: string[] } {
  const out = { dns: [] as string[], ip: [] as string[] };
  const ext = tbsOf(c).extensions?.find((e) => e.extnID === id_ce_subjectAltName);
  if (ext === undefined) return out;
  for (const name of AsnConvert.parse(ext.extnValue.buffer, SubjectAlternativeName)) {
    if (name.dNSName !== undefined) out.dns.push(name.dNSName);
    if (name.iPAddress !== undefined) out.ip.push(name.iPAddress);
  }
  return out;
}

/** What a presented certificate says of itself, as a probe reports it. */
export interface CertificateSummary {
  /** ISO 8601. */
  notBefore: string;
  /** ISO 8601. */
  notAfter: string;
  subject: string;
  /** Its subject alternative names, e.g. `DNS:a.example, IP:192.0.2.1`. */
  subjectAltName: string;
}

/**
 * The validity window, subject and subject alternative names of `cert` (`names`: its
 * {@linkcode subjectAltNames}, when already read).
 */
export function summarize(
  cert: X509Certificate,
  names: { dns: string[]; ip: string[] } = subjectAltNames(cert),
): CertificateSummary {
  return {
    notBefore: new Date(cert.validFrom).toISOString(),
    notAfter: new Date(cert.validTo).toISOString(),
    subject: cert.subject ?? "",
    subjectAltName: [...names.dns.map((n) => `DNS:${n}`), ...names.ip.map((n) => `IP:${n}`)]
      .join(", "),
  };
}

/** Whether `host` is an IPv4 or IPv6 address literal (then only IP address SANs can cover it). */
export function isIpAddress(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) ||
    (host.includes(":") && /^[0-9a-f:.]+$/i.test(host));
}

/** An IP address in one spelling: IPv6 expanded to eight lowercase groups, IPv4 as is. */
function canonicalIp(ip: string): string {
  if (!ip.includes(":")) return ip.split(".").map((o) => String(Number(o))).join(".");
  let text = ip.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split(".").map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) +
      `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16).toString(16)).join(":");
}

/** Whether the DNS SAN `pattern` covers `host` (one leftmost `*` label, at least two more). */
function dnsMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase().replace(/\.$/, "");
  const h = host.toLowerCase().replace(/\.$/, "");
  if (!p.startsWith("*.")) return p === h;
  const rest = p.slice(2);
  if (rest.includes("*") || rest.split(".").length < 2) return false;
  const dot = h.indexOf(".");
  return dot > 0 && h.slice(dot + 1) === rest;
}

/**
 * Whether the certificate's subject alternative names cover `host`: an IP address literal against
 * its IP address SANs, a DNS name against its DNS SANs (see the module's documentation).
 */
export function coversName(names: { dns: string[]; ip: string[] }, host: string): boolean {
  if (isIpAddress(host)) {
    const want = canonicalIp(host);
    return names.ip.some((ip) => canonicalIp(ip) === want);
  }
  return names.dns.some((pattern) => dnsMatches(pattern, host));
}
