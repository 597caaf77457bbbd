/**
 * `mesh-control builder`: build machines' accounts: `issue`, `revoke`.
 *
 * @module
 */

import type { Command } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import {
  brokerApiOption,
  brokerOption,
  connect,
  type Connections,
  type ControlContext,
  Refused,
} from "./context.ts";

/** Defines `builder` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  const { out } = ctx;
  const { endpoints } = connect(ctx);
  const builderCommand = parent.command(entry.name).description(entry.summary);
  builderCommand.command("issue")
    .description(
      "create a builder's broker account (reads the build queue, answers on the mesh exchange); prints its URL once",
    )
    .argument("<name>", "the builder's name (a DNS label); its account is builder.NAME")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
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
    });
  builderCommand.command("revoke")
    .description(
      "delete a builder's broker account and close its open connections; a build it had taken returns to the queue for another builder",
    )
    .argument("<name>", "the builder's name (its account is builder.NAME)")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (name: string, opts: Connections) => {
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
    });
}
