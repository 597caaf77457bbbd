/**
 * What `mesh-reconcile`'s command table (reconcile/main.ts) declares of its commands' arguments
 * and options, kept apart from the commands so that the table can parse a plain invocation and
 * answer a command's help without loading the command's module (the registry parser, the
 * observers, zod, commander): the flags, their help, their defaults, and the refusal their
 * values raise. It must stay cheap to load: no npm package, no `node:` module.
 *
 * @module
 */

import type { ArgumentSpec, CommandSpec, OptionSpec } from "../lib/cli_table.ts";
import { messageOf } from "../lib/atomic.ts";
import { type DurationUnit, parseDuration } from "../lib/duration.ts";

/** Bad input, refused before anything is written (exit 2). */
export class UsageError extends Error {}

/**
 * The value of `--caddy-admin` that says this machine runs no reverse proxy.
 *
 * @example Observing a machine without Caddy
 * ```ts
 * import { NO_PROXY, observe } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(NO_PROXY, "none");
 *
 * // Observes this machine: type-checked, not run here. The proxy is not asked; its source is
 * // `absent` ("this machine runs no reverse proxy"), and no address is a finding.
 * async function withoutProxy() {
 *   const observation = await observe(["root"], { caddyAdmin: NO_PROXY });
 *   return observation.sources.find((s) => s.source === "caddy");
 * }
 * ```
 */
export const NO_PROXY = "none";

/**
 * The values of `--boot`: `systemd` (the default) reads what a reboot would produce from systemd;
 * `none` does not look at it at all, and says so as an `absent` source named `boot`.
 *
 * @example A `--boot` value checked before a run
 * ```ts
 * import { BOOT_VIEWS, type BootView } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * function bootView(flag: string): BootView {
 *   const view = BOOT_VIEWS.find((v) => v === flag);
 *   if (view === undefined) {
 *     throw new Error(`Unknown boot view "${flag}": one of ${BOOT_VIEWS.join(", ")}`);
 *   }
 *   return view;
 * }
 * assert.equal(bootView("none"), "none");
 * assert.throws(() => bootView("openrc"), /one of systemd, none/);
 * ```
 */
export const BOOT_VIEWS = ["systemd", "none"] as const;
/** How what a reboot would produce is read (`--boot`). */
export type BootView = (typeof BOOT_VIEWS)[number];

/** The flag that accepts a registry inside a git work tree or `--repo`. */
export const IN_CHECKOUT_FLAG = "--registry-in-checkout";

/** The help of `--registry-in-checkout`. */
export const IN_CHECKOUT_HELP =
  "accept a registry inside a git work tree or --repo (refused otherwise: a deployment can overwrite it)";

/** A parser of a duration option (ms), bare numbers in `unit`; refused as a UsageError. */
export function durationOption(flag: string, unit: DurationUnit = "s"): (value: string) => number {
  return (value: string) => {
    try {
      return parseDuration(value, { unit });
    } catch (error) {
      throw new UsageError(`${flag}: ${messageOf(error)}`);
    }
  };
}

/** A `--timeout` (ms) between 1 ms and 24 days (what a timer can wait), default `ms`. */
function timeoutOption(description: string, ms: number, shown: string) {
  return {
    flags: "--timeout <duration>",
    description,
    default: ms,
    defaultDescription: shown,
    parse: (v) => {
      const ms = durationOption("--timeout")(v);
      if (!(ms >= 1 && ms <= 2_147_483_647)) {
        throw new UsageError(`--timeout: must be between 1ms and 24d, not "${v}"`);
      }
      return ms;
    },
  } as const satisfies OptionSpec;
}

/** `--registry-in-checkout`. */
const IN_CHECKOUT_OPTION = {
  flags: IN_CHECKOUT_FLAG,
  description: IN_CHECKOUT_HELP,
} as const satisfies OptionSpec;

