/**
 * Control's signature on each declaration it pushes, made and checked in one place for both sides
 * (docs/design.md, "Signed declarations"): Ed25519 through WebCrypto (`crypto.subtle`), no other
 * library.
 *
 * - The private key: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) at
 *   {@linkcode SIGNING_KEY_PATH} on the control plane only, mode 0600. The public key: SPKI PEM
 *   (`-----BEGIN PUBLIC KEY-----`) that every node keeps at {@linkcode CONTROL_KEY_PATH}.
 * - A key's id ({@linkcode keyIdOf}): `ed25519:` and the first 32 hex digits of the sha256 of its
 *   SPKI DER bytes. A message names the key that signed it, so a node holding another one can say
 *   which it holds and which signed.
 * - What is signed ({@linkcode declarationSignedBytes}): a few lines of ASCII, never the JSON
 *   message (so nothing is serialised again to check it, and no JSON canonical form is needed),
 *   binding the key id, the node, the epoch, the generation, the push time and the sha256 of the
 *   declaration's bytes, which the verifier computes from the bytes it is about to apply.
 * - A rotation ({@linkcode Handoff}): the new public key and its id, signed by the old key; carried
 *   by every push after `mesh-control key rotate`, so that a node holding the old key takes the
 *   new one, and only from the key it holds.
 *
 * @module
 */

import { readRegularFile } from "./regular_file.ts";
import { messageOf } from "./atomic.ts";

/** Where the control plane keeps its private signing key (PKCS#8 PEM, 0600). */
export const SIGNING_KEY_PATH = "/etc/mesh/secrets/signing.key";
/** Where a node keeps the control plane's public key (SPKI PEM, 0644). */
export const CONTROL_KEY_PATH = "/etc/mesh/control.pub";
/**
 * The handoff to the current key, signed by the previous one, kept next to the private key after
 * `mesh-control key rotate` (`<signing key>.handoff`, JSON {@linkcode Handoff}, 0600): carried by
 * every push until the next rotation replaces it.
 */
export function handoffPath(signingKeyPath: string): string {
  return `${signingKeyPath}.handoff`;
}

/** A key id: `ed25519:` and 32 lowercase hex digits. */
export const KEY_ID = /^ed25519:[0-9a-f]{32}$/;
/** An Ed25519 signature (64 bytes) in base64 with its padding: 88 characters. */
export const SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;
/** An Ed25519 public key's SPKI DER (44 bytes) in base64 with its padding: 60 characters. */
export const PUBLIC_KEY_B64 = /^[A-Za-z0-9+/]{59}=$/;

/** The largest key file read, in bytes (a PEM Ed25519 key is ~120). */
const MAX_KEY_FILE_BYTES = 16 * 1024;

const ED25519 = { name: "Ed25519" } as const;

/**
 * A key file that cannot be used: missing, unreadable, too open (a private key not 0600, a public
 * key writable by others), or not the key it claims to be. Its message names the path and what is
 * wrong; programs exit 2 on it.
 */
export class KeyFileError extends Error {
  /** The key file. */
  readonly path: string;
  /** @param path the key file; @param problem what is wrong, in words. */
  constructor(path: string, problem: string) {
    super(`Cannot use the key file "${path}": ${problem}`);
    this.name = "KeyFileError";
    this.path = path;
  }
}

/** The control plane's key pair, as `sign` uses it. */
export interface SigningKey {
  /** The private key (sign). */
  privateKey: CryptoKey;
  /** The public key (verify). */
  publicKey: CryptoKey;
  /** Its SPKI DER bytes (44). */
  spki: Uint8Array;
  /** {@linkcode keyIdOf} of `spki`. */
  keyId: string;
}

/** A public key a node verifies with. */
export interface ControlKey {
  publicKey: CryptoKey;
  /** Its SPKI DER bytes (44). */
  spki: Uint8Array;
  /** {@linkcode keyIdOf} of `spki`. */
  keyId: string;
}

/**
 * A rotation: the new public key (`key`, SPKI DER in base64) and its id (`to`), signed by the key
 * it replaces (`from`), over {@linkcode handoffSignedBytes}.
 */
