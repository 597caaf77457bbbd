/**
 * The timers of `batch` entries, asked from systemd: ONE `systemctl show` per manager (the system
 * manager for root, an account's user manager for a rootless account) naming every timer declared
 * there, however many. Read-only.
 *
 * Format read: `systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState,
 * NextElapseUSecRealtime,NextElapseUSecMonotonic,LastTriggerUSec,Unit -- A.timer B.timer`
 * (systemctl(1), "show"; parsed by {@linkcode parseShow}). Recorded in the lab (systemd 252):
 *
 * ```
 * Unit=mesh-ok.service
 * NextElapseUSecRealtime=Mon 2026-11-30 15:00:00 UTC
 * NextElapseUSecMonotonic=0
 * LastTriggerUSec=
 * Id=mesh-ok.timer
 * LoadState=loaded
 * ActiveState=active
 * SubState=waiting
 * UnitFileState=enabled
 *
 * Unit=mesh-elapsed.service
 * NextElapseUSecRealtime=
 * NextElapseUSecMonotonic=infinity
 * LastTriggerUSec=Mon 2026-11-30 14:33:31 UTC
 * Id=mesh-elapsed.timer
 * LoadState=loaded
 * ActiveState=active
 * SubState=elapsed
 * UnitFileState=enabled
 * ```
 *
 * `NextElapseUSecRealtime` is a timestamp or empty; `NextElapseUSecMonotonic` a time span
 * (`1h 34min 9.3s`), `0` or `infinity`: with neither set, nothing is scheduled.
 * `UnitFileState` carries what `systemctl is-enabled` answers, except where they differ (checked
 * in the lab, systemd 252): for a unit that does not exist `show` says `LoadState=not-found` and
 * an empty `UnitFileState` while `is-enabled` prints "Failed to get unit file state ... No such
 * file or directory"; for an alias name `show` answers for the unit it names (its `Id` and its
 * state) while `is-enabled` says `alias`; a unit file systemd cannot parse is `bad` in `show` while
 * `is-enabled` prints an error instead (and a dangling or looping symlink is `not-found` in `show`
 * while `list-unit-files` says `bad`). Every other word is the same in both.
 *
 * @module
 */

import type { Account } from "../../lib/accounts.ts";
import { formatArgv, run } from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import type { Registry } from "../registry.ts";
import type { SourceStatus } from "./source.ts";
import {
  ACTIVE_STATES,
  isOneOf,
  LOAD_STATES,
  managerOf,
  parseShow,
  SYSTEMCTL_ENV,
  systemctlArgv,
  UNIT_FILE_STATES,
  userManagerState,
} from "../../lib/systemd.ts";
import { sdBooted } from "../../lib/init_system.ts";

/** The properties asked for every timer, in the one `systemctl show` call per manager. */
export const TIMER_PROPERTIES = [
  "Id",
  "LoadState",
  "ActiveState",
  "SubState",
  "UnitFileState",
  "NextElapseUSecRealtime",
  "NextElapseUSecMonotonic",
  "LastTriggerUSec",
  "Unit",
  // What pulls it in: an `enabled` timer nothing wants or requires (an [Install] with only
  // Alias=) starts nothing at boot; and where its unit file is, for `batch enable` to read.
  "WantedBy",
  "RequiredBy",
  "UpheldBy",
  "FragmentPath",
  "DropInPaths",
];

/** The timers to ask about in one account's manager (`root`: the system manager). */
export interface TimerRequest {
  account: string;
  units: string[];
}

/** What systemd said about one declared timer. */
export interface ObservedTimer {
  /** The account whose manager was asked (`root`: the system manager). */
  account: string;
  /** The name as declared. */
  unit: string;
  /** `Id`: the unit's own name; differs from `unit` when `unit` is an alias. */
  id: string;
  /** `LoadState`, one of {@linkcode LOAD_STATES}. */
  load: string;
  /** `ActiveState`, one of {@linkcode ACTIVE_STATES}. */
  active: string;
  /** `SubState` (timers: dead, waiting, running, elapsed, failed). */
  sub: string;
  /** `UnitFileState`, one of {@linkcode UNIT_FILE_STATES}, or `""` for a unit not loaded. */
  unitFile: string;
  /** `NextElapseUSecRealtime` as printed (a timestamp), `""` when none. */
  nextRealtime: string;
  /** `NextElapseUSecMonotonic` as printed (a time span), `0` or `infinity` when none. */
  nextMonotonic: string;
  /** `LastTriggerUSec` as printed, `""` when it never triggered. */
  lastTrigger: string;
  /** `Unit`: the unit it triggers (legitimately `static`; never asserted enabled). */
  triggers: string;
  /**
   * `WantedBy`, `RequiredBy`, `UpheldBy`: the units that pull it in. Absent when not asked
   * (recorded outputs older than the question): then not judged.
   */
  pulledBy?: string[];
  /** `FragmentPath` and `DropInPaths`: its unit file and drop-ins (space-separated). */
  fragmentPath?: string;
  dropInPaths?: string;
}

/** What {@linkcode observeTimers} found, and how each manager answered. */
export interface TimerObservation {
  timers: ObservedTimer[];
  /** One `timers` source per account asked. */
  sources: SourceStatus[];
}

/** Options for {@linkcode observeTimers}. */
export interface ObserveTimersOptions {
  /** `/etc/passwd` accounts (read once by the caller). */
  passwd: Map<string, Account>;
  /** Per-command time limit in milliseconds; default 60 000. */
  timeoutMs?: number;
  /** Prefix of `/run` and `/var/lib` paths looked at (tests); default none. */
  root?: string;
}

