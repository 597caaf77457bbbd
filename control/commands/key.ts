/**
 * `mesh-control key`: the control plane's signing key: `init` (once), `rotate`, `show`
 * (docs/mesh-control.md; docs/design.md, "Signed declarations").
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { KEY_COMMANDS } from "../options.ts";
import type { ControlContext } from "./context.ts";

/**
 * The actions of `key`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof KEY_COMMANDS> = {
  init: async (ctx, _args, opts) => {
    const { initSigningKey } = await import("../signer.ts");
    const id = await initSigningKey(opts.signingKey, opts.publicKey);
    ctx.out(
      `made the signing key ${id}: private "${opts.signingKey}" (0600, this machine only), public "${opts.publicKey}" (every node keeps it as /etc/mesh/control.pub)\n`,
    );
  },
  rotate: async (ctx, _args, opts) => {
    const { rotateSigningKey } = await import("../signer.ts");
    const { from, to } = await rotateSigningKey(opts.signingKey, opts.publicKey);
    ctx.out(
      `rotated the signing key from ${from} to ${to}: every push from now on is signed by ${to} and hands the nodes its public key signed by ${from}; a node that holds neither must be given "${opts.publicKey}" again\n`,
    );
  },
  show: async (ctx, _args, opts) => {
    const { readSigningKey, publicKeyPem } = await import("../../lib/signing.ts");
    const key = await readSigningKey(opts.signingKey);
    // The PEM alone on stdout, so that `key show > /etc/mesh/control.pub` is the file a node keeps.
    ctx.out(publicKeyPem(key.spki));
    ctx.err(`mesh-control: key ${key.keyId}: write it at /etc/mesh/control.pub on every node\n`);
  },
};
