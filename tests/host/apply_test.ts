/**
 * mesh-host apply on this machine's real filesystem, under a temporary root, through the
 * debian host's command line, with drift made by hand between applies.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { cli } from "../support/mod.ts";
import { equalBytes } from "../../resources/fs.ts";

interface Result {
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; path?: string; message: string }[];
  declaration: string;
  dryRun?: boolean;
}

class Fixture {
  constructor(readonly dir: string) {}
  get root() {
    return `${this.dir}/root`;
  }
  get state() {
    return `${this.dir}/state`;
  }
  async declare(resources: Record<string, unknown>[]): Promise<string> {
    const file = `${this.dir}/declaration-${crypto.randomUUID().slice(0, 6)}.json`;
    await Deno.writeTextFile(file, JSON.stringify({ version: 1, resources }));
    return file;
  }
  async apply(resources: Record<string, unknown>[], extra: string[] = []) {
    const file = await this.declare(resources);
    const r = await cli("systems/debian/main.ts", [
      "apply",
      file,
      "--json",
      "--state-dir",
      this.state,
      ...extra,
    ]);
    let result: Result | undefined;
    try {
      result = JSON.parse(r.stdout) as Result;
    } catch { /* not JSON: asserted by the caller through code and stderr */ }
    return { ...r, result: result! };
  }
  change(result: Result, id: string) {
    return result.changes.find((c) => c.id === id)?.change;
  }
}

async function withFixture(fn: (f: Fixture) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-host-" });
  try {
    await fn(new Fixture(dir));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const mode = async (path: string) => ((await Deno.lstat(path)).mode ?? 0) & 0o7777;

function base(f: Fixture) {
  return [
    { id: "app", type: "directory", path: `${f.root}/app`, mode: "2750", group: "nogroup" },
    {
      id: "conf",
      type: "file",
      path: `${f.root}/app/app.conf`,
      content: "port=8080\n",
      mode: "0640",
      owner: "nobody",
    },
    { id: "deep", type: "file", path: `${f.root}/a/b/c/deep.txt`, content: "deep\n", mode: "0600" },
  ];
}

Deno.test("converges, is idempotent, and restores drift made by hand", async () => {
  await withFixture(async (f) => {
    const first = await f.apply(base(f));
    assertEquals(first.code, 0, first.stderr);
    assertEquals([first.result.outcome, first.result.applied, first.result.total], [
      "applied",
      3,
      3,
    ]);
    assertEquals(first.result.changes.map((c) => c.change), ["created", "created", "created"]);
    assert(/^sha256:[0-9a-f]{64}$/.test(first.result.declaration));
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "port=8080\n");
    assertEquals(await mode(`${f.root}/app`), 0o2750);
    assertEquals(await mode(`${f.root}/app/app.conf`), 0o640);
    assertEquals((await Deno.lstat(`${f.root}/app/app.conf`)).uid, 65534);
    assertEquals((await Deno.lstat(`${f.root}/app`)).gid, 65534);
    assertEquals(await Deno.readTextFile(`${f.root}/a/b/c/deep.txt`), "deep\n");

    const second = await f.apply(base(f));
    assertEquals(second.result.changes.map((c) => c.change), [
      "unchanged",
      "unchanged",
      "unchanged",
    ]);

    // Drift: content edited, mode widened, owner changed, a file deleted, a directory's mode widened.
    await Deno.writeTextFile(`${f.root}/app/app.conf`, "port=9999\n");
    await Deno.chmod(`${f.root}/app/app.conf`, 0o666);
    await Deno.chown(`${f.root}/app/app.conf`, 0, 0);
    await Deno.remove(`${f.root}/a/b/c/deep.txt`);
    await Deno.chmod(`${f.root}/app`, 0o777);
    const third = await f.apply(base(f));
    assertEquals(third.code, 0, third.stderr);
    assertEquals(third.result.changes.map((c) => [c.id, c.change]), [
      ["app", "updated"],
      ["conf", "updated"],
      ["deep", "created"],
    ]);
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "port=8080\n");
    assertEquals(await mode(`${f.root}/app/app.conf`), 0o640);
    assertEquals((await Deno.lstat(`${f.root}/app/app.conf`)).uid, 65534);
    assertEquals(await mode(`${f.root}/app`), 0o2750);

    // A mode alone widened is restored too: a mode applied at creation is not a mode held.
    await Deno.chmod(`${f.root}/a/b/c/deep.txt`, 0o644);
    const fourth = await f.apply(base(f));
    assertEquals(f.change(fourth.result, "deep"), "updated");
    assertEquals(await mode(`${f.root}/a/b/c/deep.txt`), 0o600);
  });
});

