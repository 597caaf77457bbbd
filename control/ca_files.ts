/**
 * The mesh's CA and the server certificates it issues, as files under one directory (default
 * `/etc/mesh`): what `mesh-control ca` does, without printing (control/commands/ca.ts says it).
 *
 * Layout under `dir`:
 * - `ca.crt` the CA certificate (0644), `secrets/ca.key` its key (0600; `secrets/` 0700);
 * - `tls/NAME.crt` a server certificate (0644), `secrets/tls/NAME.key` its key (0600, root's
 *   only); or, for a server that runs as another user (`keyGroup`: RabbitMQ, PostgreSQL),
 *   `tls/NAME.key` 0640 owned by root and that group (PostgreSQL accepts a key owned by root with
 *   mode 0640 and its group; `secrets/` is not reachable by that user).
 *
 * Every file is written atomically (lib/atomic.ts), a key before its certificate; the CA is
 * never replaced.
 *
 * @module
 */

import { writeFileAtomic } from "../lib/atomic.ts";
import { dirname } from "../lib/path.ts";
import { readGroups } from "../lib/accounts.ts";
import {
  type CertDescription,
  checkNames,
  createCa,
  describeCert,
  issuedBy,
  issueServerCert,
  keyMatchesCert,
  readCaCert,
  readCertificate,
  readSecretKey,
  readTrustText,
  renewalReason,
  TrustFileError,
} from "../lib/mesh_ca.ts";
import { Refused } from "./options.ts";

/** The directory the mesh's trust files are kept under by default. */
export const MESH_DIR = "/etc/mesh";

/** Where the CA's files are under `dir`. */
export function caFiles(dir: string = MESH_DIR): { cert: string; key: string } {
  return { cert: `${dir}/ca.crt`, key: `${dir}/secrets/ca.key` };
}

/** A server certificate's name: a DNS label (it names its files). */
const SERVER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Where server certificate `name`'s files are under `dir`, unless given: `tls/NAME.crt`, and
 * `secrets/tls/NAME.key` (or `tls/NAME.key` when its key is shared with a group).
 *
 * @throws {Refused} when `name` is not a DNS label.
 */
export function serverFiles(
  dir: string,
  name: string,
  options: { cert?: string; key?: string; shared?: boolean } = {},
): { cert: string; key: string } {
  if (!SERVER_NAME.test(name)) {
    throw new Refused(
      `Cannot issue a certificate named ${
        JSON.stringify(name)
      }: a name is a DNS label (a-z, 0-9, inner -); it names its files`,
    );
  }
  return {
    cert: options.cert ?? `${dir}/tls/${name}.crt`,
    key: options.key ??
      (options.shared ? `${dir}/tls/${name}.key` : `${dir}/secrets/tls/${name}.key`),
  };
}

/** What {@linkcode initCa} found or did. */
export interface CaInit {
  /** Whether it made the CA (false: one was there, left as it is). */
  made: boolean;
  cert: string;
  key: string;
  ca: CertDescription;
}

/** Whether something is at `path` (a dangling symlink counts). */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new TrustFileError(path, `Cannot look at "${path}": ${(error as Error).message}`);
  }
}

/**
 * Makes `path` a directory of `mode` when it is missing (parents 0755); an existing one is
 * left as it is, except that a directory for secrets (`mode` 0700) is narrowed to 0700.
 *
 * @throws {Refused} when something that is not a directory is there.
 */
async function ensureDir(path: string, mode: number): Promise<void> {
  try {
    const info = await Deno.lstat(path);
    if (!info.isDirectory) {
      throw new Refused(`Cannot use "${path}" as a directory: something else is there`);
    }
    if (mode === 0o700 && ((info.mode ?? 0) & 0o077) !== 0) await Deno.chmod(path, 0o700);
    return;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o755 });
  await Deno.mkdir(path, { mode });
  await Deno.chmod(path, mode); // the umask narrowed it
}

/**
 * Makes the mesh's CA under `dir` once: its key (`secrets/ca.key`, 0600, in `secrets/` 0700)
 * then its certificate (`ca.crt`, 0644), each atomically and never over a file already there.
 * When both are there, they are read (and so judged) and left as they are.
 *
 * @throws {Refused} when only one of the two is there (half made), naming both.
 * @throws {TrustFileError} when the CA that is there cannot be read, is not a CA, or its key is
 *   too open or not a key.
 */
