/**
 * Certificates for tests, made by the mesh's own CA library (lib/mesh_ca.ts): a CA and a server
 * certificate written as PEM files, and the wrong certificates a client must refuse (expired,
 * from another CA, for another name).
 *
 * @module
 */

import { createCa, issueServerCert, type PemPair } from "../../lib/mesh_ca.ts";

/** Paths of a test PKI's PEM files, and the CA itself (to issue more from it). */
export interface TestPki {
  /** The CA certificate (0644). */
  caCert: string;
  /** The CA key (0600). */
  caKey: string;
  /** The server certificate (0644). */
  cert: string;
  /** The server key (0600). */
  key: string;
  /** The CA's certificate and key, PEM. */
  ca: PemPair;
}

/** A certificate and key written as files. */
export interface CertFiles {
  cert: string;
  key: string;
}

/** Writes `pair` as `<dir>/<stem>.crt` (0644) and `<dir>/<stem>.key` (0600). */
export async function writePair(dir: string, stem: string, pair: PemPair): Promise<CertFiles> {
  const cert = `${dir}/${stem}.crt`;
  const key = `${dir}/${stem}.key`;
  await Deno.writeTextFile(cert, pair.certPem, { mode: 0o644 });
  await Deno.chmod(cert, 0o644);
  await Deno.writeTextFile(key, pair.keyPem, { mode: 0o600 });
  await Deno.chmod(key, 0o600);
  return { cert, key };
}

/**
 * Makes a CA and a server certificate in `dir`: `ca.crt`, `ca.key`, `server.crt`, `server.key`
 * (keys 0600).
 *
 * @param options.names the server certificate's names; default `["localhost", "127.0.0.1"]`.
 * @param options.days the server certificate's life in days (default 397).
 * @param options.now when both are made (an expired one: a `now` long past and a short `days`).
 * @param options.stem the files' stem instead of `ca` and `server`, to keep two PKIs in one dir.
 */
export async function makeTestPki(
  dir: string,
  options: { names?: string[]; days?: number; now?: Date; stem?: string } = {},
): Promise<TestPki> {
  const stem = options.stem ?? "";
  const ca = await createCa({ name: `test CA ${stem}${crypto.randomUUID().slice(0, 8)}` });
  const caFiles = await writePair(dir, `${stem}ca`, ca);
  const server = await issueTestCert(dir, `${stem}server`, ca, options);
  return { caCert: caFiles.cert, caKey: caFiles.key, cert: server.cert, key: server.key, ca };
}

/**
 * Issues a server certificate from `ca` and writes it as `<dir>/<stem>.crt` and `.key`.
 *
 * @param options.names default `["localhost", "127.0.0.1"]`.
 * @param options.days its life, default 397.
 * @param options.now when it is issued, default now.
 */
export async function issueTestCert(
  dir: string,
  stem: string,
  ca: PemPair,
  options: { names?: string[]; days?: number; now?: Date } = {},
): Promise<CertFiles> {
  const pair = await issueServerCert(ca, {
    names: options.names ?? ["localhost", "127.0.0.1"],
    ...(options.days !== undefined ? { days: options.days } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  return await writePair(dir, stem, pair);
}

/** The wrong certificates of {@linkcode makeBadCerts}, each with its key. */
export interface BadCerts {
  /** From the right CA, for the right names, expired ten days ago. */
  expired: CertFiles;
  /** For the right names, from a CA no one trusts (its certificate at `otherCa.caCert`). */
  otherCa: CertFiles;
  /** The other CA's files. */
  other: TestPki;
  /** From the right CA, for `elsewhere.invalid` and 192.0.2.1 only. */
  otherName: CertFiles;
}

/**
 * Makes, in `dir`, the certificates a client verifying against `pki`'s CA for `names` (default
 * `["localhost", "127.0.0.1"]`) must refuse: `expired.crt`, `other-server.crt` (from another CA,
 * `other-ca.crt`), `other-name.crt`.
 */
export async function makeBadCerts(
  dir: string,
  pki: TestPki,
  options: { names?: string[] } = {},
): Promise<BadCerts> {
  const names = options.names ?? ["localhost", "127.0.0.1"];
  const expired = await issueTestCert(dir, "expired", pki.ca, {
    names,
    days: 1,
    now: new Date(Date.now() - 11 * 24 * 3600 * 1000),
  });
  const other = await makeTestPki(dir, { names, stem: "other-" });
  const otherName = await issueTestCert(dir, "other-name", pki.ca, {
    names: ["elsewhere.invalid", "192.0.2.1"],
  });
  return { expired, otherCa: { cert: other.cert, key: other.key }, other, otherName };
}
