/**
 * The registry's schema and its read: what should exist on this machine (docs/design.md,
 * "Registry (reconcile input), version 1, YAML"). One strict zod schema; the type is derived from
 * it. A valid registry is read here by the fast reader (reconcile/registry_fast.ts, js-yaml)
 * without loading the `yaml` package or Deno's Node compatibility layer; only a registry the fast
 * read declines or the schema refuses loads reconcile/registry.ts, which reads it again with
 * every node's position and places every problem at its line and column.
 *
 * @module
 */

import { z } from "zod";

import { formatPath } from "../lib/json_path.ts";
import { quickLoad } from "./registry_fast.ts";

export { formatPath };

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Linux account names as `useradd` accepts them (lowercase, digits, `_`, `-`, optional `$`). */
const ACCOUNT = /^[a-z_][a-z0-9_-]*\$?$/;
/** Container names as podman and docker accept them. */
const CONTAINER = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** A DNS host name (lowercase), optionally a leading `*.` wildcard label. */
const HOST = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The largest registry read, in bytes (16 MiB; a registry of a thousand entries is well under
 * 1 MiB). A larger file, or a device that never ends, is refused rather than read into memory.
 */
export const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;

/** An entry's name, also the key of the `services` map. */
export const EntryName = z.string().regex(NAME, "Must be letters, digits, '.', '_' or '-'");
/** A Linux account name. */
export const AccountName = z.string().regex(ACCOUNT, "Must be a Linux account name");
/** A TCP port, 1 to 65535. */
export const Port = z.number({
  error: (issue) =>
    issue.code === "invalid_type"
      ? `Must be a port number, 1 to 65535${
        Array.isArray(issue.input) ? "" : ", or a list of them"
      } (not ${JSON.stringify(issue.input) ?? String(issue.input)})`
      : undefined,
}).int("Must be a whole number").min(1, "Must be a port number, 1 to 65535").max(
  65535,
  "Must be a port number, 1 to 65535",
);
/**
 * A web address: the host name the reverse proxy serves (lowercase; `*.` wildcard allowed), or
 * `*` for a catch-all route that answers any host name.
 */
export const WebAddress = z.string().refine(
  (h) => h === "*" || HOST.test(h),
  "Must be a lowercase host name, e.g. app.example.org, or * for a catch-all route",
);
const ContainerName = z.string().regex(CONTAINER, "Must be a container name");
const AbsolutePath = z.string().refine(
  (p) => p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\0"),
  "Must be an absolute path without '..'",
);
const OneOrMany = <T extends z.ZodType>(item: T) =>
  z.union([item, z.array(item).min(1)]).transform((v) =>
    (Array.isArray(v) ? v : [v]) as z.output<T>[]
  );

const shared = {
  /** The account the entry's container or process runs as; containers are asked about there. */
  user: AccountName.optional(),
  /** TCP port or ports the entry listens on (the registry is the port table). */
  port: OneOrMany(Port).optional(),
  /** Web addresses the reverse proxy serves for the entry. */
  web: OneOrMany(WebAddress).optional(),
  /** Whether the entry reports telemetry. */
  telemetry: z.boolean().optional(),
  /** Names of the secrets the entry may hold (names only, never values). */
  secrets: z.array(z.string().min(1)).optional(),
  /** Directories holding state worth backing up. */
  state: z.array(AbsolutePath).optional(),
  /** Database (or databases) the entry owns. */
  database: OneOrMany(z.string().min(1)).optional(),
  /** Free text; the place to write why an entry that looks removable is not. */
  note: z.string().optional(),
};

/**
 * The fields every kind shares, not strict: an entry whose `kind` is invalid or missing is still
 * checked on these, so a bad kind does not hide its other problems (the fields only some kinds
 * have cannot be judged without one).
 */
export const SharedFields = z.object(shared);

