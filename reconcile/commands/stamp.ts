/**
 * `mesh-reconcile stamp`: `serve`: the dead-man stamp over HTTP.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import { messageOf } from "../../lib/atomic.ts";
import { STOP_GRACE_MS } from "../../lib/wait.ts";
import { type ReconcileContext, UsageError } from "./context.ts";

/** Defines `stamp` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ReconcileContext>,
  ctx: ReconcileContext,
): void {
  parent.command(entry.name)
    .description(entry.summary)
    .command("serve")
    .description(
      "serve the stamp read-only over HTTP (GET / or /stamp), its age measured on this machine",
    )
    .requiredOption(
      "--listen <addr>",
      "HOST:PORT or [IPv6]:PORT to listen on (an address is required, never defaulted)",
    )
    .option("--stamp <path>", "the stamp to serve", "/var/lib/mesh/reconcile/stamp")
    .addHelpText(
      "after",
      '\nAnswers (JSON): 200 {"state":"stamped","stamp","stampedAt","ageSeconds","servedAt"},' +
        '\n200 {"state":"never"} when no stamp was written, 500 {"state":"error","problem",' +
        '"reason"}\nwhen it cannot be read or holds garbage. Only GET and HEAD. Runs until SIGTERM' +
        " or SIGINT.",
    )
    .action(async (opts: { listen: string; stamp: string }) => {
      const { parseListen, serveStamp } = await import("../stamp_serve.ts");
      let listen;
      try {
        listen = parseListen(opts.listen);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      const { dirname } = await import("node:path");
      const dir = dirname(opts.stamp);
      if (!(await Deno.stat(dir).then((i) => i.isDirectory, () => false))) {
        throw new UsageError(
          `Cannot serve stamp "${opts.stamp}": directory "${dir}" does not exist`,
        );
      }
      const server = await serveStamp(listen, opts.stamp);
      const host = server.addr.hostname.includes(":")
        ? `[${server.addr.hostname}]`
        : server.addr.hostname;
      ctx.err(`serving stamp "${opts.stamp}" on http://${host}:${server.addr.port}/ (read-only)\n`);
      const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
      const stopped = Promise.withResolvers<Deno.Signal>();
      // A request still being answered is waited for, but never past the grace: the server
      // ends within 2 s of the signal (docs/design.md, "Hostile inputs", rule 1).
      let late: ReturnType<typeof setTimeout> | undefined;
      const listeners = signals.map((signal) => {
        const listener = () => {
          stopped.resolve(signal);
          late ??= setTimeout(() => {
            ctx.err(`stopped serving (${signal}; a request still open was not waited for)\n`);
            Deno.exit(0);
          }, STOP_GRACE_MS);
        };
        Deno.addSignalListener(signal, listener);
        return () => Deno.removeSignalListener(signal, listener);
      });
      const signal = await Promise.race([stopped.promise, server.finished.then(() => undefined)]);
      for (const remove of listeners) remove();
      await server.shutdown();
      clearTimeout(late);
      ctx.err(`stopped serving${signal ? ` (${signal})` : ""}\n`);
      ctx.code = 0;
    });
}
