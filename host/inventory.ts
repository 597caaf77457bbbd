/**
 * The node agent's inventory: what this machine can do, by capability.
 *
 * Every verdict comes from a probe that needs the thing to WORK (the init is asked its state,
 * the package database is queried, the container daemon is asked its version, the firewall is
 * asked to list its ruleset, which needs the privilege as well as the tool). Nothing is assumed
 * from a file on disk or from an exit code alone: each probe reads what the tool says and maps
 * every state it documents explicitly. A program that is not on `PATH` is absent, with that
 * reason. A probe that cannot reach a verdict (its command crashed, timed out, or printed
 * something no mapping knows) is a {@linkcode ProbeFailure}: a finding, never a silence.
 *
 * Formats read, and where each comes from:
 * - `systemctl is-system-running`: one word on stdout, one of the states in systemctl(1)
 *   "is-system-running output" (systemd 252); exit 0 only for `running`.
 * - `rc-status --runlevel`: the runlevel name on stdout, exit 0. Observed with OpenRC 0.45.2
 *   (Debian): it prints what `/run/openrc/softlevel` holds, and "sysinit" when that file is
 *   missing, which is also what it prints on a machine OpenRC did not boot. So the file is read
 *   too: it is OpenRC's own test of having booted (`openrc-run.sh` refuses to run a service
 *   without it, "You are attempting to run an openrc service on a system which openrc did not
 *   boot"). The directory alone proves nothing: a plain `rc-status` creates `/run/openrc`.
 * - `dpkg-query -W -f '${Status} ${Version}' dpkg`: "want error status version", the words of
 *   dpkg(1) "PACKAGE STATES" / "PACKAGE SELECTION STATES" / "PACKAGE FLAGS".
 * - `pacman -Q pacman`: "pacman VERSION", or "error: package 'pacman' was not found" and exit 1
 *   (pacman 6.0.2).
 * - `apk info -e apk-tools`: the name of each installed package given, nothing for one that is
 *   not (apk-info(8)); the exit code is 0 in older apk and the count of missing packages in
 *   newer ones, so only the output decides.
 * - `docker info --format '{{.ServerVersion}}'` and `podman info --format '{{.Version.Version}}'`:
 *   the version on stdout (each tool's own Go template field).
 * - `nft list tables`, `iptables -S`: the ruleset on stdout; the privilege error on stderr.
 *
 * Probes run with `LC_ALL=C`, because the messages mapped here are the untranslated ones.
 *
 * @module
 */

import { CommandError, type CommandOutput, formatArgv, run } from "../lib/command.ts";
import { messageOf } from "../lib/atomic.ts";

/** What a machine can do, by capability. */
export type Capability = "service-manager" | "package-manager" | "container-runtime" | "firewall";

/** One probe's verdict. */
export interface Verdict {
  capability: Capability;
  tool: "systemd" | "openrc" | "pacman" | "apk" | "dpkg" | "docker" | "podman" | "nft" | "iptables";
  present: boolean;
  /** Why: what the tool said (e.g. 'systemctl is-system-running says "degraded": systemd runs, some unit failed'). */
  reason: string;
  /** How: the argv run or the file read. */
  method: string;
  /** Version or state read, where the probe gives one (e.g. podman "4.3.1", systemd "degraded"). */
  detail?: string;
}

/** A probe that could not reach a verdict (its command crashed, timed out, printed something unmappable). A finding, not a silence. */
export interface ProbeFailure {
  capability: Capability;
  tool: Verdict["tool"];
  /** How: the argv run or the file read. */
  method: string;
  /** Why no verdict was reached, with what the tool said. */
  message: string;
}

/** Everything {@linkcode takeInventory} found: one entry per probe, in one list or the other. */
export interface Inventory {
  verdicts: Verdict[];
  failures: ProbeFailure[];
}

/** Options for {@linkcode takeInventory}. */
export interface InventoryOptions {
  /** Time limit per probe command, in milliseconds; default {@linkcode DEFAULT_PROBE_TIMEOUT_MS}. */
  timeoutMs?: number;
  /**
   * OpenRC's state directory; default {@linkcode OPENRC_STATE_DIR}. Only tests change it: the
   * `softlevel` file in it is what says OpenRC booted this machine.
   */
  openrcStateDir?: string;
}

