/**
 * The grouped converge: file and directory resources are prepared several at a time (temporary
 * files written and fsync'd, journal entries made durable by one fdatasync), and their effects
 * made visible one after the other in declaration order. A failure anywhere in a group stops the
 * apply at that resource exactly as a one-by-one apply would: what precedes it is applied and
 * recorded, nothing after it becomes visible, its prepared temporary files are removed, the
 * result says "applied N of M", and the next apply converges. A kill during a group leaves a
 * store the next apply recovers from.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { applyResources, readFootprint } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import type { System } from "../../host/system.ts";
import type { Applier, Prepared } from "../../host/applier.ts";
import { Store } from "../../host/store.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A directory and `n` files in it, `f01` .. `fNN`. */
function tree(root: string, n: number, dir = "d"): Record<string, unknown>[] {
  return [
    { id: dir, type: "directory", path: `${root}/${dir}`, mode: "0755" },
    ...Array.from({ length: n }, (_, i) => {
      const name = `f${String(i + 1).padStart(2, "0")}`;
      return {
        id: `${dir}-${name}`,
        type: "file",
        path: `${root}/${dir}/${name}`,
        content: `${dir}/${name}\n`,
        mode: "0644",
      };
    }),
  ];
}

/** Every name under `dir`, recursively, relative to it (dot files included). */
async function listAll(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (d: string, rel: string) => {
    for await (const e of Deno.readDir(d)) {
      out.push(`${rel}${e.name}`);
      if (e.isDirectory) await visit(`${d}/${e.name}`, `${rel}${e.name}/`);
    }
  };
  await visit(dir, "");
  return out.sort();
}

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-group-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * The debian system whose file applier fails the preparation of `failing` once it is durable (as
 * a failed fsync would: its temporary file removed, then the rejection), and notes every
 * prepared resource.
 */
function failingAt(failing: string, prepared: string[]): System {
  const files = debian.appliers.file as Applier;
  const file: Applier = {
    ...files,
    prepare(resource, plan, context) {
      const real = files.prepare!(resource, plan, context);
      if (real === undefined) return undefined;
      prepared.push(resource.id);
      if (resource.id !== failing) return real;
      const broken: Prepared = {
        async ready() {
          await real.ready();
          real.discard();
          throw new Error(`Cannot write "${resource.id}": injected failure`);
        },
        commit: () => Promise.reject(new Error("committed after a failed preparation")),
        discard: () => real.discard(),
      };
      return broken;
    },
  };
  return { ...debian, appliers: { ...debian.appliers, file } };
}