Deno.test("a file is replaced by rename, never written in place", async () => {
  await withFixture(async (f) => {
    await f.apply(base(f));
    const before = (await Deno.lstat(`${f.root}/app/app.conf`)).ino;
    const resources = base(f);
    resources[1]!.content = "port=8081\n";
    await f.apply(resources);
    assert((await Deno.lstat(`${f.root}/app/app.conf`)).ino !== before, "the inode must change");
    const leftovers = [...Deno.readDirSync(`${f.root}/app`)].map((e) => e.name).filter((n) =>
      n.endsWith(".tmp")
    );
    assertEquals(leftovers, []);
  });
});

Deno.test("a temporary file a killed write left is consumed by the next apply, changed or not", async () => {
  await withFixture(async (f) => {
    await f.apply(base(f));
    // What a host killed between writing a temporary file and its rename leaves: one beside a
    // file that is right now (nothing to write there), one beside a file about to change.
    const unchanged = `${f.root}/a/b/c/.deep.txt.mesh-tmp`;
    const changing = `${f.root}/app/.app.conf.mesh-tmp`;
    await Deno.writeTextFile(unchanged, "half a write");
    await Deno.writeTextFile(changing, "half a write");
    const resources = base(f);
    resources[1]!.content = "port=8081\n";
    const next = await f.apply(resources);
    assertEquals(next.code, 0, next.stderr);
    assertEquals([f.change(next.result, "deep"), f.change(next.result, "conf")], [
      "unchanged",
      "updated",
    ]);
    assertEquals(await Deno.lstat(unchanged).then(() => "there", () => "gone"), "gone");
    assertEquals(await Deno.lstat(changing).then(() => "there", () => "gone"), "gone");
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "port=8081\n");
  });
});

Deno.test("the footprint: what left is removed first, what the host took over is put back as it was", async () => {
  await withFixture(async (f) => {
    await Deno.mkdir(`${f.root}/app`, { recursive: true, mode: 0o755 });
    await Deno.chmod(`${f.root}/app`, 0o755);
    await Deno.writeTextFile(`${f.root}/app/app.conf`, "theirs\n", { mode: 0o664 }); // taken over
    await Deno.chmod(`${f.root}/app/app.conf`, 0o664);
    await Deno.writeTextFile(`${f.root}/app/notes.txt`, "not declared\n"); // foreign
    const first = await f.apply(base(f));
    assertEquals(first.result.changes.map((c) => c.change), ["updated", "updated", "created"]);
    const owned = await cli("systems/debian/main.ts", ["owned", "--state-dir", f.state]);
    assertStringIncludes(owned.stdout, "(taken over: its original is put back when it leaves)");
    assertStringIncludes(owned.stdout, "local ");

    // A resource renamed in the declaration is the same thing: it keeps its footprint entry,
    // and whether the host created it, instead of being removed and made again.
    const renamed = base(f);
    renamed[2]!.id = "deep-renamed";
    renamed[0]!.id = "app-renamed";
    const inode = (await Deno.lstat(`${f.root}/a/b/c/deep.txt`)).ino;
    const r = await f.apply(renamed);
    assertEquals(r.result.changes.map((c) => [c.id, c.change]), [
      ["app-renamed", "unchanged"],
      ["conf", "unchanged"],
      ["deep-renamed", "unchanged"],
    ]);
    assertEquals(
      (await Deno.lstat(`${f.root}/a/b/c/deep.txt`)).ino,
      inode,
      "not removed and recreated",
    );
    // The same path under a new id while the old id leaves with a different path: removal first.
    const moved = base(f);
    moved[0]!.id = "app-renamed";
    moved[2] = {
      id: "deep-renamed",
      type: "file",
      path: `${f.root}/a/moved.txt`,
      content: "moved\n",
      mode: "0600",
    };
    const m = await f.apply(moved);
    assertEquals(m.result.changes.map((c) => [c.id, c.change]), [
      ["deep-renamed", "removed"],
      ["app-renamed", "unchanged"],
      ["conf", "unchanged"],
      ["deep-renamed", "created"],
    ]);

    // Everything leaves: what the host created goes; what it took over is put back as it was
    // (content, mode, owner); the foreign file stays.
    const dry = await f.apply([], ["--dry-run"]);
    assertEquals(dry.result.changes.map((c) => [c.id, c.change]), [
      ["deep-renamed", "removed"],
      ["conf", "restored"],
      ["app-renamed", "restored"],
    ]);
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "port=8080\n");
    const empty = await f.apply([]);
    assertEquals(empty.code, 0, empty.stderr);
    assertEquals(empty.result.changes.map((c) => [c.id, c.change]), [
      ["deep-renamed", "removed"],
      ["conf", "restored"],
      ["app-renamed", "restored"],
    ]);
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "theirs\n");
    const conf = await Deno.lstat(`${f.root}/app/app.conf`);
    assertEquals([(conf.mode ?? 0) & 0o7777, conf.uid], [0o664, 0]);
    assertEquals(await mode(`${f.root}/app`), 0o755);
    assertEquals((await Deno.lstat(`${f.root}/app`)).gid, 0);
    assertEquals([...Deno.readDirSync(`${f.state}/originals`)], [], "the saved copy is gone");
    assertEquals(await Deno.readTextFile(`${f.root}/app/notes.txt`), "not declared\n");
    assertEquals(await Deno.stat(`${f.root}/a/moved.txt`).then(() => true, () => false), false);
    assertEquals((await f.apply([])).result.changes, []);
  });
});