/** The default time limit of each probe command, in milliseconds. */
export const DEFAULT_PROBE_TIMEOUT_MS = 10_000;

/** OpenRC's state directory (`RC_SVCDIR`, fixed at build time in librc). */
export const OPENRC_STATE_DIR = "/run/openrc";

/** The probes in the order they are listed, which is also the order of the text form. */
const TOOLS: readonly Verdict["tool"][] = [
  "systemd",
  "openrc",
  "dpkg",
  "pacman",
  "apk",
  "docker",
  "podman",
  "nft",
  "iptables",
];

/** What a probe concluded from a command's output. */
type Judgement =
  | { present: boolean; reason: string; detail?: string }
  | { failure: string };

/** Context a judge may need beyond the output. */
interface ProbeContext {
  openrcStateDir: string;
}

/** One probe: the command it runs and how its output is read. */
interface Probe {
  capability: Capability;
  tool: Verdict["tool"];
  argv: string[];
  /** What to report as the method, when more than the argv is read. */
  method?: (context: ProbeContext) => string;
  judge: (out: CommandOutput, context: ProbeContext) => Judgement | Promise<Judgement>;
}

/**
 * Runs every probe concurrently and returns their verdicts and failures. One failing probe
 * never stops the others, and this function does not reject because of a probe.
 *
 * @param options.timeoutMs time limit per probe command in milliseconds (default 10 000); a
 *   command still running then is killed and its probe is a {@linkcode ProbeFailure}.
 * @throws {RangeError} when `timeoutMs` is not a positive finite number.
 */
export async function takeInventory(options: InventoryOptions = {}): Promise<Inventory> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(
      `Probe timeout must be a positive number of milliseconds, got ${timeoutMs}`,
    );
  }
  const context: ProbeContext = { openrcStateDir: options.openrcStateDir ?? OPENRC_STATE_DIR };
  const outcomes = await Promise.all(PROBES.map((p) => runProbe(p, timeoutMs, context)));
  const inventory: Inventory = { verdicts: [], failures: [] };
  for (const outcome of outcomes) {
    if ("present" in outcome) inventory.verdicts.push(outcome);
    else inventory.failures.push(outcome);
  }
  return inventory;
}

/**
 * Renders an inventory for people: one line per verdict and per failure, in probe order, each
 * naming the capability, the tool, `present`, `absent` or `probe failed`, the version or state
 * where one was read, the reason, and the method in brackets. Every line ends with `\n` (an
 * empty inventory is `""`).
 */
export function formatInventory(inventory: Inventory): string {
  const rows: { tool: Verdict["tool"]; line: string }[] = [];
  for (const v of inventory.verdicts) {
    const what = v.detail !== undefined ? `${v.detail}: ${v.reason}` : v.reason;
    rows.push({ tool: v.tool, line: row(v, v.present ? "present" : "absent", what, v.method) });
  }
  for (const f of inventory.failures) {
    rows.push({ tool: f.tool, line: row(f, "probe failed", f.message, f.method) });
  }
  rows.sort((a, b) => TOOLS.indexOf(a.tool) - TOOLS.indexOf(b.tool));
  return rows.map((r) => `${r.line}\n`).join("");
}

function row(
  of: { capability: Capability; tool: Verdict["tool"] },
  word: string,
  text: string,
  method: string,
): string {
  return `${of.capability.padEnd(17)} ${of.tool.padEnd(8)} ${word.padEnd(12)} ${text} [${method}]`;
}

/** Environment of every probe: untranslated messages, since those are what is mapped. */
const PROBE_ENV = { LC_ALL: "C" };