export async function initCa(
  dir: string = MESH_DIR,
  options: { now?: Date; name?: string } = {},
): Promise<CaInit> {
  const { cert, key } = caFiles(dir);
  const [hasCert, hasKey] = [await exists(cert), await exists(key)];
  if (hasCert && hasKey) {
    const certPem = await readCaCert(cert);
    await readSecretKey(key);
    return { made: false, cert, key, ca: describeCert(certPem) };
  }
  if (hasCert !== hasKey) {
    const [there, missing] = hasKey ? [key, cert] : [cert, key];
    throw new Refused(
      `Cannot make the mesh's CA: "${there}" is there but "${missing}" is not (half made); ` +
        `restore the missing one, or remove "${there}" to make a new CA (every certificate it issued is then refused)`,
    );
  }
  await ensureDir(dir, 0o755);
  await ensureDir(`${dir}/secrets`, 0o700);
  const ca = await createCa({
    ...(options.now !== undefined ? { now: options.now } : {}),
    ...(options.name !== undefined ? { name: options.name } : {}),
  });
  await writeFileAtomic(key, ca.keyPem, { mode: 0o600, replace: false }).catch(
    (error) => {
      throw alreadyMade(error, key);
    },
  );
  await writeFileAtomic(cert, ca.certPem, { mode: 0o644, replace: false }).catch(
    (error) => {
      throw alreadyMade(error, cert);
    },
  );
  return { made: true, cert, key, ca: describeCert(ca.certPem) };
}

/** A write refused because another made the file meanwhile: said so; other errors as they are. */
function alreadyMade(error: unknown, path: string): unknown {
  if (error instanceof Error && error.cause instanceof Deno.errors.AlreadyExists) {
    return new Refused(
      `Cannot make the mesh's CA: "${path}" appeared while it was being made (another ca init?); nothing replaced`,
    );
  }
  return error;
}

/** A CA file that does not exist: said with how to make one; other errors as they are. */
function hintInit(error: unknown): never {
  if (error instanceof TrustFileError && error.cause instanceof Deno.errors.NotFound) {
    throw new TrustFileError(
      error.path,
      `${error.message} (the mesh has no CA here: make it with mesh-control ca init)`,
      { cause: error.cause },
    );
  }
  throw error;
}

/** What {@linkcode ensureServerCert} did, or would do with `check`. */
export interface ServerCertResult {
  /** `issued`: there was none (or `force`); `renewed`: one was due; `kept`: none due. */
  outcome: "issued" | "renewed" | "kept";
  /** Why it was (or would be) renewed; absent when kept or forced. */
  reason?: string;
  cert: string;
  key: string;
  /** The certificate there now (with `check`, the one there, if any). */
  description?: CertDescription;
}

/** Options of {@linkcode ensureServerCert}. */
export interface ServerCertOptions {
  /** The DNS names and IP addresses it is for (at least one). */
  names: readonly string[];
  /** Its certificate's path, instead of `DIR/tls/NAME.crt`. */
  cert?: string;
  /** Its key's path, instead of `DIR/secrets/tls/NAME.key` (`DIR/tls/NAME.key` with a group). */
  key?: string;
  /** A group (name or number) that may read the key: the key is then 0640, root:GROUP. */
  keyGroup?: string;
  /** Issue a new one even when the one there is not due (`ca issue`). */
  force?: boolean;
  /** Judge only: write nothing. */
  check?: boolean;
  /** The time judged at and issued at; default now. */
  now?: Date;
}

/** The gid of `group`, a name in /etc/group or a number. @throws {Refused} when unknown. */
async function groupId(group: string): Promise<number> {
  if (/^\d+$/.test(group)) return Number(group);
  const gid = (await readGroups()).get(group);
  if (gid === undefined) {
    throw new Refused(
      `Cannot give the key to group "${group}": there is no such group in /etc/group`,
    );
  }
  return gid;
}

/**
 * Why the server certificate at `files` needs issuing, or `undefined` when it is good: missing,
 * its key missing or not its key, its key's mode or group not what is wanted, not issued by the
 * CA `caPem`, or due ({@linkcode renewalReason}: fewer than 30 days left, or other names).
 */
async function whyIssue(
  files: { cert: string; key: string },
  caPem: string,
  want: { names: readonly string[]; mode: number; gid?: number; now?: Date },
): Promise<{ reason?: string; description?: CertDescription }> {
  let certPem: string;
  try {
    certPem = await readCertificate(files.cert);
  } catch (error) {
    if (error instanceof TrustFileError && error.cause instanceof Deno.errors.NotFound) {
      return { reason: `there is no certificate at "${files.cert}"` };
    }
    throw error;
  }
  const description = describeCert(certPem);
  let keyPem: string;
  try {
    keyPem = await readTrustText(files.key, "key");
  } catch (error) {
    if (error instanceof TrustFileError && error.cause instanceof Deno.errors.NotFound) {
      return { reason: `its key "${files.key}" is missing`, description };
    }
    throw error;
  }
  if (!(await keyMatchesCert(certPem, keyPem))) {
    return { reason: `"${files.key}" is not its certificate's key`, description };
  }
  const info = await Deno.stat(files.key);
  const mode = (info.mode ?? 0) & 0o777;
  if (mode !== want.mode || (want.gid !== undefined && info.gid !== want.gid)) {
    return {
      reason: `its key's mode is ${mode.toString(8).padStart(4, "0")} (group ${info.gid}); wanted ${
        want.mode.toString(8).padStart(4, "0")
      }${want.gid !== undefined ? ` (group ${want.gid})` : ""}`,
      description,
    };
  }
  if (!(await issuedBy(certPem, caPem))) {
    return {
      reason: `it was issued by "${description.issuer}", not the mesh's CA`,
      description,
    };
  }
  const due = renewalReason(certPem, {
    names: want.names,
    ...(want.now !== undefined ? { now: want.now } : {}),
  });
  return { ...(due !== undefined ? { reason: due } : {}), description };
}

