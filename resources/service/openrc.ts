/**
 * `service` on OpenRC: a service's running state, and its boot state when `boot` is given.
 *
 * OpenRC has no LoadState and no is-enabled, so the same questions are read from other evidence:
 *
 * - Running: `rc-service NAME status`, its words AND its exit code, which must agree
 *   (`_status` in /lib/rc/sh/openrc-run.sh, OpenRC 0.45.2: started 0, stopped 3, stopping 4,
 *   starting 8, inactive 16, crashed 32; `supervise_status` in /lib/rc/sh/supervise-daemon.sh
 *   adds unsupervised 64). A service that does not exist is said in prose on stderr with exit 1,
 *   and fails naming it: it is never "stopped".
 * - Boot: whether it is listed by `rc-update show default` (one call per apply, cached).
 *
 * Real outputs, recorded in the lab (Debian bookworm, OpenRC 0.45.2, not a tty, so no colour):
 *
 * ```
 * $ rc-service meshtest status        # stdout " * status: stopped", exit 3
 * $ rc-service meshtest status        # stdout " * status: started", exit 0
 * $ rc-service nosuch status          # stderr " * rc-service: service `nosuch' does not exist", exit 1
 * $ rc-service meshsup status         # stderr " * status: unsupervised", exit 64
 *                                     #   (supervise-daemon killed by hand, its child still running)
 * $ rc-service meshtest start         # stdout " * Starting meshtest ... [ ok ]", exit 0
 * $ rc-service meshtest start         # stderr " * WARNING: meshtest has already been started", EXIT 0
 * $ rc-service meshtest stop          # stderr " * WARNING: meshtest is already stopped", EXIT 0
 * $ rc-service meshtest zap           # stdout " * Manually resetting meshtest to stopped state", exit 0
 * $ rc-update show default            # stdout "             meshtest | default" per service, exit 0
 * $ rc-update add meshtest default    # stdout " * service meshtest added to runlevel default", exit 0
 *                                     #   again: " * rc-update: meshtest already installed in
 *                                     #   runlevel `default'; skipping", exit 0
 * $ rc-update del meshtest default    # stdout " * service meshtest removed from runlevel default", exit 0
 *                                     #   again: stderr " * rc-update: service `meshtest' is not in
 *                                     #   the runlevel `default'", exit 1
 * ```
 *
 * A trap found in the lab: Debian's OpenRC has no start-stop-daemon of its own; init scripts run
 * dpkg's, which does not register the daemon with OpenRC. So a daemon killed by hand is still
 * "status: started", exit 0 (never "crashed"), and `rc-service NAME stop` then fails ("No
 * /bin/sleep found running; none killed.", "ERROR: meshtest failed to stop", exit 1). OpenRC does
 * record the pidfile it started the daemon with (`service_set_value pidfile` in
 * /lib/rc/sh/start-stop-daemon.sh, kept in /run/openrc/options/NAME/pidfile); so a service said
 * to be started whose recorded pidfile names no living process is read as crashed, which is what
 * OpenRC's own start-stop-daemon would have said. A crashed service is reset with
 * `rc-service NAME zap` (its daemon is gone; only OpenRC's record says otherwise) and started.
 *
 * The plan ({@linkcode OpenrcPlan}) is judged from the status and the runlevel before anything is
 * done; a dry run stops there. Every change is read back (the status again, the words of rc-update): `start` of a service
 * OpenRC believes started exits 0 having started nothing.
 *
 * @module
 */

import type { z } from "zod";
import { join } from "../../lib/path.ts";
import { CommandError, type CommandOutput, formatArgv, run } from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import {
  type Applier,
  type ApplyContext,
  type Converged,
  type Plan,
  ResourceError,
} from "../../host/applier.ts";
import type { Service } from "./schema.ts";

/** A `service` resource. */
export type ServiceResource = z.output<typeof Service>;

/** OpenRC's state directory (`RC_SVCDIR`, fixed when librc is built). */
export const OPENRC_SVCDIR = "/run/openrc";
/** Where OpenRC keeps init scripts: a script written there in this apply is a service. */
export const INIT_DIR = "/etc/init.d";
/** The runlevel `boot: enabled` means. */
export const RUNLEVEL = "default";
/** How long a read (`status`, `rc-update show`) may take. */
export const READ_TIMEOUT_MS = 60_000;

const ENV = { LC_ALL: "C", EINFO_COLOR: "NO", RC_NOCOLOR: "YES" };