Deno.test("removing what is already gone is not an error; a non-empty directory it created is kept", async () => {
  await withFixture(async (f) => {
    await f.apply(base(f));
    await Deno.remove(`${f.root}/app/app.conf`);
    await Deno.writeTextFile(`${f.root}/app/theirs.txt`, "someone else's\n");
    const dry = await f.apply([], ["--dry-run"]);
    const r = await f.apply([]);
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.result.changes.map((c) => [c.id, c.change]), [
      ["deep", "removed"],
      ["conf", "removed"],
      ["app", "forgotten"],
    ]);
    assertEquals(dry.result.changes, r.result.changes, "the dry run says what the apply does");
    assertEquals(await Deno.readTextFile(`${f.root}/app/theirs.txt`), "someone else's\n");
  });
});

Deno.test("a symlink at a declared path is never followed: the apply fails there, N of M, store saved", async () => {
  await withFixture(async (f) => {
    const target = `${f.dir}/outside.txt`;
    await Deno.writeTextFile(target, "must not change\n");
    await Deno.mkdir(`${f.root}/app`, { recursive: true });
    await Deno.symlink(target, `${f.root}/app/app.conf`);
    const r = await f.apply(base(f));
    assertEquals(r.code, 1, r.stderr);
    assertEquals([r.result.outcome, r.result.applied, r.result.total], ["failed", 1, 3]);
    assertEquals(r.result.problems.map((p) => p.id), ["conf"]);
    assertStringIncludes(r.result.problems[0]!.message, "is a symlink");
    assertStringIncludes(r.result.problems[0]!.message, target);
    assertEquals(await Deno.readTextFile(target), "must not change\n");
    assertEquals(
      await Deno.stat(`${f.root}/a`).then(() => true, () => false),
      false,
      "stops at the failure",
    );
    const store = JSON.parse(await Deno.readTextFile(`${f.state}/store.json`));
    assertEquals(store.resources.map((e: { id: string }) => e.id), ["app"]);
    assertEquals(await Deno.stat(`${f.state}/known-good`).then(() => true, () => false), false);
  });
});

Deno.test("known-good is written after a clean apply only, and clears the failure counter", async () => {
  await withFixture(async (f) => {
    const refused = await f.apply([{
      id: "x",
      type: "file",
      path: "relative",
      content: "",
      mode: "0644",
    }]);
    assertEquals(refused.code, 2);
    assertEquals(
      await Deno.stat(f.state).then(() => true, () => false),
      false,
      "a refusal touches nothing",
    );
    await Deno.mkdir(f.state);
    await Deno.writeTextFile(`${f.state}/failures`, "2\n");
    const clean = await f.apply(base(f));
    assertEquals(clean.code, 0);
    assertEquals(await Deno.readTextFile(`${f.state}/known-good`), "0.1.0\n");
    assertEquals(await Deno.stat(`${f.state}/failures`).then(() => true, () => false), false);
    await Deno.remove(`${f.state}/known-good`);
    await Deno.mkdir(`${f.root}/blocker`);
    const failed = await f.apply([...base(f), {
      id: "b",
      type: "file",
      path: `${f.root}/blocker`,
      content: "",
      mode: "0644",
    }]);
    assertEquals(failed.code, 1);
    assertStringIncludes(failed.result.problems[0]!.message, "is a directory, not a file");
    assertEquals(await Deno.stat(`${f.state}/known-good`).then(() => true, () => false), false);
  });
});