async function runProbe(
  probe: Probe,
  timeoutMs: number,
  context: ProbeContext,
): Promise<Verdict | ProbeFailure> {
  const method = probe.method ? probe.method(context) : formatArgv(probe.argv);
  const fail = (message: string): ProbeFailure => ({
    capability: probe.capability,
    tool: probe.tool,
    method,
    message,
  });
  let out: CommandOutput;
  const started = performance.now();
  try {
    out = await run(probe.argv, { allowFailure: true, timeoutMs, env: PROBE_ENV });
  } catch (error) {
    if (error instanceof CommandError && error.cause instanceof Deno.errors.NotFound) {
      return {
        capability: probe.capability,
        tool: probe.tool,
        present: false,
        reason: `${probe.argv[0]} is not on PATH`,
        method,
      };
    }
    if (error instanceof CommandError && error.signal !== null) {
      const elapsed = performance.now() - started;
      return fail(
        elapsed >= timeoutMs
          ? `${formatArgv(probe.argv)} did not finish within ${timeoutMs} ms and was killed`
          : `${formatArgv(probe.argv)} was killed by ${error.signal}${
            error.stderrTail ? `: ${error.stderrTail}` : ""
          }`,
      );
    }
    return fail(messageOf(error));
  }
  let judgement: Judgement;
  try {
    judgement = await probe.judge(out, context);
  } catch (error) {
    return fail(messageOf(error));
  }
  if ("failure" in judgement) return fail(judgement.failure);
  const verdict: Verdict = {
    capability: probe.capability,
    tool: probe.tool,
    present: judgement.present,
    reason: judgement.reason,
    method,
  };
  if (judgement.detail !== undefined) verdict.detail = judgement.detail;
  return verdict;
}

/** A short account of what a command printed and how it exited, for a failure message. */
function said(out: CommandOutput): string {
  const clip = (s: string) => {
    const t = s.trim();
    return JSON.stringify(t.length > 300 ? `${t.slice(0, 300)}...` : t);
  };
  return `${formatArgv(out.argv)} exited ${out.code} with stdout ${clip(out.stdout)} and stderr ${
    clip(out.stderr)
  }`;
}

/** The first non-empty line of `text`, trimmed. */
function firstLine(text: string): string {
  return text.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "";
}

// --- systemd -------------------------------------------------------------------------------

/**
 * Every state systemctl(1) lists under "is-system-running output", with its meaning there.
 * `null` presence means the state is no verdict at all (`unknown`: the state could not be read).
 */
const SYSTEMD_STATES: Record<string, { present: boolean | null; meaning: string }> = {
  initializing: { present: true, meaning: "systemd is in early boot, before basic.target" },
  starting: { present: true, meaning: "systemd is in late boot, its job queue not yet idle" },
  running: { present: true, meaning: "systemd runs and the system is fully operational" },
  degraded: { present: true, meaning: "systemd runs, one or more units failed" },
  maintenance: { present: true, meaning: "systemd runs the rescue or emergency target" },
  stopping: { present: true, meaning: "systemd runs and is shutting down" },
  offline: {
    present: false,
    meaning: "the systemd manager is not running (another program is PID 1)",
  },
  unknown: { present: null, meaning: "systemctl could not determine the operational state" },
};

/** What systemctl prints on stderr when systemd is not PID 1 (systemd 252, `acquire_bus`). */
const SYSTEMD_NOT_BOOTED = [
  "System has not been booted with systemd",
  "Failed to connect to bus",
];

function judgeSystemd(out: CommandOutput): Judgement {
  const state = out.stdout.trim();
  const known = Object.hasOwn(SYSTEMD_STATES, state) ? SYSTEMD_STATES[state] : undefined;
  if (known !== undefined) {
    if (known.present === null) {
      return { failure: `systemctl is-system-running says "${state}": ${known.meaning}` };
    }
    return {
      present: known.present,
      reason: `systemctl is-system-running says "${state}": ${known.meaning}`,
      detail: state,
    };
  }
  if (state === "") {
    const line = out.stderr.split("\n").map((l) => l.trim()).find((l) =>
      SYSTEMD_NOT_BOOTED.some((m) => l.includes(m))
    );
    if (line !== undefined) {
      return {
        present: false,
        reason: `systemctl is-system-running says "${line}": systemd is not this machine's init`,
      };
    }
  }
  return { failure: `Cannot read the system state: ${said(out)}` };
}

// --- OpenRC --------------------------------------------------------------------------------

/** What OpenRC's service runner prints on a machine OpenRC did not boot (`openrc-run.sh`). */
const OPENRC_NOT_BOOTED = "which openrc did not boot";

