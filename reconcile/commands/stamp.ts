/**
 * `mesh-reconcile stamp`: `serve`: the dead-man stamp over HTTP.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { STAMP_COMMANDS } from "../options.ts";
import { messageOf } from "../../lib/atomic.ts";
import { STOP_GRACE_MS } from "../../lib/wait.ts";
import { type ReconcileContext, UsageError } from "./context.ts";

/**
 * The action of `stamp`'s subcommand, by name (declared in reconcile/options.ts), given what its
 * options there parse to.
 */
export const actions: GroupActions<ReconcileContext, typeof STAMP_COMMANDS> = {
  serve: async (ctx, _args, opts) => {
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
      `serving stamp "${opts.stamp}" on ${tls ? "https" : "http"}://${host}:${server.addr.port}/ ` +
        `(read-only${certificate})\n`,
    );
    const signal = await Promise.race([stopped.promise, server.finished.then(() => undefined)]);
    for (const remove of listeners) remove();
    await server.shutdown();
    clearTimeout(late);
    ctx.err(`stopped serving${signal ? ` (${signal})` : ""}\n`);
    ctx.code = 0;
  },
};
