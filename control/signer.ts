/**
 * The control plane's signing key on disk: made once (`key init`), replaced by `key rotate` with
 * the handoff the nodes follow, and read by every push (docs/design.md, "Signed declarations").
 * The signatures themselves are lib/signing.ts's.
 *
 * @module
 */

import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { dirname } from "../lib/path.ts";
import { readRegularFile } from "../lib/regular_file.ts";
import {
  generateSigningKey,
  type Handoff,
  handoffPath,
  KEY_ID,
  KeyFileError,
  makeHandoff,
  PUBLIC_KEY_B64,
  readSigningKey,
  SIGNATURE,
  type SigningKey,
} from "../lib/signing.ts";
import { Refused } from "./options.ts";

/** What a push signs with: the key, and the handoff to it when it was rotated. */
export interface Signer {
  key: SigningKey;
  handoff?: Handoff;
}

/**
 * Reads the signing key a push signs with, and the handoff of its last rotation when there is one
 * (a handoff to another key, left by a rotation that did not finish, is not carried).
 *
 * @throws {Refused} when there is no key at `path` (a sentence saying how to make one).
 * @throws {KeyFileError} when the key or its handoff cannot be used (too open, not a key).
 */
export async function readSigner(path: string): Promise<Signer> {
  try {
    Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Refused(
        `Cannot sign declarations: there is no signing key "${path}" (make it once with mesh-control key init, or give --signing-key / MESH_SIGNING_KEY); nothing is pushed unsigned`,
      );
    }
  }
  const key = await readSigningKey(path);
  const handoff = await readHandoff(handoffPath(path));
  return handoff !== undefined && handoff.to === key.keyId ? { key, handoff } : { key };
}

/**
 * `key init`: makes the signing key at `path` (0600, its directory made 0700) and writes its public
 * key at `publicPath` (0644). Never replaces a key that exists.
 *
 * @returns the new key's id.
 * @throws {Refused} when `path` exists (whatever it holds).
 */
export async function initSigningKey(path: string, publicPath: string): Promise<string> {
  if (exists(path)) {
    throw new Refused(
      `Cannot make the signing key: "${path}" exists already (it is made once; mesh-control key rotate replaces it)`,
    );
  }
  const made = await generateSigningKey();
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeKey(path, made.privatePem, 0o600);
  await writeKey(publicPath, made.publicPem, 0o644);
  return made.key.keyId;
}

/**
 * `key rotate`: makes a new signing key in place of the one at `path`, and keeps the handoff to it
 * signed by the old one (`<path>.handoff`), which every push then carries; the old private key is
 * not kept (the handoff is all the nodes need of it). The new public key is written at
 * `publicPath`.
 *
 * @returns the old and the new key's ids.
 * @throws {KeyFileError} when the current key cannot be used.
 */
export async function rotateSigningKey(
  path: string,
  publicPath: string,
): Promise<{ from: string; to: string }> {
  const old = await readSigningKey(path);
  const made = await generateSigningKey();
  const next = made.key;
  const handoff = await makeHandoff(old, next);
  // The handoff first: until the new key replaces the old, it names a key that is not there and
  // is not carried (readSigner); a rotation that stops half-way leaves the old key working.
  await writeKey(handoffPath(path), JSON.stringify(handoff) + "\n", 0o600);
  await writeKey(path, made.privatePem, 0o600);
  await writeKey(publicPath, made.publicPem, 0o644);
  return { from: old.keyId, to: next.keyId };
}

async function readHandoff(path: string): Promise<Handoff | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readRegularFile(path, { maxBytes: 4096 });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new KeyFileError(path, messageOf(error));
  }
  let h: Record<string, unknown>;
  try {
    h = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new KeyFileError(path, `not a key handoff (${messageOf(error)})`);
  }
  if (
    typeof h !== "object" || h === null || !KEY_ID.test(String(h.from)) ||
    !KEY_ID.test(String(h.to)) || !PUBLIC_KEY_B64.test(String(h.key)) ||
    !SIGNATURE.test(String(h.signature))
  ) {
    throw new KeyFileError(path, "not a key handoff (from, to, key, signature)");
  }
  return {
    from: String(h.from),
    to: String(h.to),
    key: String(h.key),
    signature: String(h.signature),
  };
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function writeKey(path: string, text: string, mode: number): Promise<void> {
  try {
    await writeFileAtomic(path, text, { mode });
  } catch (error) {
    throw new Error(`Cannot write the key file "${path}": ${messageOf(error)}`);
  }
}
