/**
 * The registry's schema and its read: what should exist on this machine (docs/design.md,
 * "Registry (reconcile input), version 1, YAML"). One strict zod schema; the type is derived from
 * it. Its refinements are predicates of reconcile/registry_base.ts (zod-free), so the validator
 * generated from it (reconcile/registry_validators.js, by scripts/validators.ts) calls the same
 * ones: a valid registry is read by the fast reader (reconcile/registry_fast.ts) without loading
 * zod, the `yaml` package or Deno's Node compatibility layer; only a registry the fast read
 * declines or the validator refuses is read again with every node's position
 * (reconcile/registry.ts), and each problem placed at its line and column.
 *
 * @module
 */

import { z } from "zod";

import { formatPath } from "../lib/json_path.ts";
import { record } from "../lib/zod_record.ts";
import {
  ACCOUNT,
  asList,
  CONTAINER,
  crossCheck,
  isAbsolutePath,
  isHttpUrl,
  isMaxAge,
  isTlsName,
  isWebAddress,
  NAME,
  SERVICE_UNIT,
  TIMER_UNIT,
  urlAsRead,
} from "./registry_base.ts";

export { formatPath };
export {
  crossCheck,
  ENTRY_KINDS,
  formatProblem,
  MAX_REGISTRY_BYTES,
  RegistryError,
  type RegistryProblem,
} from "./registry_base.ts";

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
  isWebAddress,
  "Must be a lowercase host name, e.g. app.example.org, or * for a catch-all route",
);
const TLS_NAME_MESSAGE =
  "Must be a lowercase host name (no wildcard), an IPv4 address or an IPv6 address";
/**
 * A port of the entry that speaks TLS (from its first byte, or after PostgreSQL's SSLRequest with
 * `starttls: postgres`), and the names clients reach it by: its certificate is checked as the
 * proxy's are (`certificate`).
 */
export const TlsEndpoint = z.strictObject({
  /** One of the entry's `port`s. */
  port: Port,
  /** The DNS names and IP addresses its certificate must cover; the first DNS name is the SNI. */
  name: z.union([
    z.string().refine(isTlsName, TLS_NAME_MESSAGE),
    z.array(z.string().refine(isTlsName, TLS_NAME_MESSAGE)).min(1),
  ]).transform(asList),
  /**
   * The protocol that asks for TLS before the handshake: `postgres` (PostgreSQL's SSLRequest).
   * Absent: TLS from the first byte.
   */
  starttls: z.literal("postgres", { error: "Must be postgres, or left out" }).optional(),
});
const ContainerName = z.string().regex(CONTAINER, "Must be a container name");
const AbsolutePath = z.string().refine(
  isAbsolutePath,
  "Must be an absolute path without '..'",
);
const OneOrMany = <T extends z.ZodType>(item: T) =>
  z.union([item, z.array(item).min(1)]).transform((v) => asList<z.output<T>>(v));

const shared = {
  /** The account the entry's container or process runs as; containers are asked about there. */
  user: AccountName.optional(),
  /** TCP port or ports the entry listens on (the registry is the port table). */
  port: OneOrMany(Port).optional(),
  /** Web addresses the reverse proxy serves for the entry. */
  web: OneOrMany(WebAddress).optional(),
  /** Ports of the entry that speak TLS, with the names their certificate must cover. */
  tls: OneOrMany(TlsEndpoint).optional(),
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
const URL_MESSAGE = "Must be an http(s) URL";
/** `kind: site`: a static site served by the proxy; `redirect` for an address that only redirects. */
export const SiteEntry = z.strictObject({
  kind: z.literal("site"),
  container: ContainerName.optional(),
  redirect: z.string({ error: URL_MESSAGE }).refine(isHttpUrl, URL_MESSAGE).transform(urlAsRead)
    .optional(),
  ...shared,
});
/** `kind: batch`: a timer-driven job; its `container` runs only while the job does. */
export const BatchEntry = z.strictObject({
  kind: z.literal("batch"),
  timer: z.string().regex(
    TIMER_UNIT,
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
    SERVICE_UNIT,
    "Must be a systemd service unit, e.g. ssh.service (a template needs an instance)",
  ).optional(),
  ...shared,
});

/**
 * One registry entry: a discriminated union on `kind`. Its metadata names the tag for the
 * generated validator (OpenAPI's `discriminator`), which then checks an entry against its kind's
 * schema only.
 */
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
}).meta({ type: "object", discriminator: { propertyName: "kind" } });

