/**
 * One thing reached by two paths is one thing (docs/design.md, "Hostile inputs", rule 2): a file's
 * identity is its real location (host/store.ts `realLocation`). Two sources never both hold it,
 * the second is refused naming the first; removal never deletes, through an alias, what another
 * source holds; one declaration naming one file twice is refused. Applied in-process through
 * `applySources` (the path `mesh-host reconcile` takes for several sources) under a temporary
 * root, on this machine's real file system.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { type ApplyResult, applySources, readSource } from "../../host/apply.ts";
import { claimKey, realLocation, Store } from "../../host/store.ts";
import { debian } from "../../systems/debian/mod.ts";
import { readFootprint } from "./support.ts";

type Resources = Record<string, unknown>[];

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-location-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const file = (id: string, path: string, content: string) => ({
  id,
  type: "file",
  path,
  content,
  mode: "0644",
});

/** Applies each `[source, resources]` in one run, as `reconcile` applies local declarations. */
async function run(
  state: string,
  sources: [string, Resources][],
  dryRun = false,
): Promise<ApplyResult[]> {
  const inputs = await Promise.all(
    sources.map(([name, resources]) =>
      readSource(new TextEncoder().encode(JSON.stringify({ version: 1, resources })), {
        name,
        origin: "declarations",
        trusted: true,
      })
    ),
  );
  return await applySources(inputs, { system: debian, stateDir: state, dryRun });
}

const outcomes = (results: ApplyResult[]) =>
  results.map((r) => [r.source, r.outcome, r.changes.map((c) => c.change).join(",")]);

const holders = async (state: string) =>
  (await readFootprint(state)).map((e) => [e.source, e.id, e.subject]);

Deno.test("the field case: one file through a symlinked parent from two sources is held by the first; the second is refused naming it, and no run flips it", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    await Deno.mkdir(`${root}/real`, { recursive: true });
    await Deno.symlink(`${root}/real`, `${root}/link`);
    const sources: [string, Resources][] = [
      ["app", [file("conf", `${root}/real/app.conf`, "A\n")]],
      ["tuning", [file("conf", `${root}/link/app.conf`, "B\n")]],
    ];
    const first = await run(`${dir}/state`, sources);
    assertEquals(outcomes(first), [["app", "applied", "created"], ["tuning", "refused", ""]]);
    // Both in one run: the second is refused naming the first, and both paths as written.
    const message = first[1]!.problems[0]!.message;
    assertStringIncludes(message, 'source "app" declares it too');
    assertStringIncludes(message, `"${root}/link/app.conf"`);
    assertStringIncludes(message, `"${root}/real/app.conf"`);
    // Then the first holds it: every later run refuses the second the same way, nothing flips.
    for (let i = 0; i < 2; i++) {
      const again = await run(`${dir}/state`, sources);
      assertEquals(outcomes(again), [["app", "applied", "unchanged"], ["tuning", "refused", ""]]);
      assertStringIncludes(
        again[1]!.problems[0]!.message,
        `source "app" holds it (its resource "conf", as "${root}/real/app.conf"`,
      );
    }
    // Alone too, in a run of its own.
    const alone = await run(`${dir}/state`, [sources[1]!]);
    assertEquals(outcomes(alone), [["tuning", "refused", ""]]);
    assertEquals(await Deno.readTextFile(`${root}/real/app.conf`), "A\n");
    assertEquals(await holders(`${dir}/state`), [["app", "conf", `${root}/real/app.conf`]]);
    // Removing the source that was refused deletes nothing of the one that holds the file.
    await run(`${dir}/state`, [sources[0]!, ["tuning", []]]);
    assertEquals(await Deno.readTextFile(`${root}/real/app.conf`), "A\n");
  });
});

