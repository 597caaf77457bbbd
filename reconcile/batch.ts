/**
 * Registration when a job is switched on: `batch enable` enables and starts a timer and adds its
 * `batch` entry in one step; `batch disable` stops and disables it and removes the entry. The
 * registry is edited with {@linkcode ./registry_edit.ts} (every other byte kept), validated by
 * the registry schema before anything is run, and written atomically.
 *
 * Order, both ways: systemctl first, the registry last.
 * - A failed `systemctl enable --now` (or a timer that is not healthy afterwards) never reaches
 *   the registry: it is left byte for byte as it was, and what systemctl did is undone.
 * - The registry is written only after systemd says the timer is what was asked; if that write
 *   fails (or the file changed meanwhile), what systemctl changed is undone, and if undoing fails
 *   too, the result says exactly what is left (outcome `failed`, both reasons).
 * - The one state a crash between the two steps can leave is a timer switched on with no entry
 *   (enable) or an entry whose timer is off (disable; the next run reports it as missing).
 *   Running the same command again finishes it: enabling an enabled timer and disabling a
 *   disabled one change nothing in systemd, and the registry edit is then made.
 * Before anything is run, everything that can be checked is: the registry and the edited
 * registry are valid (the account is in `accounts`, the container not claimed twice), the
 * entry is absent (enable) or present and of kind batch (disable), the registry's directory
 * can be written, and the timer's state is one whose change can be undone exactly (`disabled`
 * or `enabled`; a `static` timer is refused, since `systemctl enable` of one exits 0 and
 * enables nothing). A refusal changes nothing anywhere.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { readAccounts } from "../lib/accounts.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import { MAX_REGISTRY_BYTES } from "./registry_base.ts";
import { formatArgv, run } from "../lib/command.ts";
import { parseRegistry, RegistryError } from "./registry.ts";
import { loadRegistry } from "./registry_load.ts";
import { addEntry, RegistryEditError, removeEntry } from "./registry_edit.ts";
import { gradeTimer, NOT_PULLED, TIMER_BOOT_WORDS, TIMER_LOAD_WORDS } from "./compare_timers.ts";
import { aliasOnlyReason, readInstallSection } from "../lib/unit_install.ts";
import { type ObservedTimer, observeTimers, timerAccount } from "./observe/timers.ts";
import {
  type Manager,
  managerOf,
  SYSTEMCTL_ENV,
  systemctlArgv,
  type UnitFileState,
} from "../lib/systemd.ts";
import { sdBooted } from "../lib/init_system.ts";

/**
 * How a batch command ended:
 * - `enabled` / `disabled`: done; systemd and the registry agree.
 * - `refused`: nothing was run and nothing was written; the message says why.
 * - `failed`: something was tried and did not work; the message says what was undone and what,
 *   if anything, is left.
 */
export type BatchOutcome = "enabled" | "disabled" | "refused" | "failed";

/** The result of {@linkcode batchEnable} or {@linkcode batchDisable}. */
export interface BatchResult {
  outcome: BatchOutcome;
  /** One sentence: what systemd and the registry are now. */
  message: string;
  /** What was run or written, in order, each as one line. */
  steps: string[];
}

/** Options for {@linkcode batchEnable}. */
export interface BatchEnableOptions {
  /** The registry file. */
  registry: string;
  /** The timer unit, e.g. `publish.timer`. */
  timer: string;
  /** The container the job starts while it runs. */
  container?: string;
  /** The account whose manager runs the timer (and whose container it is); default root. */
  user?: string;
  /** Per-command time limit in milliseconds; default 60 000. */
  timeoutMs?: number;
}

/** Options for {@linkcode batchDisable}. */
export interface BatchDisableOptions {
  registry: string;
  timeoutMs?: number;
}

class Refused extends Error {}

/**
 * Enables and starts `options.timer` and adds entry `name` for it (see the module notes).
 *
 * @example What `mesh-reconcile batch enable` does
 * ```ts
 * import { batchEnable } from "../mod.ts";
 *
 * // Runs systemctl on this machine and writes the registry: type-checked, not run here.
 * async function enableNightlyReport(): Promise<boolean> {
 *   const result = await batchEnable("nightly-report", {
 *     registry: "/var/lib/mesh/reconcile/registry.yaml",
 *     timer: "nightly-report.timer",
 *     container: "report",
 *     user: "root",
 *   });
 *   console.log(result.message); // what systemd and the registry are now
 *   for (const step of result.steps) console.log(`  ${step}`);
 *   return result.outcome === "enabled";
 * }
 * ```
 */
