/**
 * Reading the files trust rests on (keys, CA certificates) so that a wrong one stops the program
 * with a sentence naming the path and what is wrong: {@linkcode TrustFileError}, which every
 * program maps to exit 2. This module loads no npm or `node:` module, so that a lean path (the
 * host's apply) may read a key through it; `lib/mesh_ca.ts` re-exports it.
 *
 * @module
 */

import { messageOf } from "./atomic.ts";
import { readRegularTextFile, statRegular } from "./regular_file.ts";

/**
 * Where a node and control keep the mesh's CA certificate (public, 0644). Said here, in the module
 * both lib/mesh_ca.ts and lib/wire_trust.ts import, so that neither imports the other for it.
 */
export const DEFAULT_CA_FILE = "/etc/mesh/ca.crt";

/** The largest key or certificate file read, in bytes (a PEM key is under 1 KiB). */
export const MAX_TRUST_FILE_BYTES = 64 * 1024;

/**
 * A CA certificate, key or certificate file that is unreadable, not what it claims, or too open.
 * Its message names the path and what is wrong, e.g. `Cannot use key "/etc/mesh/secrets/ca.key":
 * its mode is 0644; a key must be readable by its owner only (0600)`. Programs exit 2 on it.
 */
export class TrustFileError extends Error {
  /** The file that is wrong, when the thrower gave it. */
  readonly path?: string;
  /**
   * @param message the whole sentence, naming the file.
   * @param options `path`: the file; `cause`: what failed underneath.
   */
  constructor(message: string, options: ErrorOptions & { path?: string } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "TrustFileError";
    if (options.path !== undefined) this.path = options.path;
  }
}

/**
 * The text of the trust file `path` (a regular file of at most
 * {@linkcode MAX_TRUST_FILE_BYTES}, UTF-8).
 *
 * @param what what the file is, for the message ("CA certificate", "key").
 * @throws {TrustFileError} `Cannot read <what> "<path>": <why>` when it is missing, not a regular
 *   file, too large, unreadable or not UTF-8.
 */
export async function readTrustText(path: string, what: string): Promise<string> {
  try {
    return await readRegularTextFile(path, { maxBytes: MAX_TRUST_FILE_BYTES, fatal: true });
  } catch (error) {
    throw new TrustFileError(`Cannot read ${what} "${path}": ${reason(error)}`, {
      path,
      cause: error,
    });
  }
}

/** A read error in words: "it does not exist", "permission denied", the reader's own sentence. */
function reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "it does not exist";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof TypeError && /encoded data|decode/i.test(error.message)) {
    return "it is not UTF-8 text";
  }
  return messageOf(error);
}

/** A PEM block: its label and its DER bytes. */
export interface PemBlock {
  label: string;
  der: Uint8Array<ArrayBuffer>;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s]*?)-----END ([A-Z0-9 ]+)-----/g;

/**
 * The PEM blocks of `text` (RFC 7468), in order; text between blocks is ignored. A block whose
 * end label differs from its begin label, or whose base64 is broken, is skipped.
 */
export function pemBlocks(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    if (m[1] !== m[3]) continue;
    try {
      const der = Uint8Array.from(atob(m[2]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
      if (der.length > 0) out.push({ label: m[1]!, der });
    } catch { /* not base64: not a block */ }
  }
  return out;
}

/** The algorithms a PKCS#8 key of this mesh may hold, tried in order on import. */
const KEY_ALGORITHMS: (AlgorithmIdentifier | EcKeyImportParams | RsaHashedImportParams)[] = [
  { name: "ECDSA", namedCurve: "P-256" },
  { name: "Ed25519" },
  { name: "ECDSA", namedCurve: "P-384" },
  { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
];

/**
 * Reads the private key `path`: a PEM `PRIVATE KEY` block (PKCS#8, unencrypted) of an ECDSA
 * P-256/P-384, Ed25519 or RSA key, in a regular file no one but its owner may read or write.
 *
 * The mode is checked before anything is read (`stat`, symlinks followed): any group or other
 * bit (`mode & 0o077`) refuses it. The key is then imported through WebCrypto to be sure it is
 * one, and thrown away: the PEM text is returned.
 *
 * @param path the key file, e.g. `/etc/mesh/secrets/ca.key`.
 * @returns its PEM text, as read.
 * @throws {TrustFileError} naming `path` when it is missing, not a regular file, open to group or
 *   others (`its mode is 0644; a key must be readable by its owner only (0600)`), unreadable, or
 *   holds no PKCS#8 private key (an `EC PRIVATE KEY` or encrypted key is named as such).
 */
export async function readSecretKey(path: string): Promise<string> {
  let mode: number | null;
  try {
    mode = statRegular(path).mode;
  } catch (error) {
    throw new TrustFileError(`Cannot read key "${path}": ${reason(error)}`, { path, cause: error });
  }
  if (mode !== null && (mode & 0o077) !== 0) {
    const octal = (mode & 0o7777).toString(8).padStart(4, "0");
    throw new TrustFileError(
      `Cannot use key "${path}": its mode is ${octal}; a key must be readable by its owner only (0600)`,
      { path },
    );
  }
  const text = await readTrustText(path, "key");
  const blocks = pemBlocks(text);
  const key = blocks.find((b) => b.label === "PRIVATE KEY");
  if (key === undefined) {
    const other = blocks.find((b) => /PRIVATE KEY$/.test(b.label))?.label;
    throw new TrustFileError(
      `Cannot use key "${path}": it holds no PKCS#8 private key (PEM "PRIVATE KEY")${
        other !== undefined ? `; it holds a "${other}", which is not PKCS#8 unencrypted` : ""
      }`,
      { path },
    );
  }
  for (const algorithm of KEY_ALGORITHMS) {
    try {
      await crypto.subtle.importKey("pkcs8", key.der, algorithm, false, ["sign"]);
      return text;
    } catch { /* another algorithm */ }
  }
  throw new TrustFileError(
    `Cannot use key "${path}": its "PRIVATE KEY" block is not a PKCS#8 ECDSA P-256/P-384, Ed25519 or RSA key`,
    { path },
  );
}