Deno.test("a parent that becomes a symlink after the first apply: the first holder keeps the file, the other is refused, removing either leaves the file the other holds", async () => {
  for (const removed of ["app", "tuning"]) {
    await withDir(async (dir) => {
      const root = `${dir}/root`;
      const app: [string, Resources] = ["app", [file("a", `${root}/x/f`, "A\n")]];
      const tuning: [string, Resources] = ["tuning", [file("t", `${root}/y/f`, "B\n")]];
      assertEquals(
        outcomes(await run(`${dir}/state`, [app, tuning])),
        [["app", "applied", "created"], ["tuning", "applied", "created"]],
      );
      // By hand, as a package or an operator would: x is now y under another name, and the
      // store holds one file twice (as one written before this rule may).
      await Deno.remove(`${root}/x`, { recursive: true });
      await Deno.symlink(`${root}/y`, `${root}/x`);
      const aliased = await run(`${dir}/state`, [app, tuning]);
      assertEquals(outcomes(aliased), [["app", "applied", "updated"], ["tuning", "refused", ""]]);
      assertStringIncludes(aliased[1]!.problems[0]!.message, 'source "app" holds it');
      assertEquals(
        outcomes(await run(`${dir}/state`, [app, tuning])),
        [["app", "applied", "unchanged"], ["tuning", "refused", ""]],
      );
      assertEquals(await Deno.readTextFile(`${root}/y/f`), "A\n");
      if (removed === "tuning") {
        // Its record is the other's file under another name: forgotten, never deleted (a dry
        // run says so and changes nothing).
        const dry = await run(`${dir}/state`, [app, ["tuning", []]], true);
        assertEquals(outcomes(dry), [["app", "applied", "unchanged"], [
          "tuning",
          "applied",
          "forgotten",
        ]]);
        assertEquals((await holders(`${dir}/state`)).length, 2);
        const r = await run(`${dir}/state`, [app, ["tuning", []]]);
        assertEquals(outcomes(r), [["app", "applied", "unchanged"], [
          "tuning",
          "applied",
          "forgotten",
        ]]);
        assertEquals(await Deno.readTextFile(`${root}/y/f`), "A\n");
        assertEquals(await holders(`${dir}/state`), [["app", "a", `${root}/x/f`]]);
      } else {
        // The file moves to the source that declares it still, under the path it writes.
        const r = await run(`${dir}/state`, [["app", []], tuning]);
        assertEquals(outcomes(r), [["app", "applied", ""], ["tuning", "applied", "updated"]]);
        assertEquals(await Deno.readTextFile(`${root}/y/f`), "B\n");
        const held = await readFootprint(`${dir}/state`);
        assertEquals(held.map((e) => [e.source, e.id, e.subject, e.created]), [
          ["tuning", "t", `${root}/y/f`, true],
        ]);
      }
    });
  }
});

Deno.test("a source that gave a file up under one path and declares it under another keeps its record, never removes and makes it again", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    await Deno.mkdir(`${root}/real`, { recursive: true });
    await Deno.symlink(`${root}/real`, `${root}/link`);
    await Deno.writeTextFile(`${root}/real/f`, "original\n");
    await run(`${dir}/state`, [["app", [file("f", `${root}/real/f`, "A\n")]]]);
    const r = await run(`${dir}/state`, [["app", [file("f", `${root}/link/f`, "A\n")]]]);
    assertEquals(outcomes(r), [["app", "applied", "unchanged"]]);
    const [entry] = await readFootprint(`${dir}/state`);
    // Still the takeover it was: its original is put back when it leaves.
    assertEquals([entry!.subject, entry!.created, entry!.original?.kind], [
      `${root}/link/f`,
      false,
      "file",
    ]);
    await run(`${dir}/state`, [["app", []]]);
    assertEquals(await Deno.readTextFile(`${root}/real/f`), "original\n");
  });
});