Deno.test("--dry-run runs the same code and changes nothing; exit 4 when changes are pending", async () => {
  await withFixture(async (f) => {
    const dry = await f.apply(base(f), ["--dry-run"]);
    assertEquals(dry.code, 4, dry.stderr);
    assertEquals(dry.result.dryRun, true);
    assertEquals(dry.result.changes.map((c) => c.change), ["created", "created", "created"]);
    assertEquals(await Deno.stat(f.root).then(() => true, () => false), false);
    assertEquals(await Deno.stat(f.state).then(() => true, () => false), false);
    await f.apply(base(f));
    // Nothing would change: 0, as a timer's drift check wants.
    const clean = await f.apply(base(f), ["--dry-run"]);
    assertEquals([clean.code, clean.result.changes.every((c) => c.change === "unchanged")], [
      0,
      true,
    ]);
    await Deno.writeTextFile(`${f.root}/app/app.conf`, "drifted\n");
    await Deno.chmod(`${f.root}/app/app.conf`, 0o644);
    const store = await Deno.readTextFile(`${f.state}/store.json`);
    const again = await f.apply([], ["--dry-run"]);
    assertEquals(again.code, 4);
    assertEquals(again.result.changes.map((c) => c.change), ["removed", "removed", "removed"]);
    assertEquals(await Deno.readTextFile(`${f.root}/app/app.conf`), "drifted\n");
    assertEquals(await Deno.readTextFile(`${f.state}/store.json`), store);

    // What would change, per resource: a unified diff and mode old -> new; never the content of
    // a file of mode 0600 or stricter.
    const detail = await f.apply(base(f), ["--dry-run"]);
    const conf = detail.result.changes.find((c) => c.id === "conf") as { detail?: string };
    assertEquals(
      conf.detail,
      [
        "mode 0644 -> 0640",
        `--- ${f.root}/app/app.conf (now)`,
        `+++ ${f.root}/app/app.conf (declared)`,
        "@@ -1,1 +1,1 @@",
        "-drifted",
        "+port=8080",
      ].join("\n"),
    );
    await Deno.writeTextFile(`${f.root}/a/b/c/deep.txt`, "secret\n");
    const secret = await f.apply(base(f), ["--dry-run"]);
    const deep = secret.result.changes.find((c) => c.id === "deep") as { detail?: string };
    assertEquals(deep.detail, "content differs (7 -> 5 bytes; not shown: mode 0600 or stricter)");
    const text = await cli("systems/debian/main.ts", [
      "apply",
      await f.declare(base(f)),
      "--dry-run",
      "--state-dir",
      f.state,
    ]);
    assertEquals(text.code, 4);
    assertStringIncludes(text.stdout, "would update  file      conf");
    assertStringIncludes(text.stdout, "      -drifted");
    assert(!text.stdout.includes("secret"), "a 0600 file's content is never shown");
  });
});

Deno.test("a store that exists and cannot be read stops the host and is kept as it is", async () => {
  await withFixture(async (f) => {
    await Deno.mkdir(f.state);
    await Deno.writeTextFile(`${f.state}/store.json`, "{ not json");
    const r = await f.apply(base(f));
    assertEquals(r.code, 3, r.stdout);
    assertStringIncludes(r.stderr, `Cannot read store "${f.state}/store.json"`);
    assertEquals(await Deno.readTextFile(`${f.state}/store.json`), "{ not json");
    assertEquals(await Deno.stat(f.root).then(() => true, () => false), false);
    await Deno.writeTextFile(
      `${f.state}/store.json`,
      JSON.stringify({ version: 1, resources: [{ id: 1 }] }),
    );
    const shape = await f.apply(base(f));
    assertEquals(shape.code, 3);
    assertStringIncludes(shape.stderr, "resources.0.id");
    const owned = await cli("systems/debian/main.ts", ["owned", "--state-dir", f.state]);
    assertEquals(owned.code, 3);
  });
});

