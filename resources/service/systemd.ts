/**
 * `service` on systemd: a unit's running state, and its boot state when `boot` is given.
 *
 * Observation is ONE call per apply for every service of the declaration:
 * `systemctl show --property=Id,LoadState,ActiveState,SubState,UnitFileState -- UNIT...`, kept
 * in the apply's cache and asked again (once, for all of them) only after a `daemon-reload` or
 * after this applier changed something, since starting or enabling one unit can change another.
 * `systemctl show` exits 0 for a unit that does not exist and prints `LoadState=not-found` with
 * `ActiveState=inactive`, exactly what a stopped unit prints beside `LoadState=loaded`; so what
 * it says decides, never its exit code, and a missing unit fails naming it: it is never
 * "stopped". Every `LoadState`, `ActiveState` and `UnitFileState` systemd 252 documents
 * (systemctl(1) "is-enabled" table; `systemctl --state=help`) is mapped explicitly below, and a
 * value no mapping knows fails the resource naming it.
 *
 * Outputs this is written against, recorded in the lab (Debian bookworm, systemd 252.39):
 *
 * ```
 * $ systemctl show --property=Id,LoadState,ActiveState,SubState,UnitFileState nosuch.service dbus.service
 * Id=nosuch.service
 * LoadState=not-found
 * ActiveState=inactive
 * SubState=dead
 * UnitFileState=
 *
 * Id=dbus.service
 * LoadState=loaded
 * ActiveState=active
 * SubState=running
 * UnitFileState=static
 * ```
 * (exit 0 for both; one block per argument, in argument order, separated by a blank line. An
 * alias is shown under the `Id` of the unit it names. A template without an instance,
 * `getty@.service`, makes the WHOLE call fail: "Failed to get properties: Unit name
 * getty@.service is neither a valid invocation ID nor unit name.", exit 1, so such a name is
 * refused before the call.)
 *
 * `systemctl enable` of a `static` unit prints "The unit files have no installation config
 * (WantedBy=, RequiredBy=, Also=, Alias= settings in the [Install] section, ...). This means they
 * are not meant to be enabled using systemctl." and EXITS 0, having enabled nothing. So a static
 * (or indirect, generated, transient) unit with `boot` declared fails before anything is run,
 * saying why, and every change is read back from `systemctl show` afterwards: an exit code is
 * never taken as the result.
 *
 * Boot state is made true before the unit is started or stopped: if the apply dies between the
 * two, enabled-and-stopped comes back at the next boot and running-and-disabled does not.
 *
 * The plan ({@linkcode SystemdPlan}) is judged from `systemctl show` before anything is done,
 * and a dry run stops there. `systemctl daemon-reload` is its first step when this apply wrote
 * (or, in a dry run, would write) a path under a unit directory ({@linkcode UNIT_DIRECTORIES})
 * not reloaded yet in this apply: a changed unit file is not what systemd runs until then, so
 * after the reload the unit is read and judged again and that judgement is executed.
 *
 * @module
 */

import type { z } from "zod";
import { basename } from "../../lib/path.ts";
import { CommandError, type CommandOutput, formatArgv, run } from "../../lib/command.ts";
import {
  type Applier,
  type ApplyContext,
  type Converged,
  type Plan,
  ResourceError,
} from "../../host/applier.ts";
import type { Service } from "./schema.ts";
import { aliasOnlyReason, readInstallSection } from "../../lib/unit_install.ts";
import { parseShow, SystemdFormatError } from "../../lib/systemd.ts";

/** A `service` resource. */
export type ServiceResource = z.output<typeof Service>;

/** The properties read for every unit, in one `systemctl show` call. */
export const SHOW_PROPERTIES = ["Id", "LoadState", "ActiveState", "SubState", "UnitFileState"];

/**
 * Also asked, read when printed: what pulls the unit in (an `enabled` unit that nothing wants,
 * requires or upholds starts nothing at boot: an `[Install]` with only `Alias=`), and where its
 * unit file and drop-ins are (to read what enabling it would link it into).
 */
