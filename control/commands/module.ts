/**
 * `mesh-control module`: the module catalogue: `add`, `build`, `list`, `remove`.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { MODULE_COMMANDS } from "../options.ts";
import { messageOf } from "../../lib/atomic.ts";
import { readRegularFile } from "../../lib/regular_file.ts";
import { MAX_DECLARATION_BYTES } from "../../lib/declaration.ts";
import { connect, type ControlContext, Refused } from "./context.ts";

/**
 * The actions of `module`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof MODULE_COMMANDS> = {
  add: async (ctx, args, opts) => {
    const [file] = args as [string];
    const { out } = ctx;
    const { database } = connect(ctx);
    let bytes: Uint8Array;
    try {
      bytes = await readRegularFile(file, { maxBytes: MAX_DECLARATION_BYTES });
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
    const { parseModule } = await import("../module_file.ts");
    try {
      parseModule(body);
    } catch (error) {
      throw new Refused(`Cannot add module "${name}" from "${file}": ${messageOf(error)}`);
    }
    const sql = await database(opts);
    const change = await addModule(sql, name, body);
    out(
      `${change.change} module ${change.name} version ${change.version} (${change.resources} resources, ${change.digest})\n`,
    );
  },
  build: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out, err } = ctx;
    const { database, broker } = connect(ctx);
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
  list: async (ctx, _args, opts) => {
    const { out } = ctx;
    const { database } = connect(ctx);
    const sql = await database(opts);
    const { readCatalogue, catalogueJson, catalogueText } = await import("../catalogue.ts");
    const entries = await readCatalogue(sql);
    out(opts.json ? catalogueJson(entries) : catalogueText(entries));
  },
  remove: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out } = ctx;
    const { database } = connect(ctx);
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
  },
};