/** The account whose manager runs a batch entry's timer: its `user`, root when none. */
export function timerAccount(entry: { user?: string }): string {
  return entry.user ?? "root";
}

/** The timers `registry` declares, grouped by the account whose manager runs them. */
export function timerRequests(registry: Registry): TimerRequest[] {
  const by = new Map<string, Set<string>>();
  for (const entry of Object.values(registry.services)) {
    if (entry.kind !== "batch") continue;
    const account = timerAccount(entry);
    const set = by.get(account) ?? new Set();
    set.add(entry.timer);
    by.set(account, set);
  }
  return [...by].map(([account, units]) => ({ account, units: [...units] }));
}

/**
 * Asks each account's manager about its timers, one `systemctl show` per manager. Never throws:
 * a manager that cannot be asked, or that answers with a word this program does not know, is a
 * `failed` source; a machine not booted with systemd, or a rootless account with no user manager
 * (one that does not linger and is not logged in), is `absent` with the reason, and then its
 * declared timers are missing.
 */
export async function observeTimers(
  requests: TimerRequest[],
  options: ObserveTimersOptions,
): Promise<TimerObservation> {
  const results = await Promise.all(requests.map((r) => askManager(r, options)));
  return {
    timers: results.flatMap((r) => r.timers),
    sources: results.flatMap((r) => r.sources),
  };
}

async function askManager(
  request: TimerRequest,
  options: ObserveTimersOptions,
): Promise<TimerObservation> {
  const status = (state: SourceStatus["state"], method: string, detail: string) => ({
    timers: [],
    sources: [{ source: "timers", account: request.account, state, method, detail }],
  });
  const booted = sdBooted(options.root);
  if (!booted.booted) return status("absent", booted.method, booted.reason);
  const account = options.passwd.get(request.account);
  if (account === undefined) {
    return status(
      "failed",
      "read /etc/passwd",
      `account "${request.account}" does not exist in /etc/passwd`,
    );
  }
  const manager = managerOf(account);
  if (manager.user) {
    const user = userManagerState(manager, options.root);
    if (!user.running) {
      return user.lingers
        ? status(
          "failed",
          `stat ${user.socket}`,
          `account ${manager.account} lingers (${user.linger}) but its user manager does not ` +
            `answer: ${user.socket} is not a socket`,
        )
        : status(
          "absent",
          `stat ${user.socket}`,
          `no user manager runs for account ${manager.account} (${user.socket} is not a socket, ` +
            `and it does not linger: no ${user.linger}), so its timers cannot run`,
        );
    }
  }
  const argv = systemctlArgv(manager, [
    "show",
    "-p",
    TIMER_PROPERTIES.join(","),
    "--",
    ...request.units,
  ]);
  const method = formatArgv(argv);
  try {
    const out = await run(argv, { env: SYSTEMCTL_ENV, timeoutMs: options.timeoutMs ?? 60_000 });
    const blocks = parseShow(out.stdout, request.units);
    const timers = request.units.map((unit, i) => toTimer(request.account, unit, blocks[i]!));
    const unknown = timers.flatMap(unknownWords);
    if (unknown.length > 0) {
      return status(
        "failed",
        method,
        `systemctl answered with a word this program does not know, and it is not guessed at: ${
          unknown.join("; ")
        }`,
      );
    }
    return {
      timers,
      sources: [{
        source: "timers",
        account: request.account,
        state: "observed",
        method,
        detail: `${timers.length} timer${timers.length === 1 ? "" : "s"} asked in one call to the ${
          manager.user ? `user manager of ${manager.account}` : "system manager"
        }`,
      }],
    };
  } catch (error) {
    return status("failed", method, messageOf(error));
  }
}

function toTimer(account: string, unit: string, block: Record<string, string>): ObservedTimer {
  return {
    account,
    unit,
    id: block.Id ?? "",
    load: block.LoadState ?? "",
    active: block.ActiveState ?? "",
    sub: block.SubState ?? "",
    unitFile: block.UnitFileState ?? "",
    nextRealtime: block.NextElapseUSecRealtime ?? "",
    nextMonotonic: block.NextElapseUSecMonotonic ?? "",
    lastTrigger: block.LastTriggerUSec ?? "",
    triggers: block.Unit ?? "",
    ...("WantedBy" in block
      ? {
        pulledBy: [block.WantedBy, block.RequiredBy, block.UpheldBy]
          .flatMap((v) => (v ?? "").split(/\s+/)).filter(Boolean),
      }
      : {}),
    ...("FragmentPath" in block ? { fragmentPath: block.FragmentPath! } : {}),
    ...("DropInPaths" in block ? { dropInPaths: block.DropInPaths! } : {}),
  };
}

/** The words of `t` outside systemd's documented lists (an empty list when it is all known). */
export function unknownWords(t: ObservedTimer): string[] {
  const out: string[] = [];
  if (t.id === "") out.push(`${t.unit}: no Id`);
  if (!isOneOf(LOAD_STATES, t.load)) out.push(`${t.unit}: LoadState="${t.load}"`);
  if (!isOneOf(ACTIVE_STATES, t.active)) out.push(`${t.unit}: ActiveState="${t.active}"`);
  // Only a unit systemd could not load has no unit file state.
  const emptyOk = t.unitFile === "" && t.load !== "loaded" && t.load !== "masked";
  if (!emptyOk && !isOneOf(UNIT_FILE_STATES, t.unitFile)) {
    out.push(`${t.unit}: UnitFileState="${t.unitFile}" (LoadState=${t.load})`);
  }
  return out;
}