export const PULL_PROPERTIES = [
  "WantedBy",
  "RequiredBy",
  "UpheldBy",
  "FragmentPath",
  "DropInPaths",
];

/**
 * Directories systemd loads system units from (systemd.unit(5), "System Unit Search Path"): a
 * path written under one of them by this apply makes the next service resource reload systemd.
 */
export const UNIT_DIRECTORIES = [
  "/etc/systemd/system.control",
  "/run/systemd/system.control",
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/usr/lib/systemd/system",
  "/lib/systemd/system",
];

/** How long a read (`systemctl show`) may take before it counts as not answering. */
export const SHOW_TIMEOUT_MS = 60_000;

/** Every command runs with untranslated messages and without colour or pager. */
const ENV = { LC_ALL: "C", SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "" };

/** What `systemctl show` said about one declared unit. */
export interface UnitState {
  /** The name as declared. */
  unit: string;
  /** `Id`: the unit's own name (`foo` is shown as `foo.service`; an alias as what it names). */
  id: string;
  load: string;
  active: string;
  sub: string;
  /** `UnitFileState`; empty when systemd has no unit file state for it. */
  unitFile: string;
  /** The units that want, require or uphold it (`WantedBy`, `RequiredBy`, `UpheldBy`). */
  pulledBy?: string[];
  /** `FragmentPath` and `DropInPaths`: its unit file and drop-ins. */
  fragmentPath?: string;
  dropInPaths?: string;
}

/** What the applier keeps in the apply's cache. */
interface Cache {
  /** The last `systemctl show` of every declared unit, by declared name; absent: ask again. */
  states?: Map<string, UnitState>;
  /** Unit-directory paths written in this apply that a `daemon-reload` has already covered. */
  reloaded: Set<string>;
}

const CACHE_KEY = "service:systemd";

function cacheOf(context: ApplyContext): Cache {
  let cache = context.cache.get(CACHE_KEY) as Cache | undefined;
  if (cache === undefined) {
    cache = { reloaded: new Set() };
    context.cache.set(CACHE_KEY, cache);
  }
  return cache;
}

/**
 * `LoadState` (systemctl --state=help, "Available unit load states"): what each means here.
 * `undefined` means the unit can be managed; a string is why it cannot.
 */
const LOAD_STATES: Record<string, ((s: UnitState) => string) | undefined> = {
  loaded: undefined,
  // masked units are loaded as masked: what that allows is decided by the unit file state.
  masked: undefined,
  "not-found": (s) =>
    `Unit "${s.unit}" does not exist: systemd has no unit file for it (systemctl show says ` +
    `LoadState=not-found for ${s.id}); a missing unit is never "stopped"`,
  "bad-setting": (s) =>
    `Unit "${s.unit}" has a setting systemd cannot use (LoadState=bad-setting): systemd refuses ` +
    `to start it; see "systemctl status ${s.id}"`,
  error: (s) =>
    `Unit "${s.unit}" failed to load (LoadState=error): its unit file cannot be read or parsed; ` +
    `see "systemctl status ${s.id}"`,
  stub: (s) => `Unit "${s.unit}" is not loaded yet (LoadState=stub): systemd could not load it`,
  merged: (s) =>
    `Unit "${s.unit}" was merged into another unit (LoadState=merged): declare the unit it is ` +
    `an alias of`,
};

/** `ActiveState` (systemctl --state=help, "Available unit active states"). */
type Running = "running" | "stopped" | "starting" | "stopping";
const ACTIVE_STATES: Record<string, Running> = {
  active: "running",
  reloading: "running",
  refreshing: "running",
  inactive: "stopped",
  // A failed unit is not running: declared stopped, that holds; declared running, it is started.
  failed: "stopped",
  activating: "starting",
  deactivating: "stopping",
};

/**
 * What a `UnitFileState` says about starting at boot (systemctl(1), "is-enabled" output table),
 * or why `boot` cannot be asserted for it at all.
 */
type BootState =
  | { boot: "enabled"; runtime: boolean }
  | { boot: "disabled"; masked: boolean }
  | { cannot: (s: UnitState) => string };

