/**
 * What `mesh-control`'s command table declares of its commands: every command's options and
 * arguments, and each group's subcommands, as data. Kept apart from the commands so that the
 * table (control/main.ts) can parse a plain invocation and answer a command's help without
 * loading commander or the command's module (lib/cli_table.ts); misuse still goes to commander,
 * built from these same declarations (lib/cli.ts).
 *
 * This module must stay cheap to load: it is loaded for the program's help.
 *
 * @module
 */

import type { CommandSpec, OptionSpec } from "../lib/cli_table.ts";
import { durationArgument } from "../lib/duration.ts";
import { collectBrokerUrls } from "../lib/broker_urls.ts";
import { SYSTEM_NAMES } from "../lib/system_names.ts";
import { DEFAULT_GRACE_MS } from "./state.ts";

/** Input refused before anything is done (exit 2). */
export class Refused extends Error {}

/** Throws as this program's refusal (exit 2): for the shared option parsers. */
export const refuse = (message: string): Error => new Refused(message);

/** `--database`, or MESH_DATABASE_URL. */
export const DATABASE_OPTION = {
  flags: "--database <url>",
  description: "the inventory database",
  env: "MESH_DATABASE_URL",
} as const satisfies OptionSpec;

/** `--broker`, or MESH_BROKER_URL: one URL a member, repeated or comma-separated. */
export const BROKER_OPTION = {
  flags: "--broker <url>",
  description:
    "the broker (AMQP), with an administrative account; repeat it (or separate URLs with commas) for each member of a cluster",
  env: "MESH_BROKER_URL",
  parse: (value, previous) => collectBrokerUrls(value, previous as string[] | undefined),
} as const satisfies OptionSpec;

/** `--broker-api`, or MESH_BROKER_API_URL. */
export const BROKER_API_OPTION = {
  flags: "--broker-api <url>",
  description: "the broker's management HTTP API",
  env: "MESH_BROKER_API_URL",
} as const satisfies OptionSpec;

/** `--public-broker`, or MESH_PUBLIC_BROKER_URL: the broker address nodes reach, kept. */
export const PUBLIC_BROKER_OPTION = {
  flags: "--public-broker <url>",
  description:
    "the broker address nodes reach (amqp[s]://host:port/vhost, no credential; repeat it or separate URLs with commas for a cluster's members); checked, then kept for later enrollments",
  env: "MESH_PUBLIC_BROKER_URL",
  parse: (value, previous) => collectBrokerUrls(value, previous as string[] | undefined),
} as const satisfies OptionSpec;

/** `--node-is-local`: the node is this machine, so a loopback broker address may be printed. */
export const NODE_IS_LOCAL_OPTION = {
  flags: "--node-is-local",
  description:
    "the node is this machine: its broker URL may name a loopback address (127.0.0.1, ::1, localhost)",
} as const satisfies OptionSpec;

/** `--ca-out` of `node enroll` and `node rotate`: where to write the mesh's CA certificate. */
const CA_OUT_OPTION = {
  flags: "--ca-out <file>",
  description:
    "when the mesh has a CA (MESH_CA_FILE or /etc/mesh/ca.crt): write its certificate to this file for the node, instead of printing it",
} as const satisfies OptionSpec;

/** `--signing-key`, or MESH_SIGNING_KEY: the control plane's private signing key (lib/signing.ts). */
export const SIGNING_KEY_OPTION = {
  flags: "--signing-key <file>",
  description:
    "the control plane's private signing key (PKCS#8 PEM, mode 0600) that signs every declaration pushed",
  env: "MESH_SIGNING_KEY",
  default: "/etc/mesh/secrets/signing.key",
} as const satisfies OptionSpec;

/** `--public-key`: where `key init` and `key rotate` write the public key. */
const PUBLIC_KEY_OPTION = {
  flags: "--public-key <file>",
  description:
    "also write the public key here (SPKI PEM, 0644): what the nodes keep as /etc/mesh/control.pub",
  default: "/etc/mesh/control.pub",
} as const satisfies OptionSpec;