/** `kind: service`: a container service. Its container must be running. */
export const ServiceEntry = z.strictObject({
  kind: z.literal("service"),
  container: ContainerName,
  ...shared,
});
/** `kind: site`: a static site served by the proxy; `redirect` for an address that only redirects. */
export const SiteEntry = z.strictObject({
  kind: z.literal("site"),
  container: ContainerName.optional(),
  redirect: z.url({ protocol: /^https?$/, error: "Must be an http(s) URL" }).optional(),
  ...shared,
});
/** `kind: batch`: a timer-driven job; its `container` runs only while the job does. */
export const BatchEntry = z.strictObject({
  kind: z.literal("batch"),
  timer: z.string().regex(
    // A template without an instance (`foo@.timer`) cannot run, and asking systemd about one
    // fails the whole call for every other timer.
    /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.timer$/,
    "Must be a systemd timer unit, e.g. publish.timer (a template needs an instance: x@y.timer)",
  ),
  container: ContainerName.optional(),
  ...shared,
});
/**
 * `kind: daemon`: a non-container process of the machine, such as sshd. `unit`: the systemd
 * service that starts it at boot (e.g. `ssh.service`); without it, the unit is found from the
 * process holding its port.
 */
export const DaemonEntry = z.strictObject({
  kind: z.literal("daemon"),
  unit: z.string().regex(
    /^[A-Za-z0-9:._\\-]+(@[A-Za-z0-9:._\\-]+)?\.service$/,
    "Must be a systemd service unit, e.g. ssh.service (a template needs an instance)",
  ).optional(),
  ...shared,
});

export const ENTRY_KINDS: readonly string[] = ["service", "site", "batch", "daemon"];

/** One registry entry: a discriminated union on `kind`. */
export const Entry = z.discriminatedUnion("kind", [
  ServiceEntry,
  SiteEntry,
  BatchEntry,
  DaemonEntry,
], {
  error: (issue) =>
    issue.code === "invalid_union"
      ? "kind must be one of: service, site, batch, daemon"
      : undefined,
});

const RegistryShape = z.strictObject({
  version: z.literal(1, { error: "Unsupported registry version; this program reads version 1" }),
  accounts: z.array(AccountName).min(
    1,
    "List at least one account whose containers are asked about",
  ),
  // Names are checked with the other cross-entry checks: a bad name must not hide the
  // problems of its entry (a record's key failing stops zod from checking its value).
  services: z.record(z.string(), Entry),
});

/**
 * The registry file, version 1, with the checks that span entries. {@linkcode parseRegistry}
 * also runs those checks on the raw input when the per-field schema fails, so their problems
 * are reported together with the schema's own.
 */
export const Registry: z.ZodType<z.output<typeof RegistryShape>, unknown> = RegistryShape
  .superRefine((registry, ctx) => {
    for (const issue of crossCheck(registry)) ctx.addIssue({ code: "custom", ...issue });
  });

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
    if (entry.kind === "site" && entry.redirect !== undefined && entry.web === undefined) {
      issues.push({
        path: ["services", name, "redirect"],
        message: "A redirect needs the web addresses that redirect",
      });
    }
  }
  return issues;
}

/** A parsed, valid registry. */
export type Registry = z.output<typeof RegistryShape>;
/** One valid registry entry. */
export type Entry = z.output<typeof Entry>;
/** The kinds of entry. */
export type EntryKind = Entry["kind"];

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

/** A registry that could not be read or is invalid; carries every problem at once. */
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

/** Renders one problem as `file:line:column: path: message`. */
export function formatProblem(file: string, p: RegistryProblem): string {
  const where = p.line > 0 ? `${file}:${p.line}:${p.column}` : file;
  return `${where}: ${p.path ? `${p.path}: ` : ""}${p.message}`;
}

/**
 * A valid registry read fast ({@linkcode quickLoad}) and accepted by the schema, or undefined
 * when the fast read declines it or the schema refuses it (then it must be read with positions).
 */
export function readFast(text: string): Registry | undefined {
  const quick = quickLoad(text);
  if (quick === undefined) return undefined;
  const parsed = Registry.safeParse(quick);
  return parsed.success ? parsed.data : undefined;
}

/** The JSON Schema of the registry, for editors (`mesh-reconcile schema`). */
export function registryJsonSchema(): unknown {
  return z.toJSONSchema(Registry, { io: "input", unrepresentable: "any" });
}
