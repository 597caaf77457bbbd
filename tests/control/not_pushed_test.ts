/**
 * A node whose link is connected and reporting, and that was never pushed a declaration: its link
 * reports that it holds none (`outcome: "undeclared"`), and the control plane shows it `not pushed`
 * (not `never spoke`, kept for a node never heard at all) in status, board text, `--json` and
 * `--html`; no alarm until a push is outstanding; `push --behind` pushes it; a server of them that
 * stops reporting goes `silent`, an episodic one `away`. Real links (temporary roots on this
 * machine), the real broker (a vhost of its own) and a real inventory; the verdict rules also
 * judged directly.
 *
 * @module
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import type { JsonLinesProcess } from "../support/mod.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import { controlCli, freshInventory, mustControl, uniqueNode, waitFor } from "./support.ts";
import { enrollIn, startTestLink, type TestVhost, withVhost } from "./vhost.ts";
import { isAlarm } from "../../control/state.ts";
import { type GivenNode, judgeNodes } from "./judge.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
/** Heard for 2 × 1 s + 3 s after the last report: for the steps that wait for silence. */
const GRACE = "3s";
/** For the steps that read a fleet still reporting: a loaded machine is not taken for silence. */
const LONG = "60s";

const startLink = (url: string, stateDir: string) => startTestLink(url, stateDir, { every: "1s" });

interface Machine {
  name: string;
  verdict: string;
  words: string;
  lastReportAt?: string;
  said?: string;
}

async function board(vhost: TestVhost): Promise<Map<string, Machine>> {
  await mustControl(vhost.env, ["ingest", "--drain"]);
  const out = await mustControl(vhost.env, ["board", "--json", "--grace", GRACE]);
  return new Map((JSON.parse(out.stdout).machines as Machine[]).map((m) => [m.name, m]));
}

