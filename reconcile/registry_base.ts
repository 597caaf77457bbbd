/**
 * The half of the registry's schema that needs no zod: the limit, the patterns each field's rule
 * is built from, the checks that span entries, the error a refused registry is, and
 * {@linkcode validRegistry}: a registry that is valid, checked without zod.
 *
 * The zod schema of reconcile/registry_schema.ts stays the one definition of a registry: its
 * JSON Schema, and every problem of an invalid registry (placed at its line and column by
 * reconcile/registry.ts). `validRegistry` only answers for data that passes every rule; it gives
 * up (undefined) on anything else, and on a field whose rule it does not repeat (a site's
 * `redirect`, zod's URL check), and the caller then asks the zod schema, which says what is
 * wrong. What it returns is what the zod schema returns for the same data (the same values, the
 * keys in the schema's order); tests/reconcile/registry_check_test.ts holds the two equal on
 * seeded mutations of valid registries. `mesh-reconcile run` of a valid registry thus loads no
 * zod to read it.
 *
 * @module
 */

import { parseDuration } from "../lib/duration.ts";

/** An entry's name, also the key of the `services` map. */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Linux account names as `useradd` accepts them (lowercase, digits, `_`, `-`, optional `$`). */
export const ACCOUNT = /^[a-z_][a-z0-9_-]*\$?$/;
/** Container names as podman and docker accept them. */
export const CONTAINER = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** A DNS host name (lowercase), optionally a leading `*.` wildcard label. */
export const HOST =
  /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
/**
 * A systemd timer unit. A template without an instance (`foo@.timer`) cannot run, and asking
 * systemd about one fails the whole call for every other timer.
 */
export const TIMER_UNIT = /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.timer$/;
/** A systemd service unit (a template needs an instance). */
export const SERVICE_UNIT = /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.service$/;

/**
 * The largest registry read, in bytes (16 MiB; a registry of a thousand entries is well under
 * 1 MiB). A larger file, or a device that never ends, is refused rather than read into memory.
 */
export const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;

/** The kinds of entry, in the schema's order. */
export const ENTRY_KINDS: readonly string[] = ["service", "site", "batch", "daemon"];

/** Whether `h` is a web address: a lowercase host name (`*.` wildcard allowed) or `*`. */
export function isWebAddress(h: string): boolean {
  return h === "*" || HOST.test(h);
}

/**
 * Whether `h` is a name a TLS certificate is checked for (`tls.name`): a lowercase DNS host name
 * without a wildcard, an IPv4 address (a host name of digits), or an IPv6 address literal.
 */
export function isTlsName(h: string): boolean {
  if (h.includes(":")) return /^[0-9a-f:.]+$/.test(h) && h.split("::").length <= 2;
  return HOST.test(h) && !h.startsWith("*.");
}

/** Whether `p` is an absolute path without a `..` segment or a NUL byte. */
export function isAbsolutePath(p: string): boolean {
  return p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\0");
}

/**
 * The checks that span entries: an account listed twice, a port claimed by two entries, an
 * address declared twice, a container claimed twice (per account), a container in an account
 * that is not asked about. Works on raw, possibly invalid data, so these problems are reported
 * together with the schema's own rather than only once everything else is fixed.
 */
