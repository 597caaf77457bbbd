/**
 * Asking systemd, read-only: which manager an account's units live in, and the outputs read of
 * it (whether systemd booted the machine: lib/init_system.ts). The one reader of these formats for every program:
 * mesh-reconcile's timer and boot observers and mesh-host's systemd service applier read
 * `systemctl show` through {@linkcode parseShow}.
 *
 * Formats read, as systemd 252 (Debian bookworm) prints them, recorded in the lab:
 *
 * - `systemctl show -p P1,P2,... -- UNIT...` (systemctl(1), "show"): one block of `KEY=VALUE`
 *   lines per unit named, in the order named, blocks separated by one empty line. Properties come
 *   in systemd's own order, not the order asked. It exits 0 for a unit that does not exist and
 *   prints `LoadState=not-found`, so what it says decides, never its exit code. An alias is shown
 *   under the `Id` (and the state) of the unit it names. A template without an instance
 *   (`foo@.timer`) makes the WHOLE call fail, so such names are never asked.
 * - `systemctl list-unit-files --type=TYPE --no-legend` (systemctl(1), "list-unit-files"): one line
 *   per unit file, `UNIT STATE PRESET` separated by runs of spaces; PRESET is `-` when none.
 * - Unit file states, load states and active states: exactly the words `systemctl --state=help`
 *   lists on systemd 252 (plus `refreshing`, added in 254). A word outside these lists is not
 *   guessed at: the observer that meets it reports its source `failed`.
 *
 * Rootless accounts: their units live in their own user manager, asked as the account with
 * `runuser -u ACCOUNT -- env XDG_RUNTIME_DIR=/run/user/UID systemctl --user ...`; systemctl then
 * talks to the manager's private socket `/run/user/UID/systemd/private`. (`systemctl --user -M
 * ACCOUNT@` was tried in the lab and fails there: it needs the account's D-Bus session bus, which
 * a machine without dbus-user-session does not have.) A user manager runs while the account is
 * logged in, and from boot on only when the account lingers (`loginctl enable-linger`, which
 * creates `/var/lib/systemd/linger/ACCOUNT`; loginctl(1)).
 *
 * @module
 */

import type { Account } from "./accounts.ts";

/** Every systemctl runs with untranslated messages, without colour and without a pager. */
export const SYSTEMCTL_ENV: Record<string, string> = {
  LC_ALL: "C",
  SYSTEMD_COLORS: "0",
  SYSTEMD_PAGER: "",
};

/** Load states (`systemctl --state=help`, "Available unit load states"), systemd 252. */
export const LOAD_STATES = [
  "stub",
  "loaded",
  "not-found",
  "bad-setting",
  "error",
  "merged",
  "masked",
] as const;

/** Active states (`systemctl --state=help`), systemd 252, plus `refreshing` (254). */
export const ACTIVE_STATES = [
  "active",
  "reloading",
  "inactive",
  "failed",
  "activating",
  "deactivating",
  "maintenance",
  "refreshing",
] as const;

/**
 * Unit file states (`systemctl --state=help`, "Available unit file states"; systemctl(1),
 * the is-enabled table), systemd 252. `systemctl show` prints an empty `UnitFileState=` for a unit
 * with no unit file (LoadState=not-found), which `is-enabled` answers with an error message.
 */
export const UNIT_FILE_STATES = [
  "enabled",
  "enabled-runtime",
  "linked",
  "linked-runtime",
  "alias",
  "masked",
  "masked-runtime",
  "static",
  "disabled",
  "indirect",
  "generated",
  "transient",
  "bad",
] as const;

/** One of {@linkcode UNIT_FILE_STATES}. */
export type UnitFileState = (typeof UNIT_FILE_STATES)[number];

/** Whether `word` is one of `list`. */
export function isOneOf<T extends string>(list: readonly T[], word: string): word is T {
  return (list as readonly string[]).includes(word);
}

/** The manager an account's units live in. */
export interface Manager {
  /** The account; `root` means the system manager. */
  account: string;
  /** `true` for a user manager (`systemctl --user`). */
  user: boolean;
  uid: number;
  home: string;
}

/** The manager of `account`: the system manager for root, the account's user manager otherwise. */
export function managerOf(account: Account): Manager {
  return { account: account.name, user: account.uid !== 0, uid: account.uid, home: account.home };
}

/** Whether a user manager answers now, and whether one starts at boot. */
export interface UserManagerState {
  /** `/run/user/UID/systemd/private` is a socket: the manager runs now. */
  running: boolean;
  /** `/var/lib/systemd/linger/ACCOUNT` exists: the manager starts at boot. */
  lingers: boolean;
  /** The paths looked at, for messages. */
  socket: string;
  linger: string;
}

/** Looks (without asking anything) whether `manager`'s user manager runs and lingers. */
export function userManagerState(manager: Manager, root = ""): UserManagerState {
  const socket = `${root}/run/user/${manager.uid}/systemd/private`;
  const linger = `${root}/var/lib/systemd/linger/${manager.account}`;
  let running = false;
  try {
    running = Deno.statSync(socket).isSocket === true;
  } catch { /* not running */ }
  let lingers = false;
  try {
    Deno.statSync(linger);
    lingers = true;
  } catch { /* does not linger */ }
  return { running, lingers, socket, linger };
}

/**
 * argv that runs `systemctl ARGS...` against `manager`: directly for the system manager; as the
 * account, with its runtime directory, for a user manager (directly when this process already is
 * that account).
 */
export function systemctlArgv(manager: Manager, args: string[]): string[] {
  if (!manager.user) return ["systemctl", ...args];
  const env = [`HOME=${manager.home}`, `XDG_RUNTIME_DIR=/run/user/${manager.uid}`];
  const argv = ["env", ...env, "systemctl", "--user", ...args];
  return manager.uid === Deno.uid() ? argv : ["runuser", "-u", manager.account, "--", ...argv];
}