export async function batchEnable(name: string, options: BatchEnableOptions): Promise<BatchResult> {
  const steps: string[] = [];
  const timeoutMs = options.timeoutMs ?? 60_000;
  try {
    const text = await readRegistryText(options.registry);
    const entry: Record<string, unknown> = { kind: "batch", timer: options.timer };
    if (options.container !== undefined) entry.container = options.container;
    if (options.user !== undefined) entry.user = options.user;
    const edited = addEntry(text, { name, fields: entry }, { file: options.registry });
    await assertCanWrite(options.registry);
    const account = timerAccount({ user: options.user });
    const manager = await managerFor(account);
    const before = await showTimer(manager, options.timer, timeoutMs);
    const refusal = enableRefusal(before) ?? await enableStartsNothing(before);
    if (refusal !== undefined) throw new Refused(refusal);

    const enable = systemctlArgv(manager, ["enable", "--now", "--", options.timer]);
    steps.push(formatArgv(enable));
    let problem: string | undefined;
    try {
      await run(enable, { env: SYSTEMCTL_ENV, timeoutMs });
    } catch (error) {
      problem = messageOf(error);
    }
    let after: ObservedTimer | undefined;
    try {
      after = await showTimer(manager, options.timer, timeoutMs);
      const bad = gradeTimer(after);
      if (problem === undefined && bad.length > 0) {
        problem = `after enable --now the timer is ${bad.join("; and ")}`;
      }
    } catch (error) {
      problem ??= `cannot read the timer back: ${messageOf(error)}`;
    }
    if (problem !== undefined) {
      const undone = await undoEnable(manager, options.timer, before, after, timeoutMs, steps);
      return {
        outcome: "failed",
        message: `${options.timer} was not enabled: ${problem}. ${undone} The registry ` +
          `${options.registry} was not changed.`,
        steps,
      };
    }
    const written = await writeIfUnchanged(options.registry, text, edited, steps);
    if (written !== undefined) {
      const undone = await undoEnable(manager, options.timer, before, after, timeoutMs, steps);
      return {
        outcome: "failed",
        message: `${options.timer} was enabled and started, but the registry was not written: ` +
          `${written}. ${undone}`,
        steps,
      };
    }
    return {
      outcome: "enabled",
      message: `${options.timer} is enabled for boot, started, and next triggers at ${
        after!.nextRealtime || after!.nextMonotonic
      }; entry "${name}" (kind batch) was added to ${options.registry}.`,
      steps,
    };
  } catch (error) {
    return refusedOrThrow(error, steps);
  }
}

/**
 * Stops and disables entry `name`'s timer and removes the entry (see the module notes).
 *
 * @example What `mesh-reconcile batch disable` does
 * ```ts
 * import { batchDisable } from "../mod.ts";
 *
 * // Runs systemctl on this machine and writes the registry: type-checked, not run here.
 * async function disableNightlyReport(): Promise<void> {
 *   const result = await batchDisable("nightly-report", {
 *     registry: "/var/lib/mesh/reconcile/registry.yaml",
 *   });
 *   // `refused`: nothing was run or written; `failed`: the message says what is left.
 *   if (result.outcome !== "disabled") throw new Error(result.message);
 * }
 * ```
 */
export async function batchDisable(
  name: string,
  options: BatchDisableOptions,
): Promise<BatchResult> {
  const steps: string[] = [];
  const timeoutMs = options.timeoutMs ?? 60_000;
  try {
    const text = await readRegistryText(options.registry);
    const edited = removeEntry(text, name, { file: options.registry, kind: "batch" });
    const entry = parseRegistry(text, options.registry).services[name]!;
    if (entry.kind !== "batch") throw new Refused(`entry "${name}" is not a batch entry`);
    await assertCanWrite(options.registry);
    const account = timerAccount(entry);
    const booted = sdBooted();
    let before: ObservedTimer | undefined;
    let after: ObservedTimer | undefined;
    let manager: Manager | undefined;
    let said: string;
    if (!booted.booted) {
      said = `${booted.reason}: there is no timer to disable.`;
    } else {
      manager = await managerFor(account);
      before = await showTimer(manager, entry.timer, timeoutMs);
      const plan = disablePlan(before);
      if ("refuse" in plan) throw new Refused(plan.refuse);
      if (plan.argv.length === 0) said = plan.why;
      else {
        const argv = systemctlArgv(manager, [...plan.argv, "--", entry.timer]);
        steps.push(formatArgv(argv));
        let problem: string | undefined;
        try {
          await run(argv, { env: SYSTEMCTL_ENV, timeoutMs });
        } catch (error) {
          problem = messageOf(error);
        }
        try {
          after = await showTimer(manager, entry.timer, timeoutMs);
          if (problem === undefined && !isOff(after)) {
            problem = `afterwards the timer is still ${after.unitFile} and ${after.active}`;
          }
        } catch (error) {
          problem ??= `cannot read the timer back: ${messageOf(error)}`;
        }
        if (problem !== undefined) {
          const undone = await undoDisable(manager, entry.timer, before, after, timeoutMs, steps);
          return {
            outcome: "failed",
            message: `${entry.timer} was not disabled: ${problem}. ${undone} The registry ` +
              `${options.registry} was not changed.`,
            steps,
          };
        }
        said = `${entry.timer} is stopped and disabled.`;
      }
    }
    const written = await writeIfUnchanged(options.registry, text, edited, steps);
    if (written !== undefined) {
      const undone = manager && before
        ? await undoDisable(manager, entry.timer, before, after, timeoutMs, steps)
        : "Nothing was changed in systemd.";
      return {
        outcome: "failed",
        message: `${said} But the registry was not written: ${written}. ${undone}`,
        steps,
      };
    }
    return {
      outcome: "disabled",
      message: `${said} Entry "${name}" was removed from ${options.registry}.`,
      steps,
    };
  } catch (error) {
    return refusedOrThrow(error, steps);
  }
}