Deno.test("a preparation failing in the middle of a group: N of M exact, nothing after it visible, its temporaries gone", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const state = `${dir}/state`;
    const resources = tree(root, 12);
    const prepared: string[] = [];
    const r = await applyResources(failingAt("d-f05", prepared), state, resources);
    // The failure was in a group: files after it were prepared too (else this test tests nothing).
    assert(prepared.includes("d-f06") && prepared.includes("d-f12"), prepared.join(" "));
    assertEquals([r.outcome, r.applied, r.total], ["failed", 5, 13]);
    assertEquals(r.problems.map((p) => p.id), ["d-f05"]);
    assertStringIncludes(r.problems[0]!.message, "injected failure");
    assertEquals(r.changes.map((c) => c.id), ["d", "d-f01", "d-f02", "d-f03", "d-f04"]);
    // Nothing after the failure is visible, and no temporary file is left.
    assertEquals(await listAll(root), ["d", "d/f01", "d/f02", "d/f03", "d/f04"]);
    // The footprint holds exactly what was applied (the journal's later intents never count).
    assertEquals((await readFootprint(state)).map((e) => e.id), [
      "d",
      "d-f01",
      "d-f02",
      "d-f03",
      "d-f04",
    ]);
    const again = await applyResources(debian, state, resources);
    assertEquals([again.outcome, again.applied], ["applied", 13]);
    assertEquals(again.changes.filter((c) => c.change === "created").length, 8);
    assertEquals(await listAll(root), [
      "d",
      ...resources.slice(1).map((x) => `d/${(x.id as string).slice(2)}`),
    ]);
    // Updates (no journal entry) fail the same way: those after the failure keep their content.
    const edited = resources.map((x) => x.type === "file" ? { ...x, content: "edited\n" } : x);
    prepared.length = 0;
    const updated = await applyResources(failingAt("d-f05", prepared), state, edited);
    assert(prepared.includes("d-f06") && prepared.includes("d-f12"), prepared.join(" "));
    assertEquals([updated.outcome, updated.applied, updated.total], ["failed", 5, 13]);
    assertEquals(updated.problems.map((p) => p.id), ["d-f05"]);
    assertEquals(await listAll(root), [
      "d",
      ...resources.slice(1).map((x) => `d/${(x.id as string).slice(2)}`),
    ]);
    for (const [i, x] of resources.entries()) {
      if (x.type !== "file") continue;
      const want = i < 5 ? "edited\n" : x.content;
      assertEquals(await Deno.readTextFile(x.path as string), want, x.id as string);
    }
    assertEquals((await applyResources(debian, state, edited)).applied, 13);
    // Everything is this host's creation: an empty declaration removes all of it.
    const empty = await applyResources(debian, state, []);
    assertEquals(empty.outcome, "applied");
    assertEquals(await listAll(root), []);
  });
});

Deno.test("a resource that cannot be prepared (a full disk) after a group: those before it applied, none after", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const state = `${dir}/state`;
    await Deno.mkdir(root);
    const mount = new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=64k,nr_inodes=200,mode=0755", "tmpfs", root],
    });
    assert((await mount.output()).success, "mount a tmpfs");
    try {
      // 8 files of 12 KiB fill a 64 KiB tmpfs part way through the group.
      const resources = tree(root, 8).map((x) =>
        x.type === "file" ? { ...x, content: "x".repeat(12 * 1024) } : x
      );
      const r = await applyResources(debian, state, resources);
      assertEquals(r.outcome, "failed");
      assert(r.applied >= 2 && r.applied < 9, `applied ${r.applied}`);
      const failed = resources[r.applied]!.id as string;
      assertEquals(r.problems.map((p) => p.id), [failed]);
      assertStringIncludes(r.problems[0]!.message, "Cannot write");
      const applied = resources.slice(1, r.applied).map((x) => `d/${(x.id as string).slice(2)}`);
      assertEquals(await listAll(root), ["d", ...applied]);
      assertEquals((await readFootprint(state)).length, r.applied);
      // Room again: the next apply converges.
      for (const name of applied) await Deno.remove(`${root}/${name}`);
      const small = resources.map((x) => x.type === "file" ? { ...x, content: "small\n" } : x);
      const again = await applyResources(debian, state, small);
      assertEquals([again.outcome, again.applied], ["applied", 9]);
    } finally {
      await new Deno.Command("umount", { args: [root] }).output();
    }
  });
});

Deno.test("a file below a declared file: the group before it is applied, the apply stops there", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const state = `${dir}/state`;
    const resources = [
      ...tree(root, 4),
      { id: "plain", type: "file", path: `${root}/d/plain`, content: "a file\n", mode: "0644" },
      { id: "below", type: "file", path: `${root}/d/plain/x`, content: "x\n", mode: "0644" },
      { id: "after", type: "file", path: `${root}/d/after`, content: "after\n", mode: "0644" },
    ];
    const r = await applyResources(debian, state, resources);
    assertEquals([r.outcome, r.applied, r.total], ["failed", 6, 8]);
    assertEquals(r.problems.map((p) => p.id), ["below"]);
    assertEquals(await listAll(root), ["d", "d/f01", "d/f02", "d/f03", "d/f04", "d/plain"]);
    const fixed = resources.filter((x) => x.id !== "below");
    const again = await applyResources(debian, state, fixed);
    assertEquals([again.outcome, again.applied], ["applied", 7]);
  });
});

