/**
 * `mesh-control module`: the module catalogue: `add`, `build`, `list`, `remove`.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { messageOf, readFileLimited } from "../../lib/atomic.ts";
import { durationArgument } from "../../lib/duration.ts";
import { MAX_DECLARATION_BYTES } from "../../host/declaration.ts";
import {
  brokerOption,
  connect,
  type Connections,
  type ControlContext,
  databaseOption,
  refuse,
  Refused,
} from "./context.ts";

/** Defines `module` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  const { out, err } = ctx;
  const { database, broker } = connect(ctx);
  const moduleCommand = parent.command(entry.name).description(entry.summary);
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
      const { addModule } = await import("../inventory.ts");
      // Parsed before the database is asked: a fragment that does not parse is refused even
      // when the database is away.
      const { parse } = await import("../../host/declaration.ts");
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
        const { askBuild, assertBuildAsk } = await import("../catalogue.ts");
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
          ctx.code = 1;
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
      const { readCatalogue, catalogueJson, catalogueText } = await import("../catalogue.ts");
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
      const { removeModule } = await import("../leave.ts");
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
}