const noInstall = (what: string, s: UnitState) =>
  `Unit "${s.unit}" is ${what} (UnitFileState=${s.unitFile}): it has no [Install] section of its ` +
  `own, so it cannot be enabled or disabled, and it is not enabled: it starts only when another ` +
  `unit, socket, timer or path pulls it in. Declare it without "boot", or give it an ` +
  `[Install] section`;

const UNIT_FILE_STATES: Record<string, BootState> = {
  enabled: { boot: "enabled", runtime: false },
  // Enabled in /run only: gone at the next reboot, so not enabled as far as `boot` is concerned.
  "enabled-runtime": { boot: "enabled", runtime: true },
  disabled: { boot: "disabled", masked: false },
  // Made available through a symlink (`systemctl link`), not enabled.
  linked: { boot: "disabled", masked: false },
  "linked-runtime": { boot: "disabled", masked: false },
  // Masked: it cannot be started at all, at boot or otherwise.
  masked: { boot: "disabled", masked: true },
  "masked-runtime": { boot: "disabled", masked: true },
  static: { cannot: (s) => noInstall("static", s) },
  indirect: {
    cannot: (s) =>
      `Unit "${s.unit}" is indirect (UnitFileState=indirect): it is not enabled itself, and ` +
      `enabling it would enable the units its Also= names instead. Declare those units' boot ` +
      `state, or declare this one without "boot"`,
  },
  generated: {
    cannot: (s) =>
      `Unit "${s.unit}" is generated (UnitFileState=generated): a generator made it from other ` +
      `configuration (an /etc/fstab line, an init script...), it has no [Install] section of ` +
      `its own and its boot state is that configuration's. Declare it without "boot"`,
  },
  transient: {
    cannot: (s) =>
      `Unit "${s.unit}" is transient (UnitFileState=transient): it was created at runtime and ` +
      `does not exist at the next boot, so it has no boot state. Declare it without "boot"`,
  },
  alias: {
    cannot: (s) =>
      `Unit "${s.unit}" is an alias (UnitFileState=alias) of ${s.id}: its boot state is that ` +
      `unit's. Declare ${s.id} to assert it`,
  },
  bad: {
    cannot: (s) =>
      `Unit "${s.unit}" has a unit file systemd cannot read (UnitFileState=bad): its boot ` +
      `state cannot be known; see "systemctl status ${s.id}"`,
  },
};

/** A name systemd cannot show: a template without an instance (`getty@.service`, `foo@`). */
function templateWithoutInstance(unit: string): boolean {
  return /@(\.|$)/.test(unit);
}

/** Unit types (systemd.unit(5)); a name without one of them is a `.service` to systemctl. */
const UNIT_SUFFIXES =
  /\.(service|socket|device|mount|automount|swap|target|path|timer|slice|scope)$/;

/** `foo` as systemctl reads it: `foo.service`. */
export function unitName(unit: string): string {
  return UNIT_SUFFIXES.test(unit) ? unit : `${unit}.service`;
}

/**
 * The state of each of `units` from `systemctl show --property=...` output (`argv`, named in an
 * error): one block per unit, in order, read by the one `systemctl show` parser that mesh-reconcile
 * reads with too ({@linkcode parseShow} of lib/systemd.ts).
 *
 * @throws {ResourceError} when the output does not have one complete block per unit, or a line
 *   is not `KEY=VALUE`.
 */
