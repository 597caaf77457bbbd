/**
 * The roots a careful client on this machine trusts: the system's store (the first of
 * `SSL_CERT_FILE`, `/etc/ssl/certs/ca-certificates.crt` (Debian, Ubuntu, Arch, Alpine),
 * `/etc/pki/tls/certs/ca-bundle.crt` (Fedora, RHEL), `/etc/ssl/ca-bundle.pem` (openSUSE),
 * `/etc/ssl/cert.pem` that exists), plus the PEM files the registry's `roots` names for private
 * CAs. Each file is read as a regular file of bounded size (a FIFO or device is refused by name
 * before it is opened); PEM `CERTIFICATE` blocks are read, anything else between them ignored.
 *
 * @module
 */

import type { X509Certificate } from "node:crypto";
import { messageOf } from "../../lib/atomic.ts";
import { readRegularTextFile } from "../../lib/regular_file.ts";
import type { TrustStore } from "./cert_path.ts";
import type { SourceStatus } from "./source.ts";

/** Where the system's store is looked for, in order, after `SSL_CERT_FILE`. */
export const SYSTEM_STORES: readonly string[] = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/ca-bundle.pem",
  "/etc/ssl/cert.pem",
];

/** The largest store read, in bytes (Debian's is about 220 KiB). */
export const MAX_STORE_BYTES = 8 * 1024 * 1024;
/** The largest registry-named root file read, in bytes. */
export const MAX_ROOT_BYTES = 1024 * 1024;

/** The trusted roots, and how reading them went (source `trust`). */
export interface TrustObservation {
  /** Absent when a root the registry names could not be read (the source is then `failed`). */
  store?: TrustStore;
  sources: SourceStatus[];
}

const PEM = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g;

/**
 * The certificates of PEM `text`, each decoded with `X509Certificate`.
 *
 * @throws {Error} naming the block (1-based) that is not a certificate.
 */
export function pemCertificates(
  text: string,
  X509: typeof X509Certificate,
): X509Certificate[] {
  return [...text.matchAll(PEM)].map((m, i) => {
    try {
      const der = Uint8Array.from(atob(m[1]!.replace(/\s+/g, "")), (ch) => ch.charCodeAt(0));
      return new X509(der);
    } catch (error) {
      throw new Error(`certificate ${i + 1} cannot be read: ${messageOf(error)}`);
    }
  });
}

/**
 * Reads the system's store (`systemStore` when given, else the first of `SSL_CERT_FILE` and
 * {@linkcode SYSTEM_STORES} that exists) and the registry's `roots`. Never throws: a root the
 * registry names that cannot be read, or holds no certificate, makes the source `failed` naming
 * the file (the chains are then not judged, and the run cannot be clean); no system store found
 * is said in the source and in every finding about trust.
 */
export async function observeTrust(
  roots: readonly string[],
  options: { systemStore?: string } = {},
): Promise<TrustObservation> {
  const { X509Certificate } = await import("node:crypto");
  const anchors: TrustStore["anchors"] = [];
  const method = "read the system store and the registry's roots";
  const env = Deno.env.get("SSL_CERT_FILE");
  const candidates = options.systemStore !== undefined
    ? [options.systemStore]
    : [...(env ? [env] : []), ...SYSTEM_STORES];
  let system: string | undefined;
  const said: string[] = [];
  for (const path of candidates) {
    let text: string;
    try {
      text = await readRegularTextFile(path, { maxBytes: MAX_STORE_BYTES });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      said.push(`Cannot read the system store "${path}": ${messageOf(error)}`);
      continue;
    }
    system = path;
    // One unreadable root among many is the store's own: the others stay trusted.
    for (const m of text.matchAll(PEM)) {
      try {
        anchors.push({
          certificate: pemCertificates(m[0], X509Certificate)[0]!,
          from: `the system store ${path}`,
        });
      } catch { /* a block this runtime cannot read */ }
    }
    break;
  }
  for (const path of roots) {
    try {
      const text = await readRegularTextFile(path, { maxBytes: MAX_ROOT_BYTES });
      const found = pemCertificates(text, X509Certificate);
      if (found.length === 0) throw new Error("it holds no PEM CERTIFICATE block");
      for (const certificate of found) {
        anchors.push({ certificate, from: `the registry's root ${path}` });
      }
    } catch (error) {
      return {
        sources: [{
          source: "trust",
          state: "failed",
          method,
          detail: `Cannot read the registry's root "${path}": ${messageOf(error)}`,
        }],
      };
    }
  }
  const described = [
    system === undefined
      ? `the system store (none found: ${candidates.join(", ")})`
      : `the system store (${system})`,
    roots.length === 0 ? "the registry's roots (none named)" : `the registry's roots`,
  ].join(" nor ");
  return {
    store: { anchors, described },
    sources: [{
      source: "trust",
      state: "observed",
      method,
      detail: [
        system === undefined
          ? `no system store (looked at ${candidates.join(", ")})`
          : `${anchors.length - countFrom(anchors, "the registry's")} roots from ${system}`,
        `${countFrom(anchors, "the registry's")} from the registry's roots`,
        ...said,
      ].join("; "),
    }],
  };
}

const countFrom = (anchors: TrustStore["anchors"], prefix: string) =>
  anchors.filter((a) => a.from.startsWith(prefix)).length;
