/**
 * A report's text that PostgreSQL's jsonb cannot hold (a NUL character, a lone UTF-16 surrogate),
 * end to end against the real broker and PostgreSQL: a host whose action's command writes a NUL
 * byte to stderr and fails reports it through the link's report path (fitted, journaled, sent
 * under its own broker account) and ingest records it and the next node's report; a report
 * carrying such text (from a host older than the fitting) is dropped and said, never stopping
 * ingest for every node.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { openBroker } from "../../lib/amqp.ts";
import { type ReportMessage, REPORTS_QUEUE } from "../../lib/broker.ts";
import { journal, linkReport, sendJournaled } from "../../host/link.ts";
import { actionApplier } from "../../resources/action/applier.ts";
import { debian } from "../../systems/debian/mod.ts";
import type { System } from "../../host/system.ts";
import { applyResources } from "../host/support.ts";
import { controlCli, publishReports, reportOf, uniqueNode } from "./support.ts";
import { enrollIn, withVhost } from "./vhost.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

const system: System = { ...debian, appliers: { ...debian.appliers, action: actionApplier } };

/** Journals `report` in `dir` and sends it as the link does, under the node's own account. */
async function sendAsLink(url: string, node: string, dir: string, report: ReportMessage) {
  const outbox = `${dir}/outbox-${node}`;
  await Deno.mkdir(outbox, { recursive: true });
  await journal(outbox, report);
  const session = await openBroker(url);
  try {
    assertEquals(await sendJournaled(outbox, session, node), 1);
  } finally {
    await session.close();
  }
}

async function queued(amqp: string): Promise<number> {
  const s = await openBroker(amqp);
  try {
    return (await s.channel.checkQueue(REPORTS_QUEUE)).messageCount;
  } finally {
    await s.close();
  }
}

Deno.test(
  "a command's NUL byte in stderr: the host reports it visibly, and ingest records it and the next node's report",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const dir = await Deno.makeTempDir({ prefix: "mesh-report-text-" });
      try {
        const [bad, good] = [uniqueNode("nul"), uniqueNode("ok")];
        const badUrl = await enrollIn(vhost, bad);
        const goodUrl = await enrollIn(vhost, good);
        // A real apply on this machine: the command writes a NUL byte to stdout, a NUL byte and
        // bytes that are not UTF-8 to stderr, and fails. The action's problem quotes both, each
        // NUL written \0 already by the host (lib/command.ts outputTail, which the action's
        // outputs share since the tails are cut at a line).
        const result = await applyResources(system, `${dir}/state`, [{
          id: "nul-stderr",
          type: "action",
          command: [
            "sh",
            "-c",
            "printf 'out\\000put'; printf 'before\\000after \\355\\240\\200 end\\n' >&2; exit 3",
          ],
          verify: ["false"],
        }]);
        assertEquals(result.outcome, "failed");
        assert(
          result.problems.some((p) => p.message.includes("command stdout: out\\0put")) &&
            !result.problems.some((p) => p.message.includes("\0")),
          `the command's NUL byte is not said visibly in the apply's problems: ${
            JSON.stringify(result)
          }`,
        );
        const about = { generation: 1, intervalMs: 60_000, hostVersion: "test" };
        await sendAsLink(
          badUrl,
          bad,
          dir,
          linkReport(result, { ...about, node: bad, trigger: "push" }),
        );
        await sendAsLink(goodUrl, good, dir, reportOf(good));

        const out = await controlCli(["ingest", "--drain"], vhost.env);
        assertEquals(out.code, 0, out.stderr);
        assertEquals(out.stdout, "ingested 2 reports\n");
        const rows = await inv.sql<{ node: string; message: string | null }[]>`
          select node, problems->0->>'message' as message from reports order by node`;
        assertEquals(rows.map((r) => r.node).sort(), [bad, good].sort());
        const message = rows.find((r) => r.node === bad)!.message!;
        // Said visibly: the NUL as the text \0, the bytes that are not UTF-8 as U+FFFD.
        assertMatch(
          message,
          /exited with code 3: before\\0after \uFFFD+ end\ncommand stdout: out\\0put$/,
        );
        assertEquals(await queued(vhost.amqp), 0);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }),
);

Deno.test(
  "ingest drops a report whose text jsonb cannot hold (NUL, a lone surrogate), saying node, what and where, and records the rest",
  opts,
  () =>
    withVhost(async (inv, vhost) => {
      const [old, other] = [uniqueNode("old"), uniqueNode("in")];
      await inv
        .sql`insert into nodes (name, system) values (${old}, 'debian'), (${other}, 'debian')`;
      // As a host older than the fitting sends them (the link's own check took them then).
      const bodies: [string, unknown][] = [
        [
          old,
          reportOf(old, {
            outcome: "failed",
            problems: [{ id: "app", message: "bad \u0000 byte" }],
          }),
        ],
        [
          old,
          reportOf(old, {
            outcome: "failed",
            problems: [{ message: "half a pair \ud83d" }],
          }),
        ],
        [old, reportOf(old, { hostVersion: "1.0\u0000" })],
        [old, {
          ...reportOf(old),
          drift: { status: "unreadable", path: "/var/lib/r.json", problem: "\udc00" },
        }],
        // An unknown key with a NUL, an escape sequence and a newline: said, never printed raw
        // (the line cannot be split or coloured by a report).
        [old, { ...reportOf(old), "k\u0000\u001b[31m\ny": 1 }],
        [other, reportOf(other)],
        [old, reportOf(old, { generation: 2 })],
      ];
      await publishReports(vhost.amqp, bodies);
      const out = await controlCli(["ingest", "--drain"], vhost.env);
      assertEquals(out.code, 0, out.stderr);
      assertMatch(out.stdout, /ingested 2 reports; dropped 5/);
      const why =
        "Invalid string: expected text without a NUL character (U+0000) or a lone surrogate";
      assertEquals(
        out.stderr.split("\n").filter((l) => l !== ""),
        [
          ...["problems[0].message", "problems[0].message", "hostVersion", "drift.problem"].map((
            at,
          ) =>
            `mesh-control: dropped a report (report.${old}): Cannot read report from "${old}": ${at}: ${why}`
          ),
          `mesh-control: dropped a report (report.${old}): Cannot read report from "${old}": $: Unrecognized key: "k<U+0000><U+001B>[31m<U+000A>y"`,
        ],
      );
      const rows = await inv.sql`select node, generation from reports order by id`;
      assertEquals(rows.map((r) => [r.node, r.generation]), [[other, 1], [old, 2]]);
      assertEquals(await queued(vhost.amqp), 0);
    }),
);