export function unitStates(
  stdout: string,
  units: string[],
  argv: string[],
): Map<string, UnitState> {
  const fail = (why: string) =>
    new ResourceError(
      `Cannot read ${formatArgv(argv)}: ${why}; it printed ${JSON.stringify(clip(stdout))}`,
    );
  let blocks: Record<string, string>[];
  try {
    blocks = parseShow(stdout, units);
  } catch (error) {
    if (error instanceof SystemdFormatError) throw fail(error.message);
    throw error;
  }
  const states = new Map<string, UnitState>();
  blocks.forEach((props, i) => {
    const missing = SHOW_PROPERTIES.filter((p) => props[p] === undefined);
    if (missing.length > 0) throw fail(`block ${i + 1} lacks ${missing.join(", ")}`);
    const unit = units[i]!;
    const pulls = ["WantedBy", "RequiredBy", "UpheldBy"].filter((p) => props[p] !== undefined);
    states.set(unit, {
      unit,
      id: props.Id!,
      load: props.LoadState!,
      active: props.ActiveState!,
      sub: props.SubState!,
      unitFile: props.UnitFileState!,
      ...(pulls.length > 0
        ? { pulledBy: pulls.flatMap((p) => props[p]!.split(/\s+/).filter(Boolean)) }
        : {}),
      ...(props.FragmentPath !== undefined ? { fragmentPath: props.FragmentPath } : {}),
      ...(props.DropInPaths !== undefined ? { dropInPaths: props.DropInPaths } : {}),
    });
  });
  return states;
}

