/**
 * push --behind when some nodes cannot be pushed: the rest of the fleet is pushed, each node that
 * could not be is named with why, and the exit is 1. Real PostgreSQL and RabbitMQ.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { openBroker } from "../../lib/amqp.ts";
import { nodeQueue } from "../../lib/broker.ts";
import { deleteNodeAccount } from "../../control/broker_admin.ts";
import { BROKER_API_URL, BROKER_URL, controlCli, freshInventory, uniqueNode } from "./support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const endpoints = { amqp: BROKER_URL, api: BROKER_API_URL };

Deno.test("one node that cannot be pushed does not hold back the fleet", opts, async (t) => {
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-push-" });
  const [clashing, fine, queueless] = [uniqueNode("clash"), uniqueNode("fine"), uniqueNode("gone")];
  const run = async (args: string[]) => await controlCli(args, inv.env);
  const must = async (args: string[]) => {
    const out = await run(args);
    assertEquals(out.code, 0, `${args.join(" ")}: ${out.stderr}`);
    return out;
  };
  try {
    await must(["broker", "setup"]);
    for (const n of [clashing, fine, queueless]) {
      await must(["node", "enroll", n, "--system", "debian", "--node-is-local"]);
    }
    const module = async (name: string, path: string) => {
      await Deno.writeTextFile(
        `${dir}/${name}.json`,
        JSON.stringify({
          version: 1,
          resources: [{ id: "motd", type: "file", path, content: "x\n", mode: "0644" }],
        }),
      );
      await must(["module", "add", `${dir}/${name}.json`]);
    };
    await module("one", `${dir}/one`);
    await module("two", `${dir}/two`);
    await must(["node", "assign", clashing, "one"]);
    await must(["node", "assign", clashing, "two"]); // both declare the id "motd"
    await must(["node", "assign", fine, "one"]);
    await must(["node", "assign", queueless, "one"]);
    const s = await openBroker(BROKER_URL);
    await s.channel.deleteQueue(nodeQueue(queueless));
    await s.close();

    await t.step(
      "the others are pushed; each that is not is named, and the exit is 1",
      async () => {
        const out = await run(["push", "--behind"]);
        assertEquals(out.code, 1, out.stdout + out.stderr);
        assertMatch(out.stdout, new RegExp(`pushed generation 1 to ${fine}: never pushed`));
        assertMatch(
          out.stderr,
          new RegExp(`cannot push to ${clashing}: its modules do not render: .*"motd"`),
        );
        assertMatch(
          out.stderr,
          new RegExp(
            `cannot push to ${queueless}: its queue ${nodeQueue(queueless)} does not exist`,
          ),
        );
        assertMatch(out.stdout, /pushed to 1 of 3 nodes; 0 not behind; 2 behind and not pushed/);
        const rows = await inv.sql`select node, generation from declarations`;
        assertEquals(
          rows.map((r) => r.node),
          [fine],
          "only the node that was pushed has a generation",
        );
      },
    );

    await t.step("the dry run says the same without pushing", async () => {
      const out = await run(["push", "--behind", "--dry-run"]);
      assertEquals(out.code, 1, out.stdout + out.stderr);
      assertMatch(out.stderr, new RegExp(`cannot push to ${clashing}`));
      // Pushed generation 1 and silent since: left waiting on it, not pushed again (no churn).
      assertMatch(out.stdout, new RegExp(`${fine}: left generation 1 waiting, pushed `));
      assert(!out.stdout.includes(`would push to ${fine}`), out.stdout);
      assertMatch(out.stdout, new RegExp(`would push to ${queueless}: never pushed`));
    });
  } finally {
    for (const n of [clashing, fine, queueless]) {
      await deleteNodeAccount(endpoints, n).catch(() => {});
    }
    await inv.drop();
    await Deno.remove(dir, { recursive: true });
  }
});