Deno.test("an owner that does not exist fails the resource, naming it", async () => {
  await withFixture(async (f) => {
    const r = await f.apply([{
      id: "x",
      type: "directory",
      path: `${f.root}/x`,
      mode: "0755",
      owner: "no-such-user",
    }]);
    assertEquals(r.code, 1);
    assertStringIncludes(r.result.problems[0]!.message, 'Owner "no-such-user" does not exist');
  });
});

Deno.test("apply --help documents the exit codes; a missing file is refused", async () => {
  const help = await cli("systems/debian/main.ts", ["apply", "--help"]);
  assertEquals(help.code, 0);
  for (
    const words of [
      "0  applied",
      "1  failed",
      "2  refused",
      "3  the host cannot work",
      "4  --dry-run",
    ]
  ) {
    assertStringIncludes(help.stdout, words);
  }
  const missing = await cli("systems/debian/main.ts", ["apply", "/nonexistent.json"]);
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, 'Cannot read declaration "/nonexistent.json"');
});

Deno.test("the state directory must be absolute and is the host's own; a huge input is not read", async () => {
  await withFixture(async (f) => {
    const file = await f.declare(base(f));
    for (const dir of ["", "state", "./state"]) {
      const r = await cli("systems/debian/main.ts", ["apply", file, "--state-dir", dir]);
      assertEquals(r.code, 2, `${JSON.stringify(dir)}: ${r.stderr}`);
      assertStringIncludes(r.stderr, "--state-dir must be an absolute path");
    }
    const inside = await f.apply([{
      id: "s",
      type: "file",
      path: `${f.state}/store.json`,
      content: "{}",
      mode: "0600",
    }]);
    assertEquals(inside.code, 2);
    assertStringIncludes(inside.result.problems[0]!.message, "inside this host's state directory");
    const itself = await f.apply([{ id: "s", type: "directory", path: f.state, mode: "0700" }]);
    assertEquals(itself.code, 0, "the state directory itself may be declared: " + itself.stdout);
    // A device that never ends is refused before it is opened; a regular file past the limit
    // after the limit (sparse: it takes no disk).
    const zero = await cli("systems/debian/main.ts", ["apply", "/dev/zero", "--dry-run"]);
    assertEquals(zero.code, 2);
    assertStringIncludes(zero.stderr, "it is a character device, not a regular file");
    const huge = `${f.dir}/huge.json`;
    await Deno.writeTextFile(huge, "{}");
    await Deno.truncate(huge, 64 * 1024 * 1024 + 1);
    const big = await cli("systems/debian/main.ts", ["apply", huge, "--dry-run"]);
    assertEquals(big.code, 2);
    assertStringIncludes(big.stderr, "is larger than 67108864 bytes");
  });
});

Deno.test("a reader that goes away does not turn an applied result into another exit code", async () => {
  await withFixture(async (f) => {
    const file = await f.declare(base(f));
    const out = await new Deno.Command("sh", {
      args: [
        "-c",
        `"$1" run -A --quiet systems/debian/main.ts apply "$2" --state-dir "$3" --json | head -c 1 >/dev/null; echo "\${PIPESTATUS:-}"`,
        "sh",
        Deno.execPath(),
        file,
        f.state,
      ],
      cwd: new URL("../../", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(out.success);
    // The apply completed and recorded known-good even though its reader left early.
    assertEquals(await Deno.readTextFile(`${f.state}/known-good`), "0.1.0\n");
    assert(
      !new TextDecoder().decode(out.stderr).includes("Broken pipe"),
      new TextDecoder().decode(out.stderr),
    );
  });
});

Deno.test("a file's bytes are compared exactly: every position, aligned or not, the tail too", () => {
  for (const n of [0, 1, 3, 4, 5, 8, 11, 150]) {
    const a = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 255);
    assert(equalBytes(a, a.slice()), `${n} bytes`);
    for (let at = 0; at < n; at++) {
      const b = a.slice();
      b[at] = b[at]! ^ 0x80;
      assert(!equalBytes(a, b), `${n} bytes, differing at ${at}`);
      // The same bytes at an offset that is not a multiple of four.
      const shifted = new Uint8Array(n + 1);
      shifted.set(b, 1);
      assert(!equalBytes(a, shifted.subarray(1)), `${n} bytes, unaligned, differing at ${at}`);
      shifted.set(a, 1);
      assert(equalBytes(a, shifted.subarray(1)), `${n} bytes, unaligned`);
    }
  }
  assert(!equalBytes(new Uint8Array(4), new Uint8Array(5)));
});
