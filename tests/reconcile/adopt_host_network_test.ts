/**
 * Adoption of a container on the host's network (the first node's substrate: PostgreSQL and
 * RabbitMQ with `--network host`, seen in the fleet lab, tests/lab/fleet_test.ts): it publishes no
 * port, so its listeners were adopted as daemons, and the next `run` found each "would not come
 * back after a reboot" (a process in a container's cgroup runs in no service), so the first node
 * was never clean. Its listeners are now the container's ports, found through their holders'
 * cgroups, and the adopted registry is clean against the same machine.
 */

import { assertEquals } from "../support/assert.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { compare } from "../../reconcile/compare.ts";
import type { Observation } from "../../reconcile/finding.ts";
import {
  adoptRegistry,
  containerOfCgroup,
  observeContainerListeners,
} from "../../reconcile/adopt.ts";

const STORE = "65a8daa2c762acd3235b25272c769d1170c37fa87c2ac90c6c98ab98f6502e55";
const BROKER = "be719effb71e3664ffefda5ff861ec4a24bf0fbff71c35bdee2f4d8807df1055";
const NOW = Date.parse("2026-12-04T16:48:00Z");

function machine(): Observation {
  const holder = (pid: number, command: string) => ({ pid, command, uid: 0, user: "root" });
  const listener = (port: number, pid: number, command: string) => ({
    family: 4 as const,
    address: "0.0.0.0",
    port,
    uid: 0,
    user: "root",
    inode: port,
    processes: [holder(pid, command)],
  });
  const container = (name: string, id: string) => ({
    account: "root",
    runtime: "podman" as const,
    name,
    id,
    image: "127.0.0.1:5000/x",
    labels: {},
    ports: [],
  });
  return {
    time: new Date(NOW).toISOString(),
    containers: [container("mesh-store", STORE), container("mesh-broker", BROKER)],
    listeners: [
      listener(4369, 807, "epmd"),
      listener(5432, 350, "postgres"),
      listener(5672, 739, "beam.smp"),
      listener(9470, 900, "deno"),
    ],
    addresses: [],
    probes: [],
    sources: [
      { source: "podman", account: "root", state: "observed", method: "m", detail: "" },
      { source: "sockets", state: "observed", method: "m", detail: "" },
      { source: "caddy", state: "observed", method: "m", detail: "" },
    ],
  };
}

Deno.test("containerOfCgroup: the lab's podman paths, systemd scopes, never the monitor", () => {
  const ids = [STORE, BROKER];
  assertEquals(containerOfCgroup(`0::/libpod_parent/libpod-${STORE}\n`, ids), STORE);
  assertEquals(
    containerOfCgroup(`0::/machine.slice/libpod-${BROKER}.scope/container\n`, ids),
    BROKER,
  );
  assertEquals(containerOfCgroup(`0::/system.slice/docker-${STORE}.scope\n`, ids), STORE);
  assertEquals(
    containerOfCgroup(`0::/machine.slice/libpod-conmon-${STORE}.scope\n`, ids),
    undefined,
  );
  assertEquals(containerOfCgroup(`0::/system.slice/ssh.service\n`, ids), undefined);
  assertEquals(containerOfCgroup(`0::/libpod_parent/libpod-${"0".repeat(64)}\n`, ids), undefined);
});

Deno.test("a host-network container's listeners are adopted as its ports: the next run is clean", async () => {
  const proc = await Deno.makeTempDir({ prefix: "mesh-adopt-proc-" });
  try {
    const cgroups: Record<number, string> = {
      807: `0::/libpod_parent/libpod-${BROKER}\n`,
      350: `0::/libpod_parent/libpod-${STORE}\n`,
      739: `0::/libpod_parent/libpod-${BROKER}\n`,
      900: `0::/system.slice/mesh-reconcile-stamp.service\n`,
    };
    for (const [pid, text] of Object.entries(cgroups)) {
      await Deno.mkdir(`${proc}/${pid}`);
      await Deno.writeTextFile(`${proc}/${pid}/cgroup`, text);
    }
    const o = machine();
    const found = await observeContainerListeners(o, proc);
    assertEquals([...found].sort(), [[BROKER, [4369, 5672]], [STORE, [5432]]].sort());
    const registry = parseRegistry(
      adoptRegistry(o, { accounts: ["root"], containerListeners: found }),
    );
    const entries = Object.entries(registry.services).map(([name, e]) => [name, e.kind, e.port]);
    assertEquals(entries, [
      ["mesh-broker", "service", [4369, 5672]],
      ["mesh-store", "service", [5432]],
      ["deno", "daemon", [9470]],
    ]);
    assertEquals(compare(registry, o, { certWarnMs: 14 * 86_400_000, now: NOW }), []);
  } finally {
    await Deno.remove(proc, { recursive: true });
  }
});
