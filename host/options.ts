/**
 * What `mesh-host`'s command table declares of its commands' options, kept apart from the
 * commands so that the table (host/cli.ts) can parse a plain invocation and answer a command's
 * help without loading the command's module: the default directories, the options several
 * commands share, and the refusal their values raise.
 *
 * @module
 */

import type { OptionSpec } from "../lib/cli_table.ts";
import { messageOf } from "../lib/atomic.ts";
import { parseDuration } from "../lib/duration.ts";
import { collectBrokerUrls } from "../lib/broker_urls.ts";
import { DEFAULT_RESULT_PATH, MAX_INTERVAL_MS } from "../lib/link_interval.ts";

/** Input refused before anything is done (exit 2). */
export class Refused extends Error {}

/** The default state directory. */
export const DEFAULT_STATE_DIR = "/var/lib/mesh/host";

/** Where local declarations are kept, one source per `NAME.json`. */
export const DEFAULT_DECLARATIONS_DIR = "/etc/mesh/declarations";

/** `--state-dir`: an absolute path (a relative one would put the footprint anywhere). */
export const STATE_DIR_OPTION = {
  flags: "--state-dir <dir>",
  description: "the state directory (an absolute path)",
  default: DEFAULT_STATE_DIR,
  parse: (dir) => {
    // An empty or relative state directory would put the footprint wherever the host happened
    // to be started (a checkout, say): refused.
    if (!dir.startsWith("/")) {
      throw new Refused(`--state-dir must be an absolute path, not "${dir}"`);
    }
    return dir.replace(/\/+$/, "") || "/";
  },
} as const satisfies OptionSpec;

/** `--declarations`: the local declarations' directory, an absolute path. */
export const DECLARATIONS_DIR_OPTION = {
  flags: "--declarations <dir>",
  description: "the local declarations' directory: each NAME.json in it is source NAME",
  default: DEFAULT_DECLARATIONS_DIR,
  parse: (dir) => {
    if (!dir.startsWith("/")) {
      throw new Refused(`--declarations must be an absolute path, not "${dir}"`);
    }
    return dir.replace(/\/+$/, "") || "/";
  },
} as const satisfies OptionSpec;

/** `apply`'s options. */
export const APPLY_OPTIONS = [
  { flags: "--source <name>", description: "the source it is applied as", default: "local" },
  {
    flags: "--take-from <source>",
    description: "move what that source holds and this file declares to --source, instead of " +
      "refusing (e.g. from local, applied by hand, to a file in the declarations directory)",
  },
  {
    flags: "--dry-run",
    description: "change nothing; show what would change (exit 4 when something would)",
  },
  { flags: "--json", description: "print the result as JSON" },
  STATE_DIR_OPTION,
  DECLARATIONS_DIR_OPTION,
] as const satisfies readonly OptionSpec[];

/** `reconcile`'s options. */
export const RECONCILE_OPTIONS = [
  { flags: "--json", description: "print each result as JSON (one object per line and source)" },
  {
    flags: "--dry-run",
    description: "change nothing; say what every source would change (exit 4 when something " +
      "would): a drift check",
  },
  STATE_DIR_OPTION,
  DECLARATIONS_DIR_OPTION,
  {
    flags: "--no-bundle",
    description: "leave the carried bundle alone (neither applied nor removed): a node that is " +
      "not its mesh's first node, kept by local declarations only",
  },
  {
    flags: "--every <duration>",
    description: "reconcile again at this interval (e.g. 15m)",
    parse: (v) => {
      try {
        return parseDuration(v, { unit: "s" });
      } catch (error) {
        throw new Refused(`--every: ${messageOf(error)}`);
      }
    },
  },
] as const satisfies readonly OptionSpec[];

/** `link`'s options. */
export const LINK_OPTIONS = [
  {
    flags: "--broker <url>",
    description: "the node's broker URL, with its own credential; repeat it (or separate URLs " +
      "with commas) for each member of a cluster",
    env: "MESH_BROKER_URL",
    parse: (v, previous) => collectBrokerUrls(v, previous as string[] | undefined),
  },
  { flags: "--node <name>", description: "the node's name (default: the broker URL's account)" },
  {
    flags: "--control-key <file>",
    description: "the control plane's public key (SPKI PEM) every declaration must be signed " +
      "with; a key rotation it signs replaces it there (without it the link does not start)",
    env: "MESH_CONTROL_KEY",
    default: "/etc/mesh/control.pub",
  },
  { flags: "--json", description: "print each report as JSON" },
  STATE_DIR_OPTION,
  DECLARATIONS_DIR_OPTION,
  {
    flags: "--every <duration>",
    description: "reconcile the kept declaration, the bundle and the local declarations at this " +
      "interval (>= 1s)",
    default: 15 * 60 * 1000,
    defaultDescription: "15m",
    parse: (v) => {
      let ms: number;
      try {
        ms = parseDuration(v, { unit: "s" });
      } catch (error) {
        throw new Refused(`--every: ${messageOf(error)}`);
      }
      if (ms < 1000) throw new Refused(`--every: at least 1s, not "${v}"`);
      // Every report carries it, and the control plane judges silence against it.
      if (ms > MAX_INTERVAL_MS) throw new Refused(`--every: at most 7d, not "${v}"`);
      return ms;
    },
  },
  {
    flags: "--reconcile-result <file>",
    description: `mesh-reconcile's result file, summarised into each report; "none" when this ` +
      "node runs no mesh-reconcile",
    default: DEFAULT_RESULT_PATH,
  },
] as const satisfies readonly OptionSpec[];

/** `--json` of `owned`, `bundle` and `inventory`. */
const JSON_OPTION = { flags: "--json", description: "print as JSON" } as const satisfies OptionSpec;

/** `owned`'s options. */
export const OWNED_OPTIONS = [
  JSON_OPTION,
  STATE_DIR_OPTION,
  DECLARATIONS_DIR_OPTION,
] as const satisfies readonly OptionSpec[];

/** `bundle`'s options. */
export const BUNDLE_OPTIONS = [
  JSON_OPTION,
  STATE_DIR_OPTION,
] as const satisfies readonly OptionSpec[];

/** `inventory`'s options. */
export const INVENTORY_OPTIONS = [JSON_OPTION] as const satisfies readonly OptionSpec[];
