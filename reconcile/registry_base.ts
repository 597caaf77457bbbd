/**
 * The half of the registry's schema that needs no zod: the limit, the patterns each field's rule
 * is built from, the predicates the schema refines with (each written once, here), the checks
 * that span entries, and the error a refused registry is.
 *
 * The zod schema of reconcile/registry_schema.ts stays the one definition of a registry: its
 * JSON Schema, and every problem of an invalid registry (placed at its line and column by
 * reconcile/registry.ts). This module is its checks module: the validator generated from the
 * schema (reconcile/registry_validators.js, by scripts/validators.ts) imports it and calls each
 * predicate where the schema's `.refine` does, so a valid registry is checked without loading zod
 * (reconcile/registry_fast.ts `validRegistry`).
 *
 * @module
 */

import { parseDuration } from "../lib/duration.ts";

// The patterns the schema's `.regex` rules use carry the `u` flag: the generated validator
// compiles each (as JSON Schema's `pattern`) with it, so both read it alike.

/** An entry's name, also the key of the `services` map. */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/u;
/** Linux account names as `useradd` accepts them (lowercase, digits, `_`, `-`, optional `$`). */
export const ACCOUNT = /^[a-z_][a-z0-9_-]*\$?$/u;
/** Container names as podman and docker accept them. */
export const CONTAINER = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/u;
/** A DNS host name (lowercase), optionally a leading `*.` wildcard label. */
export const HOST =
  /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
/**
 * A systemd timer unit. A template without an instance (`foo@.timer`) cannot run, and asking
 * systemd about one fails the whole call for every other timer.
 */
export const TIMER_UNIT = /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.timer$/u;
/** A systemd service unit (a template needs an instance). */
export const SERVICE_UNIT = /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.service$/u;

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

/** Whether `text` is a backup's `maxAge`: a duration with its unit, longer than zero. */
export function isMaxAge(text: string): boolean {
  try {
    return parseDuration(text) > 0;
  } catch {
    return false;
  }
}

/**
 * Whether `u` is an http(s) URL (a site's `redirect`) as zod 4's `z.url({ protocol: /^https?$/ })`
 * accepts one (the rule the schema had; tests/reconcile/registry_check_test.ts holds the two
 * equal): trimmed, it starts with `http://` or `https://` (any case) and the WHATWG URL parser
 * reads it.
 */
export function isHttpUrl(u: string): boolean {
  const trimmed = u.trim();
  return /^https?:\/\//i.test(trimmed) && URL.canParse(trimmed);
}

/**
 * A redirect as the schema reads it (what zod's URL rule returns): trimmed, without the ASCII
 * tabs and line breaks the URL parser deletes.
 */
export function urlAsRead(u: string): string {
  return u.trim().replace(/[\t\n\r]/g, "");
}

/**
 * A field written as one value or a list of them, as a list: what the schema reads such a field
 * as (`port`, `web`, `tls`, `database`, `tls.name`), and the fast read too.
 */
export function asList<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
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
    const declaredPorts = many(entry.port, isNumber);
    for (const p of declaredPorts) {
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
    for (const address of many(entry.web, isText)) {
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
    const tlsPorts = new Set<number>();
    many(entry.tls, isRecord).forEach((t, i) => {
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

/** The items of `v` (a list, or a single value) that pass `ok`. */
function many<T>(v: unknown, ok: (x: unknown) => x is T): T[] {
  return Array.isArray(v) ? v.filter(ok) : ok(v) ? [v] : [];
}
const isNumber = (x: unknown): x is number => typeof x === "number";
const isText = (x: unknown): x is string => typeof x === "string";
const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null;

/**
 * Whether {@linkcode crossCheck} finds nothing in `registry`: the predicate that stands for the
 * schema's `superRefine` in the generated validator, which calls it once every other rule holds.
 */
export function passesCrossCheck(registry: unknown): boolean {
  return crossCheck(registry).length === 0;
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
