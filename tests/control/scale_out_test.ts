/**
 * Scale-out on a real three-member RabbitMQ cluster started on this machine (next to, never on,
 * the machine's own broker): a classic topology converted to quorum queues without losing a
 * waiting message, node accounts that keep working, links and the control plane given every
 * member and failing over when the member leading a node's queue stops during `push --behind`,
 * and when the member leading `mesh.reports` stops while reports flow. No declaration and no
 * report is lost, every node converges, every report is recorded exactly once.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import { startRabbitCluster } from "../support/rabbit_cluster.ts";
import { controlCli, freshInventory, mustControl, uniqueNode, waitFor } from "./support.ts";
import { readNodeStates } from "../../control/inventory.ts";
import { EXCHANGE, nodeQueue, reportKey, type ReportMessage } from "../../lib/broker.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { TEST_KEYS } from "../support/signing.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

async function queueTypes(api: string): Promise<Map<string, string>> {
  const u = new URL(api);
  const response = await fetch(`http://${u.host}/api/queues/%2F?columns=name,type`, {
    headers: { authorization: `Basic ${btoa("guest:guest")}` },
  });
  const body = await response.json() as { name: string; type: string }[];
  return new Map(body.map((q) => [q.name, q.type]));
}

function startLink(url: string, stateDir: string): JsonLinesProcess<ReportMessage> {
  return spawnJsonLines([
    `${ROOT}systems/debian/main.ts`,
    "link",
    "--control-key",
    TEST_KEYS.controlKey,
    "--broker",
    url,
    "--state-dir",
    stateDir,
    "--every",
    "1s",
    "--json",
  ]);
}

Deno.test(
  "a three-member cluster: classic to quorum, then members leading queues stop while mesh works",
  opts,
  async (t) => {
    const cluster = await startRabbitCluster({ members: 3 });
    const inv = await freshInventory();
    const dir = await Deno.makeTempDir({ prefix: "mesh-scale-" });
    const links: JsonLinesProcess<ReportMessage>[] = [];
    const nodes = [uniqueNode("qa"), uniqueNode("qb")];
    const urls = new Map<string, string>();
    inv.env.MESH_BROKER_URL = cluster.urls.join(",");
    inv.env.MESH_BROKER_API_URL = cluster.members[0]!.api;
    try {
      await t.step(
        "a classic topology on the cluster, nodes enrolled, messages waiting",
        async () => {
          await mustControl(inv.env, ["broker", "setup", "--queue-type", "classic"]);
          for (const node of nodes) {
            const out = await mustControl(inv.env, [
              "node",
              "enroll",
              node,
              "--system",
              "debian",
              "--node-is-local",
            ]);
            const url = out.stdout.split("\n").find((l) => l.startsWith("amqp://"));
            assert(url, out.stdout);
            // One URL per member, each with the node's own account.
            assertEquals(url.split(",").length, 3, url);
            urls.set(node, url);
            const module = `${dir}/m-${node}.json`;
            await Deno.writeTextFile(
              module,
              JSON.stringify({
                version: 1,
                resources: [
                  { id: "root", type: "directory", path: `${dir}/${node}`, mode: "0755" },
                  {
                    id: "motd",
                    type: "file",
                    path: `${dir}/${node}/motd`,
                    content: `${node}\n`,
                    mode: "0644",
                  },
                ],
              }),
            );
            await mustControl(inv.env, ["module", "add", module]);
            await mustControl(inv.env, ["node", "assign", node, `m-${node}`]);
          }
          // A declaration waits in the first node's queue; a report of the second waits in
          // mesh.reports, published with its own account through the second member.
          await mustControl(inv.env, ["push", nodes[0]!]);
          const second = urls.get(nodes[1]!)!.split(",")[1]!;
          const session = await openBroker(second);
          try {
            const report: ReportMessage = {
              kind: "report",
              node: nodes[1]!,
              generation: 0,
              trigger: "start",
              at: new Date().toISOString(),
              hostVersion: "test",
              outcome: "applied",
              applied: 0,
              total: 0,
              declaration: `sha256:${"0".repeat(64)}`,
              changes: [],
              problems: [],
            };
            const body = new TextEncoder().encode(JSON.stringify(report));
            // The same report twice: as a link sends it again when its confirm was lost.
            for (let i = 0; i < 2; i++) {
              await publishConfirmed(session.channel, [{
                exchange: EXCHANGE,
                routingKey: reportKey(nodes[1]!),
                body,
              }]);
            }
          } finally {
            await session.close();
          }
          const types = await queueTypes(cluster.members[0]!.api);
          assertEquals(types.get("mesh.reports"), "classic");
          assertEquals(types.get(nodeQueue(nodes[0]!)), "classic");
        },
      );

      await t.step(
        "setup as quorum over a classic topology is refused, naming the queue",
        async () => {
          const out = await controlCli(["broker", "setup", "--queue-type", "quorum"], inv.env);
          assertEquals(out.code, 2, out.stdout + out.stderr);
          assertMatch(
            out.stderr,
            /queue "mesh\.reports" exists on amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+ as a classic queue.*broker convert --queue-type quorum/,
          );
        },
      );

      await t.step("broker convert --queue-type quorum moves every waiting message", async () => {
        const out = await mustControl(inv.env, ["broker", "convert", "--queue-type", "quorum"]);
        assertMatch(
          out.stdout,
          /converted mesh\.reports from classic to quorum \(2 messages moved\)/,
        );
        assertMatch(
          out.stdout,
          new RegExp(
            `converted ${
              nodeQueue(nodes[0]!).replaceAll(".", "\\.")
            } from classic to quorum \\(1 message moved\\)`,
          ),
        );
        const types = await queueTypes(cluster.members[0]!.api);
        for (const q of ["mesh.reports", "mesh.build", ...nodes.map(nodeQueue)]) {
          assertEquals(types.get(q), "quorum", q);
        }
        assert(![...types.keys()].some((q) => q.endsWith(".migrating")), [...types.keys()].join());
        // Idempotent: nothing left to convert, and setup as quorum now agrees.
        const again = await mustControl(inv.env, ["broker", "convert", "--queue-type", "quorum"]);
        assertMatch(again.stdout, /every mesh queue is already quorum/);
        await mustControl(inv.env, ["broker", "setup", "--queue-type", "quorum"]);
        // A node enrolled now gets a queue of the topology's type.
        const late = uniqueNode("qc");
        await mustControl(inv.env, [
          "node",
          "enroll",
          late,
          "--system",
          "debian",
          "--node-is-local",
        ]);
        assertEquals((await queueTypes(cluster.members[0]!.api)).get(nodeQueue(late)), "quorum");
        // A conversion that stopped half-way (a temporary queue left holding a message) is
        // finished by running it again.
        const admin = await openBroker(cluster.urls);
        try {
          const temp = "mesh.build.migrating";
          await admin.channel.assertQueue(temp, {
            durable: true,
            arguments: { "x-queue-type": "quorum" },
          });
          await admin.channel.bindQueue(temp, EXCHANGE, "build.request");
          await admin.channel.unbindQueue("mesh.build", EXCHANGE, "build.request");
          await publishConfirmed(admin.channel, [{
            exchange: EXCHANGE,
            routingKey: "build.request",
            body: new TextEncoder().encode("{}"),
          }]);
          await admin.channel.unbindQueue(temp, EXCHANGE, "build.request");
          await admin.channel.bindQueue("mesh.build", EXCHANGE, "build.request");
        } finally {
          await admin.close();
        }
        const resumed = await mustControl(inv.env, ["broker", "convert", "--queue-type", "quorum"]);
        assertMatch(
          resumed.stdout,
          /finished converting mesh\.build to quorum \(1 message moved back from mesh\.build\.migrating\)/,
        );
        const left = await queueTypes(cluster.members[0]!.api);
        assert(!left.has("mesh.build.migrating"), [...left.keys()].join());
        const check = await openBroker(cluster.urls);
        try {
          assertEquals((await check.channel.checkQueue("mesh.build")).messageCount, 1);
          await check.channel.purgeQueue("mesh.build");
        } finally {
          await check.close();
        }
        // The report delivered twice is recorded once.
        const ingest = await mustControl(inv.env, ["ingest", "--drain"]);
        assertMatch(ingest.stdout, /ingested 1 report; 1 delivered again, recorded once/);
      });

      await t.step("the links, given every member, apply what waited and report", async () => {
        for (const node of nodes) {
          links.push(startLink(urls.get(node)!, `${dir}/state-${node}`));
        }
        // The declaration that waited through the conversion arrives (the node's account and
        // permissions survived it).
        await waitFor(
          "the first node's push report",
          () => links[0]!.lines.find((r) => r.trigger === "push" && r.outcome === "applied"),
        );
        assertEquals(await Deno.readTextFile(`${dir}/${nodes[0]}/motd`), `${nodes[0]}\n`);
      });

      await t.step("push --behind while the member leading a node's queue stops", async () => {
        const leader = await cluster.leaderOf(nodeQueue(nodes[1]!));
        const [push] = await Promise.all([
          controlCli(["push", "--behind"], inv.env),
          cluster.stop(leader),
        ]);
        assertEquals(push.code, 0, push.stdout + push.stderr);
        assertMatch(push.stdout, new RegExp(`pushed generation 1 to ${nodes[1]}`));
        // The declaration confirmed by the cluster reaches the node through another member.
        await waitFor(
          "the second node's push report",
          () => links[1]!.lines.find((r) => r.trigger === "push" && r.outcome === "applied"),
        );
        assertEquals(await Deno.readTextFile(`${dir}/${nodes[1]}/motd`), `${nodes[1]}\n`);
        // The queues were declared through the first member, which leads them and which every
        // program connected to first: the links lost it and went on through another.
        assertEquals(leader.url, cluster.urls[0]);
        for (const link of links) {
          // A member that stops by `rabbitmqctl stop` may close its connections first (AMQP
          // 320, reason 'shutdown') or drop them; the link says which, and fails over either way.
          assertMatch(
            link.stderr(),
            /the broker went away|the broker closed the connection \(.*reason 'shutdown'/,
          );
          const connected = [
            ...link.stderr().matchAll(/connected to amqp:\/\/[^@]+@127\.0\.0\.1:(\d+)/g),
          ]
            .map((m) => Number(m[1]));
          assert(
            connected.length >= 2 && connected.at(-1) !== leader.amqpPort,
            `the link did not fail over: ${link.stderr()}`,
          );
        }
        await cluster.start(leader);
      });

      await t.step("the member leading mesh.reports stops while reports flow", async () => {
        const leader = await cluster.leaderOf("mesh.reports");
        const before = links.map((l) => l.lines.length);
        const ingest = new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--quiet", `${ROOT}control/main.ts`, "ingest"],
          env: inv.env,
          stdout: "null",
          stderr: "piped",
        }).spawn();
        try {
          await cluster.stop(leader);
          // Reports go on being made and sent through the members left.
          await waitFor(
            "reports after the stop",
            () => links.every((l, i) => l.lines.length >= before[i]! + 3),
          );
          await cluster.start(leader);
          await waitFor(
            "more reports after the restart",
            () => links.every((l, i) => l.lines.length >= before[i]! + 5),
          );
        } finally {
          try {
            ingest.kill("SIGTERM");
          } catch { /* it exited: what it said is asserted below */ }
          const said = new TextDecoder().decode((await ingest.output()).stderr);
          assert(!/dropped|Cannot|refused/.test(said), said);
        }
        for (const link of links) await link.kill();
        // What the links journaled and could not send yet is sent when they are back: here,
        // whatever is still in their journals is simply not expected in the inventory.
        await mustControl(inv.env, ["ingest", "--drain"]);
        const rows = await inv.sql<{ node: string; at: string; n: number }[]>`
          select node, to_char(reported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
            count(*)::int as n
          from reports where node = any(${nodes}) group by 1, 2`;
        const recorded = new Map(rows.map((r) => [`${r.node} ${r.at}`, r.n]));
        for (const [key, n] of recorded) assertEquals(n, 1, `${key} recorded ${n} times`);
        for (const [i, link] of links.entries()) {
          const pending = new Set<string>();
          for await (const e of Deno.readDir(`${dir}/state-${nodes[i]}/link/outbox`)) {
            const r = JSON.parse(
              await Deno.readTextFile(`${dir}/state-${nodes[i]}/link/outbox/${e.name}`),
            );
            pending.add(`${r.node} ${r.at}`);
          }
          for (const report of link.lines) {
            const key = `${report.node} ${report.at}`;
            if (pending.has(key)) continue;
            assertEquals(recorded.get(key), 1, `report ${key} was confirmed and not recorded once`);
          }
        }
        const states = await readNodeStates(inv.sql, nodes);
        for (const s of states) assertEquals(s.said, "ok", s.name);
      });
    } finally {
      for (const link of links) await link.kill();
      await cluster.remove();
      await inv.drop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

Deno.test(
  "a broker that answers but refuses quorum queues is named with what it said",
  opts,
  async () => {
    // A member booted without the quorum_queue feature flag, as a broker without quorum queues.
    const broker = await startRabbitCluster({
      members: 1,
      featureFlags: [
        "implicit_default_bindings",
        "virtual_host_metadata",
        "maintenance_mode_status",
        "user_limits",
      ],
    });
    try {
      const out = await controlCli(["broker", "setup", "--queue-type", "quorum"], {
        MESH_BROKER_URL: broker.urls[0]!,
      });
      assertEquals(out.code, 2, out.stdout + out.stderr);
      assertMatch(
        out.stderr,
        /the broker at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+ refused a quorum queue "mesh\.reports": .*the corresponding feature flag is disabled/,
      );
      assertEquals(out.stdout, "");
      // Nothing after the refusal was declared; classic still works there.
      const types = await queueTypes(broker.members[0]!.api);
      assert(!types.has("mesh.reports") && !types.has("mesh.build"), [...types.keys()].join());
      const classic = await controlCli(["broker", "setup", "--queue-type", "classic"], {
        MESH_BROKER_URL: broker.urls[0]!,
      });
      assertEquals(classic.code, 0, classic.stderr);
    } finally {
      await broker.remove();
    }
  },
);