/** `key`'s subcommands. */
export const KEY_COMMANDS = [
  {
    name: "init",
    summary: "make the control plane's signing key (Ed25519), once: never replaces one that exists",
    options: [SIGNING_KEY_OPTION, PUBLIC_KEY_OPTION],
  },
  {
    name: "rotate",
    summary:
      "make a new signing key; every push then hands the nodes its public key, signed by the key it replaces",
    options: [SIGNING_KEY_OPTION, PUBLIC_KEY_OPTION],
  },
  {
    name: "show",
    summary: "print the public key nodes keep as /etc/mesh/control.pub (its id on stderr)",
    options: [SIGNING_KEY_OPTION],
  },
] as const satisfies readonly CommandSpec[];

/** `--json` of the commands that print a table. */
const JSON_OPTION = { flags: "--json", description: "print as JSON" } as const satisfies OptionSpec;

/** The options `status` and `board` share after their own: the silence rule and the source. */
const READ_OPTIONS = [
  {
    flags: "--grace <duration>",
    description:
      "silence rule: a node is heard for 2 reconcile intervals plus this after its last report",
    default: DEFAULT_GRACE_MS,
    defaultDescription: "1m",
    parse: durationArgument("--grace", { unit: "s", refuse }),
  },
  {
    flags: "--database-read <url>",
    description:
      "read from this PostgreSQL hot standby instead (the board says how old its data is)",
    env: "MESH_DATABASE_READ_URL",
  },
  {
    flags: "--max-lag <duration>",
    description: "with --database-read: a replay lag beyond this is said to make the data stale",
    default: 60_000,
    defaultDescription: "60s",
    parse: durationArgument("--max-lag", { unit: "s", refuse }),
  },
] as const satisfies readonly OptionSpec[];

/** `status`'s options. */
export const STATUS_OPTIONS = [
  JSON_OPTION,
  DATABASE_OPTION,
  ...READ_OPTIONS,
] as const satisfies readonly OptionSpec[];

/** `board`'s options. */
export const BOARD_OPTIONS = [
  JSON_OPTION,
  {
    flags: "--html <file>",
    description: "also write the board as one self-contained HTML page (atomically) to this file",
  },
  DATABASE_OPTION,
  ...READ_OPTIONS,
] as const satisfies readonly OptionSpec[];

/** `migrate`'s options. */
export const MIGRATE_OPTIONS = [DATABASE_OPTION] as const satisfies readonly OptionSpec[];

/** `push`'s argument. */
export const PUSH_ARGUMENTS = [{ name: "[node]", description: "the node to push to" }];

/** `push`'s options. */
export const PUSH_OPTIONS = [
  { flags: "--behind", description: "push to every node that is behind, each named with why" },
  {
    flags: "--stuck-after <duration>",
    description: "say so of a node failing the same way this long",
    default: 60 * 60 * 1000,
    defaultDescription: "1h",
    parse: durationArgument("--stuck-after", { unit: "s", refuse }),
  },
  {
    flags: "--dry-run",
    description: "with --behind: say which nodes are behind and why, push nothing",
  },
  SIGNING_KEY_OPTION,
  DATABASE_OPTION,
  BROKER_OPTION,
] as const satisfies readonly OptionSpec[];

/** `prune`'s options. */
export const PRUNE_OPTIONS = [
  {
    flags: "--keep <duration>",
    description: "keep reports this recent (>= 1h; e.g. 14d)",
    mandatory: true,
    parse: durationArgument("--keep", { unit: "d", minMs: 3600_000, min: "1h", refuse }),
  },
  { flags: "--dry-run", description: "count what would be deleted, delete nothing" },
  DATABASE_OPTION,
] as const satisfies readonly OptionSpec[];

/** `ingest`'s options. */
export const INGEST_OPTIONS = [
  { flags: "--drain", description: "stop once the reports queue is empty" },
  DATABASE_OPTION,
  BROKER_OPTION,
] as const satisfies readonly OptionSpec[];

/** `--queue-type` of `broker setup` and `broker convert`. */
const QUEUE_TYPE = {
  flags: "--queue-type <type>",
  description: "classic (one broker) or quorum (replicated over a cluster's members)",
  choices: ["classic", "quorum"],
} as const satisfies OptionSpec;

