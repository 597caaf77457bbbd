/**
 * A node's identity survives remove and re-enroll (docs/design.md, "Hostile inputs", rule 6): the
 * name enrolled again is a new node with a new epoch, which its declarations and reports carry. The
 * field case, for real (a real link on this machine, the real broker in a vhost of its own, a real
 * inventory): after `node remove` and `node enroll` of the same name, the host with its old state
 * ignored pushes until the generation passed its old one, control showed the push outstanding
 * forever, and a report from before the removal was recorded for the new node. Now the reports
 * from before are dropped and said, the host takes the new epoch's generation 1 at once, and an
 * older generation of the same epoch is still ignored. The rules also judged directly.
 *
 * @module
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import type { JsonLinesProcess } from "../support/mod.ts";
import {
  declarationKey,
  type DeclarationMessage,
  EXCHANGE,
  type ReportMessage,
} from "../../lib/broker.ts";
import { openBroker, publishConfirmed } from "../../lib/amqp.ts";
import { declarationDigest } from "../../lib/declaration.ts";
import { journaled, LINK_DIR, OUTBOX_DIR, replayReason } from "../../host/link.ts";
import { signed } from "../support/signing.ts";
import { epochProblem } from "../../control/ingest.ts";
import {
  controlCli,
  mustControl,
  publishReports,
  reportOf,
  uniqueNode,
  waitFor,
} from "./support.ts";
import { enrollIn, startTestLink, type TestVhost, withVhost } from "./vhost.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

const startLink = (url: string, stateDir: string) => startTestLink(url, stateDir, { every: "1s" });

interface Machine {
  name: string;
  verdict: string;
  generation?: number;
  reportedGeneration?: number;
}

/** Ingests what waits (its stderr kept in `said`), then `node`'s machine on the board. */
async function machine(vhost: TestVhost, node: string, said: string[]): Promise<Machine> {
  const ingest = await mustControl(vhost.env, ["ingest", "--drain"]);
  said.push(ingest.stderr);
  const out = await mustControl(vhost.env, ["board", "--json", "--grace", "60s"]);
  return (JSON.parse(out.stdout).machines as Machine[]).find((m) => m.name === node)!;
}

async function moduleOf(vhost: TestVhost, dir: string, node: string, content: string) {
  await Deno.writeTextFile(
    `${dir}/m.json`,
    JSON.stringify({
      version: 1,
      resources: [{ id: "f", type: "file", path: `${dir}/f`, content, mode: "0644" }],
    }),
  );
  await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", `m-${node}`]);
}

