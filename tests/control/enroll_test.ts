/**
 * `mesh-control node enroll` against the real PostgreSQL and RabbitMQ: the credential is printed
 * once, works, and is kept nowhere the database can give it back; a failed enroll leaves nothing.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { run } from "../../lib/command.ts";
import { openBroker } from "../../lib/amqp.ts";
import { deleteNodeAccount } from "../../control/broker_admin.ts";
import { BROKER_API_URL, BROKER_URL, controlCli, freshInventory, uniqueNode } from "./support.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const endpoints = { amqp: BROKER_URL, api: BROKER_API_URL };

async function brokerUser(name: string): Promise<Response> {
  return await fetch(`http://127.0.0.1:15672/api/users/${encodeURIComponent(name)}`, {
    headers: { authorization: `Basic ${btoa("guest:guest")}` },
  });
}

Deno.test("enroll prints the credential once; the database cannot give it back", opts, async () => {
  const inv = await freshInventory();
  const node = uniqueNode("enr");
  try {
    assertEquals((await controlCli(["broker", "setup"], inv.env)).code, 0);
    const out = await controlCli(
      ["node", "enroll", node, "--system", "debian", "--node-is-local"],
      inv.env,
    );
    assertEquals(out.code, 0, out.stderr);
    const url = out.stdout.split("\n").find((l) => l.startsWith("amqp://"))!;
    const password = decodeURIComponent(new URL(url).password);
    assert(password.length >= 40, `a weak password: ${password.length} characters`);

    // It works: the node can connect with it.
    const session = await openBroker(url);
    await session.channel.checkQueue(`mesh.node.${node}`);
    await session.close();

    // Nothing that reads the database can recover it: not in any table.
    const dump = await run(["pg_dump", "--data-only", inv.url]);
    assert(dump.stdout.includes(node), "the dump holds the node (the check can see data)");
    assert(!dump.stdout.includes(password), "the password is in the database");
    assert(!dump.stdout.includes(encodeURIComponent(password)), "the password is in the database");

    // The broker keeps a salted hash, not the password.
    const user = await (await brokerUser(node)).json();
    assert(user.password_hash && user.password_hash !== password, JSON.stringify(user));
    assertEquals(user.tags, []);

    // Enrolling the same name again is refused and changes nothing.
    const again = await controlCli([
      "node",
      "enroll",
      node,
      "--system",
      "debian",
      "--node-is-local",
    ], inv.env);
    assertEquals(again.code, 2);
    assertMatch(again.stderr, /already enrolled/);
    const still = await openBroker(url);
    await still.close();
  } finally {
    await deleteNodeAccount(endpoints, node).catch(() => {});
    await inv.drop();
  }
});

Deno.test("an enroll the broker refuses leaves no node behind", opts, async (t) => {
  const inv = await freshInventory();
  const node = uniqueNode("enr");
  try {
    await t.step("management API not answering", async () => {
      const out = await controlCli([
        "node",
        "enroll",
        node,
        "--system",
        "debian",
        "--node-is-local",
      ], {
        ...inv.env,
        MESH_BROKER_API_URL: "http://guest:guest@127.0.0.1:1",
      });
      assertEquals(out.code, 2);
      assertMatch(out.stderr, /127\.0\.0\.1:1/);
      assert(!out.stderr.includes("guest:guest"), out.stderr);
    });
    await t.step("management API refusing the credential", async () => {
      const out = await controlCli([
        "node",
        "enroll",
        node,
        "--system",
        "debian",
        "--node-is-local",
      ], {
        ...inv.env,
        MESH_BROKER_API_URL: "http://guest:wrong@127.0.0.1:15672",
      });
      assertEquals(out.code, 2);
      assert(!out.stderr.includes("wrong"), out.stderr);
    });
    await t.step("an unknown system", async () => {
      const out = await controlCli(["node", "enroll", node, "--system", "windows"], inv.env);
      assertEquals(out.code, 2);
      assertMatch(out.stderr, /system "windows" is not one of arch, alpine, android, debian/);
    });
    assertEquals((await inv.sql`select name from nodes`).length, 0);
    assertEquals((await brokerUser(node)).status, 404);
  } finally {
    await deleteNodeAccount(endpoints, node).catch(() => {});
    await inv.drop();
  }
});