/** `broker`'s subcommands. */
export const BROKER_COMMANDS = [
  {
    name: "setup",
    summary: "declare the durable mesh exchange and the shared queues (idempotent)",
    options: [{ ...QUEUE_TYPE, default: "classic" }, BROKER_OPTION],
  },
  {
    name: "convert",
    summary:
      "convert the shared queues and every node queue to another type, moving waiting messages (idempotent; finishes a conversion that stopped)",
    options: [{ ...QUEUE_TYPE, mandatory: true }, BROKER_OPTION, BROKER_API_OPTION],
  },
  {
    name: "check",
    summary:
      "ask the broker whether it works: an authenticated AMQP connection and the management API answering",
    options: [
      {
        flags: "--topology",
        description: "also find the mesh exchange and the shared queues (declares nothing)",
      },
      BROKER_OPTION,
      BROKER_API_OPTION,
    ],
  },
] as const satisfies readonly CommandSpec[];

/** A node named as an argument, without a help line. */
const NODE_ARGUMENT = { name: "<node>", description: "" };

/** `node`'s subcommands. */
export const NODE_COMMANDS = [
  {
    name: "enroll",
    summary:
      "record a node and create its broker account; prints the node's broker URL with its credential, once",
    arguments: [{
      name: "<name>",
      description: "the node's name (a DNS label: a-z, 0-9, inner -)",
    }],
    options: [
      {
        flags: "--system <system>",
        description: `the node's system: ${SYSTEM_NAMES.slice(0, -1).join(", ")} or ${
          SYSTEM_NAMES.at(-1)
        }`,
        mandatory: true,
      },
      {
        flags: "--episodic",
        description: "the node is episodic (a laptop, a phone): away is no alarm (default: server)",
      },
      PUBLIC_BROKER_OPTION,
      NODE_IS_LOCAL_OPTION,
      CA_OUT_OPTION,
      SIGNING_KEY_OPTION,
      DATABASE_OPTION,
      BROKER_OPTION,
      BROKER_API_OPTION,
    ],
  },
  {
    name: "assign",
    summary: "assign a module to a node (rendered after the modules it already runs)",
    arguments: [NODE_ARGUMENT, { name: "<module>", description: "" }],
    options: [DATABASE_OPTION],
  },
  {
    name: "unassign",
    summary: "remove a module from a node (what it declared is removed at the next push)",
    arguments: [NODE_ARGUMENT, { name: "<module>", description: "" }],
    options: [DATABASE_OPTION],
  },
  {
    name: "kind",
    summary:
      "set what kind of machine a node is: server (silence is an alarm) or episodic (away is no alarm)",
    arguments: [NODE_ARGUMENT, { name: "<kind>", description: "server or episodic" }],
    options: [DATABASE_OPTION],
  },
  {
    name: "remove",
    summary:
      "remove a node from the mesh: its broker account, open connections and queue, and its rows (a removal record is kept)",
    arguments: [NODE_ARGUMENT],
    options: [DATABASE_OPTION, BROKER_OPTION, BROKER_API_OPTION],
  },
  {
    name: "rotate",
    summary:
      "give a node a new broker credential, printed once; the old one is refused at once, open connections included",
    arguments: [NODE_ARGUMENT],
    options: [
      PUBLIC_BROKER_OPTION,
      NODE_IS_LOCAL_OPTION,
      CA_OUT_OPTION,
      DATABASE_OPTION,
      BROKER_OPTION,
      BROKER_API_OPTION,
    ],
  },
] as const satisfies readonly CommandSpec[];

/** `module`'s subcommands. */
export const MODULE_COMMANDS = [
  {
    name: "add",
    summary:
      "add or update a module from a declaration fragment (JSON, version 1; origin: handed over)",
    arguments: [{ name: "<file>", description: "the fragment" }],
    options: [
      {
        flags: "--name <name>",
        description: "the module's name (default: the file's name without .json)",
      },
      DATABASE_OPTION,
    ],
  },
  {
    name: "build",
    summary:
      "ask a builder to build a module from a git source at a commit, wait for the answer, record it",
    arguments: [{ name: "<name>", description: "the module" }],
    options: [
      {
        flags: "--source <url>",
        description: "the git source (URL or path the builder can clone)",
        mandatory: true,
      },
      { flags: "--commit <rev>", description: "the commit to build", mandatory: true },
      {
        flags: "--branch <branch>",
        description: "the branch 'behind' is judged against (default: the source's)",
      },
      {
        flags: "--store <address>",
        description: "the artifact store (OCI registry host[:port]) to publish to",
        env: "MESH_ARTIFACT_STORE",
      },
      {
        flags: "--asker <name>",
        description: "this asker's name: its reply queue is mesh.build.reply.NAME",
        default: "control",
      },
      {
        flags: "--timeout <duration>",
        description: "how long to wait for the answer (>= 1s)",
        default: 30 * 60 * 1000,
        defaultDescription: "30m",
        parse: durationArgument("--timeout", { unit: "s", minMs: 1000, min: "1s", refuse }),
      },
      DATABASE_OPTION,
      BROKER_OPTION,
    ],
  },
  {
    name: "list",
    summary:
      "the catalogue: each module's version, digest, origin, whether it is behind its source, and the nodes that run it",
    options: [JSON_OPTION, DATABASE_OPTION],
  },
  {
    name: "remove",
    summary:
      "remove a module from the catalogue; refused while any node is assigned it (naming them)",
    arguments: [{ name: "<name>", description: "the module" }],
    options: [DATABASE_OPTION],
  },
] as const satisfies readonly CommandSpec[];

