/**
 * `mesh-control broker`: the broker topology: `setup`, `convert`, `check`.
 *
 * @module
 */

import { type Command, Option } from "commander";
import type { CommandEntry } from "../../lib/cli_table.ts";
import {
  brokerApiOption,
  brokerOption,
  brokers,
  type Connections,
  type ControlContext,
  need,
} from "./context.ts";

/** Defines `broker` on `parent`. */
export function define(
  parent: Command,
  entry: CommandEntry<ControlContext>,
  ctx: ControlContext,
): void {
  const { out } = ctx;
  const brokerCommand = parent.command(entry.name).description(entry.summary);
  const queueTypeOption = () =>
    new Option(
      "--queue-type <type>",
      "classic (one broker) or quorum (replicated over a cluster's members)",
    ).choices(["classic", "quorum"]);
  brokerCommand.command("setup")
    .description("declare the durable mesh exchange and the shared queues (idempotent)")
    .addOption(queueTypeOption().default("classic"))
    .addOption(brokerOption())
    .action(async (opts: Connections & { queueType: "classic" | "quorum" }) => {
      const { setupQueues } = await import("../topology.ts");
      // Over AMQP only: the management API is not asked.
      const made = await setupQueues(brokers(opts), opts.queueType);
      out(`broker topology in place: ${made.join(", ")}\n`);
    });
  brokerCommand.command("convert")
    .description(
      "convert the shared queues and every node queue to another type, moving waiting messages (idempotent; finishes a conversion that stopped)",
    )
    .addOption(queueTypeOption().makeOptionMandatory())
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (opts: Connections & { queueType: "classic" | "quorum" }) => {
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
    });

  brokerCommand.command("check")
    .description(
      "ask the broker whether it works: an authenticated AMQP connection and the management API answering",
    )
    .option("--topology", "also find the mesh exchange and the shared queues (declares nothing)")
    .addOption(brokerOption())
    .addOption(brokerApiOption())
    .action(async (opts: Connections & { topology?: boolean }) => {
      const { checkBroker } = await import("../broker_admin.ts");
      // Every member is asked: a cluster works only when each member a program may fail over to
      // answers (the first that does not is the refusal).
      const urls = brokers(opts);
      const api = need(opts.brokerApi, "broker API", "--broker-api", "MESH_BROKER_API_URL");
      for (const amqp of urls) {
        const said = await checkBroker({ amqp, api }, { topology: opts.topology === true });
        for (const line of said) out(`${line}\n`);
      }
    });
}
