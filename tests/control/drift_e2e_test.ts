/**
 * Drift over the link, end to end, against the real PostgreSQL and RabbitMQ: two hosts, each
 * `mesh-host link --reconcile-result FILE` (systems/debian/main.ts) with its own broker account, and each
 * running `mesh-reconcile run --result FILE --interval 4s` under `mesh-every` (the shipped OpenRC
 * scheduler, packaging/mesh-every.sh) in its own network namespace (`ip netns`), so each has a
 * socket table of its own as two machines would. Their registry declares nothing for an account
 * that runs no containers, so each is clean until something appears.
 *
 * - both clean on the board; a third, linked with `--reconcile-result none`, is `not checked`;
 * - a rogue listener in one host's namespace: the board shows one `port`/`rogue` finding on it,
 *   the other stays clean, and `status` lists it and exits 1;
 * - the other host's mesh-reconcile stopped: its drift turns `stale` (dead-man rule) while its
 *   link goes on reporting;
 * - its result file truncated, then larger than the limit: `unreadable` with the path and the
 *   reason on the board, and the link goes on applying and reporting.
 *
 * @tier whole (two hosts' links and mesh-reconcile under mesh-every in network namespaces, and
 * the control plane, end to end: 19 s of CPU in test:fast; the drift rules are held there by
 * drift_judge_test, drift_board_test and host/drift_summary_test)
 *
 * @module
 */

import { assert, assertEquals } from "../support/assert.ts";
import { type JsonLinesProcess, ROOT, spawnJsonLines } from "../support/mod.ts";
import { controlCli, freshInventory, type TestInventory, uniqueNode } from "./support.ts";
import type { ReportMessage } from "../../lib/broker.ts";
import { run } from "../../lib/command.ts";
import { TEST_KEYS } from "../support/signing.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** An account that has never used a container runtime: its containers are observed, none run. */
const ACCOUNT = "meshdrift";

async function ensureAccount(): Promise<void> {
  if ((await run(["id", "-u", ACCOUNT], { allowFailure: true })).code !== 0) {
    await run(["useradd", "--create-home", "--shell", "/bin/sh", ACCOUNT]);
  }
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  said: () => string = () => "",
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}. ${said()}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function mustRun(inv: TestInventory, args: string[]) {
  const out = await controlCli(args, inv.env);
  assertEquals(out.code, 0, `mesh-control ${args.join(" ")}: ${out.stderr}${out.stdout}`);
  return out;
}

interface DriftOut {
  verdict: string;
  counts: { check: string; direction: string; count: number }[];
  registry?: string;
  path?: string;
  problem?: string;
}

/** Drains reports, then reads the board as JSON. */
async function board(inv: TestInventory): Promise<Map<string, DriftOut>> {
  await mustRun(inv, ["ingest", "--drain"]);
  const out = await mustRun(inv, ["board", "--json"]);
  const b = JSON.parse(out.stdout) as { machines: { name: string; drift: DriftOut }[] };
  return new Map(b.machines.map((m) => [m.name, m.drift]));
}

/** One simulated machine: a network namespace, its reconcile schedule and its link. */
interface Host {
  node: string;
  netns: string;
  dir: string;
  result: string;
  registry: string;
  reconcile?: Deno.ChildProcess;
  link?: JsonLinesProcess<ReportMessage>;
  listener?: Deno.ChildProcess;
}

async function makeHost(base: string, node: string): Promise<Host> {
  const dir = `${base}/${node}`;
  await Deno.mkdir(dir, { recursive: true });
  const netns = `mesh-${node}`;
  await run(["ip", "netns", "add", netns]);
  await run(["ip", "-n", netns, "link", "set", "lo", "up"]);
  const registry = `${dir}/registry.yaml`;
  await Deno.writeTextFile(registry, `version: 1\naccounts: [${ACCOUNT}]\nservices: {}\n`);
  return { node, netns, dir, result: `${dir}/result.json`, registry };
}

