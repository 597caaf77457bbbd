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
import { runProgram, untilSignalled } from "../lib/cli.ts";
import { messageOf, readFileLimited, writeAll } from "../lib/atomic.ts";
import { parseDuration } from "../lib/duration.ts";
import { redactUrl } from "../lib/url.ts";
import { MAX_DECLARATION_BYTES } from "../host/declaration.ts";
import type { Sql } from "./db.ts";
import type { BrokerSession } from "../lib/amqp.ts";
import { VERSION, VERSION_FLAG_HELP } from "../lib/version.ts";

const EXIT_HELP = `
Connections (each option also read from the environment; the option wins):
  --database URL    MESH_DATABASE_URL    postgres://user@host:5432/inventory
  --broker URL      MESH_BROKER_URL      amqp://user:pass@host:5672/vhost
  --broker-api URL  MESH_BROKER_API_URL  http://user:pass@host:15672 (RabbitMQ management API)
A connection that is not given is refused, never defaulted.

Exit codes:
  0  done
  1  status: some nodes are not doing what they were told; module build: the build failed;
     push --behind: some behind nodes could not be pushed (each named, the rest were pushed)
  2  refused: bad input, or a database or broker that does not answer or refuses
     (nothing is half-written: database work runs in transactions)`;

/** Input refused before anything is done. */
class Refused extends Error {}

interface Connections {
  database?: string;
  broker?: string;
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
    new Option("--broker <url>", "the broker (AMQP), with an administrative account").env(
      "MESH_BROKER_URL",
    );
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
  const database = async (opts: Connections, requireMigrated = true): Promise<Sql> => {
    const url = need(opts.database, "database", "--database", "MESH_DATABASE_URL");
    const { connectDatabase } = await import("./db.ts");
    const sql = await connectDatabase(url, { requireMigrated });
    cleanups.push(() => sql.end({ timeout: 5 }));
    return sql;
  };
  const broker = async (opts: Connections): Promise<BrokerSession> => {
    const url = need(opts.broker, "broker", "--broker", "MESH_BROKER_URL");
    const { openBroker } = await import("../lib/amqp.ts");
    const session = await openBroker(url);
    cleanups.push(() => session.close());
    return session;
  };
  const endpoints = (opts: Connections) => ({
    amqp: need(opts.broker, "broker", "--broker", "MESH_BROKER_URL"),
    api: need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL"),
  });

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
  brokerCommand.command("setup")
    .description("declare the durable mesh exchange and the shared queues (idempotent)")
    .addOption(brokerOption())
    .action(async (opts: Connections) => {
      const { setupTopology } = await import("./broker_admin.ts");
      // Over AMQP only: the management API is not asked.
      const made = await setupTopology({
        amqp: need(opts.broker, "broker", "--broker", "MESH_BROKER_URL"),
        api: "",
      });
      out(`broker topology in place: ${made.join(", ")}\n`);
    });

