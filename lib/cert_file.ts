/**
 * Reading certificate files (PEM, RFC 7468): a server certificate, the mesh's CA certificate. The
 * certificates are parsed by node:crypto's `X509Certificate` (Deno's own, in Rust), not by
 * `@peculiar/x509`: every program that connects over TLS reads its CA file here before it
 * connects, and importing `@peculiar/x509` costs 150-160 ms a process (measured 2026-12-06),
 * `node:crypto` ~35 ms when nothing has loaded it yet (postgres.js has).
 *
 * @module
 */

import { X509Certificate } from "node:crypto";
import { messageOf } from "./atomic.ts";
import { DEFAULT_CA_FILE, pemBlocks, readTrustText, TrustFileError } from "./trust_file.ts";

/**
 * Reads a certificate file: its PEM text, when it holds at least one certificate and each
 * CERTIFICATE block in it is one (X.509 DER, RFC 5280).
 *
 * @param what what the file is, for the message; default `certificate`.
 * @throws {TrustFileError} naming `path` when it is missing, not a regular file, unreadable or
 *   holds no certificate, or a block that is not one.
 */
export async function readCertificate(path: string, what = "certificate"): Promise<string> {
  return (await certificatesOf(path, what)).text;
}

/**
 * Reads the mesh's CA certificate (`path`, default /etc/mesh/ca.crt, `DEFAULT_CA_FILE`): its PEM
 * text, when every certificate in it is a CA (basicConstraints CA:true). More than one is allowed
 * (an old and a new CA while one replaces the other).
 *
 * @throws {TrustFileError} naming `path` when it is missing, not a regular file, unreadable, holds
 *   no certificate, or holds one that is not a CA certificate.
 */
export async function readCaCert(path: string = DEFAULT_CA_FILE): Promise<string> {
  const { text, certs } = await certificatesOf(path, "CA certificate");
  for (const cert of certs) {
    if (!cert.ca) {
      throw new TrustFileError(
        `Cannot use CA certificate "${path}": "${
          cert.subject.replaceAll("\n", ", ")
        }" in it is not a CA certificate (basicConstraints CA:false or absent)`,
        { path },
      );
    }
  }
  return text;
}

/** The text of the certificate file `path` and its certificates, parsed. */
async function certificatesOf(
  path: string,
  what: string,
): Promise<{ text: string; certs: X509Certificate[] }> {
  const text = await readTrustText(path, what);
  const blocks = pemBlocks(text).filter((b) => b.label === "CERTIFICATE");
  if (blocks.length === 0) {
    throw new TrustFileError(`Cannot use ${what} "${path}": it holds no PEM CERTIFICATE block`, {
      path,
    });
  }
  const certs = blocks.map((b, i) => {
    try {
      return new X509Certificate(b.der);
    } catch (error) {
      throw new TrustFileError(
        `Cannot use ${what} "${path}": its certificate ${i + 1} cannot be read: ${
          messageOf(error)
        }`,
        { path },
      );
    }
  });
  return { text, certs };
}
