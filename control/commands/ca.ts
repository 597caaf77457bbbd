/**
 * `mesh-control ca`: the mesh's CA and the server certificates it issues: `init`, `issue`,
 * `renew`, `show` (control/ca_files.ts does them; this says what was done).
 *
 * @module
 */

import type { CommandAction, GroupActions } from "../../lib/cli_table.ts";
import type { CA_COMMANDS } from "../options.ts";
import type { CertDescription } from "../../lib/mesh_ca.ts";
import { printable } from "../../lib/printable.ts";
import type { ControlContext } from "./context.ts";

const DAY_MS = 24 * 3600 * 1000;

/** A certificate in one line: subject, SHA-256 fingerprint, expiry and days left. */
function line(d: CertDescription, now: number): string {
  const left = Math.floor((d.notAfter.getTime() - now) / DAY_MS);
  const expiry = left < 0
    ? `expired ${d.notAfter.toISOString()}`
    : `expires ${d.notAfter.toISOString()} (${left} days left)`;
  return `${printable(d.subject)}, sha256 ${d.fingerprint}, ${expiry}`;
}

interface CertOptions {
  name: string[];
  dir: string;
  cert?: string;
  key?: string;
  keyGroup?: string;
  check?: boolean;
}

/** `issue` (`force`) and `renew`: the same, saying what was done and why. */
function certAction(force: boolean): CommandAction<ControlContext, CertOptions> {
  return async (ctx, args, opts) => {
    const [name] = args as [string];
    const { ensureServerCert } = await import("../ca_files.ts");
    const r = await ensureServerCert(opts.dir, name, {
      names: opts.name,
      force,
      ...(opts.cert !== undefined ? { cert: opts.cert } : {}),
      ...(opts.key !== undefined ? { key: opts.key } : {}),
      ...(opts.keyGroup !== undefined ? { keyGroup: opts.keyGroup } : {}),
      ...(opts.check ? { check: true } : {}),
    });
    const now = Date.now();
    const why = r.reason !== undefined ? ` (${printable(r.reason)})` : "";
    if (r.outcome === "kept") {
      ctx.out(`${name}: kept, not due: ${line(r.description!, now)}; ${printable(r.cert)}\n`);
      return;
    }
    if (opts.check) {
      ctx.out(`${name}: due${why}; nothing written (--check)\n`);
      ctx.code = 1;
      return;
    }
    ctx.out(
      `${name}: ${r.outcome}${why}: ${line(r.description!, now)}; names ${
        printable(r.description!.names.join(", "))
      }\n  certificate ${printable(r.cert)} (0644), key ${printable(r.key)} (${
        opts.keyGroup !== undefined ? `0640, group ${printable(opts.keyGroup)}` : "0600"
      })\n`,
    );
  };
}

/**
 * The actions of `ca`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof CA_COMMANDS> = {
  init: async (ctx, _args, { dir }) => {
    const { initCa } = await import("../ca_files.ts");
    const r = await initCa(dir);
    const now = Date.now();
    ctx.out(
      r.made
        ? `made the mesh's CA: ${line(r.ca, now)}\n  certificate ${printable(r.cert)} (0644), key ${
          printable(r.key)
        } (0600)\n`
        : `the mesh's CA is already made, left as it is: ${line(r.ca, now)}; ${
          printable(r.cert)
        }\n`,
    );
  },
  issue: certAction(true),
  renew: certAction(false),
  show: async (ctx, _args, { dir, json }) => {
    const { showCa } = await import("../ca_files.ts");
    const r = await showCa(dir);
    if (json) {
      ctx.out(JSON.stringify(r, null, 2) + "\n");
      return;
    }
    const now = Date.now();
    const lines = [`CA ${printable(r.cert)}: ${line(r.ca, now)}`];
    for (const c of r.certs) {
      lines.push(
        `${printable(c.name)} ${printable(c.path)}: ${line(c.description, now)}; names ${
          printable(c.description.names.join(", ") || "(none)")
        }${c.fromCa ? "" : "; NOT issued by this CA"}${
          c.due !== undefined ? `; due: ${printable(c.due)}` : ""
        }`,
      );
    }
    if (r.certs.length === 0) lines.push(`no certificate in ${printable(`${dir}/tls`)}`);
    ctx.out(lines.join("\n") + "\n");
  },
};