function refusedOrThrow(error: unknown, steps: string[]): BatchResult {
  if (
    error instanceof Refused || error instanceof RegistryError ||
    error instanceof RegistryEditError
  ) {
    return { outcome: "refused", message: `Refused, nothing was changed: ${error.message}`, steps };
  }
  throw error;
}

async function readRegistryText(file: string): Promise<string> {
  await loadRegistry(file); // every problem at once, with lines and columns
  return await readRegularTextFile(file, { maxBytes: MAX_REGISTRY_BYTES });
}

/** The registry's directory must take a new file (the atomic write's temporary file). */
async function assertCanWrite(file: string): Promise<void> {
  const probe = join(dirname(file), `.${crypto.randomUUID()}.mesh-probe`);
  try {
    await Deno.writeTextFile(probe, "", { createNew: true });
  } catch (error) {
    throw new Refused(
      `the registry's directory ${dirname(file)} cannot be written: ${messageOf(error)}`,
    );
  }
  await Deno.remove(probe).catch(() => {});
}

async function managerFor(account: string): Promise<Manager> {
  const booted = sdBooted();
  if (!booted.booted) throw new Refused(booted.reason);
  const passwd = await readAccounts();
  const a = passwd.get(account);
  if (a === undefined) throw new Refused(`account "${account}" does not exist in /etc/passwd`);
  return managerOf(a);
}

/** One `systemctl show` of `timer`; refuses when the manager cannot be asked. */
async function showTimer(manager: Manager, timer: string, timeoutMs: number) {
  const passwd = await readAccounts();
  const seen = await observeTimers([{ account: manager.account, units: [timer] }], {
    passwd,
    timeoutMs,
  });
  const source = seen.sources[0];
  const t = seen.timers[0];
  if (source?.state !== "observed" || t === undefined) {
    throw new Refused(`cannot ask systemd about ${timer}: ${source?.detail ?? "no answer"}`);
  }
  return t;
}

/**
 * For a disabled timer: would `systemctl enable` link it into anything? An `[Install]` with only
 * `Alias=` makes enable exit 0, start nothing at boot, and read `enabled`: refused before it runs.
 */
async function enableStartsNothing(t: ObservedTimer): Promise<string | undefined> {
  if (t.unitFile !== "disabled" || !t.fragmentPath) return undefined;
  if ((t.pulledBy?.length ?? 0) > 0) return undefined; // already wanted by another unit
  let install;
  try {
    install = await readInstallSection(t.fragmentPath, t.dropInPaths ?? "");
  } catch (error) {
    return `cannot tell whether enabling ${t.unit} starts it at boot: ${messageOf(error)}`;
  }
  const reason = aliasOnlyReason(t.unit, install);
  return reason === undefined
    ? undefined
    : `${reason}; give it WantedBy=timers.target to register it`;
}

/** Why `enable --now` of `t` is refused before it runs, or `undefined` to go ahead. */
export function enableRefusal(t: ObservedTimer): string | undefined {
  const load = TIMER_LOAD_WORDS[t.load as keyof typeof TIMER_LOAD_WORDS];
  if (load !== undefined) return `${t.unit} is ${load}`;
  if (t.id !== t.unit) return `${t.unit} is an alias of ${t.id}: register ${t.id} itself`;
  if (t.unitFile === "enabled" && t.pulledBy?.length === 0) {
    return `${t.unit} is ${NOT_PULLED}; register a timer whose [Install] section names ` +
      `WantedBy=timers.target`;
  }
  if (t.unitFile === "enabled" || t.unitFile === "disabled") return undefined;
  return `${t.unit} is ${
    TIMER_BOOT_WORDS[t.unitFile as UnitFileState] ?? t.unitFile
  }; batch enable switches on disabled timers (or registers enabled ones) only, so that a ` +
    `failure can be undone exactly${
      t.unitFile === "static"
        ? " (systemctl enable of a static unit exits 0 and enables nothing)"
        : ""
    }`;
}