Deno.test("symlinks written with '..', '//' and a trailing '/' lead to the same file: refused in a second source and within one declaration", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    await Deno.mkdir(`${root}/real`, { recursive: true });
    await Deno.mkdir(`${root}/sub`, { recursive: true });
    await Deno.symlink("../real/", `${root}/sub/up`); // relative, '..', trailing '/'
    await Deno.symlink(`${root}//real//`, `${root}/doubled`); // '//' and trailing '//'
    const state = `${dir}/state`;
    const results = await run(state, [
      ["app", [file("f", `${root}/real/f`, "A\n")]],
      ["up", [file("f", `${root}/sub/up/f`, "B\n")]],
      ["doubled", [file("f", `${root}/doubled/f`, "C\n")]],
    ]);
    assertEquals(outcomes(results), [
      ["app", "applied", "created"],
      ["up", "refused", ""],
      ["doubled", "refused", ""],
    ]);
    for (const r of results.slice(1)) {
      assertStringIncludes(r.problems[0]!.message, `"${root}/real/f"`);
    }
    assertEquals(await Deno.readTextFile(`${root}/real/f`), "A\n");

    // One declaration naming one file twice is refused whole, naming both resources and paths.
    const one = await run(`${dir}/state2`, [[
      "both",
      [
        file("new", `${root}/real/g`, "A\n"),
        { id: "d", type: "directory", path: `${root}/doubled/h`, mode: "0755" },
        file("alias", `${root}/sub/up/g`, "B\n"),
      ],
    ]]);
    assertEquals(outcomes(one), [["both", "refused", ""]]);
    assertEquals(one[0]!.problems.length, 1);
    assertEquals(one[0]!.problems[0]!.id, "alias");
    assertStringIncludes(one[0]!.problems[0]!.message, `"${root}/sub/up/g"`);
    assertStringIncludes(one[0]!.problems[0]!.message, `resource "new"`);
    assertStringIncludes(one[0]!.problems[0]!.message, `"${root}/real/g"`);
    assertEquals(await Deno.lstat(`${root}/real/g`).then(() => true, () => false), false);

    // Written in the declaration itself they are refused before anything is read.
    for (const path of [`${root}/real/../real/f`, `${root}//real/f`, `${root}/real/f/`]) {
      const input = await readSource(
        new TextEncoder().encode(
          JSON.stringify({ version: 1, resources: [file("f", path, "x")] }),
        ),
        { name: "written", origin: "command", trusted: true },
      );
      assertEquals(input.declaration, undefined, path);
      assertEquals(input.refused?.[0]?.path, "resources[0].path", path);
    }
  });
});

Deno.test("realLocation: '..' after a symlink goes where the kernel goes; '//', '.', trailing '/' and missing directories are one name", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/real/sub`, { recursive: true });
    await Deno.symlink(`${dir}/real/sub`, `${dir}/link`);
    const at = (p: string) => realLocation(p);
    // link/.. is real, not dir: the kernel follows the symlink before going up.
    assertEquals(at(`${dir}/link/../f`), at(`${dir}/real/f`));
    assert(at(`${dir}/link/../f`) !== at(`${dir}/f`));
    assertEquals(at(`${dir}//real///./f/`), at(`${dir}/real/f`));
    assertEquals(at(`${dir}/link/new/deeper/f`), at(`${dir}/real/sub/new/deeper/f`));
    assertEquals(at(`${dir}/missing/../real/f`), at(`${dir}/real/f`));
    // The last name is never followed: a symlink is its own entry, not what it points to.
    assert(at(`${dir}/link`) !== at(`${dir}/real/sub`));
    // Each directory is read once for a run (its entries are the keys that are paths; the others
    // remember answers), and a path named again is answered from the map.
    const locations = new Map<string, string>();
    const directories = () => [...locations.keys()].filter((k) => k.startsWith("/")).length;
    const first = realLocation(`${dir}/link/a`, locations);
    const size = directories();
    realLocation(`${dir}/link/b`, locations);
    assertEquals(directories(), size);
    locations.set(`${dir}/link`, "remembered");
    assertEquals(realLocation(`${dir}/link/a`, locations), first);
  });
});