/** The words of `rc-service NAME status` and the exit code each comes with. */
const STATUS_CODES: Record<string, number> = {
  started: 0,
  stopped: 3,
  stopping: 4,
  starting: 8,
  inactive: 16,
  crashed: 32,
  unsupervised: 64,
};

/** A service's state as read. */
export type ServiceStatus =
  | { kind: "missing"; said: string }
  | {
    kind: "status";
    /** One of {@linkcode STATUS_CODES}'s words, after the pidfile check. */
    word: string;
    /** What rc-service said, for messages. */
    said: string;
    /** Why a "started" service is read as crashed (its recorded daemon is gone). */
    crashed?: string;
  };

/** What observe saw. */
export interface OpenrcObserved {
  status: ServiceStatus;
  /** Listed by `rc-update show default`. */
  enabled: boolean;
}

/** Removes terminal colour codes, in case einfo prints them anyway. */
function plain(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
}

/** A short account of a command's output, for messages. */
function said(out: CommandOutput): string {
  const text = plain(`${out.stdout}\n${out.stderr}`).split("\n").map((l) => l.trim())
    .filter((l) => l !== "").join(" / ");
  const clipped = text.length > 400 ? `${text.slice(0, 400)}...` : text;
  return `${formatArgv(out.argv)} said ${JSON.stringify(clipped)} and exited ${out.code}`;
}

/**
 * Reads `rc-service NAME status`: its words and its exit code.
 *
 * @throws {ResourceError} when they disagree or say something no mapping knows.
 */
export function parseStatus(name: string, out: CommandOutput): ServiceStatus {
  const text = plain(`${out.stdout}\n${out.stderr}`);
  const missing = new RegExp(`rc-service: service \`${escape(name)}' does not exist`);
  if (missing.test(text) && out.code !== 0) return { kind: "missing", said: said(out) };
  const m = /\bstatus: ([a-z]+)\b/.exec(text);
  const word = m?.[1];
  if (word !== undefined && Object.hasOwn(STATUS_CODES, word)) {
    if (STATUS_CODES[word] === out.code) return { kind: "status", word, said: said(out) };
    throw new ResourceError(
      `Cannot read the state of "${name}": it says "status: ${word}", which OpenRC reports ` +
        `with exit code ${STATUS_CODES[word]}, but ${said(out)}`,
    );
  }
  throw new ResourceError(`Cannot read the state of "${name}": ${said(out)}`);
}

/** Parses `rc-update show RUNLEVEL`: one `NAME | RUNLEVEL` line per service in it. */
export function parseRunlevel(out: CommandOutput, runlevel: string): Set<string> {
  const names = new Set<string>();
  for (const line of plain(out.stdout).split("\n")) {
    if (line.trim() === "") continue;
    const m = /^\s*(\S+)\s+\|\s*(.*)$/.exec(line);
    if (!m || !m[2]!.trim().split(/\s+/).includes(runlevel)) {
      throw new ResourceError(`Cannot read runlevel ${runlevel}: ${said(out)}`);
    }
    names.add(m[1]!);
  }
  return names;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Runs a read; a tool that cannot be run or is killed fails the resource naming it. */
async function read(argv: string[]): Promise<CommandOutput> {
  try {
    return await run(argv, { env: ENV, allowFailure: true, timeoutMs: READ_TIMEOUT_MS });
  } catch (error) {
    throw new ResourceError(`OpenRC did not answer: ${messageOf(error)}`, { cause: error });
  }
}

/**
 * Whether the daemon OpenRC recorded for a started service is gone: the pidfile it was started
 * with (chroot-relative when it ran chrooted) names no living process, or is missing.
 * Undefined when it is alive or nothing was recorded (a script without a pidfile).
 */
async function deadDaemon(name: string, svcdir: string): Promise<string | undefined> {
  const value = (key: string) =>
    Deno.readTextFile(join(svcdir, "options", name, key)).then((t) => t.trim(), () => "");
  const pidfile = await value("pidfile");
  if (pidfile === "") return undefined;
  const path = `${await value("chroot")}${pidfile}`;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return `OpenRC started it with pidfile ${path}, which no longer exists`;
    }
    throw new ResourceError(`Cannot read ${path}, the pidfile of "${name}": ${messageOf(error)}`);
  }
  const pid = /^\s*(\d+)\s*$/.exec(text)?.[1];
  if (pid === undefined) {
    return `its pidfile ${path} holds no process id (${JSON.stringify(text.slice(0, 40))})`;
  }
  return await processAlive(pid)
    ? undefined
    : `its pidfile ${path} names process ${pid}, which is not running`;
}