type DisablePlan = { argv: string[]; why: string } | { refuse: string };

/** What `batch disable` runs for `t`: `disable --now`, `stop`, nothing, or a refusal. */
export function disablePlan(t: ObservedTimer): DisablePlan {
  if (t.load === "not-found") {
    return { argv: [], why: `${t.unit} does not exist: there is nothing to disable.` };
  }
  if (t.id !== t.unit) {
    return { refuse: `${t.unit} is an alias of ${t.id}: disabling it would remove the alias` };
  }
  const running = ["active", "reloading", "refreshing", "activating"].includes(t.active);
  if (t.unitFile === "enabled") return { argv: ["disable", "--now"], why: "" };
  if (t.unitFile === "disabled" || t.unitFile === "masked" || t.unitFile === "masked-runtime") {
    return running
      ? { argv: ["stop"], why: "" }
      : { argv: [], why: `${t.unit} is already ${t.unitFile} and ${t.active}.` };
  }
  return {
    refuse:
      `${t.unit} is ${
        TIMER_BOOT_WORDS[t.unitFile as UnitFileState] ?? t.unitFile
      }; batch disable handles enabled or disabled timers only, so that a failure can be undone ` +
      `exactly`,
  };
}

function isOff(t: ObservedTimer): boolean {
  return t.load === "not-found" ||
    (!["enabled", "enabled-runtime"].includes(t.unitFile) &&
      ["inactive", "failed"].includes(t.active));
}

const isRunning = (t: ObservedTimer | undefined) =>
  t !== undefined && ["active", "reloading", "refreshing", "activating"].includes(t.active);

/** Puts back what enable changed: disable it if it was not enabled, stop it if it was not running. */
async function undoEnable(
  manager: Manager,
  timer: string,
  before: ObservedTimer,
  after: ObservedTimer | undefined,
  timeoutMs: number,
  steps: string[],
): Promise<string> {
  const verbs: string[][] = [];
  if (before.unitFile !== "enabled" && after?.unitFile !== before.unitFile) verbs.push(["disable"]);
  if (!isRunning(before) && (after === undefined || isRunning(after))) verbs.push(["stop"]);
  return await undo(manager, timer, verbs, timeoutMs, steps, before);
}

/** Puts back what disable changed: enable it if it was enabled, start it if it was running. */
async function undoDisable(
  manager: Manager,
  timer: string,
  before: ObservedTimer,
  after: ObservedTimer | undefined,
  timeoutMs: number,
  steps: string[],
): Promise<string> {
  const verbs: string[][] = [];
  if (before.unitFile === "enabled" && after?.unitFile !== "enabled") verbs.push(["enable"]);
  if (isRunning(before) && !isRunning(after)) verbs.push(["start"]);
  return await undo(manager, timer, verbs, timeoutMs, steps, before);
}

async function undo(
  manager: Manager,
  timer: string,
  verbs: string[][],
  timeoutMs: number,
  steps: string[],
  before: ObservedTimer,
): Promise<string> {
  if (verbs.length === 0) return `Nothing had changed in systemd.`;
  const failures: string[] = [];
  for (const verb of verbs) {
    const argv = systemctlArgv(manager, [...verb, "--", timer]);
    steps.push(`${formatArgv(argv)} (undo)`);
    try {
      await run(argv, { env: SYSTEMCTL_ENV, timeoutMs });
    } catch (error) {
      failures.push(messageOf(error));
    }
  }
  const done = verbs.map((v) => v.join(" ")).join(" and ");
  if (failures.length === 0) {
    return `Undone (${done}): ${timer} is ${before.unitFile} and ${before.active} again.`;
  }
  return `Undoing (${done}) failed too, so ${timer} is left changed: ${failures.join("; ")}. ` +
    `It was ${before.unitFile} and ${before.active} before.`;
}

/**
 * Writes `edited` over `file` atomically, unless the file no longer holds `original` (someone
 * edited it meanwhile). Returns why it was not written, or `undefined` when it was.
 */
async function writeIfUnchanged(
  file: string,
  original: string,
  edited: string,
  steps: string[],
): Promise<string | undefined> {
  let now: string;
  try {
    now = await readRegularTextFile(file, { maxBytes: MAX_REGISTRY_BYTES });
  } catch (error) {
    return `cannot read it again: ${messageOf(error)}`;
  }
  if (now !== original) return `${file} was changed by someone else meanwhile`;
  try {
    const mode = (await Deno.stat(file)).mode ?? 0o644;
    await writeFileAtomic(file, edited, { mode: mode & 0o7777 });
    steps.push(`write ${file} (atomically)`);
    return undefined;
  } catch (error) {
    return messageOf(error);
  }
}