async function judgeOpenrc(out: CommandOutput, context: ProbeContext): Promise<Judgement> {
  const text = `${out.stderr}\n${out.stdout}`.split("\n")
    .map((l) => l.replace(/^\s*\*?\s*/, "").trim()).filter((l) => l !== "").join(" ");
  const at = text.indexOf(OPENRC_NOT_BOOTED);
  if (at >= 0) {
    return {
      present: false,
      reason: `rc-status says "${
        text.slice(0, at + OPENRC_NOT_BOOTED.length)
      }": OpenRC did not boot this machine`,
    };
  }
  const runlevel = out.stdout.trim();
  if (out.code !== 0 || !/^[A-Za-z0-9._-]+$/.test(runlevel)) {
    return { failure: `Cannot read the OpenRC runlevel: ${said(out)}` };
  }
  // rc-status prints "sysinit" when the softlevel file is missing, and exits 0: on a machine
  // OpenRC did not boot it looks exactly like one in early boot. The file is what OpenRC itself
  // tests (openrc-run.sh refuses to run a service without it).
  const softlevel = `${context.openrcStateDir}/softlevel`;
  try {
    await Deno.stat(softlevel);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return {
        present: false,
        reason: `rc-status --runlevel says "${runlevel}", but ${softlevel} does not exist: ` +
          `OpenRC did not boot this machine (rc-status falls back to "sysinit" without it)`,
      };
    }
    return { failure: `Cannot read ${softlevel}: ${messageOf(error)}` };
  }
  return {
    present: true,
    reason: `rc-status --runlevel says "${runlevel}" and ${softlevel} exists: ` +
      `OpenRC booted this machine`,
    detail: runlevel,
  };
}

// --- dpkg ----------------------------------------------------------------------------------

/** dpkg(1) "PACKAGE SELECTION STATES". */
const DPKG_WANTS = new Set(["unknown", "install", "hold", "deinstall", "purge"]);
/** dpkg(1) "PACKAGE FLAGS" (`ok`, or `reinstreq`: broken, needs reinstalling). */
const DPKG_FLAGS = new Set(["ok", "reinstreq"]);
/** dpkg(1) "PACKAGE STATES". */
const DPKG_STATES = new Set([
  "not-installed",
  "config-files",
  "half-installed",
  "unpacked",
  "half-configured",
  "triggers-awaited",
  "triggers-pending",
  "installed",
]);

function judgeDpkg(out: CommandOutput): Judgement {
  if (out.code === 0) {
    const m = /^(\S+) (\S+) (\S+) ?(\S*)$/.exec(out.stdout.trim());
    if (m && DPKG_WANTS.has(m[1]!) && DPKG_FLAGS.has(m[2]!) && DPKG_STATES.has(m[3]!)) {
      const status = `${m[1]} ${m[2]} ${m[3]}`;
      if (m[2] === "ok" && m[3] === "installed") {
        return {
          present: true,
          reason: `dpkg-query says dpkg is "${status}": the package database answers`,
          detail: m[4]!,
        };
      }
      return {
        present: false,
        reason: `dpkg-query says dpkg is "${status}": dpkg itself is not installed and intact`,
      };
    }
  } else if (out.code === 1 && out.stderr.includes("no packages found matching dpkg")) {
    return {
      present: false,
      reason: `dpkg-query says "${firstLine(out.stderr)}": the database does not know dpkg itself`,
    };
  }
  return { failure: `Cannot read dpkg's status: ${said(out)}` };
}

// --- pacman --------------------------------------------------------------------------------

function judgePacman(out: CommandOutput): Judgement {
  const m = /^pacman (\S+)$/.exec(out.stdout.trim());
  if (out.code === 0 && m) {
    return {
      present: true,
      reason: `pacman -Q says "${m[0]}": the package database answers`,
      detail: m[1]!,
    };
  }
  if (out.code !== 0 && out.stderr.includes("error: package 'pacman' was not found")) {
    return {
      present: false,
      reason: `pacman -Q says "${
        firstLine(out.stderr)
      }": the package database does not know pacman itself`,
    };
  }
  return { failure: `Cannot read pacman's database: ${said(out)}` };
}

// --- apk -----------------------------------------------------------------------------------

function judgeApk(out: CommandOutput): Judgement {
  const printed = out.stdout.trim();
  if (printed === "apk-tools" && out.code === 0) {
    return {
      present: true,
      reason: 'apk info -e says "apk-tools": the package database has apk-tools installed',
    };
  }
  // Absence is EMPTY OUTPUT: exit 0 in older apk, exit 1 (one package missing) in apk-info(8).
  if (printed === "" && out.stderr.trim() === "" && (out.code === 0 || out.code === 1)) {
    return {
      present: false,
      reason: `apk info -e printed nothing (exit ${out.code}): ` +
        `the database does not have apk-tools installed`,
    };
  }
  return { failure: `Cannot read apk's database: ${said(out)}` };
}

