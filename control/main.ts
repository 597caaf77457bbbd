/**
 * `mesh-control`: the control plane's command line. The only layer that prints. The database and
 * broker clients are loaded only by the commands that use them.
 *
 * Exit codes: 0 done; 1 `status` found nodes not doing what they were told; 2 refused (bad input,
 * a database or broker that does not answer or refuses, nothing half-written).
 *
 * @module
 */

import { Command, Option } from "commander";
import { addExitCodes, type ExitCode, runProgram, untilSignalled } from "../lib/cli.ts";
import {
  assertWritablePath,
  messageOf,
  readFileLimited,
  writeAll,
  writeFileAtomic,
} from "../lib/atomic.ts";
import { durationArgument } from "../lib/duration.ts";
import { redactUrl } from "../lib/url.ts";
import { brokerUrls, collectBrokerUrls } from "../lib/broker_urls.ts";
import { MAX_DECLARATION_BYTES } from "../host/declaration.ts";
import { DEFAULT_GRACE_MS } from "./state.ts";
import type { Sql } from "./db.ts";
import type { BrokerSession } from "../lib/amqp.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";

const EXIT_HELP = `
Connections (each option also read from the environment; the option wins):
  --database URL    MESH_DATABASE_URL    postgres://user@host:5432/inventory
  --broker URL      MESH_BROKER_URL      amqp://user:pass@host:5672/vhost (repeat it, or
                                         separate URLs with commas, for a cluster's members)
  --broker-api URL  MESH_BROKER_API_URL  http://user:pass@host:15672 (RabbitMQ management API)
  --database-read URL  MESH_DATABASE_READ_URL  a hot standby status and board read from
A connection that is not given is refused, never defaulted.`;

/** What each exit code means, by command: the one table help is rendered from. */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: 0, meaning: "done" },
  {
    code: 1,
    meaning: "some nodes are not doing what they were told (refused, failed, silent, " +
      "outstanding, never spoke; an episodic node away is no alarm)",
    commands: ["status"],
  },
  { code: 1, meaning: "the build failed", commands: ["module build"] },
  {
    code: 1,
    meaning: "--behind: some behind nodes could not be pushed (each named, the rest were pushed)",
    commands: ["push"],
  },
  {
    code: 2,
    meaning: "refused: bad input, or a database or broker that does not answer or refuses " +
      "(nothing is half-written: database work runs in transactions)",
  },
];

/** Input refused before anything is done. */
class Refused extends Error {}
/** Throws as this program's refusal (exit 2): for the shared option parsers. */
const refuse = (message: string): Error => new Refused(message);

interface Connections {
  database?: string;
  broker?: string[];
  brokerApi?: string;
}

/**
 * Runs `mesh-control` with `args` and returns its exit code.
 */