export interface Handoff {
  from: string;
  to: string;
  key: string;
  signature: string;
}

/** What a declaration's signature binds (the fields of a `DeclarationMessage` it covers). */
export interface SignedFields {
  node: string;
  /** Absent: `-` is signed. */
  epoch?: string;
  generation: number;
  /** `sha256:<hex>` of the declaration's UTF-8 bytes. */
  digest: string;
  pushedAt: string;
}

/** A message's signature fields, as sent. */
export interface Signature {
  keyId: string;
  signature: string;
  handoff?: Handoff;
}

/** The key id of SPKI DER bytes: `ed25519:` + the first 32 hex digits of their sha256. */
export async function keyIdOf(spki: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", spki as BufferSource));
  return `ed25519:${hex(hash).slice(0, 32)}`;
}

/**
 * The exact bytes a declaration's signature is over (ASCII, each line ended by `\n`):
 *
 * ```
 * mesh-declaration-signature-v1
 * key <keyId>
 * node <node>
 * epoch <epoch, or - when the message carries none>
 * generation <generation, decimal>
 * digest <sha256:64 hex digits of the declaration's UTF-8 bytes>
 * pushedAt <pushedAt as sent>
 * ```
 *
 * Every value has a pattern without space or line feed (lib/broker.ts), so two different field
 * sets never make the same bytes. The declaration itself is bound through its digest: the verifier
 * hashes the bytes it is about to apply and refuses a message whose digest differs.
 */
export function declarationSignedBytes(keyId: string, fields: SignedFields): Uint8Array {
  return new TextEncoder().encode(
    `mesh-declaration-signature-v1\nkey ${keyId}\nnode ${fields.node}\nepoch ${
      fields.epoch ?? "-"
    }\ngeneration ${fields.generation}\ndigest ${fields.digest}\npushedAt ${fields.pushedAt}\n`,
  );
}

/**
 * The exact bytes a {@linkcode Handoff}'s signature is over (ASCII):
 * `mesh-key-handoff-v1\nfrom <old id>\nto <new id>\nkey <new SPKI DER, base64>\n`.
 */
export function handoffSignedBytes(handoff: Omit<Handoff, "signature">): Uint8Array {
  return new TextEncoder().encode(
    `mesh-key-handoff-v1\nfrom ${handoff.from}\nto ${handoff.to}\nkey ${handoff.key}\n`,
  );
}

/**
 * A new key pair: the key, and the PEM texts to write (PKCS#8 private, SPKI public).
 */
export async function generateSigningKey(): Promise<
  { key: SigningKey; privatePem: string; publicPem: string }
> {
  const pair = await crypto.subtle.generateKey(ED25519, true, ["sign", "verify"]) as CryptoKeyPair;
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  return {
    key: {
      privateKey: pair.privateKey,
      publicKey: pair.publicKey,
      spki,
      keyId: await keyIdOf(spki),
    },
    privatePem: pem("PRIVATE KEY", pkcs8),
    publicPem: pem("PUBLIC KEY", spki),
  };
}

/** The SPKI PEM text of a public key's DER bytes. */
export function publicKeyPem(spki: Uint8Array): string {
  return pem("PUBLIC KEY", spki);
}

/**
 * Reads the control plane's private signing key: a regular file of mode 0600 (no bit for group or
 * others), holding one PKCS#8 PEM block of an Ed25519 key. Its public half is derived from it.
 *
 * @throws {KeyFileError} naming the path when it is missing, unreadable, too open, or not an
 *   Ed25519 private key.
 */