// --- container runtimes --------------------------------------------------------------------

const VERSION = /^\d+\.\d+\S*$/;

function judgeDocker(out: CommandOutput): Judgement {
  if (out.stderr.includes("Cannot connect to the Docker daemon")) {
    return {
      present: false,
      reason: `docker says "${
        firstLine(out.stderr)
      }": the docker CLI is installed but no daemon answers`,
    };
  }
  const version = out.stdout.trim();
  if (out.code === 0 && VERSION.test(version)) {
    return {
      present: true,
      reason: `the docker daemon answers, version ${version}`,
      detail: version,
    };
  }
  return { failure: `Cannot ask the docker daemon: ${said(out)}` };
}

function judgePodman(out: CommandOutput): Judgement {
  // podman-remote (or CONTAINER_HOST set) without a service to answer it.
  if (out.stderr.includes("Cannot connect to Podman")) {
    return {
      present: false,
      reason: `podman says "${firstLine(out.stderr)}": no podman service answers`,
    };
  }
  const version = out.stdout.trim();
  if (out.code === 0 && VERSION.test(version)) {
    return { present: true, reason: `podman info answers, version ${version}`, detail: version };
  }
  return { failure: `Cannot ask podman: ${said(out)}` };
}

// --- firewalls -----------------------------------------------------------------------------

function judgeNft(out: CommandOutput): Judgement {
  if (out.code === 0) {
    const tables = out.stdout.split("\n").filter((l) => l.startsWith("table ")).length;
    return {
      present: true,
      reason: `nft list tables answered (${tables} table${tables === 1 ? "" : "s"})`,
    };
  }
  if (out.stderr.includes("Operation not permitted")) {
    return {
      present: false,
      reason: `nft says "${firstLine(out.stderr)}": no privilege (CAP_NET_ADMIN) to use it`,
    };
  }
  return { failure: `Cannot list nftables tables: ${said(out)}` };
}

function judgeIptables(out: CommandOutput): Judgement {
  if (out.code === 0) {
    const rules = out.stdout.split("\n").filter((l) => l.startsWith("-")).length;
    return {
      present: true,
      reason: `iptables -S answered (${rules} policy and rule line${rules === 1 ? "" : "s"})`,
    };
  }
  if (out.stderr.includes("Permission denied (you must be root)")) {
    return {
      present: false,
      reason: `iptables says "${firstLine(out.stderr)}": no privilege to use it`,
    };
  }
  return { failure: `Cannot list iptables rules: ${said(out)}` };
}

/** Every probe, in {@linkcode TOOLS} order. */
const PROBES: readonly Probe[] = [
  {
    capability: "service-manager",
    tool: "systemd",
    argv: ["systemctl", "is-system-running"],
    judge: judgeSystemd,
  },
  {
    capability: "service-manager",
    tool: "openrc",
    argv: ["rc-status", "--runlevel"],
    method: (c) => `rc-status --runlevel; stat ${c.openrcStateDir}/softlevel`,
    judge: judgeOpenrc,
  },
  {
    capability: "package-manager",
    tool: "dpkg",
    argv: ["dpkg-query", "-W", "-f", "${Status} ${Version}", "dpkg"],
    judge: judgeDpkg,
  },
  {
    capability: "package-manager",
    tool: "pacman",
    argv: ["pacman", "-Q", "pacman"],
    judge: judgePacman,
  },
  {
    capability: "package-manager",
    tool: "apk",
    argv: ["apk", "info", "-e", "apk-tools"],
    judge: judgeApk,
  },
  {
    capability: "container-runtime",
    tool: "docker",
    argv: ["docker", "info", "--format", "{{.ServerVersion}}"],
    judge: judgeDocker,
  },
  {
    capability: "container-runtime",
    tool: "podman",
    argv: ["podman", "info", "--format", "{{.Version.Version}}"],
    judge: judgePodman,
  },
  { capability: "firewall", tool: "nft", argv: ["nft", "list", "tables"], judge: judgeNft },
  { capability: "firewall", tool: "iptables", argv: ["iptables", "-S"], judge: judgeIptables },
];