Deno.test("a dry run prepares nothing", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const prepared: string[] = [];
    const r = await applyResources(failingAt("none", prepared), `${dir}/state`, tree(root, 5), {
      dryRun: true,
    });
    assertEquals([r.outcome, r.applied], ["applied", 6]);
    assertEquals(prepared, []);
    assertEquals(await Deno.lstat(root).then(() => true, () => false), false);
  });
});

Deno.test("a kill during a grouped converge leaves a store the next apply recovers from", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const state = `${dir}/state`;
    const resources = Array.from({ length: 30 }, (_, i) => tree(root, 10, `d${i}`)).flat();
    const file = `${dir}/declaration.json`;
    await Deno.writeTextFile(file, JSON.stringify({ version: 1, resources }));
    const apply = () =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          `${ROOT}systems/debian/main.ts`,
          "apply",
          file,
          "--state-dir",
          state,
          "--json",
        ],
        stdout: "piped",
        stderr: "piped",
      });
    // Kill it once files are appearing (part way through the groups), several times.
    for (let round = 0; round < 3; round++) {
      const child = apply().spawn();
      const deadline = Date.now() + 30_000;
      for (;;) {
        const n = await listAll(root).then((l) => l.length, () => 0);
        if (n > 40 + round * 60 || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      child.kill("SIGKILL");
      await child.output();
    }
    // Recovery: the store loads and holds only what exists.
    const store = await Store.load(state, {
      exists: (intent) => Deno.lstat(intent.subject).then(() => true, () => false),
    });
    for (const e of store.entries()) {
      assert(await Deno.lstat(e.subject).then(() => true, () => false), e.subject);
    }
    store.release();
    const out = await apply().output();
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    assertEquals([r.outcome, r.applied, r.total], ["applied", 330, 330]);
    assert(!(await listAll(root)).some((n) => n.endsWith(".mesh-tmp")), "no temporary file left");
    // Everything was recorded as created, so an empty declaration leaves nothing.
    await Deno.writeTextFile(file, JSON.stringify({ version: 1, resources: [] }));
    const empty = JSON.parse(new TextDecoder().decode((await apply().output()).stdout));
    assertEquals(empty.outcome, "applied");
    assertEquals(await listAll(root), []);
  });
});

Deno.test("a resource after a group is observed once the group is visible (an action's verify reads a file of it)", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const ran = `${dir}/ran`;
    const r = await applyResources(debian, `${dir}/state`, [
      ...tree(root, 3),
      {
        id: "act",
        type: "action",
        command: ["touch", ran],
        verify: ["test", "-e", `${root}/d/f03`],
      },
    ]);
    assertEquals([r.outcome, r.applied], ["applied", 5]);
    // Its verify saw the file: the command never ran.
    assertEquals(await Deno.lstat(ran).then(() => true, () => false), false);
  });
});

Deno.test("a directory declared after a directory inside it, both missing: applied as one by one would (found by review)", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const resources = [
      { id: "child", type: "directory", path: `${root}/p/q`, mode: "0755" },
      { id: "parent", type: "directory", path: `${root}/p`, mode: "0700" },
    ];
    const r = await applyResources(debian, `${dir}/state`, resources);
    // One by one: the child's creation makes p (ensureParents), the parent then finds p there.
    assertEquals([r.outcome, r.applied, r.problems], ["applied", 2, []]);
    assertEquals((await Deno.stat(`${root}/p`)).mode! & 0o777, 0o700);
  });
});