export function crossCheck(raw: unknown): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const data = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
  const accounts = Array.isArray(data.accounts)
    ? data.accounts.filter((a) => typeof a === "string")
    : [];
  const seen = new Set<string>();
  accounts.forEach((account, i) => {
    if (seen.has(account)) {
      issues.push({ path: ["accounts", i], message: `Account "${account}" is listed twice` });
    }
    seen.add(account);
  });
  const services = typeof data.services === "object" && data.services !== null
    ? data.services as Record<string, unknown>
    : {};
  const ports = new Map<number, string>();
  const containers = new Map<string, string>();
  const addresses = new Map<string, string>();
  for (const [name, value] of Object.entries(services)) {
    if (!NAME.test(name)) {
      issues.push({
        path: ["services", name],
        message:
          `Entry name "${name}" must be letters, digits, '.', '_' or '-' (starting with a letter or digit)`,
      });
    }
    if (typeof value !== "object" || value === null) continue;
    const entry = value as Record<string, unknown>;
    const many = <T>(v: unknown, ok: (x: unknown) => x is T): T[] =>
      Array.isArray(v) ? v.filter(ok) : ok(v) ? [v] : [];
    for (const p of many(entry.port, (x): x is number => typeof x === "number")) {
      const other = ports.get(p);
      if (other !== undefined) {
        issues.push({
          path: ["services", name, "port"],
          message: other === name
            ? `Port ${p} is listed twice in this entry`
            : `Port ${p} is already claimed by "${other}"`,
        });
      } else ports.set(p, name);
    }
    for (const address of many(entry.web, (x): x is string => typeof x === "string")) {
      const other = addresses.get(address);
      if (other !== undefined) {
        issues.push({
          path: ["services", name, "web"],
          message: `Address "${address}" is already declared by "${other}"`,
        });
      } else addresses.set(address, name);
    }
    if (typeof entry.container === "string") {
      if (entry.user === undefined) {
        issues.push({
          path: ["services", name, "user"],
          message: `An entry with a container must name the account it runs in (one of: ${
            accounts.join(", ")
          })`,
        });
      } else if (typeof entry.user === "string") {
        const key = `${entry.user}/${entry.container}`;
        const other = containers.get(key);
        if (other !== undefined) {
          issues.push({
            path: ["services", name, "container"],
            message:
              `Container "${entry.container}" of account "${entry.user}" is already claimed by "${other}"`,
          });
        } else containers.set(key, name);
        if (!accounts.includes(entry.user)) {
          issues.push({
            path: ["services", name, "user"],
            message:
              `Account "${entry.user}" is not in accounts, so its containers are never asked about`,
          });
        }
      }
    }
    const declaredPorts = many(entry.port, (x): x is number => typeof x === "number");
    const tlsPorts = new Set<number>();
    many(entry.tls, (x): x is Record<string, unknown> => typeof x === "object" && x !== null)
      .forEach((t, i) => {
        if (typeof t.port !== "number") return;
        const path = ["services", name, "tls", ...(Array.isArray(entry.tls) ? [i] : []), "port"];
        if (!declaredPorts.includes(t.port)) {
          issues.push({
            path,
            message: `TLS port ${t.port} is not one of this entry's ports (list it in port)`,
          });
        }
        if (tlsPorts.has(t.port)) {
          issues.push({ path, message: `TLS port ${t.port} is listed twice in this entry` });
        }
        tlsPorts.add(t.port);
      });
    if (entry.kind === "site" && entry.redirect !== undefined && entry.web === undefined) {
      issues.push({
        path: ["services", name, "redirect"],
        message: "A redirect needs the web addresses that redirect",
      });
    }
  }
  return issues;
}

/** One problem found in a registry file, placed where it is. */
export interface RegistryProblem {
  /** Path inside the document, e.g. `services.web.port`; empty for the whole document. */
  path: string;
  /** 1-based line, 0 when the problem has no place (e.g. an unreadable file). */
  line: number;
  /** 1-based column. */
  column: number;
  message: string;
}

/**
 * A registry that could not be read or is invalid; carries every problem at once.
 *
 * @example Every problem, each at its line and column
 * ```ts
 * import { parseRegistry, RegistryError } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const text = `version: 1
 * accounts: [root]
 * services:
 *   shop:
 *     kind: service
 *     port: 8080
 * `;
 * let refused: unknown;
 * try {
 *   parseRegistry(text, "registry.yaml");
 * } catch (error) {
 *   refused = error;
 * }
 * assert(refused instanceof RegistryError);
 * assert.equal(refused.file, "registry.yaml");
 * assert.deepEqual(refused.problems, [{
 *   path: "services.shop.container",
 *   line: 5,
 *   column: 5,
 *   message: 'Missing required field "container"',
 * }]);
 * ```
 */