async function until(vhost: TestVhost, what: string, wanted: Record<string, string>) {
  let last = new Map<string, Machine>();
  try {
    return await waitFor(what, async () => {
      last = await board(vhost);
      return Object.entries(wanted).every(([n, v]) => last.get(n)?.verdict === v)
        ? last
        : undefined;
    }, 90_000);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}: last seen ${
        JSON.stringify([...last.values()].map((m) => [m.name, m.verdict]))
      }`,
    );
  }
}

Deno.test(
  "a linked node never pushed is not pushed: no alarm, pushed by push --behind, silent when it stops",
  opts,
  async (t) => {
    await withVhost(async (_inv, vhost) => {
      const dir = await Deno.makeTempDir({ prefix: "mesh-notpushed-" });
      const links = new Map<string, JsonLinesProcess<ReportMessage>>();
      const [withModule, bare, dead, phone] = ["mod", "bare", "dead", "phone"].map((p) =>
        uniqueNode(`np${p}`)
      ) as [string, string, string, string];
      try {
        for (const node of [withModule, bare, dead]) {
          links.set(node, startLink(await enrollIn(vhost, node), `${dir}/state-${node}`));
        }
        links.set(
          phone,
          startLink(await enrollIn(vhost, phone, ["--episodic"]), `${dir}/state-${phone}`),
        );
        const ghost = uniqueNode("npghost");
        await enrollIn(vhost, ghost);
        await Deno.writeTextFile(
          `${dir}/m.json`,
          JSON.stringify({
            version: 1,
            resources: [{ id: "d", type: "directory", path: `${dir}/made`, mode: "0755" }],
          }),
        );
        await mustControl(vhost.env, [
          "module",
          "add",
          `${dir}/m.json`,
          "--name",
          `m-${withModule}`,
        ]);
        await mustControl(vhost.env, ["node", "assign", withModule, `m-${withModule}`]);

        await t.step("heard and never pushed: not pushed, distinct from never spoke", async () => {
          const seen = await until(vhost, "the linked nodes not pushed", {
            [withModule]: "not-pushed",
            [bare]: "not-pushed",
            [dead]: "not-pushed",
            [phone]: "not-pushed",
            [ghost]: "never-spoke",
          });
          assertEquals(seen.get(bare)!.words, "not pushed");
          assert(seen.get(bare)!.lastReportAt, "a node heard carries when it was last heard");
          assertEquals(seen.get(ghost)!.lastReportAt, undefined);
        });

        await t.step(
          "status: no alarm for it; listed with its verdict in text and JSON",
          async () => {
            // The node never heard is the one alarm: removed, status exits 0 for the rest.
            await mustControl(vhost.env, ["node", "remove", ghost]);
            const text = await controlCli(["status", "--grace", GRACE], vhost.env);
            assertEquals(text.code, 0, text.stdout + text.stderr);
            assertMatch(
              text.stdout,
              /or not pushed \(linked, never pushed a declaration: no alarm until one is\)/,
            );
            assertMatch(
              text.stdout,
              new RegExp(`${bare}\\s+not pushed\\s+0 of 0\\s+server\\s+never pushed`),
            );
            const json = await controlCli(["status", "--json", "--grace", LONG], vhost.env);
            assertEquals(json.code, 0, json.stderr);
            const parsed = JSON.parse(json.stdout);
            assertEquals(
              [parsed.behind, parsed.counts["not-pushed"], parsed.counts["never-spoke"]],
              [
                0,
                4,
                0,
              ],
            );
            assert(!json.stdout.includes("null"), json.stdout);
            const names = parsed.machines.map((m: Machine) => m.name).sort();
            assertEquals(names, [withModule, bare, dead, phone].sort());
          },
        );

        await t.step("board text, --json and --html say it", async () => {
          const html = `${dir}/board.html`;
          await mustControl(vhost.env, ["ingest", "--drain"]);
          await mustControl(vhost.env, ["board", "--grace", LONG, "--html", html]);
          const out = await mustControl(vhost.env, ["board", "--grace", LONG]);
          assertStringIncludes(out.stdout, "4 not pushed");
          assertMatch(out.stdout, new RegExp(`${bare}\\s+not pushed`));
          const page = await Deno.readTextFile(html);
          assertMatch(
            page,
            new RegExp(`<tr[^>]*data-node="${bare}"[^>]*data-verdict="not-pushed"`),
          );
          assertMatch(page, /data-count="declaration" data-verdict="not-pushed"/);
          const json = await mustControl(vhost.env, ["board", "--json", "--grace", LONG]);
          assert(!json.stdout.includes("null"), "a null in the board");
          assertEquals(JSON.parse(json.stdout).counts["not-pushed"], 4);
        });

        await t.step(
          "a server not pushed that stops reporting is silent; episodic, away",
          async () => {
            for (const node of [dead, phone]) {
              await links.get(node)!.kill();
              links.delete(node);
            }
            const seen = await until(vhost, "the stopped nodes silent and away", {
              [dead]: "silent",
              [phone]: "away",
              [bare]: "not-pushed",
            });
            assertEquals(seen.get(dead)!.said, "not-pushed");
            const status = await controlCli(["status", "--grace", GRACE], vhost.env);
            assertEquals(status.code, 1, status.stdout);
            assertMatch(status.stdout, /its last report said not pushed/);
          },
        );

        await t.step("push --behind includes them, each with why; then they are ok", async () => {
          const dry = await mustControl(vhost.env, ["push", "--behind", "--dry-run"]);
          for (const node of [withModule, bare]) {
            assertMatch(
              dry.stdout,
              new RegExp(`${node}: linked and reporting, never pushed a declaration`),
            );
          }
          const out = await mustControl(vhost.env, ["push", "--behind"]);
          for (const node of [withModule, bare]) {
            assertMatch(
              out.stdout,
              new RegExp(
                `pushed generation 1 to ${node}: linked and reporting, never pushed a declaration`,
              ),
            );
          }
          await until(vhost, "the pushed nodes ok", { [withModule]: "ok", [bare]: "ok" });
          assert((await Deno.stat(`${dir}/made`)).isDirectory);
        });
      } finally {
        for (const link of links.values()) await link.kill();
        await Deno.remove(dir, { recursive: true });
      }
    });
  },
);

/** A node with an `undeclared` last report received `agoMs` before `now`. */
function undeclared(
  name: string,
  now: Date,
  agoMs: number,
  overrides: Partial<GivenNode> = {},
): GivenNode {
  return {
    name,
    report: {
      generation: 0,
      digest: `sha256:${"e".repeat(64)}`,
      outcome: "undeclared",
      applied: 0,
      total: 0,
      trigger: "interval",
      problems: [],
      intervalMs: 1000,
      reportedAt: new Date(now.getTime() - agoMs),
      receivedAt: new Date(now.getTime() - agoMs),
    },
    ...overrides,
  };
}

Deno.test("the verdict rules of a node that says it holds no declaration", async () => {
  const now = new Date("2026-01-01T00:00:00Z");
  const inv = await freshInventory();
  try {
    const { board, states } = await judgeNodes(inv.sql, [
      undeclared("linked", now, 0),
      // Pushed, and its link still says it holds none: the push is outstanding (an alarm).
      undeclared("pushed", now, 0, {
        declaration: { generation: 1, digest: `sha256:${"a".repeat(64)}`, total: 2, pushedAt: now },
      }),
      // Quiet beyond 2 × 1 s + 1 s: a server is silent, an episodic node away.
      undeclared("quiet", now, 2000),
      // Quiet for exactly the allowance (3 s): still heard; a millisecond more is not.
      undeclared("allowed", now, 3000),
      undeclared("beyond", now, 3001),
      undeclared("silent", now, 4000),
      undeclared("away", now, 4000, { kind: "episodic" }),
      // An episodic node quiet as long whose reports said it failed stays failed (an alarm).
      {
        name: "failed-away",
        kind: "episodic",
        declaration: { generation: 1, digest: `sha256:${"a".repeat(64)}`, total: 2, pushedAt: now },
        report: {
          generation: 1,
          digest: `sha256:${"a".repeat(64)}`,
          outcome: "failed",
          applied: 1,
          total: 2,
          trigger: "interval",
          problems: [{ message: "it broke" }],
          intervalMs: 1000,
          reportedAt: new Date(now.getTime() - 4000),
          receivedAt: new Date(now.getTime() - 4000),
        },
      },
    ], { now, graceMs: 1000 });
    const said = new Map(states.map((s) => [s.name, [s.said, s.applied, s.total]]));
    assertEquals(said.get("linked"), ["not-pushed", 0, 0]);
    assertEquals(isAlarm("not-pushed"), false);
    assertEquals(said.get("pushed"), ["outstanding", 0, 2]);
    const verdict = new Map(board.machines.map((m) => [m.name, m.verdict]));
    assertEquals(verdict.get("linked"), "not-pushed");
    assertEquals(verdict.get("pushed"), "outstanding");
    assertEquals(verdict.get("quiet"), "not-pushed");
    assertEquals(verdict.get("allowed"), "not-pushed");
    assertEquals(verdict.get("beyond"), "silent");
    assertEquals(verdict.get("silent"), "silent");
    assertEquals(verdict.get("away"), "away");
    assertEquals(verdict.get("failed-away"), "failed");
    assertEquals(board.machines.find((m) => m.name === "failed-away")?.said, "failed");
  } finally {
    await inv.drop();
  }
});
