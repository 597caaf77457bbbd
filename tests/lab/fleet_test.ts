/**
 * A lab fleet, from bare machines, by the docs. Three bare lab machines (no Deno, no checkout) on a
 * podman network of their own: the first node (Debian systemd), a second Debian systemd node and a
 * Debian OpenRC node. Each gets only the files docs/operations.md says to copy (the one-file host
 * carrying a substrate lock made on this machine, the one-file mesh-reconcile, on the first node
 * the one-file mesh-control, launcher.sh and packaging/). Then every block of the page marked
 * `<!-- lab: ... -->` is run, in page order, with `sh -e` on the machine it names, with the page's
 * placeholders filled in (tests/support/runbook.ts): a step that fails fails the test, naming its
 * line in the page and what it printed. So the page cannot drift from the product.
 *
 * At the end: every node applied the module pushed to it; every node's drift check, installed by
 * the documented units and run by its timer, reaches the board through its link (`clean`); the
 * control plane's watchers read each node's stamp over the network (`up`). The first node's
 * credentials are root-only and in no report, log, store or the board. Then the second node's
 * machine is stopped: within the time the page documents (computed from its values) the board says
 * `silent` and its watcher `unreachable`; started again, both recover. Then the first node is
 * rebooted: its substrate's containers are back by the init, the inventory keeps its schema rows,
 * the broker answers, the carried bundle applied again three times changes nothing, the host owns
 * what the bundle and the link applied, and the fleet converges again. The test prints the time
 * from bare machines to a converged, watched fleet, and each step's time.
 *
 * This replaces tests/host/substrate_lab_test.ts (the first node raising the substrate from one
 * file, its reboot, a second node joining), so that the suite boots the substrate once.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import {
  bootLab,
  type LabKind,
  type LabMachine,
  rebootLab,
  registryForBridge,
  waitForInit,
} from "./mod.ts";
import { MIGRATIONS } from "../../control/db.ts";
import { run } from "../../lib/command.ts";
import { freshSubstrateLock, substrateHost } from "../support/substrate.ts";
import { NATIVE_ARCH, oneFileProgram } from "../support/onefile.ts";
import { fillIn, readRunbook, type RunbookBlock, uses } from "../support/runbook.ts";

const PAGE = "docs/operations.md";
/**
 * The short intervals the lab gives the page's values. A drift check's result is `stale` past
 * twice its interval, and a timer's next run starts an interval after the last one ended: on the
 * shared lab a run on the first node takes about 30 s, so its interval is 60 s, not 30 s.
 */
const LINK_EVERY_S = 30;
const RECONCILE_EVERY_S = 60;
const WATCH_EVERY_S = 15;
/** The board's default grace and the watcher's default request timeout, as the page states them. */
const BOARD_GRACE_S = 60;
const WATCH_TIMEOUT_S = 10;

interface Node {
  name: string;
  kind: LabKind;
  machine: LabMachine;
  address: string;
  brokerUrl?: string;
}