/** Output of a systemd tool that is not the shape this module reads. */
export class SystemdFormatError extends Error {
  override name = "SystemdFormatError";
}

/**
 * Parses `systemctl show` output (systemctl(1), "show"): one block per unit in `units`, returned
 * in that order, each a map of property to value (values kept verbatim; an empty value is `""`).
 *
 * @throws {SystemdFormatError} when the number of blocks is not the number of units (a block
 *   missing is not a unit missing), or a line is not `KEY=VALUE`.
 */
export function parseShow(text: string, units: readonly string[]): Record<string, string>[] {
  const blocks: Record<string, string>[] = [];
  let current: Record<string, string> | undefined;
  for (const line of text.split("\n")) {
    if (line === "") {
      current = undefined;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq <= 0) {
      throw new SystemdFormatError(
        `systemctl show printed a line that is not KEY=VALUE: "${line}"`,
      );
    }
    if (current === undefined) blocks.push(current = {});
    current[line.slice(0, eq)] = line.slice(eq + 1);
  }
  if (blocks.length !== units.length) {
    throw new SystemdFormatError(
      `systemctl show printed ${blocks.length} block(s), expected ${units.length} (one per unit ` +
        `named: ${units.join(", ")})`,
    );
  }
  return blocks;
}

/**
 * Parses `systemctl list-unit-files --no-legend` output: unit name to its state word, verbatim.
 *
 * @throws {SystemdFormatError} when a line does not have at least a name and a state.
 */
export function parseUnitFiles(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const [unit, state] = line.trim().split(/\s+/);
    if (unit === undefined || state === undefined) {
      throw new SystemdFormatError(
        `systemctl list-unit-files printed a line without a state: "${line}"`,
      );
    }
    out.set(unit, state);
  }
  return out;
}

/**
 * The commands of an `Exec*=` property as `systemctl show` prints them (systemctl(1); systemd
 * 252): `{ path=/usr/bin/podman ; argv[]=/usr/bin/podman run --name web ... ; ignore_errors=no ;
 * start_time=[...] ; ... }`, one `{...}` per command, argv joined by single spaces without
 * quoting (so an argument holding a space cannot be told apart; names never hold one).
 * Returns one argv per command; `[]` for an empty value.
 */
export function parseExecProperty(value: string): string[][] {
  const out: string[][] = [];
  for (const m of value.matchAll(/argv\[\]=(.*?) ; ignore_errors=/g)) {
    out.push(m[1]!.split(" ").filter((a) => a !== ""));
  }
  return out;
}

/**
 * Splits a unit file's command line the way systemd does (systemd.service(5), "Command lines"):
 * words separated by whitespace, double or single quotes around a word, C-style backslash escapes
 * (`\\`, `\"`, `\'`, `\n`, `\t`, `\s` for a space), and a backslash at the end of a line
 * continuing it. Specifiers (`%N`...) are left as they are.
 */
export function splitCommandLine(line: string): string[] {
  const text = line.replace(/\\\n/g, " ");
  const words: string[] = [];
  let i = 0;
  const escapes: Record<string, string> = {
    n: "\n",
    t: "\t",
    s: " ",
    "\\": "\\",
    '"': '"',
    "'": "'",
  };
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (i >= text.length) break;
    let word = "";
    while (i < text.length && !/\s/.test(text[i]!)) {
      const c = text[i]!;
      if (c === '"' || c === "'") {
        i++;
        while (i < text.length && text[i] !== c) {
          if (text[i] === "\\" && i + 1 < text.length) {
            word += escapes[text[i + 1]!] ?? text[i + 1]!;
            i += 2;
          } else word += text[i++];
        }
        i++; // the closing quote
      } else if (c === "\\" && i + 1 < text.length) {
        word += escapes[text[i + 1]!] ?? text[i + 1]!;
        i += 2;
      } else {
        word += c;
        i++;
      }
    }
    words.push(word);
  }
  return words;
}

/** Where a process runs, read from `/proc/PID/cgroup` (cgroups(7)). */
export interface ProcessUnit {
  /** The service unit it runs in, e.g. `ssh.service`; absent when it runs in none. */
  unit?: string;
  /** The uid whose user manager the unit belongs to; absent for a system unit. */
  userManagerUid?: number;
  /** The cgroup path read (the unified `0::` line, else the `name=systemd` one). */
  path: string;
}

/**
 * Reads which systemd service a process runs in from the text of `/proc/PID/cgroup`: the deepest
 * path segment that is a `.service`; one below `user@UID.service` belongs to that user's manager.
 * A process in a `.scope` (a login session, a container) runs in no service.
 */
export function parseProcCgroup(text: string): ProcessUnit {
  const lines = text.split("\n").filter(Boolean);
  const line = lines.find((l) => l.startsWith("0::")) ??
    lines.find((l) => /^\d+:name=systemd:/.test(l));
  const path = line === undefined ? "" : line.slice(line.indexOf(":", line.indexOf(":") + 1) + 1);
  const segments = path.split("/").filter(Boolean);
  let userManagerUid: number | undefined;
  let unit: string | undefined;
  for (const s of segments) {
    const user = /^user@(\d+)\.service$/.exec(s);
    if (user) {
      userManagerUid = Number(user[1]);
      unit = s;
      continue;
    }
    if (s.endsWith(".service")) unit = s;
  }
  if (unit === undefined) return { path };
  if (userManagerUid !== undefined && unit !== `user@${userManagerUid}.service`) {
    return { unit, userManagerUid, path };
  }
  return { unit, path };
}