export async function controlMain(args: string[]): Promise<number> {
  const out = (s: string) => writeAll(Deno.stdout, s);
  const err = (s: string) => writeAll(Deno.stderr, s);
  let code = 0;
  const cleanups: (() => Promise<void>)[] = [];

  const databaseOption = () =>
    new Option("--database <url>", "the inventory database").env("MESH_DATABASE_URL");
  const brokerOption = () =>
    new Option(
      "--broker <url>",
      "the broker (AMQP), with an administrative account; repeat it (or separate URLs with commas) for each member of a cluster",
    ).env("MESH_BROKER_URL").argParser(collectBrokerUrls);
  const brokerApiOption = () =>
    new Option("--broker-api <url>", "the broker's management HTTP API").env(
      "MESH_BROKER_API_URL",
    );

  const need = (value: string | undefined, what: string, option: string, env: string) => {
    if (value === undefined || value === "") {
      throw new Refused(`No ${what} given: pass ${option} URL or set ${env}`);
    }
    return value;
  };
  const brokers = (opts: Connections): string[] => {
    if (opts.broker === undefined || opts.broker.length === 0) {
      throw new Refused("No broker given: pass --broker URL or set MESH_BROKER_URL");
    }
    try {
      return brokerUrls(opts.broker);
    } catch (error) {
      throw new Refused(`--broker: ${messageOf(error)}`);
    }
  };
  const database = async (opts: Connections, requireMigrated = true): Promise<Sql> => {
    const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
    const { connectDatabase } = await import("./db.ts");
    const sql = await connectDatabase(url, { requireMigrated });
    cleanups.push(() => sql.end({ timeout: 5 }));
    return sql;
  };
  const broker = async (opts: Connections, startAt = 0): Promise<BrokerSession> => {
    const urls = brokers(opts);
    const { openBroker } = await import("../lib/amqp.ts");
    const session = await openBroker(urls, { startAt });
    cleanups.push(() => session.close());
    return session;
  };
  // The management API administers users and permissions; over AMQP it is the first member
  // that answers (a cluster's members share users, permissions and queues).
  const endpoints = async (opts: Connections) => {
    const urls = brokers(opts);
    const api = need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL");
    if (urls.length === 1) return { amqp: urls[0]!, api, members: urls };
    const { openBroker } = await import("../lib/amqp.ts");
    const probe = await openBroker(urls);
    await probe.close();
    return { amqp: probe.url, api, members: urls };
  };

  const program = new Command()
    .name("mesh-control")
    .version(VERSION, "-V, --version", VERSION_FLAG_HELP)
    .description("mesh control plane: inventory, push, status, board, broker accounts")
    .addHelpText("after", EXIT_HELP)
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err });

  program.command("migrate")
    .description("create the inventory database if missing and apply pending migrations")
    .addOption(databaseOption())
    .action(async (opts: Connections) => {
      const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
      const { createDatabaseIfMissing, migrate } = await import("./db.ts");
      const created = await createDatabaseIfMissing(url);
      const sql = await database(opts, false);
      const applied = await migrate(sql);
      const { installShipped } = await import("./shipped.ts");
      const shipped = await installShipped(sql);
      if (created) out(`created database ${new URL(url).pathname.slice(1)}\n`);
      out(
        applied.length === 0
          ? "inventory is current: no migration pending\n"
          : `applied ${applied.length} migration${applied.length === 1 ? "" : "s"}: ${
            applied.join(", ")
          }\n`,
      );
      for (const m of shipped) {
        if ("skipped" in m) err(`mesh-control: shipped module ${m.name}: ${m.skipped}\n`);
        else if (m.change !== "unchanged") {
          out(`shipped module ${m.name} version ${m.version} (${m.change})\n`);
        }
      }
    });

  const brokerCommand = program.command("broker").description("broker topology");
  const queueTypeOption = () =>
    new Option(
      "--queue-type <type>",
      "classic (one broker) or quorum (replicated over a cluster's members)",
    ).choices(["classic", "quorum"]);
  brokerCommand.command("setup")
    .description("declare the durable mesh exchange and the shared queues (idempotent)")
    .addOption(queueTypeOption().default("classic"))
    .addOption(brokerOption())
    .action(async (opts: Connections & { queueType: "classic" | "quorum" }) => {
      const { setupQueues } = await import("./topology.ts");
      // Over AMQP only: the management API is not asked.
      const made = await setupQueues(brokers(opts), opts.queueType);
      out(`broker topology in place: ${made.join(", ")}\n`);
    });
  brokerCommand.command("convert")
    .description(
      "convert the shared queues and every node queue to another type, moving waiting messages (idempotent; finishes a conversion that stopped)",
    )
    .addOption(queueTypeOption().makeOptionMandatory())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (opts: Connections & { queueType: "classic" | "quorum" }) => {
      const { convertTopology } = await import("./topology.ts");
      const done = await convertTopology(
        {
          amqp: brokers(opts),
          api: need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL"),
        },
        opts.queueType,
        {
          onQueue: (c) => {
            const moved = `${c.moved} message${c.moved === 1 ? "" : "s"} moved`;
            out(
              c.from === c.to
                ? `finished converting ${c.queue} to ${c.to} (${moved} back from ${c.queue}.migrating)\n`
                : `converted ${c.queue} from ${c.from} to ${c.to} (${moved})\n`,
            );
          },
        },
      );
      out(
        done.length === 0
          ? `every mesh queue is already ${opts.queueType}\n`
          : `converted ${done.length} queue${done.length === 1 ? "" : "s"} to ${opts.queueType}\n`,
      );
    });

  brokerCommand.command("check")
    .description(
      "ask the broker whether it works: an authenticated AMQP connection and the management API answering",
    )
    .option("--topology", "also find the mesh exchange and the shared queues (declares nothing)")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (opts: Connections & { topology?: boolean }) => {
      const { checkBroker } = await import("./broker_admin.ts");
      // Every member is asked: a cluster works only when each member a program may fail over to
      // answers (the first that does not is the refusal).
      const urls = brokers(opts);
      const api = need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL");
      for (const amqp of urls) {
        const said = await checkBroker({ amqp, api }, { topology: opts.topology === true });
        for (const line of said) out(`${line}\n`);
      }
    });

  const node = program.command("node").description("nodes and their modules");
  node.command("enroll")
    .description(
      "record a node and create its broker account; prints the node's broker URL with its credential, once",
    )
    .argument("<name>", "the node's name (a DNS label: a-z, 0-9, inner -)")
    .requiredOption("--system <system>", "the node's system: arch, alpine, android or debian")
    .option(
      "--episodic",
      "the node is episodic (a laptop, a phone): away is no alarm (default: server)",
    )
    .addOption(databaseOption())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections & { system: string; episodic?: boolean }) => {
      const { nodeNameProblem } = await import("../lib/broker.ts");
      const bad = nodeNameProblem(name);
      if (bad !== undefined) throw new Refused(`Cannot enroll node: ${bad}`);
      // The arguments are judged before any connection is asked for.
      const { SYSTEMS } = await import("./inventory.ts");
      if (!(SYSTEMS as readonly string[]).includes(opts.system)) {
        throw new Refused(
          `Cannot enroll node "${name}": system "${opts.system}" is not one of ${
            SYSTEMS.join(", ")
          }`,
        );
      }
      const ends = await endpoints(opts);
      const sql = await database(opts);
      const { insertNode } = await import("./inventory.ts");
      const { createNodeAccount, deleteNodeAccount } = await import("./broker_admin.ts");
      // The node's queue takes the type of the topology it joins (that of mesh.reports).
      const { existingQueueType } = await import("./topology.ts");
      const { REPORTS_QUEUE } = await import("../lib/broker.ts");
      const queueType = await existingQueueType(ends.amqp, REPORTS_QUEUE) ?? "classic";
      let account: { url: string; account: string; password: string } | undefined;
      try {
        await sql.begin(async (tx) => {
          await insertNode(tx, name, opts.system, {
            kind: opts.episodic ? "episodic" : "server",
          });
          account = await createNodeAccount(ends, name, { queueType });
        });
      } catch (error) {
        // The database rolled back; an account made before the commit failed is removed.
        if (account !== undefined) await deleteNodeAccount(ends, name).catch(() => {});
        throw error;
      }
      // With several members, the node gets each one's URL with its account (comma-separated,
      // as mesh-host link --broker and MESH_BROKER_URL take them).
      const { withCredential } = await import("../lib/broker_urls.ts");
      const url = ends.members.length === 1
        ? account!.url
        : ends.members.map((m) => withCredential(m, account!.account, account!.password)).join(
          ",",
        );
      out(
        `enrolled ${name} (${opts.system}, ${
          opts.episodic ? "episodic" : "server"
        }); its broker URL, shown this once and kept nowhere else:\n${url}\n`,
      );
    });
  node.command("assign")
    .description("assign a module to a node (rendered after the modules it already runs)")
    .argument("<node>")
    .argument("<module>")
    .addOption(databaseOption())
    .action(async (name: string, module: string, opts: Connections) => {
      const sql = await database(opts);
      const { assignModule } = await import("./inventory.ts");
      const added = await assignModule(sql, name, module);
      out(
        added ? `assigned ${module} to ${name}\n` : `${module} was already assigned to ${name}\n`,
      );
    });
  node.command("unassign")
    .description("remove a module from a node (what it declared is removed at the next push)")
    .argument("<node>")
    .argument("<module>")
    .addOption(databaseOption())
    .action(async (name: string, module: string, opts: Connections) => {
      const sql = await database(opts);
      const { unassignModule } = await import("./inventory.ts");
      const removed = await unassignModule(sql, name, module);
      if (!removed) throw new Refused(`Module "${module}" is not assigned to "${name}"`);
      out(`unassigned ${module} from ${name}\n`);
    });
  node.command("kind")
    .description(
      "set what kind of machine a node is: server (silence is an alarm) or episodic (away is no alarm)",
    )
    .argument("<node>")
    .argument("<kind>", "server or episodic")
    .addOption(databaseOption())
    .action(async (name: string, kind: string, opts: Connections) => {
      const { NODE_KINDS } = await import("./state.ts");
      if (!(NODE_KINDS as readonly string[]).includes(kind)) {
        throw new Refused(
          `Cannot set the kind of node "${name}": "${kind}" is not one of ${NODE_KINDS.join(", ")}`,
        );
      }
      const sql = await database(opts);
      const { setNodeKind } = await import("./inventory.ts");
      const before = await setNodeKind(sql, name, kind);
      out(
        before === kind
          ? `${name} is already ${kind}\n`
          : `${name} is now ${kind} (was ${before})\n`,
      );
    });
  node.command("remove")
    .description(
      "remove a node from the mesh: its broker account, open connections and queue, and its rows (a removal record is kept)",
    )
    .argument("<node>")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
      const ends = await endpoints(opts);
      const sql = await database(opts);
      const { removeNode } = await import("./leave.ts");
      const r = await removeNode(sql, ends, name);
      const broker = `${
        r.account ? "broker account deleted" : "no broker account left"
      }, ${r.connections} open connection${r.connections === 1 ? "" : "s"} closed, queue deleted`;
      switch (r.outcome) {
        case "removed":
          out(
            `removed ${r.node}: ${broker}; ${r.rows.declarations} declarations, ${r.rows.reports} reports and ${r.rows.assignments} assignments deleted; removal recorded at ${r.removedAt.toISOString()}\n`,
          );
          break;
        case "already-removed":
          out(
            `${r.node} was already removed at ${r.removedAt.toISOString()}; broker checked again: ${broker}\n`,
          );
          break;
      }
    });
  node.command("rotate")
    .description(
      "give a node a new broker credential, printed once; the old one is refused at once, open connections included",
    )
    .argument("<node>")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
      const ends = await endpoints(opts);
      const sql = await database(opts);
      const { rotateNode } = await import("./leave.ts");
      const { RotationIncomplete } = await import("./broker_admin.ts");
      try {
        const r = await rotateNode(sql, ends, name);
        // With several members, each one's URL with the new credential (as enroll prints them).
        const { withCredential } = await import("../lib/broker_urls.ts");
        const url = ends.members.length === 1
          ? r.url
          : ends.members.map((m) => withCredential(m, r.account, r.password)).join(",");
        out(
          `rotated the credential of ${name}: the old one is refused, ${r.connections} open connection${
            r.connections === 1 ? "" : "s"
          } closed; its new broker URL, shown this once and kept nowhere else:\n${url}\n`,
        );
      } catch (error) {
        if (error instanceof RotationIncomplete) {
          // The new credential is the only one that works now: shown, or it would be lost.
          out(`the new broker URL of ${name}, shown this once:\n${error.account.url}\n`);
        }
        throw error;
      }
    });

  const moduleCommand = program.command("module").description("the module catalogue");
  moduleCommand.command("add")
    .description(
      "add or update a module from a declaration fragment (JSON, version 1; origin: handed over)",
    )
    .argument("<file>", "the fragment")
    .option("--name <name>", "the module's name (default: the file's name without .json)")
    .addOption(databaseOption())
    .action(async (file: string, opts: Connections & { name?: string }) => {
      let bytes: Uint8Array;
      try {
        bytes = await readFileLimited(file, MAX_DECLARATION_BYTES);
      } catch (error) {
        throw new Refused(`Cannot read module file "${file}": ${messageOf(error)}`);
      }
      let body: string;
      try {
        body = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        throw new Refused(`Cannot read module file "${file}": it is not UTF-8 text`);
      }
      const name = opts.name ?? file.replace(/^.*\//, "").replace(/\.json$/, "");
      const { addModule } = await import("./inventory.ts");
      // Parsed before the database is asked: a fragment that does not parse is refused even
      // when the database is away.
      const { parse } = await import("../host/declaration.ts");
      try {
        parse(body);
      } catch (error) {
        throw new Refused(`Cannot add module "${name}" from "${file}": ${messageOf(error)}`);
      }
      const sql = await database(opts);
      const change = await addModule(sql, name, body);
      out(
        `${change.change} module ${change.name} version ${change.version} (${change.resources} resources, ${change.digest})\n`,
      );
    });

  moduleCommand.command("build")
    .description(
      "ask a builder to build a module from a git source at a commit, wait for the answer, record it",
    )
    .argument("<name>", "the module")
    .requiredOption("--source <url>", "the git source (URL or path the builder can clone)")
    .requiredOption("--commit <rev>", "the commit to build")
    .option("--branch <branch>", "the branch 'behind' is judged against (default: the source's)")
    .addOption(
      new Option("--store <address>", "the artifact store (OCI registry host[:port]) to publish to")
        .env("MESH_ARTIFACT_STORE"),
    )
    .option(
      "--asker <name>",
      "this asker's name: its reply queue is mesh.build.reply.NAME",
      "control",
    )
    .addOption(
      new Option("--timeout <duration>", "how long to wait for the answer (>= 1s)")
        .default(30 * 60 * 1000, "30m")
        .argParser(
          durationArgument("--timeout", { unit: "s", minMs: 1000, min: "1s", refuse }),
        ),
    )
    .addOption(databaseOption())
    .addOption(brokerOption())
    .action(
      async (
        name: string,
        opts: Connections & {
          source: string;
          commit: string;
          branch?: string;
          store?: string;
          asker: string;
          timeout: number;
        },
      ) => {
        const { askBuild, assertBuildAsk } = await import("./catalogue.ts");
        // The arguments are judged before any connection is asked for.
        assertBuildAsk({
          module: name,
          asker: opts.asker,
          store: opts.store,
          source: opts.source,
        });
        const sql = await database(opts);
        const session = await broker(opts);
        const result = await askBuild(sql, session.channel, {
          module: name,
          source: opts.source,
          commit: opts.commit,
          store: opts.store,
          branch: opts.branch,
          asker: opts.asker,
          timeoutMs: opts.timeout,
          onOther: (line) => err(`mesh-control: ${line}\n`),
        });
        const a = result.answer;
        if (a.outcome === "built") {
          const m = result.module;
          out(
            `built ${a.module} at ${a.resolved?.slice(0, 12)} by ${a.builder}: ${a.image}\n` +
              (m ? `module ${a.module} version ${m.version} (${m.change})\n` : ""),
          );
        } else {
          out(`build of ${a.module} at ${a.commit} failed (builder ${a.builder}): ${a.reason}\n`);
          code = 1;
        }
      },
    );
  moduleCommand.command("list")
    .description(
      "the catalogue: each module's version, digest, origin, whether it is behind its source, and the nodes that run it",
    )
    .option("--json", "print as JSON")
    .addOption(databaseOption())
    .action(async (opts: Connections & { json?: boolean }) => {
      const sql = await database(opts);
      const { readCatalogue, catalogueJson, catalogueText } = await import("./catalogue.ts");
      const entries = await readCatalogue(sql);
      out(opts.json ? catalogueJson(entries) : catalogueText(entries));
    });

  moduleCommand.command("remove")
    .description(
      "remove a module from the catalogue; refused while any node is assigned it (naming them)",
    )
    .argument("<name>", "the module")
    .addOption(databaseOption())
    .action(async (name: string, opts: Connections) => {
      const sql = await database(opts);
      const { removeModule } = await import("./leave.ts");
      const r = await removeModule(sql, name);
      switch (r.outcome) {
        case "removed":
          out(`removed module ${r.module} (version ${r.version}); its build history is kept\n`);
          break;
        case "already-removed":
          out(`module ${r.module} was already removed at ${r.removedAt.toISOString()}\n`);
          break;
      }
    });

  const builderCommand = program.command("builder").description("build machines' accounts");
  builderCommand.command("issue")
    .description(
      "create a builder's broker account (reads the build queue, answers on the mesh exchange); prints its URL once",
    )
    .argument("<name>", "the builder's name (a DNS label); its account is builder.NAME")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
      const { createBuilderAccount } = await import("./broker_admin.ts");
      const ends = await endpoints(opts);
      const account = await createBuilderAccount(ends, name);
      const { withCredential } = await import("../lib/broker_urls.ts");
      account.url = ends.members.length === 1
        ? account.url
        : ends.members.map((m) => withCredential(m, account.account, account.password)).join(",");
      out(
        `issued ${account.account}; its broker URL, shown this once and kept nowhere else:\n${account.url}\n`,
      );
    });
  builderCommand.command("revoke")
    .description(
      "delete a builder's broker account and close its open connections; a build it had taken returns to the queue for another builder",
    )
    .argument("<name>", "the builder's name (its account is builder.NAME)")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
      const { revokeBuilderAccount } = await import("./broker_admin.ts");
      const { builderAccount } = await import("../lib/broker.ts");
      const r = await revokeBuilderAccount(await endpoints(opts), name);
      const closed = `${r.connections} open connection${r.connections === 1 ? "" : "s"} closed`;
      if (!r.account && r.connections === 0) {
        throw new Refused(
          `Cannot revoke builder "${name}": there is no broker account ${
            builderAccount(name)
          } and no connection of it (never issued, or already revoked); nothing done`,
        );
      }
      out(
        r.account
          ? `revoked ${builderAccount(name)}: account deleted, ${closed}\n`
          : `${builderAccount(name)} had no account left (revoked before); ${closed}\n`,
      );
    });

  program.command("push")
    .description(
      "render a node's declaration from its modules and publish it; or, with --behind, to every node whose last report is not a clean apply of its current declaration",
    )
    .argument("[node]", "the node to push to")
    .option("--behind", "push to every node that is behind, each named with why")
    .addOption(
      new Option("--stuck-after <duration>", "say so of a node failing the same way this long")
        .default(60 * 60 * 1000, "1h")
        .argParser(durationArgument("--stuck-after", { unit: "s", refuse })),
    )
    .option("--dry-run", "with --behind: say which nodes are behind and why, push nothing")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .action(
      async (
        name: string | undefined,
        opts: Connections & { behind?: boolean; stuckAfter: number; dryRun?: boolean },
      ) => {
        if (name !== undefined && opts.behind) {
          throw new Refused(
            `push: naming a node ("${name}") and asking which nodes are behind (--behind) are different requests; give one`,
          );
        }
        if (name === undefined && !opts.behind) {
          throw new Refused("push: name a node, or ask for --behind");
        }
        if (opts.dryRun && !opts.behind) throw new Refused("push: --dry-run goes with --behind");
        const sql = await database(opts);
        const push = await import("./push.ts");
        if (name !== undefined) {
          const session = await broker(opts);
          const p = await push.pushNode(sql, session.channel, name);
          out(
            `pushed generation ${p.generation} to ${p.node} (${p.total} resources, ${p.digest})\n`,
          );
          return;
        }
        // A member lost during the push rolls its transaction back (nothing recorded, see
        // publishRendered): the push is made again through the next member, once per member.
        const members = opts.dryRun ? 1 : brokers(opts).length;
        let result: Awaited<ReturnType<typeof push.pushBehind>> | undefined;
        let startAt = 0;
        for (let attempt = 1; result === undefined; attempt++) {
          let session: BrokerSession | undefined;
          let closed = false;
          try {
            if (!opts.dryRun) {
              session = await broker(opts, startAt);
              session.connection.once("close", () => closed = true);
              // Reports waiting on the broker first: acting on stale ones would push to nodes
              // that already caught up.
              const { ingestReports } = await import("./ingest.ts");
              await ingestReports(sql, session.channel, {
                drain: true,
                onDrop: (d) =>
                  err(`mesh-control: dropped a report (${d.routingKey}): ${d.reason}\n`),
              });
            }
            result = await push.pushBehind(sql, session?.channel, {
              stuckAfter: opts.stuckAfter,
              dryRun: opts.dryRun,
            });
          } catch (error) {
            // Only a lost connection is failed over; a refusal or a nack is the answer.
            if (session !== undefined && !closed) await new Promise((r) => setTimeout(r, 200));
            if (!closed || attempt >= members + 1 || session === undefined) throw error;
            err(
              `mesh-control: lost the broker ${redactUrl(session.url)} during the push (${
                messageOf(error)
              }); nothing was recorded, pushing again\n`,
            );
            startAt = session.member + 1;
            await session.close();
          }
        }
        const verb = opts.dryRun ? "would push" : "pushed";
        for (const p of result.pushed) {
          out(
            `${verb}${opts.dryRun ? "" : ` generation ${p.generation}`} to ${p.node}: ${p.why}\n`,
          );
          if (p.stuck !== undefined) out(`  ${p.node}: ${p.stuck}\n`);
        }
        for (const s of result.skipped) out(`not pushed to ${s.node}: ${s.why}\n`);
        for (const s of result.waiting) out(`${s.node}: ${s.why}\n`);
        for (const s of result.unpushable) {
          err(`mesh-control: cannot push to ${s.node}: ${s.why}\n`);
        }
        if (result.unpushable.length > 0) code = 1;
        const waiting = result.waiting.length
          ? `; ${result.waiting.length} left waiting on what they were pushed`
          : "";
        if (
          result.pushed.length === 0 && result.unpushable.length === 0 &&
          result.waiting.length === 0
        ) {
          out(
            `nothing behind: ${
              result.nodes - result.skipped.length
            } of ${result.nodes} nodes report a clean apply of their current declaration\n`,
          );
        } else {
          out(
            `${verb} to ${result.pushed.length} of ${result.nodes} nodes; ${
              result.nodes - result.pushed.length - result.skipped.length -
              result.unpushable.length - result.waiting.length
            } not behind${waiting}${
              result.unpushable.length ? `; ${result.unpushable.length} behind and not pushed` : ""
            }\n`,
          );
        }
      },
    );

  const boardAction = (kind: "status" | "board") =>
  async (
    opts: Connections & {
      json?: boolean;
      html?: string;
      databaseRead?: string;
      maxLag: number;
      grace: number;
    },
  ) => {
    if (opts.html !== undefined) {
      // A page that cannot be written is refused before anything is read.
      try {
        await assertWritablePath(opts.html);
      } catch (error) {
        throw new Refused(`--html: ${messageOf(error)}`);
      }
    }
    // Reads only: from the standby when one is given (every write goes to the primary).
    let sql: Sql;
    let source: import("./read_source.ts").ReadSource = { kind: "primary" };
    let sourceText = "";
    if (opts.databaseRead !== undefined && opts.databaseRead !== "") {
      const standby = await import("./read_source.ts");
      const read = await standby.connectStandby(opts.databaseRead, { maxLagMs: opts.maxLag });
      cleanups.push(() => read.sql.end({ timeout: 5 }));
      sql = read.sql;
      source = read.source;
      sourceText = standby.sourceText(source);
    } else {
      sql = await database(opts);
    }
    const { readClock, readNodeStates } = await import("./inventory.ts");
    const { readDrift } = await import("./drift.ts");
    const report = await import("./report.ts");
    // One read; every form (text, --json, --html) is rendered from it. Silence is judged on the
    // database's clock (the one that stamped each report's receipt), read alongside: a clock read
    // a moment before a report's receipt judges that node quiet for 0 s, never silent.
    const [states, drift, now] = await Promise.all([
      readNodeStates(sql),
      readDrift(sql),
      readClock(sql),
    ]);
    const board = report.gatherBoard(states, { now, graceMs: opts.grace }, drift);
    const json = (text: string) =>
      source.kind === "primary"
        ? text
        : JSON.stringify({ ...JSON.parse(text), readFrom: source }, null, 2) + "\n";
    if (kind === "board") {
      if (opts.html !== undefined) {
        const { boardHtml } = await import("./board_html.ts");
        try {
          await writeFileAtomic(opts.html, boardHtml(board));
        } catch (error) {
          throw new Refused(messageOf(error));
        }
        out(`wrote the board of ${board.nodes} nodes to ${opts.html}\n`);
      }
      if (opts.json) out(json(report.boardJson(board)));
      else if (opts.html === undefined) out(sourceText + report.boardText(board));
    } else {
      out(opts.json ? json(report.statusJson(board)) : sourceText + report.statusText(board));
      code = report.attentionMachines(board).length > 0 ? 1 : 0;
    }
  };
  const graceOption = () =>
    new Option(
      "--grace <duration>",
      "silence rule: a node is heard for 2 reconcile intervals plus this after its last report",
    )
      .default(DEFAULT_GRACE_MS, "1m")
      .argParser(durationArgument("--grace", { unit: "s", refuse }));
  const readOptions = (command: Command) =>
    command
      .addOption(graceOption())
      .addOption(
        new Option(
          "--database-read <url>",
          "read from this PostgreSQL hot standby instead (the board says how old its data is)",
        ).env("MESH_DATABASE_READ_URL"),
      )
      .addOption(
        new Option(
          "--max-lag <duration>",
          "with --database-read: a replay lag beyond this is said to make the data stale",
        )
          .default(60_000, "60s")
          .argParser(durationArgument("--max-lag", { unit: "s", refuse })),
      );
  readOptions(
    program.command("status")
      .description(
        "the nodes not doing what they were told (refused, failed, silent, outstanding, never spoke) or whose drift is an alarm (drift, unobservable, unreadable, stale); and episodic nodes away (no alarm)",
      )
      .option("--json", "print as JSON")
      .addOption(databaseOption()),
  ).action(boardAction("status"));
  readOptions(
    program.command("board")
      .description(
        "every node: its kind, what it was told, what it last said, how much applied, when last heard, and its drift verdict",
      )
      .option("--json", "print as JSON")
      .option(
        "--html <file>",
        "also write the board as one self-contained HTML page (atomically) to this file",
      )
      .addOption(databaseOption()),
  ).action(boardAction("board"));

  program.command("prune")
    .description(
      "delete reports received longer ago than --keep, except each node's latest (bounds the inventory's growth)",
    )
    .addOption(
      new Option("--keep <duration>", "keep reports this recent (>= 1h; e.g. 14d)")
        .makeOptionMandatory()
        .argParser(
          durationArgument("--keep", { unit: "d", minMs: 3600_000, min: "1h", refuse }),
        ),
    )
    .option("--dry-run", "count what would be deleted, delete nothing")
    .addOption(databaseOption())
    .action(async (opts: Connections & { keep: number; dryRun?: boolean }) => {
      const sql = await database(opts);
      const { pruneReports } = await import("./retention.ts");
      const pruned = await pruneReports(sql, opts.keep, { dryRun: opts.dryRun });
      out(
        `${opts.dryRun ? "would delete" : "deleted"} ${pruned.deleted} report${
          pruned.deleted === 1 ? "" : "s"
        } received before ${pruned.before} (each node's latest is kept); ${pruned.kept} ${
          opts.dryRun ? "would be " : ""
        }left\n`,
      );
    });

  program.command("ingest")
    .description("record reports from the broker in the inventory (runs until stopped)")
    .option("--drain", "stop once the reports queue is empty")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .action(async (opts: Connections & { drain?: boolean }) => {
      const sql = await database(opts);
      const { ingestReports } = await import("./ingest.ts");
      const total = { ingested: 0, dropped: 0, duplicates: 0 };
      let startAt = 0;
      await untilSignalled(async (signal) => {
        // A member that goes away is left for the next one (the reports it held unacknowledged
        // are delivered again there; a report recorded already is recorded once).
        for (let lost = 0;;) {
          const session = await broker(opts, startAt);
          const stop = new AbortController();
          const onAbort = () => stop.abort();
          signal.addEventListener("abort", onAbort);
          let closed = false;
          session.connection.once("close", () => {
            closed = true;
            stop.abort();
          });
          let result: Awaited<ReturnType<typeof ingestReports>> | undefined;
          try {
            result = await ingestReports(sql, session.channel, {
              drain: opts.drain,
              signal: stop.signal,
              onDrop: (d) => err(`mesh-control: dropped a report (${d.routingKey}): ${d.reason}\n`),
            });
          } catch (error) {
            if (!closed && !/closed/i.test(messageOf(error))) throw error;
          } finally {
            signal.removeEventListener("abort", onAbort);
          }
          if (result !== undefined) {
            total.ingested += result.ingested;
            total.dropped += result.dropped.length;
            total.duplicates += result.duplicates;
          }
          if (!closed) break;
          if (signal.aborted) break;
          lost++;
          if (lost > brokers(opts).length) {
            throw new Refused("The broker closed the connection, on every member in turn");
          }
          err(
            `mesh-control: the broker ${
              redactUrl(session.url)
            } closed the connection; going on with the next member\n`,
          );
          startAt = session.member + 1;
          await session.close();
        }
        out(
          `ingested ${total.ingested} report${total.ingested === 1 ? "" : "s"}${
            total.dropped ? `; dropped ${total.dropped}` : ""
          }${total.duplicates ? `; ${total.duplicates} delivered again, recorded once` : ""}\n`,
        );
      });
    });

  addExitCodes(program, EXIT_CODES);
  try {
    return await runProgram(program, args, {
      err,
      code: () => code,
      usageCode: 2,
      redact: redactSecrets,
      onError: (error) => {
        err(`mesh-control: ${redactSecrets(messageOf(error))}\n`);
        return 2;
      },
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

/** Any URL with a password in an error message, redacted. */
function redactSecrets(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"']+/gi, (url) => redactUrl(url));
}

if (import.meta.main) {
  Deno.exit(await controlMain(Deno.args));
}
