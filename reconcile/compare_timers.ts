/**
 * A `batch` entry is graded by its timer, never by its container: the timer must exist, be
 * enabled for boot (`enabled` and pulled in by some unit: `enabled` alone is also what an
 * `[Install]` holding only `Alias=` reads), be active, and have a next trigger scheduled. The service it triggers is
 * legitimately `static` (a timer-triggered service has no [Install] section of its own) and is
 * never asserted enabled. Pure: it reads the observation and returns findings with check `timer`.
 *
 * Every load state, active state and unit file state systemd 252 documents (`systemctl
 * --state=help`; the is-enabled table of systemctl(1)) has its own entry and its own words below;
 * a word outside them never reaches this module (the observer reports its source `failed`).
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import { type ObservedTimer, timerAccount } from "./observe/timers.ts";
import type { ACTIVE_STATES, LOAD_STATES, UnitFileState } from "../lib/systemd.ts";

/**
 * What each unit file state says about starting at boot: `undefined` when the timer starts at
 * boot, else why it does not (systemctl(1), is-enabled).
 */
export const TIMER_BOOT_WORDS: Record<UnitFileState, string | undefined> = {
  enabled: undefined,
  "enabled-runtime":
    "enabled-runtime: enabled only under /run, so it does not start at the next boot",
  linked: "linked: made available with systemctl link, not enabled, so it does not start at boot",
  "linked-runtime":
    "linked-runtime: linked under /run only and not enabled, so it does not start at boot",
  alias: "alias: systemd says only that this name is an alias; declare the timer it names",
  masked: "masked: it cannot be started at all, at boot or by hand",
  "masked-runtime": "masked-runtime: masked under /run until the next boot, so it cannot start now",
  static:
    "static: it has no [Install] section, so it cannot be enabled and starts at boot only if " +
    "another unit pulls it in",
  disabled: "disabled: it does not start at boot",
  indirect:
    "indirect: it is not enabled itself; its [Install] section only names other units (Also=)",
  generated:
    "generated: a generator made it, so systemctl cannot enable it; its boot state is that " +
    "generator's configuration",
  transient: "transient: created at runtime (systemd-run) and gone at the next boot",
  bad: "bad: systemd cannot read its unit file",
};

/**
 * An `enabled` timer that no unit wants, requires or upholds: `systemctl enable` of a unit whose
 * `[Install]` holds only `Alias=` exits 0 and makes only the alias, and `UnitFileState` reads
 * `enabled`, yet nothing starts it at boot.
 */
export const NOT_PULLED =
  "enabled, but nothing wants or requires it (WantedBy=, RequiredBy= and UpheldBy= are empty: " +
  "its [Install] section names no target, only Alias= say), so nothing starts it at boot";

/** What each load state says (`undefined`: loaded enough to be graded by its unit file state). */
export const TIMER_LOAD_WORDS: Record<(typeof LOAD_STATES)[number], string | undefined> = {
  loaded: undefined,
  masked: undefined, // masked units load as masked; the unit file state says masked
  "not-found": "not-found: the timer does not exist (systemd has no unit file for it)",
  "bad-setting": "bad-setting: systemd refuses a setting in it (LoadState=bad-setting)",
  error: "error: its unit file cannot be loaded (LoadState=error)",
  stub: "stub: systemd has not loaded it (LoadState=stub)",
  merged: "merged: it was merged into another unit (LoadState=merged); declare that unit",
};

/** What each active state says (`undefined`: running, so its next trigger is what matters). */
export const TIMER_ACTIVE_WORDS: Record<(typeof ACTIVE_STATES)[number], string | undefined> = {
  active: undefined,
  reloading: undefined,
  refreshing: undefined,
  inactive: "inactive: it is not started, so it never triggers",
  failed: "failed: it stopped with an error and does not trigger",
  activating: "activating: it is still starting",
  deactivating: "deactivating: it is stopping",
  maintenance: "maintenance: systemd holds it in maintenance",
};

/**
 * Whether a started timer has nothing scheduled: `NextElapseUSecRealtime` empty (or `n/a`, `0`)
 * and `NextElapseUSecMonotonic` `infinity` (or `0`, empty). Such a timer is `active` with
 * SubState `elapsed` (a one-shot `OnActiveSec=` that fired, an `OnCalendar=` in the past) and
 * will not run again until restarted.
 */
export function hasNoNextTrigger(t: ObservedTimer): boolean {
  const none = (v: string, empties: string[]) => empties.includes(v.trim());
  return none(t.nextRealtime, ["", "n/a", "0"]) && none(t.nextMonotonic, ["", "infinity", "0"]);
}

/**
 * Why `t` is not a healthy batch timer, in systemd's words; empty when it is enabled for boot,
 * active, and has a next trigger. A unit that does not exist says only that.
 */
export function gradeTimer(t: ObservedTimer): string[] {
  const load = TIMER_LOAD_WORDS[t.load as keyof typeof TIMER_LOAD_WORDS];
  if (t.load === "not-found") return [load!];
  const problems: string[] = [];
  if (load !== undefined) problems.push(load);
  else {
    const boot = TIMER_BOOT_WORDS[t.unitFile as UnitFileState];
    if (boot !== undefined) problems.push(boot);
    else if (t.unitFile === "enabled" && t.pulledBy?.length === 0) problems.push(NOT_PULLED);
  }
  const active = TIMER_ACTIVE_WORDS[t.active as keyof typeof TIMER_ACTIVE_WORDS];
  if (active !== undefined) problems.push(active);
  else if (hasNoNextTrigger(t)) {
    problems.push(
      `active with no next trigger (SubState=${t.sub}, last triggered ${
        t.lastTrigger || "never"
      }): it will not run again until it is restarted`,
    );
  }
  return problems;
}

/**
 * The `timer` findings: each `batch` entry's timer graded in its account's manager. Compared only
 * when the observation includes timers (`observation.timers`); a `failed` timers source is not
 * compared (its absence of data is not evidence); an `absent` one (no systemd, no user manager)
 * makes every timer declared there missing, since absence is never satisfaction.
 */
export function compareTimers(registry: Registry, observation: Observation): Finding[] {
  if (observation.timers === undefined) return [];
  const findings: Finding[] = [];
  for (const [name, entry] of Object.entries(registry.services)) {
    if (entry.kind !== "batch") continue;
    const account = timerAccount(entry);
    const subject = `${account}/${entry.timer}`;
    const missing = (detail: string): Finding => ({
      check: "timer",
      direction: "missing",
      service: name,
      subject,
      detail,
    });
    const source = observation.sources.find((s) => s.source === "timers" && s.account === account);
    if (source?.state === "failed") continue;
    if (source === undefined || source.state === "absent") {
      findings.push(missing(
        `timer ${entry.timer} cannot run: ${source?.detail ?? "it was not asked"}`,
      ));
      continue;
    }
    const t = observation.timers.find((x) => x.account === account && x.unit === entry.timer);
    if (t === undefined) {
      findings.push(missing(`timer ${entry.timer}: systemd said nothing about it`));
      continue;
    }
    const problems = gradeTimer(t);
    if (problems.length === 0) continue;
    const alias = t.id !== t.unit && t.load !== "not-found" ? ` (an alias of ${t.id})` : "";
    const where = account === "root" ? "" : ` in the user manager of ${account}`;
    findings.push(missing(
      `timer ${entry.timer}${alias}${where}${
        t.triggers ? `, which triggers ${t.triggers},` : ""
      } is ${problems.join("; and ")}`,
    ));
  }
  return findings;
}