/**
 * Whether process `pid` (decimal) exists, asked with the shell's `kill -0` (the host runs as
 * root, so a process that exists is one it may signal). Not a stat of `/proc/PID`: Deno opens no
 * path under `/proc` to a program started without `--allow-all`, which the built host is not
 * (host/permissions.ts), and such a refusal must not read as "not running".
 *
 * @throws {ResourceError} when the shell cannot be run.
 */
async function processAlive(pid: string): Promise<boolean> {
  const out = await read(["sh", "-c", 'kill -0 "$1" 2>/dev/null', "sh", pid]);
  return out.code === 0;
}

async function statusOf(name: string, svcdir: string): Promise<ServiceStatus> {
  const status = parseStatus(name, await read(["rc-service", "--", name, "status"]));
  if (status.kind === "status" && status.word === "started") {
    const dead = await deadDaemon(name, svcdir);
    if (dead !== undefined) return { ...status, word: "crashed", crashed: dead };
  }
  return status;
}

const CACHE_KEY = "service:openrc";

/** `rc-update show default`, once per apply. */
async function runlevelOf(context: ApplyContext): Promise<Set<string>> {
  const cached = context.cache.get(CACHE_KEY) as Set<string> | undefined;
  if (cached !== undefined) return cached;
  const out = await read(["rc-update", "show", "--", RUNLEVEL]);
  if (out.code !== 0) throw new ResourceError(`Cannot read runlevel ${RUNLEVEL}: ${said(out)}`);
  const names = parseRunlevel(out, RUNLEVEL);
  context.cache.set(CACHE_KEY, names);
  return names;
}

/**
 * One command that changes something. It must exit 0 and, when `expect` is given, say so in
 * those words; whether it did what was asked is read back afterwards either way.
 */
async function change(argv: string[], expect?: RegExp): Promise<CommandOutput> {
  let out: CommandOutput;
  try {
    out = await run(argv, { env: ENV, allowFailure: true });
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ResourceError(`${formatArgv(argv)} failed: ${error.message}`, { cause: error });
    }
    throw error;
  }
  if (
    out.code !== 0 || (expect !== undefined && !expect.test(plain(`${out.stdout}\n${out.stderr}`)))
  ) {
    throw new ResourceError(`${formatArgv(argv)} did not do it: ${said(out)}`);
  }
  return out;
}

/** Options for {@linkcode openrcServiceApplierAt} (tests). */
export interface OpenrcOptions {
  /** OpenRC's state directory; default {@linkcode OPENRC_SVCDIR}. */
  svcdir?: string;
}

/**
 * What the OpenRC applier will do to one service, decided from its status and runlevel
 * (read-only), in the order `act` takes the steps: boot state, then running state.
 */
export interface OpenrcPlan extends Plan {
  /** `rc-update add` or `rc-update del` (runlevel {@linkcode RUNLEVEL}), and why. */
  boot?: { verb: "add" | "del"; why: string };
  /** `rc-service NAME zap`, `start`, `stop`, in order, and why. */
  run?: { verbs: ("zap" | "start" | "stop")[]; why: string };
}

/** The steps of an OpenRC plan, said in a few words. */
function stepsOf(name: string, plan: Pick<OpenrcPlan, "boot" | "run">): string[] {
  return [
    ...(plan.boot ? [`rc-update ${plan.boot.verb} ${name} ${RUNLEVEL}`] : []),
    ...(plan.run?.verbs ?? []).map((v) => `rc-service ${name} ${v}`),
  ];
}