export class RegistryError extends Error {
  readonly file: string;
  readonly problems: RegistryProblem[];
  constructor(file: string, problems: RegistryProblem[]) {
    const unread = problems.length === 1 && problems[0]!.line === 0 &&
      problems[0]!.message.startsWith("Cannot read registry: ");
    super(
      unread
        // A file that could not be read is not an invalid one: say it as what it is.
        ? `Cannot read registry "${file}": ${
          problems[0]!.message.slice("Cannot read registry: ".length)
        }`
        : `Invalid registry "${file}" (${problems.length} problem${
          problems.length === 1 ? "" : "s"
        }):\n` +
          problems.map((p) => `  ${formatProblem(file, p)}`).join("\n"),
    );
    this.name = "RegistryError";
    this.file = file;
    this.problems = problems;
  }
}

/**
 * Renders one problem as `file:line:column: path: message` (the file alone when the problem has
 * no line).
 *
 * @example A problem as mesh-reconcile prints it
 * ```ts
 * import { formatProblem } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const line = formatProblem("/var/lib/mesh/reconcile/registry.yaml", {
 *   path: "services.shop.port",
 *   line: 9,
 *   column: 11,
 *   message: "Must be a port number, 1 to 65535",
 * });
 * assert.equal(
 *   line,
 *   "/var/lib/mesh/reconcile/registry.yaml:9:11: services.shop.port: " +
 *     "Must be a port number, 1 to 65535",
 * );
 * ```
 */
export function formatProblem(file: string, p: RegistryProblem): string {
  const where = p.line > 0 ? `${file}:${p.line}:${p.column}` : file;
  return `${where}: ${p.path ? `${p.path}: ` : ""}${p.message}`;
}

/** A plain object, as read from YAML. */
export type Raw = Record<string, unknown>;

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isString(value: unknown, pattern: RegExp): value is string {
  return typeof value === "string" && pattern.test(value);
}