/**
 * The backup that should hold the declared state (`backup`): a restic repository and how old its
 * newest snapshot of each state directory may be (`run`'s `backup` check).
 */
export const Backup = z.strictObject({
  restic: z.strictObject({
    /** `restic -r`: a repository path or URL. */
    repository: z.string().min(1, "Name the restic repository (a path or URL)"),
    /** `restic --password-file`: the file holding the repository's password. */
    passwordFile: AbsolutePath,
  }),
  /** A duration with its unit (`26h`): a directory whose newest snapshot is older is stale. */
  maxAge: z.string({
    error: (issue) =>
      typeof issue.input === "number"
        ? `Must be a duration with its unit, e.g. ${issue.input}h`
        : "Must be a duration with its unit, e.g. 26h",
  }).refine(isMaxAge, "Must be a duration with its unit, e.g. 26h"),
});

const RegistryShape = z.strictObject({
  version: z.literal(1, { error: "Unsupported registry version; this program reads version 1" }),
  accounts: z.array(AccountName).min(
    1,
    "List at least one account whose containers are asked about",
  ),
  /** PEM files of private CAs' roots, trusted besides the system's store (`certificate`). */
  roots: z.array(AbsolutePath).min(1, "List at least one root file, or leave roots out")
    .optional(),
  /** The backup that should hold every declared state directory (`backup`). */
  backup: Backup.optional(),
  // Names are checked with the other cross-entry checks: a bad name must not hide the
  // problems of its entry (a record's key failing stops zod from checking its value). An entry
  // named `__proto__` (an own key, as the YAML loader makes it) is read as any other, so that
  // its name is refused, not skipped unchecked as by zod's own record (lib/zod_record.ts).
  services: record(z.string(), Entry),
});

/**
 * The registry file, version 1, with the checks that span entries. {@linkcode parseRegistry}
 * also runs those checks on the raw input when the per-field schema fails, so their problems
 * are reported together with the schema's own.
 *
 * @example Data read elsewhere (e.g. JSON), checked against the registry's schema
 * ```ts
 * import { Registry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const checked = Registry.safeParse({
 *   version: 1,
 *   accounts: ["root"],
 *   services: { sshd: { kind: "daemon", user: "root", port: 22, unit: "ssh.service" } },
 * });
 * assert(checked.success);
 * assert.deepEqual(checked.data.services.sshd?.port, [22]);
 *
 * const later = Registry.safeParse({ version: 2, accounts: ["root"], services: {} });
 * assert.equal(
 *   later.error?.issues[0]?.message,
 *   "Unsupported registry version; this program reads version 1",
 * );
 * ```
 */
export const Registry: z.ZodType<z.output<typeof RegistryShape>, unknown> = RegistryShape
  .superRefine((registry, ctx) => {
    for (const issue of crossCheck(registry)) ctx.addIssue({ code: "custom", ...issue });
  }).meta({ "x-check": ["passesCrossCheck"] });

/** A parsed, valid registry. */
export type Registry = z.output<typeof RegistryShape>;
/** One valid registry entry. */
export type Entry = z.output<typeof Entry>;
/** The kinds of entry. */
export type EntryKind = Entry["kind"];

/**
 * The JSON Schema of the registry, for editors (`mesh-reconcile schema`).
 *
 * @example The schema an editor's YAML language server is given
 * ```ts
 * import { registryJsonSchema } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const schema = registryJsonSchema() as { $schema: string; required: string[] };
 * assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
 * assert.deepEqual(schema.required, ["version", "accounts", "services"]);
 * ```
 */
export function registryJsonSchema(): unknown {
  return z.toJSONSchema(Registry, { io: "input", unrepresentable: "any" });
}