/** The `service` applier for machines OpenRC runs, reading OpenRC's state from `svcdir`. */
export function openrcServiceApplierAt(
  options: OpenrcOptions = {},
): Applier<ServiceResource, OpenrcObserved, OpenrcPlan> {
  const svcdir = options.svcdir ?? OPENRC_SVCDIR;
  return {
    async observe(resource, context) {
      const status = await statusOf(resource.unit, svcdir);
      // Boot state is read only when it is declared: absent asserts nothing.
      const enabled = resource.boot !== undefined &&
        (await runlevelOf(context)).has(resource.unit);
      return { status, enabled };
    },

    plan(resource, observed, context): Promise<OpenrcPlan> {
      const name = resource.unit;
      if (
        observed.status.kind === "missing" && context.dryRun &&
        context.written.has(`${INIT_DIR}/${name}`)
      ) {
        // Its init script would be written earlier in this apply (in an apply it was, and is
        // observed): a service OpenRC has never run is stopped, which is what the apply will
        // observe, so it is planned from that (its runlevel as read).
        observed = {
          status: {
            kind: "status",
            word: "stopped",
            said: `${INIT_DIR}/${name} would be written: a new service is stopped`,
          },
          enabled: observed.enabled,
        };
      }
      const status = observed.status;
      if (status.kind === "missing") {
        throw new ResourceError(
          `Service "${name}" does not exist: OpenRC has no init script ${INIT_DIR}/${name} ` +
            `(${status.said}); a missing service is never "stopped"${
              /\.service$/.test(name)
                ? `. OpenRC names a service by its init script, without ".service"`
                : ""
            }`,
        );
      }
      const word = status.word;
      if (word === "unsupervised") {
        throw new ResourceError(
          `Service "${name}" is unsupervised: its supervise-daemon is gone and its daemon may ` +
            `still run (${status.said}); this host does not guess which process to stop. Stop ` +
            `the daemon by hand and "rc-service ${name} zap"`,
        );
      }
      if (word === "starting" || word === "stopping") {
        throw new ResourceError(
          `Service "${name}" is ${word}: another OpenRC command is acting on it (${status.said}); ` +
            `apply again when it has finished`,
        );
      }

      // Judge everything before doing anything.
      const verb = resource.boot === "enabled" && !observed.enabled
        ? "add" as const
        : resource.boot === "disabled" && observed.enabled
        ? "del" as const
        : undefined;
      const verbs: ("zap" | "start" | "stop")[] = [];
      if (resource.state === "running") {
        if (word === "crashed") verbs.push("zap", "start");
        else if (word !== "started") verbs.push("start"); // stopped, inactive
      } else {
        if (word === "crashed") verbs.push("zap"); // its daemon is gone: reset the record
        else if (word !== "stopped") verbs.push("stop"); // started, inactive
      }
      const plan = {
        ...(verb !== undefined
          ? {
            boot: {
              verb,
              why: `boot ${observed.enabled ? "enabled" : "disabled"} -> ${resource.boot}`,
            },
          }
          : {}),
        ...(verbs.length > 0
          ? {
            run: {
              verbs,
              why: `state ${word} -> ${resource.state} (rc-service ${name} ${verbs.join(", ")})`,
            },
          }
          : {}),
      };
      const detail = [plan.boot?.why, plan.run?.why].filter((w) => w !== undefined);
      return Promise.resolve({
        ...plan,
        steps: stepsOf(name, plan),
        result: {
          change: detail.length > 0 ? "updated" : "unchanged",
          created: false,
          ...(detail.length > 0 ? { detail: detail.join("\n") } : {}),
        },
      });
    },

    async act(resource, plan, context): Promise<Converged> {
      const name = resource.unit;
      const { detail: _, ...result } = plan.result;
      // Boot state first (docs/design.md, "Declaration").
      if (plan.boot !== undefined) {
        const names = await runlevelOf(context);
        if (plan.boot.verb === "add") {
          await change(
            ["rc-update", "add", "--", name, RUNLEVEL],
            new RegExp(
              `service ${escape(name)} added to runlevel ${RUNLEVEL}|` +
                `${escape(name)} already installed in runlevel \`${RUNLEVEL}'`,
            ),
          );
          names.add(name);
        } else {
          await change(
            ["rc-update", "del", "--", name, RUNLEVEL],
            new RegExp(`service ${escape(name)} removed from runlevel ${RUNLEVEL}`),
          );
          names.delete(name);
        }
      }
      for (const verb of plan.run?.verbs ?? []) {
        // `start` of a service OpenRC believes started says "WARNING: NAME has already been
        // started" and exits 0: what start and stop did is read back below, not from here.
        await change(
          ["rc-service", "--", name, verb],
          verb === "zap" ? new RegExp(`resetting ${escape(name)} to stopped state`) : undefined,
        );
      }

      // Read back: OpenRC must now say what was declared.
      if (plan.run !== undefined) {
        const now = await statusOf(name, svcdir);
        const want = resource.state === "running" ? "started" : "stopped";
        if (now.kind !== "status" || now.word !== want) {
          throw new ResourceError(
            `Service "${name}" should be ${want} now, but ${
              now.kind === "missing"
                ? `it no longer exists (${now.said})`
                : `it is ${now.word}${now.crashed ? ` (${now.crashed})` : ""} (${now.said})`
            }`,
          );
        }
      }
      return result;
    },
    // No planRemoval: leaving the declaration, it is forgotten. A service leaving the declaration
    // is left as it is; its init script, if this host wrote it, is a file resource and is removed
    // by the file applier.
  };
}

/** The `service` applier for machines OpenRC runs. */
export const openrcServiceApplier: Applier<ServiceResource, OpenrcObserved, OpenrcPlan> =
  openrcServiceApplierAt();