/** `builder`'s subcommands. */
export const BUILDER_COMMANDS = [
  {
    name: "issue",
    summary:
      "create a builder's broker account (reads the build queue, answers on the mesh exchange); prints its URL once",
    arguments: [
      {
        name: "<name>",
        description: "the builder's name (a DNS label); its account is builder.NAME",
      },
    ],
    options: [BROKER_OPTION, BROKER_API_OPTION],
  },
  {
    name: "revoke",
    summary:
      "delete a builder's broker account and close its open connections; a build it had taken returns to the queue for another builder",
    arguments: [{
      name: "<name>",
      description: "the builder's name (its account is builder.NAME)",
    }],
    options: [BROKER_OPTION, BROKER_API_OPTION],
  },
] as const satisfies readonly CommandSpec[];

/** `--dir` of `ca`'s subcommands: where the mesh's trust files are kept. */
const CA_DIR_OPTION = {
  flags: "--dir <dir>",
  description: "where the CA is kept: DIR/ca.crt, DIR/secrets/ca.key, DIR/tls/NAME.crt",
  default: "/etc/mesh",
} as const satisfies OptionSpec;

/** The options `ca issue` and `ca renew` share. */
const CA_CERT_OPTIONS = [
  {
    flags: "--name <name>",
    description:
      "a DNS name or IP address clients use to reach it; repeat it (or separate with commas) for each",
    mandatory: true,
    parse: (value, previous) => [
      ...((previous as string[] | undefined) ?? []),
      ...value.split(",").map((v) => v.trim()).filter((v) => v !== ""),
    ],
  },
  CA_DIR_OPTION,
  { flags: "--cert <path>", description: "write the certificate here (default DIR/tls/NAME.crt)" },
  {
    flags: "--key <path>",
    description:
      "write its key here (default DIR/secrets/tls/NAME.key, or DIR/tls/NAME.key with --key-group)",
  },
  {
    flags: "--key-group <group>",
    description:
      "the group of the server that reads the key (e.g. rabbitmq, postgres): the key is then 0640 root:GROUP, not 0600",
  },
] as const satisfies readonly OptionSpec[];

/** `ca`'s subcommands. */
export const CA_COMMANDS = [
  {
    name: "init",
    summary:
      "make the mesh's CA once (DIR/ca.crt 0644, DIR/secrets/ca.key 0600); one already there is left as it is",
    options: [CA_DIR_OPTION],
  },
  {
    name: "issue",
    summary:
      "issue a server certificate and key from the mesh's CA for the names and addresses clients use (replacing one there)",
    arguments: [{ name: "<name>", description: "what it is for (a DNS label): broker, store..." }],
    options: CA_CERT_OPTIONS,
  },
  {
    name: "renew",
    summary:
      "issue it only when it is missing or due: fewer than 30 days left, other names, not from the CA, or its key wrong (says which; idempotent)",
    arguments: [{ name: "<name>", description: "what it is for (a DNS label): broker, store..." }],
    options: [
      ...CA_CERT_OPTIONS,
      { flags: "--check", description: "say whether it is due and write nothing (exit 1: due)" },
    ],
  },
  {
    name: "show",
    summary:
      "the CA and the certificates in DIR/tls: subject, names, SHA-256 fingerprint, expiry, and which are due",
    options: [{ flags: "--json", description: "print as JSON" }, CA_DIR_OPTION],
  },
] as const satisfies readonly CommandSpec[];