  const node = program.command("node").description("nodes and their modules");
  node.command("enroll")
    .description(
      "record a node and create its broker account; prints the node's broker URL with its credential, once",
    )
    .argument("<name>", "the node's name (a DNS label: a-z, 0-9, inner -)")
    .requiredOption("--system <system>", "the node's system: arch, alpine, android or debian")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections & { system: string }) => {
      const { nodeNameProblem } = await import("../lib/broker.ts");
      const bad = nodeNameProblem(name);
      if (bad !== undefined) throw new Refused(`Cannot enroll node: ${bad}`);
      const ends = endpoints(opts);
      const sql = await database(opts);
      const { insertNode } = await import("./inventory.ts");
      const { createNodeAccount, deleteNodeAccount } = await import("./broker_admin.ts");
      let account: { url: string } | undefined;
      try {
        await sql.begin(async (tx) => {
          await insertNode(tx, name, opts.system);
          account = await createNodeAccount(ends, name);
        });
      } catch (error) {
        // The database rolled back; an account made before the commit failed is removed.
        if (account !== undefined) await deleteNodeAccount(ends, name).catch(() => {});
        throw error;
      }
      out(
        `enrolled ${name} (${opts.system}); its broker URL, shown this once and kept nowhere else:\n${
          account!.url
        }\n`,
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
        .argParser((v) => {
          let ms: number;
          try {
            ms = parseDuration(v, { bareUnit: "s" });
          } catch (error) {
            throw new Refused(`--timeout: ${messageOf(error)}`);
          }
          if (ms < 1000) throw new Refused(`--timeout: at least 1s, not "${v}"`);
          return ms;
        }),
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
        const sql = await database(opts);
        const session = await broker(opts);
        const { askBuild } = await import("./catalogue.ts");
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
      const account = await createBuilderAccount(endpoints(opts), name);
      out(
        `issued ${account.account}; its broker URL, shown this once and kept nowhere else:\n${account.url}\n`,
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
        .argParser((v) => {
          try {
            return parseDuration(v, { bareUnit: "s" });
          } catch (error) {
            throw new Refused(`--stuck-after: ${messageOf(error)}`);
          }
        }),
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
        let session: BrokerSession | undefined;
        if (!opts.dryRun) {
          session = await broker(opts);
          // Reports waiting on the broker first: acting on stale ones would push to nodes
          // that already caught up.
          const { ingestReports } = await import("./ingest.ts");
          await ingestReports(sql, session.channel, {
            drain: true,
            onDrop: (d) => err(`mesh-control: dropped a report (${d.routingKey}): ${d.reason}\n`),
          });
        }
        const result = await push.pushBehind(sql, session?.channel, {
          stuckAfter: opts.stuckAfter,
          dryRun: opts.dryRun,
        });
        const verb = opts.dryRun ? "would push" : "pushed";
        for (const p of result.pushed) {
          out(
            `${verb}${opts.dryRun ? "" : ` generation ${p.generation}`} to ${p.node}: ${p.why}\n`,
          );
          if (p.stuck !== undefined) out(`  ${p.node}: ${p.stuck}\n`);
        }
        for (const s of result.skipped) out(`not pushed to ${s.node}: ${s.why}\n`);
        for (const s of result.unpushable) {
          err(`mesh-control: cannot push to ${s.node}: ${s.why}\n`);
        }
        if (result.unpushable.length > 0) code = 1;
        if (result.pushed.length === 0 && result.unpushable.length === 0) {
          out(
            `nothing behind: ${
              result.nodes - result.skipped.length
            } of ${result.nodes} nodes report a clean apply of their current declaration\n`,
          );
        } else {
          out(
            `${verb} to ${result.pushed.length} of ${result.nodes} nodes; ${
              result.nodes - result.pushed.length - result.skipped.length -
              result.unpushable.length
            } not behind${
              result.unpushable.length ? `; ${result.unpushable.length} behind and not pushed` : ""
            }\n`,
          );
        }
      },
    );

  const boardAction =
    (kind: "status" | "board") => async (opts: Connections & { json?: boolean }) => {
      const sql = await database(opts);
      const { readNodeStates } = await import("./inventory.ts");
      const report = await import("./report.ts");
      // One read; both forms are rendered from it.
      const board = report.gatherBoard(await readNodeStates(sql));
      if (kind === "board") {
        out(opts.json ? report.boardJson(board) : report.boardText(board));
      } else {
        out(opts.json ? report.statusJson(board) : report.statusText(board));
        code = report.behindMachines(board).length > 0 ? 1 : 0;
      }
    };
  program.command("status")
    .description(
      "the nodes not doing what they were told: refused, failed, outstanding, never spoke",
    )
    .option("--json", "print as JSON")
    .addOption(databaseOption())
    .action(boardAction("status"));
  program.command("board")
    .description("every node: what it was told, what it last said, how much applied")
    .option("--json", "print as JSON")
    .addOption(databaseOption())
    .action(boardAction("board"));

  program.command("ingest")
    .description("record reports from the broker in the inventory (runs until stopped)")
    .option("--drain", "stop once the reports queue is empty")
    .addOption(databaseOption())
    .addOption(brokerOption())
    .action(async (opts: Connections & { drain?: boolean }) => {
      const sql = await database(opts);
      const session = await broker(opts);
      const { ingestReports } = await import("./ingest.ts");
      await untilSignalled(async (signal) => {
        const closed = new Promise<never>((_, reject) =>
          session.connection.once(
            "close",
            () => reject(new Refused("The broker closed the connection")),
          )
        );
        const result = await Promise.race([
          ingestReports(sql, session.channel, {
            drain: opts.drain,
            signal,
            onDrop: (d) => err(`mesh-control: dropped a report (${d.routingKey}): ${d.reason}\n`),
          }),
          closed,
        ]);
        out(
          `ingested ${result.ingested} report${result.ingested === 1 ? "" : "s"}${
            result.dropped.length ? `; dropped ${result.dropped.length}` : ""
          }\n`,
        );
      });
    });

  try {
    return await runProgram(program, args, {
      err,
      code: () => code,
      usageCode: 2,
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
