/**
 * Linux accounts, read from `/etc/passwd` (format: passwd(5), `name:x:uid:gid:gecos:home:shell`).
 *
 * @module
 */

/** One account of `/etc/passwd`. */
export interface Account {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Options of {@linkcode readAccounts} and {@linkcode readGroups}. */
export interface AccountsOptions {
  /**
   * A file that does not exist is no accounts (Android has no /etc/passwd: bionic's ids are
   * built in), so a name looked up there is not found; any other failure still throws.
   */
  missingIsEmpty?: boolean;
}

/**
 * Reads the accounts of `/etc/passwd` (or `path`), keyed by name.
 *
 * @throws {Error} "Cannot read accounts ..." when the file cannot be read (a missing file too,
 *   unless `missingIsEmpty`).
 */
export function readAccounts(
  path = "/etc/passwd",
  options: AccountsOptions = {},
): Promise<Map<string, Account>> {
  // Synchronous underneath: one small local file, and no thread of the pool taken for it.
  try {
    return Promise.resolve(parsePasswd(readText(path, "accounts", options)));
  } catch (error) {
    return Promise.reject(error);
  }
}

function readText(path: string, what: string, options: AccountsOptions = {}): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (cause) {
    if (options.missingIsEmpty && cause instanceof Deno.errors.NotFound) return "";
    throw new Error(`Cannot read ${what} "${path}": ${(cause as Error).message}`, { cause });
  }
}

/** Parses passwd(5) text; malformed lines are skipped. */
export function parsePasswd(text: string): Map<string, Account> {
  const accounts = new Map<string, Account>();
  for (const line of text.split("\n")) {
    const f = line.split(":");
    if (f.length < 7 || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!)) continue;
    accounts.set(f[0]!, { name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]! });
  }
  return accounts;
}

/** Finds a program on `PATH` without running anything; `undefined` when it is not there. */
export function findProgram(name: string, path = Deno.env.get("PATH") ?? ""): string | undefined {
  for (const dir of path.split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${name}`;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0) & 0o111) !== 0) return candidate;
    } catch { /* not here */ }
  }
  return undefined;
}

/**
 * Reads the groups of `/etc/group` (or `path`; format: group(5), `name:x:gid:members`), name to
 * gid.
 *
 * @throws {Error} "Cannot read groups ..." when the file cannot be read.
 */
export function readGroups(
  path = "/etc/group",
  options: AccountsOptions = {},
): Promise<Map<string, number>> {
  try {
    return Promise.resolve(parseGroups(readText(path, "groups", options)));
  } catch (error) {
    return Promise.reject(error);
  }
}

function parseGroups(text: string): Map<string, number> {
  const groups = new Map<string, number>();
  for (const line of text.split("\n")) {
    const f = line.split(":");
    if (f.length >= 3 && /^\d+$/.test(f[2]!)) groups.set(f[0]!, Number(f[2]));
  }
  return groups;
}
