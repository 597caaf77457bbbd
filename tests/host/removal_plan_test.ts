/**
 * An apply run is a value (mesh issue 30, item 5): each removal is planned from what the machine
 * is (`Applier.planRemoval`), and the dry run stops at those plans. So a dry run says of every
 * removal what the apply that follows does: removed, restored (a takeover put back), or
 * forgotten (something else stands there now; a directory still holding what this host does not
 * own). Applied in-process through `applySources` under a temporary root, on this machine's real
 * file system.
 */

import { assertEquals } from "../support/assert.ts";
import { type ApplyResult, applySources, readSource } from "../../host/apply.ts";
import { debian } from "../../systems/debian/mod.ts";

type Resources = Record<string, unknown>[];

async function apply(state: string, resources: Resources, dryRun = false): Promise<ApplyResult> {
  const input = await readSource(
    new TextEncoder().encode(JSON.stringify({ version: 1, resources })),
    { name: "local", origin: "command", trusted: true },
  );
  const [result] = await applySources([input], { system: debian, stateDir: state, dryRun });
  return result!;
}

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

Deno.test("a dry run says of every removal what the apply then does, and changes nothing", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-removal-" });
  const state = `${root}/state`;
  try {
    await Deno.writeTextFile(`${root}/taken`, "before\n");
    const dir = (id: string, path: string) => ({ id, type: "directory", path, mode: "0755" });
    const file = (id: string, path: string) => ({
      id,
      type: "file",
      path,
      content: `${id}\n`,
      mode: "0644",
    });
    const first = await apply(state, [
      dir("emptied", `${root}/emptied`), // its one file leaves with it: removed after the file
      file("inside", `${root}/emptied/inside`),
      file("taken", `${root}/taken`), // taken over: put back as it was
      dir("shared", `${root}/shared`), // holds a file the host does not own: kept
      file("gone", `${root}/gone`), // removed by hand: removed, not an error
      file("replaced", `${root}/replaced`), // a directory stands there now: not the host's
    ]);
    assertEquals(first.outcome, "applied", JSON.stringify(first.problems));
    await Deno.writeTextFile(`${root}/shared/foreign`, "not mesh's\n");
    await Deno.remove(`${root}/gone`);
    await Deno.remove(`${root}/replaced`);
    await Deno.mkdir(`${root}/replaced`);
    // A temporary file a killed write left: the host's own, deleted with its file.
    await Deno.writeTextFile(`${root}/emptied/.inside.mesh-tmp`, "half");
    const store = await Deno.readTextFile(`${state}/store.json`);

    const dry = await apply(state, [], true);
    const changes = (r: ApplyResult) => r.changes.map((c) => `${c.id} ${c.change}`);
    const expected = [
      "replaced forgotten",
      "gone removed",
      "shared forgotten",
      "taken restored",
      "inside removed",
      "emptied removed",
    ];
    assertEquals([dry.outcome, changes(dry)], ["applied", expected]);
    // Nothing was changed.
    assertEquals(await Deno.readTextFile(`${state}/store.json`), store);
    assertEquals(await Deno.readTextFile(`${root}/taken`), "taken\n");
    assertEquals(await exists(`${root}/emptied/.inside.mesh-tmp`), true);

    const real = await apply(state, []);
    assertEquals([real.outcome, changes(real)], ["applied", expected]);
    // The result's keys in the order it has always been printed in (the link's line, --json).
    const keys = ["outcome", "applied", "total", "changes", "problems", "source", "declaration"];
    assertEquals([Object.keys(dry), Object.keys(real)], [[...keys, "dryRun"], keys]);
    assertEquals(await Deno.readTextFile(`${root}/taken`), "before\n");
    assertEquals(
      await Promise.all(
        ["emptied", "emptied/.inside.mesh-tmp", "shared/foreign", "replaced"].map((p) =>
          exists(`${root}/${p}`)
        ),
      ),
      [false, false, true, true],
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a taken-over path that is something else now fails its removal in the dry run as in the apply", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-removal-" });
  const state = `${root}/state`;
  try {
    await Deno.writeTextFile(`${root}/taken`, "before\n");
    const taken = {
      id: "taken",
      type: "file",
      path: `${root}/taken`,
      content: "x\n",
      mode: "0644",
    };
    assertEquals((await apply(state, [taken])).outcome, "applied");
    await Deno.remove(`${root}/taken`);
    await Deno.symlink("/etc/hostname", `${root}/taken`);
    for (const dryRun of [true, false]) {
      const r = await apply(state, [], dryRun);
      assertEquals(
        [r.outcome, r.problems.map((p) => p.message)],
        ["failed", [
          `Cannot restore the original file "${root}/taken": it is now a symlink to "/etc/hostname"`,
        ]],
        `dry run: ${dryRun}`,
      );
    }
    assertEquals(await Deno.readLink(`${root}/taken`), "/etc/hostname");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("two records of one file (a parent made a symlink since): one is renamed to the declared id, the other forgotten, in the dry run as in the apply", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-removal-" });
  const state = `${root}/state`;
  try {
    const file = (id: string, path: string) => ({
      id,
      type: "file",
      path,
      content: "same\n",
      mode: "0644",
    });
    await Deno.mkdir(`${root}/a`);
    await Deno.mkdir(`${root}/b`);
    const first = await apply(state, [file("x", `${root}/a/f`), file("y", `${root}/b/f`)]);
    assertEquals(first.outcome, "applied", JSON.stringify(first.problems));
    // By hand: b becomes a symlink to a, so both records now name the one file a/f.
    await Deno.remove(`${root}/b`, { recursive: true });
    await Deno.symlink(`${root}/a`, `${root}/b`);
    // The file is declared again under a new id: one record is renamed to it, the other is
    // forgotten; nothing is removed (it would delete the declared file through its alias).
    const declared = [file("z", `${root}/a/f`)];
    for (const dryRun of [true, false]) {
      const r = await apply(state, declared, dryRun);
      assertEquals(
        [r.outcome, r.changes.map((c) => `${c.id} ${c.change}`)],
        ["applied", ["x forgotten", "z unchanged"]],
        `dry run: ${dryRun}`,
      );
    }
    assertEquals(await Deno.readTextFile(`${root}/a/f`), "same\n");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