function isPort(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** A value or a non-empty list of values each passing `ok`, as a list (zod's `OneOrMany`). */
function oneOrMany(value: unknown, ok: (item: unknown) => boolean): unknown[] | undefined {
  if (!Array.isArray(value)) return ok(value) ? [value] : undefined;
  return value.length >= 1 && value.every(ok) ? [...value] : undefined;
}

function listOf(value: unknown, ok: (item: unknown) => boolean): unknown[] | undefined {
  return Array.isArray(value) && value.every(ok) ? [...value] : undefined;
}

const nonEmpty = (s: unknown) => typeof s === "string" && s.length >= 1;

/**
 * The shared fields, in the schema's order, each with what it reads a valid value as (undefined:
 * not valid).
 */
const SHARED: readonly [string, (value: unknown) => unknown][] = [
  ["user", (v) => isString(v, ACCOUNT) ? v : undefined],
  ["port", (v) => oneOrMany(v, isPort)],
  ["web", (v) => oneOrMany(v, (h) => typeof h === "string" && isWebAddress(h))],
  ["telemetry", (v) => typeof v === "boolean" ? v : undefined],
  ["secrets", (v) => listOf(v, nonEmpty)],
  ["state", (v) => listOf(v, (p) => typeof p === "string" && isAbsolutePath(p))],
  ["database", (v) => oneOrMany(v, nonEmpty)],
  ["note", (v) => typeof v === "string" ? v : undefined],
];

const container = (v: unknown) => isString(v, CONTAINER) ? v : undefined;

/** Each kind's own fields after `kind`, in the schema's order; `required` ones must be there. */
const KIND_FIELDS: Readonly<
  Record<string, readonly [string, (value: unknown) => unknown, boolean][]>
> = {
  service: [["container", container, true]],
  // A site's `redirect` is left to zod (its URL check is not repeated here): see validEntry.
  site: [["container", container, false]],
  batch: [
    ["timer", (v) => isString(v, TIMER_UNIT) ? v : undefined, true],
    ["container", container, false],
  ],
  daemon: [["unit", (v) => isString(v, SERVICE_UNIT) ? v : undefined, false]],
};

function validEntry(raw: unknown): Raw | undefined {
  if (!isObject(raw) || typeof raw.kind !== "string" || !Object.hasOwn(KIND_FIELDS, raw.kind)) {
    return undefined;
  }
  const own = KIND_FIELDS[raw.kind]!;
  const fields = [...own.map(([k, read]) => [k, read] as const), ...SHARED];
  let known = 1;
  const out: Raw = { kind: raw.kind };
  for (const [key, read] of fields) {
    if (!Object.hasOwn(raw, key)) continue;
    const value = read(raw[key]);
    if (value === undefined) return undefined;
    out[key] = value;
    known++;
  }
  for (const [key, , required] of own) if (required && !(key in out)) return undefined;
  // Any other key (a site's redirect included): the schema decides, and says what is wrong.
  if (Object.keys(raw).length !== known) return undefined;
  return out;
}

/**
 * A valid registry checked without zod, or undefined when it is not one or this check does not
 * know a field of it (a site's `redirect`): then the zod schema (reconcile/registry_schema.ts)
 * decides, and says what is wrong.
 *
 * @param data the registry as plain data (reconcile/registry_fast.ts `quickLoad`).
 * @returns what the zod schema `Registry` returns for `data` (a `Registry` of
 *   reconcile/registry_schema.ts, whose type this module does not import: that module imports
 *   this one): the same values (a single port, address or database as a list of one), each
 *   object's keys in the schema's order.
 */
export function validRegistry(data: unknown): Raw | undefined {
  if (!isObject(data) || data.version !== 1) return undefined;
  const keys = Object.keys(data);
  const roots = data.roots;
  const backup = data.backup === undefined ? undefined : validBackup(data.backup);
  if (data.backup !== undefined && backup === undefined) return undefined;
  if (keys.length !== 3 + (roots === undefined ? 0 : 1) + (backup === undefined ? 0 : 1)) {
    return undefined;
  }
  if (!("accounts" in data) || !("services" in data)) return undefined;
  if (
    roots !== undefined &&
    (!Array.isArray(roots) || roots.length < 1 ||
      !roots.every((p) => typeof p === "string" && isAbsolutePath(p)))
  ) return undefined;
  const accounts = data.accounts;
  if (!Array.isArray(accounts) || accounts.length < 1) return undefined;
  if (!accounts.every((a) => isString(a, ACCOUNT))) return undefined;
  const raw = data.services;
  if (!isObject(raw)) return undefined;
  const services: Record<string, Raw> = {};
  for (const name of Object.keys(raw)) {
    if (!NAME.test(name)) return undefined;
    const entry = validEntry(raw[name]);
    if (entry === undefined) return undefined;
    services[name] = entry;
  }
  if (crossCheck(data).length > 0) return undefined;
  return {
    version: 1,
    accounts: [...accounts],
    ...(roots !== undefined ? { roots: [...roots] } : {}),
    ...(backup !== undefined ? { backup } : {}),
    services,
  };
}

/** A valid `backup` (`{restic: {repository, passwordFile}, maxAge}`) in the schema's order, or undefined. */
function validBackup(raw: unknown): Raw | undefined {
  if (!isObject(raw) || Object.keys(raw).length !== 2 || !isObject(raw.restic)) return undefined;
  const { restic, maxAge } = raw;
  if (Object.keys(restic).length !== 2) return undefined;
  const { repository, passwordFile } = restic;
  if (typeof repository !== "string" || repository.length < 1) return undefined;
  if (typeof passwordFile !== "string" || !isAbsolutePath(passwordFile)) return undefined;
  if (typeof maxAge !== "string") return undefined;
  try {
    if (!(parseDuration(maxAge) > 0)) return undefined;
  } catch {
    return undefined;
  }
  return { restic: { repository, passwordFile }, maxAge };
}