Deno.test("a store of format 1 is migrated by real location: a record goes to the source that declares its file through another path", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/real`, { recursive: true });
    await Deno.symlink(`${dir}/real`, `${dir}/link`);
    await Deno.mkdir(`${dir}/state`);
    await Deno.writeTextFile(
      `${dir}/state/store.json`,
      JSON.stringify({
        version: 1,
        resources: [{
          id: "f",
          type: "file",
          subject: `${dir}/real/f`,
          created: true,
          applied: "2026-01-01T00:00:00.000Z",
        }],
      }),
    );
    const store = await Store.load(`${dir}/state`, {
      migration: {
        claims: [{ source: "tuning", subjects: new Set([claimKey("file", `${dir}/link/f`)]) }],
        feeder: "local",
      },
    });
    store.close();
    assertEquals(store.entries().map((e) => [e.source, e.subject]), [["tuning", `${dir}/real/f`]]);
  });
});

/** Whether this process may bind-mount (root, and a kernel that lets it). */
function canBindMount(): boolean {
  if (Deno.uid() !== 0) return false;
  const dir = Deno.makeTempDirSync({ prefix: "mesh-bind-probe-" });
  try {
    Deno.mkdirSync(`${dir}/a`);
    Deno.mkdirSync(`${dir}/b`);
    const mounted = new Deno.Command("mount", { args: ["--bind", `${dir}/a`, `${dir}/b`] })
      .outputSync().success;
    if (mounted) new Deno.Command("umount", { args: [`${dir}/b`] }).outputSync();
    return mounted;
  } catch {
    return false;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test({
  name:
    "a directory reached through a bind mount is the same directory (same device and inode), the state directory too",
  ignore: !canBindMount(),
  fn: async () => {
    await withDir(async (dir) => {
      const root = `${dir}/root`;
      await Deno.mkdir(`${root}/data`, { recursive: true });
      await Deno.mkdir(`${root}/mnt`);
      const mount = new Deno.Command("mount", { args: ["--bind", `${root}/data`, `${root}/mnt`] });
      assert((await mount.output()).success);
      try {
        const results = await run(`${dir}/state`, [
          ["app", [file("f", `${root}/data/f`, "A\n")]],
          ["tuning", [file("f", `${root}/mnt/f`, "B\n")]],
        ]);
        assertEquals(outcomes(results), [["app", "applied", "created"], ["tuning", "refused", ""]]);
        assertStringIncludes(results[1]!.problems[0]!.message, `"${root}/data/f"`);
        // The state directory mounted elsewhere is still inside itself.
        await Deno.mkdir(`${root}/state-view`);
        const view = new Deno.Command("mount", {
          args: ["--bind", `${dir}/state`, `${root}/state-view`],
        });
        assert((await view.output()).success);
        try {
          const [r] = await run(`${dir}/state`, [["x", [
            file("j", `${root}/state-view/journal`, ""),
          ]]]);
          assertEquals([r!.outcome, r!.problems.length], ["refused", 1]);
          assertStringIncludes(r!.problems[0]!.message, "(reached through another path)");
        } finally {
          await new Deno.Command("umount", { args: [`${root}/state-view`] }).output();
        }
      } finally {
        await new Deno.Command("umount", { args: [`${root}/mnt`] }).output();
      }
    });
  },
});

Deno.test("the state directory reached through a symlinked directory is still the host's alone: refused, the store untouched", async () => {
  await withDir(async (dir) => {
    const root = `${dir}/root`;
    const state = `${dir}/var/state`;
    await run(state, [["app", [file("f", `${root}/f`, "A\n")]]]);
    const store = await Deno.readTextFile(`${state}/store.json`);
    await Deno.symlink(state, `${root}/alias`);
    await Deno.symlink(`${dir}/var`, `${root}/up`);
    const results = await run(state, [
      ["store", [file("s", `${root}/alias/store.json`, "{}\n")]],
      ["deeper", [file("o", `${root}/up/state/originals/x`, "x\n")]],
      ["fine", [file("g", `${root}/up/elsewhere`, "g\n")]],
    ]);
    assertEquals(outcomes(results), [
      ["store", "refused", ""],
      ["deeper", "refused", ""],
      ["fine", "applied", "created"],
    ]);
    assertStringIncludes(
      results[0]!.problems[0]!.message,
      `"${root}/alias/store.json" is inside this host's state directory "${state}" (reached through another path)`,
    );
    assertEquals(await Deno.readTextFile(`${state}/store.json`) === store, false); // "fine" saved
    assertEquals(
      (await holders(state)).map(([source]) => source),
      ["app", "fine"],
    );
    assertEquals(await Deno.lstat(`${state}/originals/x`).then(() => true, () => false), false);
  });
});