/** `run`'s options, in the order help lists them. */
export const RUN_OPTIONS = [
  { flags: "--registry <file>", description: "the registry (YAML, version 1)", mandatory: true },
  { flags: "--json", description: "print the result as JSON" },
  { flags: "--stamp <path>", description: "file refreshed (atomically) only after a clean run" },
  {
    flags: "--textfile <path>",
    description: "node_exporter textfile written (atomically) after each run",
  },
  {
    flags: "--result <path>",
    description:
      "JSON result written (atomically) after each run, for the node's link (needs --interval)",
  },
  {
    flags: "--interval <duration>",
    description:
      "how often this run is repeated by its timer or mesh-every (e.g. 15m); goes in --result",
    parse: (v) => {
      const ms = durationOption("--interval")(v);
      if (!(ms >= 1000 && ms <= 366 * 86_400_000) || ms % 1000 !== 0) {
        throw new UsageError(`--interval: whole seconds between 1s and 366d, not "${v}"`);
      }
      return ms / 1000;
    },
  },
  {
    flags: "--caddy-admin <addr>",
    description: `Caddy admin API address, or "${NO_PROXY}" when this machine runs no proxy`,
    default: "localhost:2019",
  },
  {
    flags: "--boot <view>",
    description:
      "what a reboot would produce: read from systemd, or none (not checked, e.g. under OpenRC)",
    default: "systemd",
    parse: (v): BootView => {
      if (!(BOOT_VIEWS as readonly string[]).includes(v)) {
        throw new UsageError(`--boot: one of ${BOOT_VIEWS.join(", ")}, not "${v}"`);
      }
      return v as BootView;
    },
  },
  {
    flags: "--cert-warn <duration>",
    description: "a certificate expiring within this is a finding (e.g. 14d, 36h)",
    default: 14 * 86_400_000,
    defaultDescription: "14d",
    parse: (v) => durationOption("--cert-warn", "d")(v),
  },
  timeoutOption("time limit for each command and request", 30_000, "30s"),
  {
    flags: "--repo <dir>",
    description: "also check the deployment repository (the checkout's top)",
  },
  {
    flags: "--behind-days <days>",
    description: "with --repo: commits waiting longer on the upstream are a finding (default 7)",
  },
  {
    flags: "--state-dir <dir>",
    description:
      "with --repo: keep first sightings of upstream commits here (default: the registry's)",
  },
  IN_CHECKOUT_OPTION,
] as const satisfies readonly OptionSpec[];

/** `check-registry`'s argument. */
export const CHECK_REGISTRY_ARGUMENTS = [
  { name: "<file>", description: "the registry" },
] as const satisfies readonly ArgumentSpec[];

/** `init`'s options. */
export const INIT_OPTIONS = [
  {
    flags: "--output <file>",
    description: "write here (refused if it exists, unless --force) instead of printing",
  },
  { flags: "--force", description: "replace an existing --output file" },
  {
    flags: "--accounts <names>",
    description: "comma-separated accounts whose containers are asked about",
    default: "root",
  },
  {
    flags: "--caddy-admin <addr>",
    description: `Caddy admin API address, or "${NO_PROXY}"`,
    default: "localhost:2019",
  },
  IN_CHECKOUT_OPTION,
] as const satisfies readonly OptionSpec[];

/** `watch`'s argument. */
export const WATCH_ARGUMENTS = [
  { name: "<source>", description: "a stamp file, or the http(s) URL of a `stamp serve`" },
] as const satisfies readonly ArgumentSpec[];

/** A stamp age option of `watch` (ms): with a unit, at least `least` ms. */
function stampAge(flag: string, least: number): (value: string) => number {
  return (value) => {
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) {
      throw new UsageError(`${flag}: name a unit (e.g. 45m, 2h), not "${value}"`);
    }
    const ms = durationOption(flag)(value);
    if (!(ms >= least && ms <= 2_147_483_647_000)) {
      throw new UsageError(`${flag}: must be at least ${least}ms, not "${value}"`);
    }
    return ms;
  };
}

/** `watch`'s options. */
export const WATCH_OPTIONS = [
  {
    flags: "--max-age <duration>",
    description: "a stamp older than this is late (e.g. 45m)",
    mandatory: true,
    parse: stampAge("--max-age", 1),
  },
  {
    flags: "--grace <duration>",
    description: "late for this long past max-age, then down",
    default: 0,
    defaultDescription: "0s: no late, past max-age is down",
    parse: stampAge("--grace", 0),
  },
  {
    flags: "--state <file>",
    description: "keep the last state here (JSON, atomic); needed for --notify",
  },
  {
    flags: "--notify <url>",
    description: "POST JSON here once on each transition (and on recovery)",
  },
  {
    flags: "--stamp <path>",
    description:
      "this watcher's own stamp, refreshed after each completed run (it can be watched too)",
  },
  {
    flags: "--ca <path>",
    description:
      "the mesh CA certificate an https:// source is verified against (default: $MESH_CA_FILE, " +
      "then /etc/mesh/ca.crt when it exists, else the system's trusted roots)",
  },
  {
    flags: "--allow-plain-http",
    description:
      "allow an http:// source that is not loopback (its answer can be forged on the way)",
  },
  timeoutOption("time limit for the request and each notification", 10_000, "10s"),
  { flags: "--json", description: "print the result as JSON" },
] as const satisfies readonly OptionSpec[];