Deno.test("one file declared under two names through a symlinked directory is refused before anything is prepared (tests/host/real_location_test.ts holds the rule)", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    await Deno.mkdir(`${root}/real`, { recursive: true });
    await Deno.symlink(`${root}/real`, `${root}/link`);
    const resources = [
      { id: "real-f", type: "file", path: `${root}/real/f`, content: "A\n", mode: "0644" },
      { id: "link-f", type: "file", path: `${root}/link/f`, content: "B\n", mode: "0644" },
    ];
    const r = await applyResources(debian, `${dir}/state`, resources);
    assertEquals([r.outcome, r.applied, r.problems.map((p) => p.id)], ["refused", 0, ["link-f"]]);
    assertEquals(await listAll(`${root}/real`), []);
  });
});

// An alias made during the apply (by an action) is not known when the declaration is admitted:
// the group keeps its two names apart, and one by one the second takes over what the first made.
Deno.test("a directory an action replaces with a symlink is resolved again for the paths after it", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    await Deno.mkdir(`${root}/real`, { recursive: true });
    const r = await applyResources(debian, `${dir}/state`, [
      // Resolved while root/link does not exist; its creation makes root/link a directory.
      { id: "x", type: "file", path: `${root}/link/x`, content: "x\n", mode: "0644" },
      {
        id: "swap",
        type: "action",
        command: ["sh", "-c", `rm -rf '${root}/link' && ln -s '${root}/real' '${root}/link'`],
        verify: ["test", "-L", `${root}/link`],
      },
      // Now one file under two names: never prepared side by side.
      { id: "via-link", type: "file", path: `${root}/link/g`, content: "A\n", mode: "0644" },
      { id: "real-g", type: "file", path: `${root}/real/g`, content: "B\n", mode: "0644" },
    ]);
    assertEquals([r.outcome, r.applied, r.problems], ["applied", 4, []]);
    assertEquals(await Deno.readTextFile(`${root}/real/g`), "B\n");
    const created = (await readFootprint(`${dir}/state`)).filter((e) =>
      ["via-link", "real-g"].includes(e.id)
    )
      .map((e) => [e.id, e.created]);
    assertEquals(created, [["via-link", true], ["real-g", false]]);
  });
});

Deno.test("a no-op apply resolves no path: a member that changes nothing keeps no later path apart", async () => {
  await withDir(async (dir) => {
    const resources = [...tree(`${dir}/root`, 40), ...tree(`${dir}/root`, 40, "e")];
    assertEquals((await applyResources(debian, `${dir}/state`, resources)).outcome, "applied");
    const realPathSync = Deno.realPathSync;
    let resolved = 0;
    Deno.realPathSync = (path) => {
      resolved++;
      return realPathSync(path);
    };
    try {
      const r = await applyResources(debian, `${dir}/state`, resources);
      assertEquals([r.outcome, r.applied], ["applied", 82]);
      assert(r.changes.every((c) => c.change === "unchanged"));
    } finally {
      Deno.realPathSync = realPathSync;
    }
    assertEquals(resolved, 0);
  });
});

Deno.test("a directory whose mode changes is no inert member: a file below it is observed once it is set", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const declare = (mode: string) => [
      { id: "before", type: "file", path: `${root}/before`, content: "b\n", mode: "0644" },
      { id: "d", type: "directory", path: `${root}/d`, mode },
      { id: "f", type: "file", path: `${root}/d/f`, content: "f\n", mode: "0644" },
    ];
    assertEquals(
      (await applyResources(debian, `${dir}/state`, declare("0755"))).outcome,
      "applied",
    );
    const files = debian.appliers.file as Applier;
    const seen: number[] = [];
    const file: Applier = {
      ...files,
      async observe(resource, context) {
        if (resource.id === "f") seen.push(Deno.statSync(`${root}/d`).mode! & 0o777);
        return await files.observe(resource, context);
      },
    };
    const system = { ...debian, appliers: { ...debian.appliers, file } };
    const r = await applyResources(system, `${dir}/state`, declare("0700"));
    assertEquals([r.outcome, r.applied], ["applied", 3]);
    assertEquals(seen, [0o700]);
  });
});
