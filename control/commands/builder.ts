/**
 * `mesh-control builder`: build machines' accounts: `issue`, `revoke`.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { BUILDER_COMMANDS } from "../options.ts";
import { connect, type ControlContext, Refused } from "./context.ts";

/**
 * The actions of `builder`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof BUILDER_COMMANDS> = {
  issue: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out } = ctx;
    const { endpoints } = connect(ctx);
    const { createBuilderAccount } = await import("../broker_admin.ts");
    const ends = await endpoints(opts);
    const account = await createBuilderAccount(ends, name);
    const { withCredential } = await import("../../lib/broker_urls.ts");
    account.url = ends.members.length === 1
      ? account.url
      : ends.members.map((m) => withCredential(m, account.account, account.password)).join(",");
    out(
      `issued ${account.account}; its broker URL, shown this once and kept nowhere else:\n${account.url}\n`,
    );
  },
  revoke: async (ctx, args, opts) => {
    const [name] = args as [string];
    const { out } = ctx;
    const { endpoints } = connect(ctx);
    const { revokeBuilderAccount } = await import("../broker_admin.ts");
    const { builderAccount } = await import("../../lib/broker.ts");
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
  },
};