export async function readSigningKey(path: string): Promise<SigningKey> {
  const der = await readKeyFile(path, "PRIVATE KEY", 0o077, "0600 (no access for group or others)");
  let privateKey: CryptoKey;
  let spki: Uint8Array;
  try {
    // Imported extractable once, to read its public half (JWK `x`), then not extractable.
    const extractable = await crypto.subtle.importKey("pkcs8", der as BufferSource, ED25519, true, [
      "sign",
    ]);
    const jwk = await crypto.subtle.exportKey("jwk", extractable);
    const publicKey = await crypto.subtle.importKey(
      "jwk",
      { kty: "OKP", crv: "Ed25519", x: jwk.x! },
      ED25519,
      true,
      ["verify"],
    );
    spki = new Uint8Array(await crypto.subtle.exportKey("spki", publicKey));
    privateKey = await crypto.subtle.importKey("pkcs8", der as BufferSource, ED25519, false, [
      "sign",
    ]);
    return { privateKey, publicKey, spki, keyId: await keyIdOf(spki) };
  } catch (error) {
    throw new KeyFileError(path, `not an Ed25519 private key (PKCS#8): ${messageOf(error)}`);
  }
}

/**
 * Reads a control plane's public key (a node's {@linkcode CONTROL_KEY_PATH}): a regular file not
 * writable by group or others, holding one SPKI PEM block of an Ed25519 key.
 *
 * @throws {KeyFileError} naming the path when it is missing, unreadable, writable by others, or
 *   not an Ed25519 public key.
 */
export async function readControlKey(path: string): Promise<ControlKey> {
  const der = await readKeyFile(path, "PUBLIC KEY", 0o022, "not writable by group or others");
  return await controlKeyOf(der, path);
}

/**
 * The {@linkcode ControlKey} of SPKI DER bytes.
 *
 * @throws {KeyFileError} naming `what` when they are not an Ed25519 public key.
 */
export async function controlKeyOf(spki: Uint8Array, what: string): Promise<ControlKey> {
  try {
    const publicKey = await crypto.subtle.importKey("spki", spki as BufferSource, ED25519, true, [
      "verify",
    ]);
    return { publicKey, spki, keyId: await keyIdOf(spki) };
  } catch (error) {
    throw new KeyFileError(what, `not an Ed25519 public key (SPKI): ${messageOf(error)}`);
  }
}

/** Signs a declaration's fields: the message's `keyId` and `signature`. */
export async function signDeclaration(key: SigningKey, fields: SignedFields): Promise<Signature> {
  const bytes = declarationSignedBytes(key.keyId, fields);
  const signature = new Uint8Array(
    await crypto.subtle.sign(ED25519, key.privateKey, bytes as BufferSource),
  );
  return { keyId: key.keyId, signature: base64(signature) };
}

/** The handoff from `old` to `next`, signed by `old`. */
export async function makeHandoff(old: SigningKey, next: SigningKey): Promise<Handoff> {
  const unsigned = { from: old.keyId, to: next.keyId, key: base64(next.spki) };
  const signature = new Uint8Array(
    await crypto.subtle.sign(ED25519, old.privateKey, handoffSignedBytes(unsigned) as BufferSource),
  );
  return { ...unsigned, signature: base64(signature) };
}

/** A declaration message's fields the verifier reads. */
export interface SignedMessage extends SignedFields {
  keyId?: string;
  signature?: string;
  handoff?: Handoff;
  /** The declaration's text (its UTF-8 bytes are hashed and compared with `digest`). */
  declaration: string;
}

/** The verifier's answer. */
export type Verdict =
  | {
    ok: true; /** The key handed over to, when the message rotated the key. */
    rotated?: ControlKey;
  }
  | { ok: false; /** Why it is refused, in words. */ problem: string };

/**
 * Verifies a declaration message against the key a node holds: it is signed, by the held key or by
 * a key the held key handed over to in the message's {@linkcode Handoff}; its digest is the sha256
 * of its declaration's bytes; and its signature is over its own {@linkcode declarationSignedBytes}.
 * Whether it is for this node and newer than the kept one is the link's to judge.
 *
 * @param digest the `sha256:<hex>` of the declaration's UTF-8 bytes, when the caller has it.
 */