/** What `watch`'s help says after its options. */
export const WATCH_HELP_AFTER =
  "\nA file's age is measured by this machine's clock; a URL's age is the server's.";

/** `--registry <file>`, required. */
const REGISTRY_OPTION = {
  flags: "--registry <file>",
  description: "the registry (YAML, version 1)",
  mandatory: true,
} as const satisfies OptionSpec;

/** `--json`: the result as JSON. */
const JSON_OPTION = { flags: "--json", description: "print the result as JSON" } as const;

/** `stamp`'s subcommands. */
export const STAMP_COMMANDS = [
  {
    name: "serve",
    summary:
      "serve the stamp read-only over HTTP(S) (GET / or /stamp), its age measured on this machine",
    options: [
      {
        flags: "--listen <addr>",
        description:
          "HOST:PORT or [IPv6]:PORT to listen on (an address is required, never defaulted)",
        mandatory: true,
      },
      {
        flags: "--stamp <path>",
        description: "the stamp",
        default: "/var/lib/mesh/reconcile/stamp",
      },
      {
        flags: "--cert <path>",
        description: "serve HTTPS with this certificate (PEM, issued by the mesh CA)",
      },
      { flags: "--key <path>", description: "the certificate's private key (PEM, mode 0600)" },
      {
        flags: "--allow-plain-http",
        description:
          "allow plain HTTP on an address that is not loopback (its answer can be forged on the way)",
      },
    ],
    helpAfter: '\nAnswers (JSON): 200 {"state":"stamped","stamp","stampedAt","ageSeconds",' +
      '"servedAt"},\n200 {"state":"never"} when no stamp was written, 500 {"state":"error",' +
      '"problem","reason"}\nwhen it cannot be read or holds garbage. Only GET and HEAD. Runs ' +
      "until SIGTERM or SIGINT.\nWithout --cert and --key it listens on a loopback address only " +
      "(behind the edge),\nunless --allow-plain-http.",
  },
] as const satisfies readonly CommandSpec[];

/** `render`'s subcommands. */
export const RENDER_COMMANDS = [
  {
    name: "caddy",
    summary: "print a Caddyfile with a site block for every declared web address",
    options: [REGISTRY_OPTION],
    helpAfter: "\nA redirect renders redir to its target, a port reverse_proxy to " +
      "127.0.0.1:<first port>,\na site's state directory file_server from it.",
  },
  {
    name: "backup",
    summary: "list the state directories and databases the registry declares, to back up",
    options: [
      REGISTRY_OPTION,
      { flags: "--json", description: "print the list as JSON" },
      {
        flags: "--files-from",
        description: "print only the state directories, one a line, for restic backup --files-from",
      },
    ],
  },
] as const satisfies readonly CommandSpec[];

/** `port`'s subcommands. */
export const PORT_COMMANDS = [
  {
    name: "next",
    summary: "print the lowest port in the range no entry claims and nothing listens on",
    options: [
      REGISTRY_OPTION,
      {
        flags: "--range <A-B>",
        description: "ports to search, inclusive",
        default: "8000-8999",
      },
    ],
    helpAfter: "\nIn use: a listening TCP socket (IPv4 or IPv6) or a port a container of the " +
      "registry's\naccounts publishes.",
  },
] as const satisfies readonly CommandSpec[];

/** The entry a `batch` subcommand acts on. */
const BATCH_NAME = { name: "<name>", description: "the entry's name" };

/** `batch`'s subcommands. */
export const BATCH_COMMANDS = [
  {
    name: "enable",
    summary: "systemctl enable --now the timer, then add a batch entry for it",
    arguments: [BATCH_NAME],
    options: [
      {
        flags: "--timer <unit>",
        description: "the timer unit, e.g. publish.timer",
        mandatory: true,
      },
      {
        flags: "--container <name>",
        description: "the container the job starts while it runs",
      },
      {
        flags: "--user <account>",
        description: "the account whose user manager runs it (default: root, system)",
      },
      REGISTRY_OPTION,
      JSON_OPTION,
      IN_CHECKOUT_OPTION,
    ],
  },
  {
    name: "disable",
    summary: "systemctl disable --now the entry's timer, then remove the entry",
    arguments: [BATCH_NAME],
    options: [REGISTRY_OPTION, JSON_OPTION, IN_CHECKOUT_OPTION],
  },
] as const satisfies readonly CommandSpec[];