interface BoardMachine {
  name: string;
  verdict?: string;
  drift?: { verdict?: string };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test({
  name: "a fleet from bare machines by docs/operations.md: converged, watched, a stop seen",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const book = readRunbook(await Deno.readTextFile(`${ROOT}${PAGE}`), PAGE);
    const lock = await freshSubstrateLock();
    const [host, reconcile, control] = await Promise.all([
      substrateHost(lock.path),
      oneFileProgram("reconcile"),
      oneFileProgram("control"),
    ]);

    const tag = crypto.randomUUID().slice(0, 6);
    const network = `mesh-fleet-${tag}`;
    const octet = 100 + Math.floor(Math.random() * 150);
    const subnet = `10.213.${octet}`;
    await run(["podman", "network", "create", "--subnet", `${subnet}.0/24`, network]);
    const nodes: Node[] = [];
    let stopForwarder = () => {};
    try {
      const started = performance.now();
      const plan: [string, LabKind, string][] = [
        ["fleet-first", "systemd", `${subnet}.10`],
        ["fleet-second", "systemd", `${subnet}.11`],
        ["fleet-third", "openrc", `${subnet}.12`],
      ];
      const booted = await Promise.allSettled(
        plan.map(([name, kind, ip]) =>
          bootLab(kind, { bare: true, network, ip, name: `mesh-lab-${name}-${tag}` })
        ),
      );
      // Every machine that came up is in `nodes`, so that `finally` removes it.
      booted.forEach((b, i) => {
        const [name, kind, address] = plan[i]!;
        if (b.status === "fulfilled") nodes.push({ name, kind, address, machine: b.value });
      });
      const refused = booted.find((b) => b.status === "rejected");
      if (refused) throw (refused as PromiseRejectedResult).reason;
      const first = nodes[0]!;
      stopForwarder = await registryForBridge(first.machine, network);

      // Only the files the page says to copy, into one directory.
      const files = `/root/mesh`;
      for (const node of nodes) {
        const m = node.machine;
        const bare = await m.exec(["sh", "-c", "command -v deno || ls /mesh"], {
          allowFailure: true,
        });
        assert(bare.code !== 0, `${m.name} has Deno or a checkout: ${bare.stdout}`);
        await m.exec(["mkdir", "-p", files]);
        await m.copyIn(host.path, `${files}/mesh-host-debian-x86_64`);
        await m.copyIn(reconcile, `${files}/mesh-reconcile-x86_64`);
        await m.copyIn(`${ROOT}launcher.sh`, `${files}/launcher.sh`);
        await m.copyIn(`${ROOT}packaging`, `${files}/packaging`);
        if (node === first) await m.copyIn(control, `${files}/mesh-control-x86_64`);
      }
      assertEquals(NATIVE_ARCH, "x86_64", "the page names the x86_64 files");

      const common: Record<string, string> = {
        CONTROL_ADDRESS: first.address,
        LINK_EVERY: `${LINK_EVERY_S}s`,
        RECONCILE_EVERY: `${RECONCILE_EVERY_S}s`,
        WATCH_EVERY: `${WATCH_EVERY_S}s`,
        WATCH_MAX_AGE: `${RECONCILE_EVERY_S * 4}s`,
      };
      const perNode = ["NODE_NAME", "NODE_ADDRESS", "NODE_BROKER_URL"];
      // The mesh's CA certificate, as the first node's bundle made it (what `node enroll` hands
      // over): read once the first node's blocks ran.
      let caCert: string | undefined;
      // Control's public key, as the first node's bundle made it (what `node enroll` prints).
      let controlPub: string | undefined;
      const fromFirst = (): Record<string, string> => ({
        ...(caCert ? { MESH_CA_CERT: caCert } : {}),
        ...(controlPub ? { MESH_CONTROL_PUB: controlPub } : {}),
      });
      const valuesFor = (node: Node | undefined): Record<string, string> =>
        node === undefined ? { ...common, ...fromFirst() } : {
          ...common,
          ...fromFirst(),
          NODE_NAME: node.name,
          NODE_ADDRESS: node.address,
          ...(node.brokerUrl ? { NODE_BROKER_URL: node.brokerUrl } : {}),
        };

      const runBlock = async (block: RunbookBlock, on: Node, forNode: Node | undefined) => {
        const text = fillIn(block, book.values, valuesFor(forNode));
        const t0 = performance.now();
        const r = await on.machine.exec(["sh", "-ec", `cd ${files}\n${text}`], {
          allowFailure: true,
          timeoutMs: 20 * 60_000,
        });
        const took = ((performance.now() - t0) / 1000).toFixed(1);
        console.log(
          `${PAGE}:${block.line} (${block.target}) on ${on.name}` +
            `${forNode && forNode !== on ? ` for ${forNode.name}` : ""}: exit ${r.code}, ${took}s`,
        );
        if (r.code !== 0) {
          // The step and what it said, with no node's broker password in the test's output.
          const hide = (said: string) => said.replace(/(amqps?:\/\/[^:\s]+:)[^@\s]+@/g, "$1***@");
          throw new Error(
            `The step at ${PAGE} line ${block.line} (${block.target}) failed on ${on.name}` +
              `${forNode ? ` for ${forNode.name}` : ""} (exit ${r.code}):\n${hide(text)}\n` +
              `--- stdout\n${hide(r.stdout)}\n--- stderr\n${hide(r.stderr)}`,
          );
        }
        if (forNode) {
          const url = new RegExp(`amqps?://${forNode.name}:[^\\s]+`).exec(r.stdout)?.[0];
          if (url) forNode.brokerUrl = url;
        }
        return r;
      };

      for (const block of book.blocks) {
        switch (block.target) {
          case "first": {
            await runBlock(block, first, undefined);
            const ca = await first.machine.exec(["cat", "/etc/mesh/ca.crt"], {
              allowFailure: true,
            });
            if (ca.code === 0 && ca.stdout.includes("BEGIN CERTIFICATE")) caCert = ca.stdout.trim();
            const pub = await first.machine.exec(["cat", "/etc/mesh/control.pub"], {
              allowFailure: true,
            });
            if (pub.code === 0 && pub.stdout.includes("BEGIN PUBLIC KEY")) {
              controlPub = pub.stdout.trim();
            }
            break;
          }
          case "control":
            if (uses(block, perNode)) {
              for (const node of nodes) await runBlock(block, first, node);
            } else await runBlock(block, first, undefined);
            break;
          default: {
            const kind = block.target === "node" ? undefined : block.target.slice(5);
            for (const node of nodes) {
              if (kind === undefined || node.kind === kind) await runBlock(block, node, node);
            }
          }
        }
      }

      // Converged and watched: every node ok and clean on the board, the module applied, every
      // watcher up.
      const mc = async (args: string) =>
        await first.machine.exec([
          "sh",
          "-c",
          `set -a; . /etc/default/mesh-control; set +a; mesh-control ${args}`,
        ], { allowFailure: true });
      const board = async (): Promise<BoardMachine[]> => {
        const r = await mc("board --json");
        if (r.code !== 0) throw new Error(`board failed (exit ${r.code}): ${r.stderr}`);
        return (JSON.parse(r.stdout) as { machines: BoardMachine[] }).machines;
      };
      const watcher = async (node: Node): Promise<string> => {
        const r = await first.machine.exec([
          "cat",
          `/var/lib/mesh/reconcile-watch/${node.name}/state.json`,
        ], { allowFailure: true });
        if (r.code !== 0) return "none";
        return (JSON.parse(r.stdout) as { state: string }).state;
      };
      const fleetState = async () => {
        const machines = await board();
        return await Promise.all(nodes.map(async (node) => {
          const m = machines.find((b) => b.name === node.name);
          return `${node.name}: ${m?.verdict} ${m?.drift?.verdict} watch ${await watcher(node)}`;
        }));
      };
      const converged = (states: string[]) =>
        states.every((s) => s.endsWith(": ok clean watch up"));
      let states: string[] = [];
      const deadline = Date.now() + 10 * 60_000;
      while (Date.now() < deadline) {
        states = await fleetState();
        if (converged(states)) break;
        await sleep(3000);
      }
      const convergedAfter = (performance.now() - started) / 1000;
      if (!converged(states)) {
        const logs = await Promise.all(
          nodes.map(async (n) =>
            `--- ${n.name}\n` + (await n.machine.exec([
              "sh",
              "-c",
              n.kind === "systemd"
                ? "journalctl --no-pager -n 60 -u mesh-host -u mesh-reconcile -u mesh-reconcile-stamp 2>&1; cat /var/lib/mesh/reconcile/result.json"
                : "tail -n 40 /var/log/mesh-host.log /var/log/mesh-reconcile.log /var/log/mesh-reconcile-stamp.log 2>&1; cat /var/lib/mesh/reconcile/result.json",
            ], { allowFailure: true })).stdout
          ),
        );
        // The states again at the end: CI keeps only the tail of what a failure prints.
        throw new Error(
          `The fleet did not converge: ${states.join("; ")}\n${logs.join("\n")}\n` +
            `--- not converged: ${states.join("; ")}`,
        );
      }
      console.log(
        `from bare machines to a converged, watched fleet of ${nodes.length}: ` +
          `${convergedAfter.toFixed(0)}s (${states.join("; ")})`,
      );
      for (const node of nodes) {
        assertEquals(
          (await node.machine.exec(["cat", "/srv/hello/greeting"])).stdout,
          "hello from the control plane\n",
        );
      }

      // The substrate on the first node: root-only credentials, in nothing it wrote or said; the
      // inventory holds its schema.
      const secret = async (name: string) =>
        (await first.machine.exec(["cat", `/etc/mesh/secrets/${name}`])).stdout.trim();
      const store = await secret("store");
      const broker = await secret("broker");
      assert(/^[0-9a-f]{64}$/.test(store) && /^[0-9a-f]{64}$/.test(broker), "credentials made");
      const modes = await first.machine.exec([
        "stat",
        "-c",
        "%n %a %U",
        "/etc/mesh/secrets",
        "/etc/mesh/secrets/store",
        "/etc/mesh/secrets/broker",
        "/etc/default/mesh-control",
      ]);
      assertEquals(modes.stdout.trim().split("\n"), [
        "/etc/mesh/secrets 700 root",
        "/etc/mesh/secrets/store 600 root",
        "/etc/mesh/secrets/broker 600 root",
        "/etc/default/mesh-control 600 root",
      ]);
      const said = (await first.machine.exec([
        "sh",
        "-c",
        "cat /var/lib/mesh/host/store.json; podman logs mesh-store 2>&1; " +
        "podman logs mesh-broker 2>&1; journalctl --no-pager 2>&1",
      ])).stdout + JSON.stringify(await board());
      assert(!said.includes(store) && !said.includes(broker), "a credential leaked");
      assert(!lock.text.includes(store) && !lock.text.includes(broker));
      const schemaRows = async () =>
        (await first.machine.exec([
          "podman",
          "exec",
          "-u",
          "postgres",
          "mesh-store",
          "psql",
          "-X",
          "-At",
          "-d",
          "inventory",
          "-c",
          "select string_agg(name, ',' order by name) from schema_migrations",
        ])).stdout.trim();
      assertEquals(await schemaRows(), MIGRATIONS.map((m) => m.name).join(","));
      // The nodes that joined never took the substrate they carry.
      for (const node of nodes.slice(1)) {
        const ps = await node.machine.exec(["podman", "ps", "-a", "--format", "{{.Names}}"], {
          allowFailure: true,
        });
        assert(!ps.stdout.includes("mesh-store"), `a substrate on ${node.name}`);
      }

      // One node machine stopped: silent on the board and unreachable to its watcher within the
      // documented times; started again, both recover.
      const stopped = nodes[1]!;
      const silentWithin = 2 * LINK_EVERY_S + BOARD_GRACE_S;
      const unreachableWithin = WATCH_EVERY_S + WATCH_TIMEOUT_S;
      const slack = 15; // this test's polling, and a watch run's own start
      await run(["podman", "stop", "-t", "30", stopped.machine.name], { timeoutMs: 120_000 });
      const stoppedAt = performance.now();
      let silentAfter: number | undefined;
      let unreachableAfter: number | undefined;
      while (performance.now() - stoppedAt < (silentWithin + slack) * 1000) {
        const seconds = (performance.now() - stoppedAt) / 1000;
        const m = (await board()).find((b) => b.name === stopped.name);
        if (silentAfter === undefined && m?.verdict === "silent") silentAfter = seconds;
        if (unreachableAfter === undefined && (await watcher(stopped)) === "unreachable") {
          unreachableAfter = seconds;
        }
        if (silentAfter !== undefined && unreachableAfter !== undefined) break;
        await sleep(2000);
      }
      console.log(
        `${stopped.name} stopped: silent after ${silentAfter?.toFixed(0)}s ` +
          `(documented ${silentWithin}s), unreachable after ${unreachableAfter?.toFixed(0)}s ` +
          `(documented ${unreachableWithin}s)`,
      );
      assert(
        silentAfter !== undefined && silentAfter <= silentWithin + slack,
        `the board did not say silent within ${silentWithin}s: ${await fleetState()}`,
      );
      assert(
        unreachableAfter !== undefined && unreachableAfter <= unreachableWithin + slack,
        `the watcher did not say unreachable within ${unreachableWithin}s`,
      );
      await run(["podman", "start", stopped.machine.name], { timeoutMs: 120_000 });
      const restartedAt = performance.now();
      await waitForInit(stopped.machine);
      const recoverWithin = 4 * 60;
      while ((performance.now() - restartedAt) / 1000 < recoverWithin) {
        states = await fleetState();
        if (converged(states)) break;
        await sleep(3000);
      }
      assert(converged(states), `the fleet did not recover: ${states.join("; ")}`);
      console.log(
        `${stopped.name} started again: recovered after ` +
          `${((performance.now() - restartedAt) / 1000).toFixed(0)}s`,
      );

      // The first node rebooted: the init brings the substrate's containers back (restart policy
      // always, podman-restart.service), the inventory keeps its schema, the broker answers, and
      // the whole fleet converges again, watched.
      await rebootLab(first.machine);
      const rebootedAt = performance.now();
      const up = await first.machine.exec(["podman", "ps", "--format", "{{.Names}} {{.Status}}"]);
      assert(/^mesh-store Up/m.test(up.stdout) && /^mesh-broker Up/m.test(up.stdout), up.stdout);
      let answered = "";
      for (let i = 0; i < 120 && answered === ""; i++) {
        const probe = await mc("broker check --topology");
        if (probe.code === 0) answered = probe.stdout;
        else await sleep(1000);
      }
      assert(answered.includes("management API answering"), `after the reboot: ${answered}`);
      assertEquals(await schemaRows(), MIGRATIONS.map((m) => m.name).join(","));
      // The carried bundle, applied again after the reboot beside the running link, three
      // times: nothing to change; and the host owns both what the bundle and the link applied.
      for (let i = 0; i < 3; i++) {
        const r = await first.machine.exec(["/usr/lib/mesh/mesh-host", "reconcile", "--json"], {
          allowFailure: true,
          timeoutMs: 600_000,
        });
        const result = JSON.parse(r.stdout || "{}") as { changes?: { change: string }[] };
        const changed = (result.changes ?? []).filter((c) => c.change !== "unchanged");
        assertEquals([r.code, changed], [0, []], r.stdout + r.stderr);
      }
      const owned = JSON.parse(
        (await first.machine.exec(["/usr/lib/mesh/mesh-host", "owned", "--json"])).stdout,
      ) as { source: string }[] | { resources: { source: string }[] };
      const sources = new Set(
        (Array.isArray(owned) ? owned : owned.resources).map((r) => r.source),
      );
      assert(sources.has("bundle") && sources.has("link"), `owned: ${[...sources]}`);
      while ((performance.now() - rebootedAt) / 1000 < recoverWithin) {
        states = await fleetState().catch((e) => [String(e)]);
        if (converged(states)) break;
        await sleep(3000);
      }
      assert(
        converged(states),
        `the fleet did not converge after the reboot: ${states.join("; ")}`,
      );
      console.log(
        `${first.name} rebooted: the fleet converged again after ` +
          `${((performance.now() - rebootedAt) / 1000).toFixed(0)}s`,
      );
    } finally {
      stopForwarder();
      await Promise.all(nodes.map((n) => n.machine.destroy()));
      await run(["podman", "network", "rm", "-f", network], { allowFailure: true });
    }
  },
});