export async function verifyDeclaration(
  message: SignedMessage,
  held: ControlKey,
  digest?: string,
): Promise<Verdict> {
  if (message.signature === undefined || message.keyId === undefined) {
    return {
      ok: false,
      problem:
        `the declaration message is not signed: this node applies only what the control plane signs (key ${held.keyId})`,
    };
  }
  let key = held;
  let rotated: ControlKey | undefined;
  if (message.keyId !== held.keyId) {
    const h = message.handoff;
    if (h === undefined || h.to !== message.keyId) {
      return {
        ok: false,
        problem:
          `signed by key ${message.keyId}, this node holds key ${held.keyId}: it missed a rotation (give it the control plane's public key again: mesh-control key show), or the message is not the control plane's`,
      };
    }
    if (h.from !== held.keyId) {
      return {
        ok: false,
        problem:
          `signed by key ${message.keyId}, this node holds key ${held.keyId}: it missed a rotation (the message hands over from key ${h.from}, not from the key this node holds; give it the control plane's public key again: mesh-control key show)`,
      };
    }
    const handedOver = await crypto.subtle.verify(
      ED25519,
      held.publicKey,
      fromBase64(h.signature) as BufferSource,
      handoffSignedBytes(h) as BufferSource,
    );
    if (!handedOver) {
      return {
        ok: false,
        problem:
          `the handoff to key ${h.to} does not verify with key ${held.keyId}, which this node holds: not the control plane's rotation`,
      };
    }
    try {
      rotated = await controlKeyOf(fromBase64(h.key), "the handoff's key");
    } catch (error) {
      return { ok: false, problem: messageOf(error) };
    }
    if (rotated.keyId !== h.to) {
      return {
        ok: false,
        problem: `the handoff's key is key ${rotated.keyId}, not the ${h.to} it names`,
      };
    }
    key = rotated;
  }
  const actual = digest ?? await sha256Digest(new TextEncoder().encode(message.declaration));
  if (actual !== message.digest) {
    return {
      ok: false,
      problem:
        `the declaration's digest is ${actual}, not the ${message.digest} it was signed with`,
    };
  }
  const good = await crypto.subtle.verify(
    ED25519,
    key.publicKey,
    fromBase64(message.signature) as BufferSource,
    declarationSignedBytes(message.keyId, message) as BufferSource,
  );
  if (!good) {
    return {
      ok: false,
      problem:
        `the signature does not verify with key ${key.keyId}: not signed by the control plane, or altered since`,
    };
  }
  return rotated === undefined ? { ok: true } : { ok: true, rotated };
}

/** `sha256:<hex>` of `bytes`. */
export async function sha256Digest(bytes: Uint8Array): Promise<string> {
  return `sha256:${
    hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource)))
  }`;
}

/**
 * Reads one PEM block labelled `label` from a regular key file whose mode has none of `forbidden`.
 *
 * @throws {KeyFileError}
 */
async function readKeyFile(
  path: string,
  label: string,
  forbidden: number,
  wanted: string,
): Promise<Uint8Array> {
  let bytes: Uint8Array;
  let mode: number | null;
  try {
    bytes = await readRegularFile(path, { maxBytes: MAX_KEY_FILE_BYTES });
    mode = Deno.statSync(path).mode;
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "it does not exist"
      : error instanceof Deno.errors.PermissionDenied
      ? `it cannot be read (${messageOf(error)})`
      : messageOf(error);
    throw new KeyFileError(path, why);
  }
  if (mode !== null && (mode & forbidden) !== 0) {
    throw new KeyFileError(
      path,
      `its mode is ${(mode & 0o777).toString(8).padStart(4, "0")}, and a ${
        label === "PRIVATE KEY" ? "private key" : "public key"
      } file must be ${wanted}`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new KeyFileError(path, `not a PEM file (not UTF-8 text)`);
  }
  const match = new RegExp(
    `^\\s*-----BEGIN ${label}-----\\r?\\n([A-Za-z0-9+/=\\r\\n]+)-----END ${label}-----\\s*$`,
  ).exec(text);
  if (match === null) {
    throw new KeyFileError(path, `not one PEM block "${label}"`);
  }
  try {
    return fromBase64(match[1]!.replace(/[\r\n]/g, ""));
  } catch {
    throw new KeyFileError(path, `its PEM block "${label}" is not base64`);
  }
}

function pem(label: string, der: Uint8Array): string {
  const b64 = base64(der);
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

function hex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
