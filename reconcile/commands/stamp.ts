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
      "serve the stamp read-only over HTTP(S) (GET / or /stamp), its age measured on this machine",
    )
    .requiredOption(
      "--listen <addr>",
      "HOST:PORT or [IPv6]:PORT to listen on (an address is required, never defaulted)",
    )
    .option("--stamp <path>", "the stamp", "/var/lib/mesh/reconcile/stamp")
    .option("--cert <path>", "serve HTTPS with this certificate (PEM, issued by the mesh CA)")
    .option("--key <path>", "the certificate's private key (PEM, mode 0600)")
    .option(
      "--allow-plain-http",
      "allow plain HTTP on an address that is not loopback (its answer can be forged on the way)",
    )
    .addHelpText(
      "after",
      '\nAnswers (JSON): 200 {"state":"stamped","stamp","stampedAt","ageSeconds","servedAt"},' +
        '\n200 {"state":"never"} when no stamp was written, 500 {"state":"error","problem",' +
        '"reason"}\nwhen it cannot be read or holds garbage. Only GET and HEAD. Runs until SIGTERM' +
        " or SIGINT.\nWithout --cert and --key it listens on a loopback address only (behind the" +
        " edge),\nunless --allow-plain-http.",
    )
    .action(async (
      opts: { listen: string; stamp: string; cert?: string; key?: string; allowPlainHttp?: true },
    ) => {
      const { parseListen, serveStamp } = await import("../stamp_serve.ts");
      const { isLoopback, plainAllowed, PLAIN_ENV } = await import("../../lib/wire_trust.ts");
      let listen;
      try {
        listen = parseListen(opts.listen);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      if ((opts.cert === undefined) !== (opts.key === undefined)) {
        throw new UsageError(
          `${opts.cert === undefined ? "--key" : "--cert"} needs ${
            opts.cert === undefined ? "--cert" : "--key"
          }: HTTPS is served with a certificate and its key`,
        );
      }
      if (opts.cert !== undefined && opts.allowPlainHttp) {
        throw new UsageError("--allow-plain-http with --cert: it serves HTTPS, never plain HTTP");
      }
      if (
        opts.cert === undefined && !plainAllowed(opts.allowPlainHttp) &&
        !isLoopback(listen.hostname)
      ) {
        throw new UsageError(
          `Cannot listen on "${opts.listen}" over plain HTTP: ${listen.hostname} is not a ` +
            "loopback address, so anyone on the way could answer for this server; give --cert " +
            "and --key (a certificate from the mesh CA), listen on loopback behind the edge, or " +
            `--allow-plain-http (or ${PLAIN_ENV}=1)`,
        );
      }
      let tls: { cert: string; key: string } | undefined;
      let certificate = "";
      if (opts.cert !== undefined && opts.key !== undefined) {
        const { describeCert, readCertificate, readSecretKey, renewalReason } = await import(
          "../../lib/mesh_ca.ts"
        );
        tls = { cert: await readCertificate(opts.cert), key: await readSecretKey(opts.key) };
        const { names, notAfter } = describeCert(tls.cert);
        certificate = `; certificate "${opts.cert}" for ${names.join(", ") || "no name"}, ` +
          `valid until ${notAfter.toISOString()}`;
        const due = renewalReason(tls.cert);
        if (due !== undefined) {
          ctx.err(`mesh-reconcile: certificate "${opts.cert}" is due for renewal: ${due}\n`);
        }
      }
      const { dirname } = await import("node:path");
      const dir = dirname(opts.stamp);
      if (!(await Deno.stat(dir).then((i) => i.isDirectory, () => false))) {
        throw new UsageError(
          `Cannot serve stamp "${opts.stamp}": directory "${dir}" does not exist`,
        );
      }
      // The signals are listened for before the port is: a stop that comes as soon as the port
      // accepts (a unit stopped at once, a test) is a clean stop, never the default death.
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
      let server;
      try {
        server = await serveStamp(listen, opts.stamp, tls ? { tls } : {}).catch((error) => {
          throw tls === undefined ? error : new Error(
            `${messageOf(error)} (certificate "${opts.cert}", key "${opts.key}")`,
            { cause: error },
          );
        });
      } catch (error) {
        for (const remove of listeners) remove();
        clearTimeout(late);
        throw error;
      }
      const host = server.addr.hostname.includes(":")
        ? `[${server.addr.hostname}]`
        : server.addr.hostname;
      ctx.err(
        `serving stamp "${opts.stamp}" on ${
          tls ? "https" : "http"
        }://${host}:${server.addr.port}/ ` +
          `(read-only${certificate})\n`,
      );
      const signal = await Promise.race([stopped.promise, server.finished.then(() => undefined)]);
      for (const remove of listeners) remove();
      await server.shutdown();
      clearTimeout(late);
      ctx.err(`stopped serving${signal ? ` (${signal})` : ""}\n`);
      ctx.code = 0;
    });
}
