/**
 * `mesh-control broker`: the broker topology: `setup`, `convert`, `check`.
 *
 * @module
 */

import type { GroupActions } from "../../lib/cli_table.ts";
import type { BROKER_COMMANDS } from "../options.ts";
import { brokers, type ControlContext, need } from "./context.ts";

/**
 * The actions of `broker`'s subcommands, by name (declared in control/options.ts), each
 * given what its options there parse to.
 */
export const actions: GroupActions<ControlContext, typeof BROKER_COMMANDS> = {
  setup: async (ctx, _args, opts) => {
    const { out } = ctx;
    const { setupQueues } = await import("../topology.ts");
    // Over AMQP only: the management API is not asked.
    const made = await setupQueues(brokers(opts), opts.queueType);
    out(`broker topology in place: ${made.join(", ")}\n`);
  },
  convert: async (ctx, _args, opts) => {
    const { out } = ctx;
    const { convertTopology } = await import("../topology.ts");
    const done = await convertTopology(
      {
        amqp: brokers(opts),
        api: need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL"),
      },
      opts.queueType,
      {
        onQueue: (c) => {
          const moved = `${c.moved} message${c.moved === 1 ? "" : "s"} moved`;
          out(
            c.from === c.to
              ? `finished converting ${c.queue} to ${c.to} (${moved} back from ${c.queue}.migrating)\n`
              : `converted ${c.queue} from ${c.from} to ${c.to} (${moved})\n`,
          );
        },
      },
    );
    out(
      done.length === 0
        ? `every mesh queue is already ${opts.queueType}\n`
        : `converted ${done.length} queue${done.length === 1 ? "" : "s"} to ${opts.queueType}\n`,
    );
  },
  check: async (ctx, _args, opts) => {
    const { out } = ctx;
    const { checkBroker } = await import("../broker_admin.ts");
    // Every member is asked: a cluster works only when each member a program may fail over to
    // answers (the first that does not is the refusal).
    const urls = brokers(opts);
    const api = need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL");
    for (const amqp of urls) {
      const said = await checkBroker({ amqp, api }, { topology: opts.topology === true });
      for (const line of said) out(`${line}\n`);
    }
  },
};