Deno.test(
  "a node removed and enrolled again is a new node: nothing from before is recorded, its host takes the new epoch at once",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const node = uniqueNode("epoch");
      const dir = await Deno.makeTempDir({ prefix: "mesh-epoch-" });
      const state = `${dir}/state`;
      const said: string[] = [];
      const epochOf = async () =>
        (await inv.sql<{ epoch: string }[]>`
          select epoch::text as epoch from nodes where name = ${node}`)[0]?.epoch;
      let link: JsonLinesProcess<ReportMessage> | undefined;
      try {
        // The old node: pushed three times, its host at generation 3.
        link = startLink(await enrollIn(vhost, node), state);
        await moduleOf(vhost, dir, node, "one\n");
        await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
        for (let i = 0; i < 3; i++) await mustControl(vhost.env, ["push", node]);
        await waitFor("the old node ok at generation 3", async () => {
          const m = await machine(vhost, node, said);
          return m.verdict === "ok" && m.reportedGeneration === 3;
        }, 60_000);
        const oldEpoch = (await epochOf())!;
        // Its next interval reports wait on the broker, not ingested, when it is removed: one
        // made after the last drain above, and sent (the link prints a report when it is
        // journaled; it leaves its journal when the broker confirmed it).
        const printed = link.lines.length;
        await waitFor("a report of the old node on the broker", async () =>
          link!.lines.slice(printed).some((r) =>
            r.trigger === "interval"
          ) &&
          (await journaled(`${state}/${LINK_DIR}/${OUTBOX_DIR}`)).length === 0);
        await mustControl(vhost.env, ["node", "remove", node]);
        await link.kill();
        link = undefined;

        // The new node of that name: a new epoch, nothing recorded from before.
        const url = await enrollIn(vhost, node);
        const newEpoch = (await epochOf())!;
        assert(newEpoch !== oldEpoch, "the name enrolled again kept its epoch");
        const drained = await mustControl(vhost.env, ["ingest", "--drain"]);
        assertMatch(drained.stdout, /ingested 0 reports; dropped [1-9]/, drained.stdout);
        assertMatch(
          drained.stderr,
          new RegExp(
            `the report is of epoch ${oldEpoch}, and node "${node}" is now of epoch ${newEpoch} \\(removed and enrolled anew since\\): not recorded`,
          ),
        );
        assertEquals(
          (await inv.sql`select count(*)::int as n from reports where node = ${node}`)[0]!.n,
          0,
          "a report from before the removal was recorded for the new node",
        );

        // Its host, with the old node's state (generation 3), takes generation 1 at once.
        await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
        await moduleOf(vhost, dir, node, "two\n");
        const first = await mustControl(vhost.env, ["push", node]);
        assertMatch(first.stdout, new RegExp(`generation 1`));
        link = startLink(url, state);
        const seen = await waitFor("the new node ok at generation 1", async () => {
          const m = await machine(vhost, node, said);
          return m.verdict === "ok" && m.reportedGeneration === 1 ? m : undefined;
        }, 30_000).catch(async (error) => {
          const m = await machine(vhost, node, said);
          throw new Error(`${error.message}: ${JSON.stringify(m)}; link: ${link!.stderr()}`);
        });
        assertEquals(seen.generation, 1);
        assertEquals(await Deno.readTextFile(`${dir}/f`), "two\n");
        assertMatch(
          link.stderr(),
          new RegExp(
            `took generation 1 of epoch ${newEpoch}, pushed after the kept generation 3 of epoch ${oldEpoch}`,
          ),
        );
        // The host's start report, about the old node's generation 3, was dropped too.
        assertMatch(said.join(""), new RegExp(`the report is of epoch ${oldEpoch}`));
        const recorded = await inv.sql<{ generation: number }[]>`
          select generation from reports where node = ${node}`;
        assert(
          recorded.every((r) => r.generation === 1),
          JSON.stringify(recorded),
        );

        // Within the epoch, an older generation, signed as control signs it, is refused: a replay.
        await mustControl(vhost.env, ["push", node]);
        await waitFor("the new node ok at generation 2", async () => {
          const m = await machine(vhost, node, said);
          return m.verdict === "ok" && m.reportedGeneration === 2;
        }, 30_000);
        const text = JSON.stringify({
          version: 1,
          resources: [{ id: "f", type: "file", path: `${dir}/f`, content: "old\n", mode: "0644" }],
        });
        const older = await signed({
          kind: "declaration",
          node,
          generation: 1,
          digest: await declarationDigest(text),
          pushedAt: new Date().toISOString(),
          epoch: newEpoch,
          declaration: text,
        });
        const s = await openBroker(vhost.amqp);
        await publishConfirmed(s.channel, [{
          exchange: EXCHANGE,
          routingKey: declarationKey(node),
          body: new TextEncoder().encode(JSON.stringify(older)),
        }]);
        await s.close();
        await waitFor("the older generation refused", () =>
          link!.stderr().includes(
            `refused a declaration message: a replay: generation 1 of epoch ${newEpoch}`,
          ), 30_000);
        assertEquals(await Deno.readTextFile(`${dir}/f`), "two\n");

        // Once the node's declarations carry its epoch, a report of none, or of the old one, is
        // dropped and said.
        const digest = (await inv.sql<{ digest: string }[]>`
          select digest from declarations where node = ${node} and generation = 2`)[0]!.digest;
        await link.kill();
        link = undefined;
        await mustControl(vhost.env, ["ingest", "--drain"]);
        await publishReports(vhost.amqp, [
          [node, reportOf(node, { generation: 2, declaration: digest })],
          [node, reportOf(node, { generation: 2, declaration: digest, epoch: oldEpoch })],
        ]);
        const last = await controlCli(["ingest", "--drain"], vhost.env);
        assertEquals(last.code, 0, last.stderr);
        assertMatch(last.stdout, /ingested 0 reports; dropped 2/);
        assertMatch(
          last.stderr,
          new RegExp(
            `the report carries no epoch, and node "${node}"'s declarations carry epoch ${newEpoch}`,
          ),
        );
      } finally {
        await link?.kill();
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

Deno.test("the link takes only a newer declaration: a later generation, or another epoch pushed later", async () => {
  const text = '{"version":1,"resources":[]}';
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  const message = async (
    generation: number,
    epoch?: string,
    pushedAt = at(generation),
    content = text,
  ): Promise<DeclarationMessage> => ({
    kind: "declaration",
    node: "n",
    generation,
    digest: await declarationDigest(content),
    pushedAt,
    ...(epoch ? { epoch } : {}),
    declaration: content,
  });
  // Nothing kept: taken.
  assertEquals(replayReason(await message(1, a), undefined), undefined);
  // Another epoch pushed later: taken at once, whatever the generations.
  assertEquals(replayReason(await message(1, b, at(10)), await message(5, a)), undefined);
  // A kept declaration from before epochs, a message of one pushed later: taken at once.
  assertEquals(replayReason(await message(1, b, at(10)), await message(5)), undefined);
  // Another epoch pushed before the kept one (a removed node's declaration replayed): refused.
  assertEquals(
    replayReason(await message(9, b, at(1)), await message(5, a)),
    `a replay: generation 9 of epoch ${b} (pushed ${
      at(1)
    }) is of another epoch than the generation 5 of epoch ${a} (pushed ${
      at(5)
    }) this node holds, and was not pushed after it`,
  );
  // The same epoch: an older generation refused, a newer taken, the same one delivered again taken.
  assertEquals(
    replayReason(await message(1, a), await message(2, a)),
    `a replay: generation 1 of epoch ${a} (pushed ${
      at(1)
    }) is older than the generation 2 of epoch ${a} (pushed ${at(2)}) this node holds`,
  );
  assertEquals(replayReason(await message(2, a), await message(2, a)), undefined);
  assertEquals(replayReason(await message(3, a), await message(2, a)), undefined);
  // The same generation with other content: refused.
  assertMatch(
    replayReason(await message(2, a, at(2), '{"version":1,"resources":[ ]}'), await message(2, a))!,
    /^a replay: generation 2 of epoch .* is not the generation 2 .* one generation is one declaration$/,
  );
  // Without epochs: generations alone.
  assertMatch(replayReason(await message(1), await message(2))!, /^a replay: generation 1 \(/);
});

Deno.test("ingest records a report only of its node's current epoch", () => {
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
  const declared = { epoch: a, declared: true };
  const applied = "applied" as const;
  assertEquals(epochProblem({ node: "n", epoch: a, outcome: applied }, declared), undefined);
  assertMatch(
    epochProblem({ node: "n", epoch: b, outcome: applied }, declared)!,
    /is of epoch .* not recorded/,
  );
  for (const outcome of ["applied", "failed", "refused"] as const) {
    assertMatch(epochProblem({ node: "n", outcome }, declared)!, /carries no epoch/);
  }
  // Another epoch is refused even before anything was pushed in this one.
  assertMatch(
    epochProblem({ node: "n", epoch: b, outcome: applied }, { epoch: a, declared: null })!,
    /is of epoch/,
  );
  // None, while the node's declarations carry none (never pushed, or pushed before epochs).
  assertEquals(
    epochProblem({ node: "n", outcome: applied }, { epoch: a, declared: null }),
    undefined,
  );
  assertEquals(
    epochProblem({ node: "n", outcome: applied }, { epoch: a, declared: false }),
    undefined,
  );
  // A link holding no declaration claims none: recorded (the push has not reached it).
  assertEquals(epochProblem({ node: "n", outcome: "undeclared" }, declared), undefined);
});
