/**
 * The generic applier contract (tests/host/contract.ts), against every applier on every system
 * it exists for: on this VM (Debian, no service manager booted it, podman answers) the path
 * appliers, the container applier and the action applier; in the systemd and OpenRC lab
 * machines the service applier (each manager), the dpkg package applier and the path appliers
 * again, through tests/host/contract_lab_entry.ts run inside the machine. The pacman and apk
 * package appliers run it in tests/host/package_test.ts, beside the fixtures that make them
 * real (a private pacman configuration) or recorded (a fake apk replaying apk's outputs).
 */

import { assert, assertEquals } from "../support/assert.ts";
import "../support/mod.ts";
import { type ContractCase, runContract } from "./contract.ts";
import { debian } from "../../systems/debian/mod.ts";
import { run } from "../../lib/command.ts";
import { bootLab, pinnedBusybox } from "../lab/mod.ts";
import type { Resource } from "../../lib/declaration.ts";

const stat = async (path: string) => {
  try {
    const i = await Deno.lstat(path);
    return `${i.isDirectory ? "d" : "f"} ${
      ((i.mode ?? 0) & 0o7777).toString(8)
    } ${i.uid}:${i.gid} ${i.isFile ? await Deno.readTextFile(path) : ""}`;
  } catch {
    return "absent";
  }
};

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-contract-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("applier contract on this VM: directory, file, action", async () => {
  await withDir(async (dir) => {
    const cases: ContractCase[] = [
      {
        name: "directory on debian",
        system: debian,
        resource: { id: "d", type: "directory", path: `${dir}/d`, mode: "0750" },
        snapshot: () => stat(`${dir}/d`),
        drift: () => Deno.chmod(`${dir}/d`, 0o777),
        removeByHand: () => Deno.remove(`${dir}/d`),
      },
      {
        name: "file on debian",
        system: debian,
        resource: { id: "f", type: "file", path: `${dir}/f`, content: "x\n", mode: "0640" },
        snapshot: () => stat(`${dir}/f`),
        drift: () => Deno.writeTextFile(`${dir}/f`, "drift\n"),
        removeByHand: () => Deno.remove(`${dir}/f`),
      },
      {
        name: "action on debian",
        system: debian,
        resource: {
          id: "a",
          type: "action",
          command: ["touch", `${dir}/acted`],
          verify: ["test", "-e", `${dir}/acted`],
        } as Resource,
        snapshot: () => stat(`${dir}/acted`),
        drift: () => Deno.remove(`${dir}/acted`),
        removeByHand: () => Deno.remove(`${dir}/acted`),
      },
    ];
    for (const [i, c] of cases.entries()) {
      const seen = await runContract(c, `${dir}/state-${i}`);
      assertEquals(seen.length, 6, seen.join("\n"));
    }
  });
});

Deno.test({
  name: "applier contract on this VM: container (podman)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const image = await pinnedBusybox();
    const name = `mesh-contract-${crypto.randomUUID().slice(0, 6)}`;
    const inspect = async () => {
      const r = await run([
        "podman",
        "container",
        "inspect",
        name,
        "--format",
        '{{.Id}} {{.State.Status}} {{index .Config.Labels "mesh.declaration"}}',
      ], { allowFailure: true });
      return r.code === 0 ? r.stdout.trim() : "absent";
    };
    await withDir(async (dir) => {
      try {
        const seen = await runContract({
          name: "container on podman",
          system: debian,
          resource: { id: "c", type: "container", name, image, command: ["sleep", "3600"] },
          snapshot: inspect,
          drift: async () => {
            await run(["podman", "stop", "-t", "0", name]);
          },
          removeByHand: async () => {
            await run(["podman", "rm", "-f", "-t", "0", name]);
          },
        }, `${dir}/state`);
        assert(seen.some((s) => s.startsWith("over drift: dry run updated")), seen.join("\n"));
      } finally {
        await run(["podman", "rm", "-f", "-t", "0", name], { allowFailure: true });
      }
    });
  },
});

for (const kind of ["systemd", "openrc"] as const) {
  Deno.test({
    name: `applier contract in the ${kind} lab: service, package (dpkg), directory, file`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const m = await bootLab(kind);
      try {
        const r = await m.exec([
          "deno",
          "run",
          "-A",
          "--quiet",
          "--config",
          "/mesh/deno.json",
          "/mesh/tests/host/contract_lab_entry.ts",
        ], { allowFailure: true, timeoutMs: 600_000 });
        assertEquals(r.code, 0, `${r.stdout}\n${r.stderr}`);
        for (const c of ["service", "package", "directory", "file"]) {
          assert(r.stdout.includes(`ok ${c} on ${kind}`), r.stdout);
        }
        // The plans the dry run and the apply agreed on, from nothing and over drift.
        const service = kind === "systemd"
          ? ["systemctl enable, systemctl start", "systemctl start"]
          : [
            "rc-update add meshcontract default, rc-service meshcontract start",
            "rc-service meshcontract start",
          ];
        assert(r.stdout.includes(`apply updated, plan [${service[0]}]`), r.stdout);
        assert(r.stdout.includes(`apply updated, plan [${service[1]}]`), r.stdout);
        assert(r.stdout.includes("apply created, plan [apt-get install hello]"), r.stdout);
      } finally {
        await m.destroy();
      }
    },
  });
}