/**
 * Issues the server certificate `name` from the CA under `dir` when it is missing or due (or
 * always, with `force`), writing its key (0600, or 0640 root:`keyGroup`) then its certificate
 * (0644), each atomically; with `check`, only judges. Idempotent: run at every apply, it renews
 * before expiry and when the names change.
 *
 * @throws {TrustFileError} when the CA (`dir/ca.crt`, `dir/secrets/ca.key`) cannot be read, is
 *   not a CA, or its key is too open; or the certificate or key there is not a readable file.
 * @throws {Refused} when `name` is not a DNS label, a name is neither a DNS name nor an address,
 *   or the group is unknown.
 */
export async function ensureServerCert(
  dir: string,
  name: string,
  options: ServerCertOptions,
): Promise<ServerCertResult> {
  const shared = options.keyGroup !== undefined;
  const files = serverFiles(dir, name, { ...options, shared });
  try {
    checkNames(options.names);
  } catch (error) {
    throw new Refused((error as Error).message);
  }
  const ca = caFiles(dir);
  const caPem = await readCaCert(ca.cert).catch(hintInit);
  const caKey = await readSecretKey(ca.key).catch(hintInit);
  const gid = options.keyGroup !== undefined ? await groupId(options.keyGroup) : undefined;
  const mode = shared ? 0o640 : 0o600;
  const judged = await whyIssue(files, caPem, {
    names: options.names,
    mode,
    ...(gid !== undefined ? { gid } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  const fresh = judged.description === undefined;
  if (!options.force && judged.reason === undefined) {
    return { outcome: "kept", ...files, ...judged };
  }
  const outcome = fresh || options.force ? "issued" : "renewed";
  const reason = options.force && !fresh ? undefined : judged.reason;
  if (options.check) {
    return {
      outcome,
      ...(reason !== undefined ? { reason } : {}),
      ...files,
      ...(judged.description ? { description: judged.description } : {}),
    };
  }
  let pair;
  try {
    pair = await issueServerCert({ certPem: caPem, keyPem: caKey }, {
      names: options.names,
      commonName: options.names[0]!,
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  } catch (error) {
    if (error instanceof RangeError) throw error;
    throw new Refused((error as Error).message);
  }
  if (options.cert === undefined) await ensureDir(dirname(files.cert), 0o755);
  if (options.key === undefined) await ensureDir(dirname(files.key), shared ? 0o755 : 0o700);
  await writeFileAtomic(files.key, pair.keyPem, { mode });
  if (gid !== undefined) await Deno.chown(files.key, 0, gid);
  await writeFileAtomic(files.cert, pair.certPem, { mode: 0o644 });
  return {
    outcome,
    ...(reason !== undefined ? { reason } : {}),
    ...files,
    description: describeCert(pair.certPem),
  };
}

/** A server certificate as `ca show` lists it. */
export interface ShownCert {
  /** Its name (the file's stem). */
  name: string;
  path: string;
  description: CertDescription;
  /** Whether the CA there issued it. */
  fromCa: boolean;
  /** Why it is due for renewal (time only: its wanted names are not known here). */
  due?: string;
}

/**
 * The CA under `dir` and the certificates in `dir/tls/` (`*.crt`, by name).
 *
 * @throws {TrustFileError} when the CA certificate cannot be read or is not a CA; or a
 *   certificate in `tls/` is not one.
 */
export async function showCa(
  dir: string = MESH_DIR,
  options: { now?: Date } = {},
): Promise<{ cert: string; ca: CertDescription; certs: ShownCert[] }> {
  const { cert } = caFiles(dir);
  const caPem = await readCaCert(cert).catch(hintInit);
  const certs: ShownCert[] = [];
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(`${dir}/tls`)];
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  for (const e of entries.filter((e) => e.name.endsWith(".crt")).sort(byName)) {
    const path = `${dir}/tls/${e.name}`;
    const pem = await readCertificate(path);
    const due = renewalReason(pem, options.now !== undefined ? { now: options.now } : {});
    certs.push({
      name: e.name.slice(0, -".crt".length),
      path,
      description: describeCert(pem),
      fromCa: await issuedBy(pem, caPem),
      ...(due !== undefined ? { due } : {}),
    });
  }
  return { cert, ca: describeCert(caPem), certs };
}

const byName = (a: Deno.DirEntry, b: Deno.DirEntry) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