/** Asks systemd about every service unit of the declaration, in one call, and caches it. */
async function query(context: ApplyContext): Promise<Map<string, UnitState>> {
  const cache = cacheOf(context);
  const units = context.declaration.resources.flatMap((r) =>
    r.type === "service" && !templateWithoutInstance(r.unit) ? [r.unit] : []
  );
  const argv = [
    "systemctl",
    "show",
    "--no-pager",
    `--property=${[...SHOW_PROPERTIES, ...PULL_PROPERTIES].join(",")}`,
    "--",
    ...units,
  ];
  let out: CommandOutput;
  try {
    out = await run(argv, { env: ENV, timeoutMs: SHOW_TIMEOUT_MS });
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ResourceError(
        `systemd did not answer about the declared units: ${error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
  cache.states = unitStates(out.stdout, units, argv);
  return cache.states;
}

async function stateOf(unit: string, context: ApplyContext): Promise<UnitState> {
  if (templateWithoutInstance(unit)) {
    throw new ResourceError(
      `"${unit}" is a template unit without an instance: name an instance (such as ` +
        `"getty@tty1.service") to declare its state`,
    );
  }
  const states = cacheOf(context).states ?? await query(context);
  const state = states.get(unit);
  if (state === undefined) {
    throw new ResourceError(`Unit "${unit}" is not among the service units of the declaration`);
  }
  return state;
}

/** Unit-directory paths written in this apply and not yet reloaded. */
function unreloaded(context: ApplyContext): string[] {
  const reloaded = cacheOf(context).reloaded;
  return [...context.written].filter((p) =>
    !reloaded.has(p) && UNIT_DIRECTORIES.some((dir) => p.startsWith(`${dir}/`))
  );
}

function runningOf(s: UnitState): Running {
  const running = Object.hasOwn(ACTIVE_STATES, s.active) ? ACTIVE_STATES[s.active] : undefined;
  if (running === undefined) {
    throw new ResourceError(
      `Unit "${s.unit}" is in an active state this host does not know: ActiveState=${s.active} ` +
        `(SubState=${s.sub})`,
    );
  }
  return running;
}

function bootOf(s: UnitState): Exclude<BootState, { cannot: unknown }> {
  const known = Object.hasOwn(UNIT_FILE_STATES, s.unitFile)
    ? UNIT_FILE_STATES[s.unitFile]
    : undefined;
  if (known === undefined) {
    throw new ResourceError(
      s.unitFile === ""
        ? `Unit "${s.unit}" has no unit file state (systemctl show says UnitFileState= for ` +
          `${s.id}): systemd cannot say whether it starts at boot. Declare it without "boot"`
        : `Unit "${s.unit}" has a unit file state this host does not know: ` +
          `UnitFileState=${s.unitFile}`,
    );
  }
  if ("cannot" in known) throw new ResourceError(known.cannot(s));
  return known;
}

/** Fails when the unit cannot be managed at all (LoadState). */
function requireLoadable(s: UnitState): void {
  if (!Object.hasOwn(LOAD_STATES, s.load)) {
    throw new ResourceError(
      `Unit "${s.unit}" is in a load state this host does not know: LoadState=${s.load}`,
    );
  }
  const why = LOAD_STATES[s.load];
  if (why !== undefined) throw new ResourceError(why(s));
}

function isMasked(s: UnitState): boolean {
  return s.load === "masked" || s.unitFile === "masked" || s.unitFile === "masked-runtime";
}

/** One systemctl command that changes something; fails with what it said. */
async function systemctl(args: string[], unit: string): Promise<CommandOutput> {
  const argv = ["systemctl", "--no-ask-password", ...args, "--", unit];
  try {
    return await run(argv, { env: ENV });
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ResourceError(`Cannot ${args.join(" ")} "${unit}": ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** What has to be done to the boot state, or nothing. */
function bootAction(s: UnitState, want: "enabled" | "disabled" | undefined): string[] | undefined {
  if (want === undefined) return undefined; // absent: assert nothing, not even read it
  if (unitName(s.unit) !== s.id && !isMasked(s)) {
    // `systemctl enable ALIAS` is refused by systemd ("Refusing to operate on alias name").
    throw new ResourceError(
      `"${s.unit}" is another name of ${s.id} (an alias): its boot state is that unit's. ` +
        `Declare ${s.id} to assert it`,
    );
  }
  const boot = bootOf(s);
  if (want === "enabled") {
    if (boot.boot === "enabled" && !boot.runtime && s.pulledBy?.length === 0) {
      throw new ResourceError(notPulled(s));
    }
    if (boot.boot === "enabled") return boot.runtime ? ["enable"] : undefined;
    if (boot.masked) {
      throw new ResourceError(
        `Unit "${s.unit}" is masked (UnitFileState=${s.unitFile}), so it cannot be enabled; ` +
          `unmask it (systemctl unmask ${s.id}) to declare it enabled`,
      );
    }
    return ["enable"];
  }
  if (boot.boot === "disabled") return undefined;
  return boot.runtime ? ["disable", "--runtime"] : ["disable"];
}

/** An enabled unit that nothing pulls in: enabled in word only. */
function notPulled(s: UnitState): string {
  return `Unit "${s.unit}" is enabled (UnitFileState=${s.unitFile}) but nothing wants or ` +
    `requires it (systemctl show says WantedBy=, RequiredBy= and UpheldBy= are empty for ` +
    `${s.id}): its [Install] section names no target (only Alias=, say), so nothing starts it ` +
    `at boot. Give it WantedBy=multi-user.target (or the target that should start it)`;
}

/**
 * Before `systemctl enable`: would enabling link the unit into anything? An `[Install]` with
 * only `Alias=` makes `enable` exit 0 and start nothing at boot, so the resource fails first.
 */
async function assertEnablePulls(s: UnitState): Promise<void> {
  if (s.fragmentPath === undefined || s.fragmentPath === "") return; // nothing to read: read back
  let reason: string | undefined;
  try {
    reason = aliasOnlyReason(s.id, await readInstallSection(s.fragmentPath, s.dropInPaths ?? ""));
  } catch (error) {
    throw new ResourceError(
      `Cannot tell whether enabling "${s.unit}" starts it at boot: ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
  if (reason !== undefined) {
    throw new ResourceError(
      `Unit "${s.unit}" cannot be enabled for boot: ${reason}. Give it WantedBy=multi-user.target ` +
        `(or the target that should start it)`,
    );
  }
}

/** What has to be done to the running state, or nothing. */
function runAction(s: UnitState, want: "running" | "stopped"): string[] | undefined {
  const running = runningOf(s);
  if (want === "running") {
    if (isMasked(s)) {
      throw new ResourceError(
        `Unit "${s.unit}" is masked (LoadState=${s.load}, UnitFileState=${s.unitFile}), so it ` +
          `cannot be started: unmask it (systemctl unmask ${s.id}) to declare it running`,
      );
    }
    return running === "running" ? undefined : ["start"];
  }
  return running === "stopped" ? undefined : ["stop"];
}

/** Reads back what was done: systemd must now say what was declared. */
async function verify(resource: ServiceResource, context: ApplyContext): Promise<UnitState> {
  cacheOf(context).states = undefined;
  let s = await stateOf(resource.unit, context);
  if (resource.boot === "disabled" && s.unitFile === "enabled-runtime") {
    // Enabled both in /etc and in /run: `disable` removed the first, the second remains.
    await systemctl(["disable", "--runtime"], resource.unit);
    cacheOf(context).states = undefined;
    s = await stateOf(resource.unit, context);
  }
  const said = `systemctl show says LoadState=${s.load} ActiveState=${s.active} ` +
    `SubState=${s.sub} UnitFileState=${s.unitFile}`;
  if (resource.boot !== undefined) {
    const boot = UNIT_FILE_STATES[s.unitFile];
    const now = boot && "boot" in boot
      ? boot.boot === "enabled" && boot.runtime ? "enabled until reboot" : boot.boot
      : undefined;
    if (now !== resource.boot) {
      throw new ResourceError(
        `Unit "${resource.unit}" is declared boot ${resource.boot}, but after systemctl ran ` +
          `${said}`,
      );
    }
    if (resource.boot === "enabled" && s.pulledBy?.length === 0) {
      throw new ResourceError(notPulled(s));
    }
  }
  const running = Object.hasOwn(ACTIVE_STATES, s.active) ? ACTIVE_STATES[s.active] : undefined;
  if (running !== resource.state) {
    throw new ResourceError(
      resource.state === "running"
        ? `Unit "${resource.unit}" was started and systemctl exited 0, but it is not running: ` +
          `${said} (a unit that exits at once, such as a oneshot without RemainAfterExit=yes, ` +
          `cannot be held running)`
        : `Unit "${resource.unit}" was stopped, but it is not stopped: ${said}`,
    );
  }
  return s;
}

/**
 * What the systemd applier will do to one unit, decided from `systemctl show` (read-only), in
 * the order `act` takes the steps: reload the manager, then boot state, then running state.
 */
export interface SystemdPlan extends Plan {
  /**
   * Unit-directory paths this apply writes (or wrote) that systemd has not read: `systemctl
   * daemon-reload` first. systemd cannot say what a changed unit file means until it has read
   * it, so after the reload the unit is read and judged again, and what that judgement says is
   * done (the one step of a plan that is completed by the effect before it).
   */
  reload?: string[];
  /** `systemctl enable` / `disable` / `disable --runtime`, and why. */
  boot?: { args: string[]; why: string };
  /** `systemctl start` / `stop`, and why. */
  run?: { args: string[]; why: string };
}

/**
 * Judges a unit systemd has read: what has to be done to its boot and running states. Fails
 * when it cannot be converged (everything is judged before anything is done: a unit that cannot
 * be converged is not half-converged).
 */
async function judge(
  resource: ServiceResource,
  s: UnitState,
): Promise<Pick<SystemdPlan, "boot" | "run">> {
  requireLoadable(s);
  const boot = bootAction(s, resource.boot);
  if (boot?.[0] === "enable") await assertEnablePulls(s);
  const runs = runAction(s, resource.state);
  return {
    ...(boot !== undefined
      ? { boot: { args: boot, why: `boot ${s.unitFile} -> ${resource.boot}` } }
      : {}),
    ...(runs !== undefined
      ? { run: { args: runs, why: `state ${s.active} (${s.sub}) -> ${resource.state}` } }
      : {}),
  };
}

/** The steps of a plan, said in a few words. */
function stepsOf(plan: Pick<SystemdPlan, "reload" | "boot" | "run">): string[] {
  return [
    ...(plan.reload ? ["systemctl daemon-reload"] : []),
    ...(plan.boot ? [`systemctl ${plan.boot.args.join(" ")}`] : []),
    ...(plan.run ? [`systemctl ${plan.run.args.join(" ")}`] : []),
  ];
}

/** The `service` applier for machines systemd runs. */
export const systemdServiceApplier: Applier<ServiceResource, UnitState, SystemdPlan> = {
  observe(resource, context) {
    return stateOf(resource.unit, context);
  },

  async plan(resource, s, context): Promise<SystemdPlan> {
    const pending = unreloaded(context);
    // Bookkeeping, not an effect: the next service resource does not plan this reload again.
    for (const p of pending) cacheOf(context).reloaded.add(p);
    const reload = pending.length > 0 ? { reload: pending } : {};
    const reloadSaid = pending.length > 0
      ? [`systemctl daemon-reload (unit files changed: ${pending.join(", ")})`]
      : [];
    if (pending.length > 0) {
      // systemd has not read what this apply writes: the unit is judged again after the
      // reload. What it says now is told, when it can be judged at all (a unit whose file
      // this apply writes may not be loaded yet).
      if (s.load === "not-found" && !pending.some((p) => basename(p) === unitName(s.unit))) {
        requireLoadable(s); // missing, and nothing written here makes it: fails
      }
      let now = ["its unit file is new: judged once systemd has read it"];
      if (s.load !== "not-found") {
        try {
          const judged = await judge(resource, s);
          now = [judged.boot?.why, judged.run?.why].filter((w) => w !== undefined);
          if (now.length === 0) now = ["nothing else to change, as systemd reads it now"];
        } catch (error) {
          now = [`as systemd reads it now: ${error instanceof Error ? error.message : error}`];
        }
      }
      return {
        ...reload,
        steps: [...stepsOf(reload), "converge the unit as systemd reads it after the reload"],
        result: {
          change: "updated",
          created: false,
          detail: [...reloadSaid, `then converge ${s.unit} as systemd reads it`, ...now].join(
            "\n",
          ),
        },
      };
    }
    const plan = await judge(resource, s);
    const changed = plan.boot !== undefined || plan.run !== undefined;
    const detail = [
      ...(plan.boot ? [plan.boot.why] : []),
      ...(plan.run ? [plan.run.why] : []),
    ];
    return {
      ...plan,
      steps: stepsOf(plan),
      result: {
        change: changed ? "updated" : "unchanged",
        created: false,
        ...(detail.length > 0 ? { detail: detail.join("\n") } : {}),
      },
    };
  },

  async act(resource, plan, context): Promise<Converged> {
    const cache = cacheOf(context);
    let steps: Pick<SystemdPlan, "boot" | "run"> = plan;
    if (plan.reload !== undefined) {
      try {
        await run(["systemctl", "--no-ask-password", "daemon-reload"], { env: ENV });
      } catch (error) {
        throw new ResourceError(
          `Cannot reload systemd after unit files changed (${plan.reload.join(", ")}): ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      // What systemd reads now decides the rest (see SystemdPlan.reload).
      cache.states = undefined;
      steps = await judge(resource, await stateOf(resource.unit, context));
    }
    const { detail: _, ...result } = plan.result;
    if (steps.boot === undefined && steps.run === undefined) return result;

    // Boot state first (docs/design.md, "Declaration").
    if (steps.boot !== undefined) {
      cache.states = undefined; // this applier is changing something: ask again after
      const args = steps.boot.args;
      const out = await systemctl(args, resource.unit);
      const said = `${out.stdout}\n${out.stderr}`;
      if (/no installation config/i.test(said)) {
        throw new ResourceError(
          `systemctl ${args.join(" ")} ${resource.unit} exited 0 but enabled nothing: it says ` +
            `the unit has no installation config ([Install] section): ${clip(said.trim())}`,
        );
      }
    }
    if (steps.run !== undefined) {
      cache.states = undefined;
      await systemctl(steps.run.args, resource.unit);
    }
    await verify(resource, context);
    return { change: "updated", created: false };
  },
  // No planRemoval: leaving the declaration, it is forgotten. A service leaving the declaration is
  // left as it is; its unit file, if this host wrote it, is a file resource and is removed by the
  // file applier.
};

function clip(text: string): string {
  return text.length > 600 ? `${text.slice(0, 600)}...` : text;
}