function startReconcile(host: Host): Deno.ChildProcess {
  return new Deno.Command("ip", {
    args: [
      "netns",
      "exec",
      host.netns,
      "sh",
      `${ROOT}packaging/mesh-every.sh`,
      "3s",
      Deno.execPath(),
      "run",
      "-A",
      "--quiet",
      "--config",
      `${ROOT}deno.json`,
      `${ROOT}reconcile/main.ts`,
      "run",
      "--registry",
      host.registry,
      "--result",
      host.result,
      "--interval",
      "4s",
      "--caddy-admin",
      "none",
      "--boot",
      "none",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
}

async function stop(child: Deno.ChildProcess | undefined): Promise<void> {
  if (child === undefined) return;
  try {
    child.kill("SIGTERM");
  } catch { /* already gone */ }
  await child.status;
}

Deno.test(
  "two hosts carry mesh-reconcile's verdict over their links: clean, a rogue listener, stale",
  opts,
  async (t) => {
    await ensureAccount();
    const inv = await freshInventory();
    const base = await Deno.makeTempDir({ prefix: "mesh-drift-e2e-" });
    const hosts: Host[] = [];
    try {
      await mustRun(inv, ["broker", "setup"]);
      const quiet = await makeHost(base, uniqueNode("drq"));
      const rogue = await makeHost(base, uniqueNode("drr"));
      // A third node runs no mesh-reconcile and says so: "not checked", never clean.
      const none = await makeHost(base, uniqueNode("drn"));
      hosts.push(quiet, rogue, none);
      for (const host of hosts) {
        const out = await mustRun(inv, [
          "node",
          "enroll",
          host.node,
          "--system",
          "debian",
          "--node-is-local",
        ]);
        const url = out.stdout.split("\n").find((l) => l.startsWith("amqp://"))!;
        const module = `${base}/${host.node}.json`;
        await Deno.writeTextFile(
          module,
          JSON.stringify({
            version: 1,
            resources: [{ id: "root", type: "directory", path: `${host.dir}/app`, mode: "0755" }],
          }),
        );
        await mustRun(inv, ["module", "add", module]);
        await mustRun(inv, ["node", "assign", host.node, host.node]);
        if (host !== none) host.reconcile = startReconcile(host);
        host.link = spawnJsonLines([
          `${ROOT}systems/debian/main.ts`,
          "link",
          "--control-key",
          TEST_KEYS.controlKey,
          "--broker",
          url,
          "--state-dir",
          `${host.dir}/state`,
          "--every",
          "10m",
          "--reconcile-result",
          host === none ? "none" : host.result,
          "--json",
        ]);
      }
      await mustRun(inv, ["push", "--behind"]);
      const said = () =>
        hosts.map((h) => `${h.node}: ${h.link?.stderr()} ${JSON.stringify(h.link?.lines.at(-1))}`)
          .join("\n");

      await t.step("both clean, each from its own result; the third not checked", async () => {
        const drift = await waitFor("both hosts clean on the board", async () => {
          const b = await board(inv);
          return [quiet, rogue].every((h) => b.get(h.node)?.verdict === "clean") ? b : undefined;
        }, said);
        assertEquals(drift.get(quiet.node)!.registry, quiet.registry);
        assertEquals(drift.get(rogue.node)!.registry, rogue.registry);
        // It reported (its declaration applied: ok on the board) and carried no summary.
        const m = await waitFor("the third node's report on the board", async () => {
          await mustRun(inv, ["ingest", "--drain"]);
          const out = await mustRun(inv, ["board", "--json"]);
          const b = JSON.parse(out.stdout) as {
            machines: { name: string; verdict: string; drift: DriftOut }[];
          };
          const m = b.machines.find((x) => x.name === none.node);
          return m?.verdict === "ok" ? m : undefined;
        }, said);
        assertEquals(m.drift.verdict, "not-checked");
        assert(none.link!.lines.length > 0 && none.link!.lines.every((r) => r.drift === undefined));
      });

      await t.step(
        "a rogue listener on one: one port/rogue finding there, the other clean",
        async () => {
          rogue.listener = new Deno.Command("ip", {
            args: ["netns", "exec", rogue.netns, "busybox", "nc", "-l", "-p", "7777"],
            stdout: "null",
            stderr: "null",
          }).spawn();
          const drift = await waitFor("the rogue listener on the board", async () => {
            const b = await board(inv);
            return b.get(rogue.node)?.verdict === "drift" ? b : undefined;
          }, said);
          assertEquals(drift.get(rogue.node)!.counts, [
            { check: "port", direction: "rogue", count: 1 },
          ]);
          assertEquals(drift.get(quiet.node)!.verdict, "clean");
          const status = await controlCli(["status", "--json"], inv.env);
          assertEquals(status.code, 1, status.stderr);
          const listed = (JSON.parse(status.stdout) as { machines: { name: string }[] }).machines
            .map((m) => m.name);
          assert(listed.includes(rogue.node) && !listed.includes(quiet.node), status.stdout);
        },
      );

      await t.step("one host's mesh-reconcile stops: its drift turns stale", async () => {
        await stop(quiet.reconcile);
        quiet.reconcile = undefined;
        await waitFor("the stopped host stale on the board", async () => {
          const b = await board(inv);
          return b.get(quiet.node)?.verdict === "stale" ? b : undefined;
        }, said);
        // Its link still reports (a declaration verdict of ok); only its drift went stale.
        const out = await mustRun(inv, ["board", "--json"]);
        const m = (JSON.parse(out.stdout) as { machines: { name: string; verdict: string }[] })
          .machines.find((x) => x.name === quiet.node)!;
        assertEquals(m.verdict, "ok");
      });

      await t.step(
        "a truncated, then an oversized result: unreadable, and the link goes on",
        async () => {
          const good = await Deno.readTextFile(quiet.result);
          const reports = quiet.link!.lines.length;
          await Deno.writeTextFile(quiet.result, good.slice(0, Math.floor(good.length / 2)));
          const cut = await waitFor("the truncated result on the board", async () => {
            const b = await board(inv);
            const d = b.get(quiet.node)!;
            return d.verdict === "unreadable" ? d : undefined;
          }, said);
          assertEquals(cut.path, quiet.result);
          assert(cut.problem!.includes("truncated"), cut.problem);
          await Deno.writeTextFile(quiet.result, " ".repeat(4 * 1024 * 1024 + 1));
          const big = await waitFor("the oversized result on the board", async () => {
            const d = (await board(inv)).get(quiet.node)!;
            return d.problem?.includes("larger than") ? d : undefined;
          }, said);
          assertEquals(big.verdict, "unreadable");
          // The link applied and reported each time, and is still running.
          assert(quiet.link!.lines.length >= reports + 2, said());
          assertEquals(quiet.link!.exited(), undefined);
          assert(quiet.link!.lines.slice(reports).every((r) => r.outcome === "applied"));
        },
      );
    } finally {
      for (const h of hosts) {
        await stop(h.listener);
        await stop(h.reconcile);
        await h.link?.kill();
        await run(["ip", "netns", "del", h.netns], { allowFailure: true });
        const { deleteNodeAccount } = await import("../../control/broker_admin.ts");
        await deleteNodeAccount({
          amqp: "amqp://guest:guest@127.0.0.1:5672/%2F",
          api: "http://guest:guest@127.0.0.1:15672",
        }, h.node).catch(() => {});
      }
      await inv.drop();
      await Deno.remove(base, { recursive: true }).catch(() => {});
    }
  },
);
