/**
 * The test suite's control plane signing key, one place for every test (docs/design.md, "Signed
 * declarations"): one Ed25519 key pair per test process, in a temporary directory, as
 * `mesh-control key init` makes it. Control tests get its private key through
 * `MESH_SIGNING_KEY` (tests/control/support.ts `freshInventory`); a link gets a copy of its
 * public key of its own ({@linkcode controlKeyFile}: a rotation writes that file); a test that
 * publishes a declaration itself signs it with {@linkcode signed}.
 *
 * @module
 */

import type { DeclarationMessage } from "../../lib/broker.ts";
import {
  type ControlKey,
  generateSigningKey,
  type Handoff,
  readControlKey,
  readSigningKey,
  signDeclaration,
  type SigningKey,
} from "../../lib/signing.ts";

/** The test key pair: its files, and the keys read back from them. */
export interface TestKeys {
  /** The private key file (PKCS#8 PEM, 0600). */
  signingKey: string;
  /** The public key file (SPKI PEM, 0644). */
  controlKey: string;
  key: SigningKey;
  control: ControlKey;
}

/** Makes a key pair in `dir` (`signing.key`, `control.pub`) as `mesh-control key init` does. */
export async function makeTestKeys(dir: string): Promise<TestKeys> {
  const made = await generateSigningKey();
  const signingKey = `${dir}/signing.key`;
  const controlKey = `${dir}/control.pub`;
  await Deno.writeTextFile(signingKey, made.privatePem, { mode: 0o600 });
  await Deno.chmod(signingKey, 0o600);
  await Deno.writeTextFile(controlKey, made.publicPem, { mode: 0o644 });
  await Deno.chmod(controlKey, 0o644);
  return {
    signingKey,
    controlKey,
    key: await readSigningKey(signingKey),
    control: await readControlKey(controlKey),
  };
}

const DIR = Deno.makeTempDirSync({ prefix: "mesh-test-keys-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(DIR, { recursive: true });
  } catch {
    // Gone already.
  }
});

/** This process's test key pair. */
export const TEST_KEYS: TestKeys = await makeTestKeys(DIR);

/**
 * A copy of the public key of `keys` (default {@linkcode TEST_KEYS}) in a file of its own in
 * `dir` (a link rewrites its key file on a rotation), as a link's `controlKey` option.
 */
export async function controlKeyFile(
  dir: string,
  keys: TestKeys = TEST_KEYS,
): Promise<{ path: string; key: ControlKey }> {
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir}/control-${crypto.randomUUID().slice(0, 8)}.pub`;
  await Deno.copyFile(keys.controlKey, path);
  await Deno.chmod(path, 0o644);
  return { path, key: await readControlKey(path) };
}

/**
 * `message` signed as the control plane signs it (by `key`, default the test key), with `handoff`
 * when given. Any signature fields it had are replaced.
 */
export async function signed(
  message: DeclarationMessage,
  options: { key?: SigningKey; handoff?: Handoff } = {},
): Promise<DeclarationMessage> {
  const { keyId: _k, signature: _s, handoff: _h, ...plain } = message;
  const s = await signDeclaration(options.key ?? TEST_KEYS.key, plain);
  return {
    ...plain,
    keyId: s.keyId,
    signature: s.signature,
    ...(options.handoff ? { handoff: options.handoff } : {}),
  };
}
