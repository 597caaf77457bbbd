/**
 * An owner created earlier in the same declaration (mesh issue 30, item 5): an `action` makes a
 * real system group and user (`groupadd --system`, `useradd --system`), and a directory and a
 * file declared after it are owned by them. Applied in-process through `applyBytes`, as root, on
 * this machine's real accounts; every user and group is named with a unique `meshtest-` prefix
 * and removed in `finally`.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { uniqueName } from "../support/mod.ts";
import { run } from "../../lib/command.ts";
import type { ApplyResult } from "../../host/apply.ts";
import { applyResources, readFootprint } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import type { System } from "../../host/system.ts";
import { actionApplier } from "../../resources/action/applier.ts";

const system: System = { ...debian, appliers: { ...debian.appliers, action: actionApplier } };

const problems = (r: ApplyResult) => r.problems.map((p) => `${p.id}: ${p.message}`).join("\n");
const change = (r: ApplyResult, id: string) => r.changes.find((c) => c.id === id);

/** A temporary directory and a unique account name; the account and its group removed after. */
async function withAccount(fn: (dir: string, name: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-owner-" });
  const name = uniqueName("meshtest");
  try {
    await fn(dir, name);
  } finally {
    await run(["userdel", name], { allowFailure: true });
    await run(["groupdel", name], { allowFailure: true });
    await Deno.remove(dir, { recursive: true });
  }
}

/** An action creating group and user `name`, then a directory and a file they own. */
function declaration(dir: string, name: string) {
  return [
    {
      id: "account",
      type: "action",
      command: [
        "sh",
        "-c",
        `groupadd --system ${name} && ` +
        `useradd --system --no-create-home --gid ${name} --shell /usr/sbin/nologin ${name}`,
      ],
      verify: ["sh", "-c", `getent passwd ${name} && getent group ${name}`],
    },
    { id: "dir", type: "directory", path: `${dir}/app`, mode: "0750", owner: name, group: name },
    {
      id: "conf",
      type: "file",
      path: `${dir}/app/app.conf`,
      content: "port=8080\n",
      mode: "0640",
      owner: name,
      group: name,
    },
  ];
}

/** The uid and gid of `name` as the machine says (getent). */
async function idsOf(name: string): Promise<{ uid: number; gid: number }> {
  const user = (await run(["getent", "passwd", name])).stdout.split(":");
  const group = (await run(["getent", "group", name])).stdout.split(":");
  return { uid: Number(user[2]), gid: Number(group[2]) };
}

Deno.test("an owner an earlier action creates owns the paths declared after it", async () => {
  await withAccount(async (dir, name) => {
    const state = `${dir}/state`;
    const resources = declaration(`${dir}/root`, name);
    const first = await applyResources(system, state, resources);
    assertEquals(first.outcome, "applied", problems(first));
    assertEquals(first.changes.map((c) => [c.id, c.change]), [
      ["account", "updated"],
      ["dir", "created"],
      ["conf", "created"],
    ]);
    const { uid, gid } = await idsOf(name);
    assert(uid > 0 && gid > 0, `${name}: uid ${uid}, gid ${gid}`);
    for (const path of [`${dir}/root/app`, `${dir}/root/app/app.conf`]) {
      const info = await Deno.lstat(path);
      assertEquals([info.uid, info.gid], [uid, gid], path);
    }
    const stored = await readFootprint(state);
    assertEquals(stored.map((e) => [e.id, e.type, e.created]), [
      ["account", "action", false],
      ["dir", "directory", true],
      ["conf", "file", true],
    ]);

    // A second run: nothing to do, and the store as the first left it.
    const again = await applyResources(system, state, resources);
    assertEquals(again.outcome, "applied", problems(again));
    assertEquals(again.changes.map((c) => c.change), ["unchanged", "unchanged", "unchanged"]);
    assertEquals(await readFootprint(state), stored);
    const dry = await applyResources(system, state, resources, { dryRun: true });
    assertEquals(dry.changes.map((c) => c.change), ["unchanged", "unchanged", "unchanged"]);
  });
});

Deno.test("a dry run says an owner not there yet may be made by an earlier action", async () => {
  await withAccount(async (dir, name) => {
    const state = `${dir}/state`;
    const dry = await applyResources(system, state, declaration(`${dir}/root`, name), {
      dryRun: true,
    });
    assertEquals(dry.outcome, "applied", problems(dry));
    assertEquals(dry.changes.map((c) => [c.id, c.change]), [
      ["account", "updated"],
      ["dir", "created"],
      ["conf", "created"],
    ]);
    for (const id of ["dir", "conf"]) {
      for (const kind of ["owner", "group"]) {
        assertStringIncludes(
          change(dry, id)?.detail ?? "",
          `${kind} "${name}" does not exist yet: resource "account" (action) declared before ` +
            `it would run in the apply and may create it`,
        );
      }
    }
    // Nothing was done: no account, no path.
    assertEquals((await run(["getent", "passwd", name], { allowFailure: true })).code, 2);
    assertEquals(await Deno.lstat(`${dir}/root`).then(() => true, () => false), false);
  });
});

Deno.test("an owner no step creates is still refused, in an apply and a dry run", async () => {
  await withAccount(async (dir, name) => {
    const state = `${dir}/state`;
    // The action's verify is satisfied (it changes nothing): it is no excuse for the owner.
    const resources = [
      { id: "noop", type: "action", command: ["false"], verify: ["true"] },
      { id: "dir", type: "directory", path: `${dir}/root/app`, mode: "0750", owner: name },
    ];
    for (const dryRun of [true, false]) {
      const r = await applyResources(system, state, resources, { dryRun });
      assertEquals(r.outcome, "failed", `dry run ${dryRun}`);
      assertEquals(
        r.problems.map((p) => [p.id, p.message]),
        [["dir", `Owner "${name}" does not exist on this machine`]],
      );
    }
    assertEquals(await Deno.lstat(`${dir}/root`).then(() => true, () => false), false);
  });
});
