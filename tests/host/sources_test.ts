/**
 * Sources of declarations on one state directory, through the debian host's command line on
 * this machine's real filesystem (under a temporary root): each source keeps its own footprint,
 * a subject held by one source is refused in another, `reconcile` keeps the bundle and every
 * local declaration converged, and a local declaration removed takes its footprint with it.
 *
 * The host entry point is one of its own (`host/_sources_probe_*.ts`) carrying a bundle written
 * under the temporary root, so that `reconcile` never applies the real Debian bundle here.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { cli, ROOT } from "../support/mod.ts";
import { declarationDigest } from "../../lib/declaration.ts";

interface Result {
  source: string;
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; path?: string; message: string }[];
}

interface Entry {
  source: string;
  id: string;
  type: string;
  subject: string;
  created: boolean;
}

class World {
  constructor(readonly dir: string, readonly entry: string) {}
  get root() {
    return `${this.dir}/root`;
  }
  get state() {
    return `${this.dir}/state`;
  }
  get declarations() {
    return `${this.dir}/declarations`;
  }
  async file(name: string, resources: Record<string, unknown>[]): Promise<string> {
    const path = `${this.dir}/${name}`;
    await Deno.writeTextFile(path, JSON.stringify({ version: 1, resources }));
    return path;
  }
  async local(name: string, resources: Record<string, unknown>[]): Promise<void> {
    await Deno.mkdir(this.declarations, { recursive: true });
    await Deno.writeTextFile(
      `${this.declarations}/${name}.json`,
      JSON.stringify({ version: 1, resources }),
    );
  }
  host(args: string[]) {
    return cli(this.entry.slice(ROOT.length), [
      ...args,
      "--state-dir",
      this.state,
      "--declarations",
      this.declarations,
    ]);
  }
  async apply(file: string, source?: string, extra: string[] = []) {
    const r = await this.host([
      "apply",
      file,
      "--json",
      ...(source ? ["--source", source] : []),
      ...extra,
    ]);
    let result: Result | undefined;
    try {
      result = JSON.parse(r.stdout) as Result;
    } catch { /* asserted through code and stderr by the caller */ }
    return { ...r, result: result! };
  }
  async reconcile() {
    const r = await this.host(["reconcile", "--json"]);
    const results = r.stdout.split("\n").filter((l) => l.trim()).map((l) =>
      JSON.parse(l) as Result
    );
    return { ...r, results, by: (s: string) => results.find((x) => x.source === s) };
  }
  async owned(): Promise<Entry[]> {
    const r = await this.host(["owned", "--json"]);
    assertEquals(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  }
}

/** A world with a host entry of its own carrying `bundle` (resources under the root). */
async function withWorld(
  bundle: (root: string) => Record<string, unknown>[],
  fn: (w: World) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-sources-" });
  const entry = `${ROOT}host/_sources_probe_${crypto.randomUUID().slice(0, 8)}.ts`;
  await Deno.writeTextFile(
    `${dir}/bundle.lock`,
    JSON.stringify({
      bundle: 1,
      system: "debian",
      says: "a test bundle under a temporary root",
      declaration: { version: 1, resources: bundle(`${dir}/root`) },
    }),
  );
  await Deno.writeTextFile(
    entry,
    `import { debian } from "../systems/debian/mod.ts";\nimport { hostMain } from "./cli.ts";\n` +
      `Deno.exit(await hostMain(Deno.args, { system: debian, bundle: Deno.readTextFileSync(${
        JSON.stringify(`${dir}/bundle.lock`)
      }) }));\n`,
  );
  try {
    await Deno.mkdir(`${dir}/root`);
    await fn(new World(dir, entry));
  } finally {
    await Deno.remove(entry).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
}

/** `mesh-host bundle` of the world's host (it takes no --declarations). */
const bundleCmd = (w: World) => cli(w.entry.slice(ROOT.length), ["bundle", "--state-dir", w.state]);
const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);
const dir = (id: string, path: string) => ({ id, type: "directory", path, mode: "0755" });
const file = (id: string, path: string, content: string) => ({
  id,
  type: "file",
  path,
  content,
  mode: "0644",
});
const bundleOf = (root: string) => [dir("mesh", `${root}/mesh`)];

Deno.test("two sources applied one after the other keep each other's work", async () => {
  await withWorld(bundleOf, async (w) => {
    const web = await w.file("web.json", [
      dir("web", `${w.root}/web`),
      file("index", `${w.root}/web/index.html`, "hello\n"),
    ]);
    const db = await w.file("db.json", [dir("db", `${w.root}/db`)]);
    const first = await w.apply(web, "web");
    assertEquals([first.code, first.result.source, first.result.outcome], [0, "web", "applied"]);
    const second = await w.apply(db, "db");
    assertEquals(second.code, 0, second.stderr);
    assertEquals(second.result.changes.map((c) => [c.id, c.change]), [["db", "created"]]);
    assert(await exists(`${w.root}/web/index.html`), "db's apply must not remove web's work");

    // A plain apply is source `local`, a third footprint.
    const plain = await w.apply(await w.file("plain.json", [dir("p", `${w.root}/plain`)]));
    assertEquals([plain.code, plain.result.source], [0, "local"]);
    assertEquals(
      (await w.owned()).map((e) => [e.source, e.id]),
      [["web", "web"], ["web", "index"], ["db", "db"], ["local", "p"]],
    );
    const text = await w.host(["owned"]);
    assertStringIncludes(text.stdout, "source");
    assertStringIncludes(text.stdout, "web    file");

    // Applying a source removes only what that source applied and no longer declares.
    const none = await w.apply(await w.file("web-empty.json", []), "web");
    assertEquals(none.result.changes.map((c) => [c.id, c.change]), [
      ["index", "removed"],
      ["web", "removed"],
    ]);
    assert(await exists(`${w.root}/db`));
    assert(await exists(`${w.root}/plain`));

    // The host's own sources cannot be named by hand; nor can a name that is no file name.
    for (const bad of ["bundle", "link", "../x", ""]) {
      const r = await w.host(["apply", db, "--source", bad]);
      assertEquals(r.code, 2, `${bad}: ${r.stderr}`);
      assertStringIncludes(r.stderr, "--source");
    }
  });
});

Deno.test("a subject another source holds is refused in the source that asks second, whole", async () => {
  await withWorld(bundleOf, async (w) => {
    const shared = `${w.root}/shared.conf`;
    const web = await w.file("web.json", [file("conf", shared, "web\n")]);
    assertEquals((await w.apply(web, "web")).code, 0);
    const db = await w.file("db.json", [
      dir("db", `${w.root}/db`),
      file("conf", shared, "db\n"),
    ]);
    const r = await w.apply(db, "db");
    assertEquals(r.code, 2, r.stderr);
    assertEquals([r.result.source, r.result.outcome, r.result.applied], ["db", "refused", 0]);
    assertEquals(r.result.problems.length, 1);
    assertStringIncludes(r.result.problems[0]!.message, `"${shared}"`);
    assertStringIncludes(r.result.problems[0]!.message, 'in source "db"');
    assertStringIncludes(r.result.problems[0]!.message, 'source "web" holds it');
    // Nothing of the refused source was applied: not even what conflicts with nobody.
    assertEquals(await exists(`${w.root}/db`), false);
    assertEquals(await Deno.readTextFile(shared), "web\n");
    assertEquals((await w.owned()).map((e) => e.source), ["web"]);

    // Two local declarations claiming one new path in one reconcile: the first (by name) has
    // it, the second is refused whole, naming both.
    await w.local("a", [file("x", `${w.root}/x.conf`, "a\n")]);
    await w.local("b", [dir("b", `${w.root}/b`), file("x", `${w.root}/x.conf`, "b\n")]);
    const run = await w.reconcile();
    assertEquals(run.code, 2, run.stderr);
    assertEquals(run.by("a")?.outcome, "applied");
    assertEquals(run.by("b")?.outcome, "refused");
    assertStringIncludes(run.by("b")!.problems[0]!.message, 'source "a" declares it too');
    assertEquals(await exists(`${w.root}/b`), false);
    assertEquals(await Deno.readTextFile(`${w.root}/x.conf`), "a\n");
  });
});

Deno.test("apply --take-from moves what a source holds to another, its records kept; without it, refused", async () => {
  await withWorld(bundleOf, async (w) => {
    // An operator applied by hand (source local), taking over a file that was there before.
    await Deno.writeTextFile(`${w.root}/motd`, "before mesh\n");
    const byHand = await w.file("by-hand.json", [
      dir("site", `${w.root}/site`),
      file("motd", `${w.root}/motd`, "managed\n"),
      dir("tmp", `${w.root}/scratch`),
    ]);
    assertEquals((await w.apply(byHand)).code, 0);
    // Now the site and the motd belong in a declaration of their own.
    const web = [
      dir("web-site", `${w.root}/site`),
      file("web-motd", `${w.root}/motd`, "managed\n"),
    ];
    await w.local("web", web);
    const webFile = `${w.declarations}/web.json`;
    const refused = await w.apply(webFile, "web");
    assertEquals(refused.code, 2, refused.stderr);
    assertStringIncludes(refused.result.problems[0]!.message, 'source "local" holds it');

    const moved = await w.apply(webFile, "web", ["--take-from", "local"]);
    assertEquals(moved.code, 0, moved.stderr + moved.stdout);
    assertEquals(moved.result.changes.map((c) => [c.id, c.change]), [
      ["web-site", "unchanged"],
      ["web-motd", "unchanged"],
    ]);
    assertEquals(
      (await w.owned()).map((e) => [e.source, e.id, e.created]).sort(),
      [["local", "tmp", true], ["web", "web-motd", false], ["web", "web-site", true]],
    );
    // The next reconcile changes nothing: web is a local declaration now, local kept the rest.
    const run = await w.reconcile();
    assertEquals(run.code, 0, run.stderr);
    assertEquals(run.by("web")!.changes.map((c) => c.change), ["unchanged", "unchanged"]);
    assertEquals(run.by("local"), undefined);
    assert(await exists(`${w.root}/scratch`));
    // The original the local source saved moved with the record: it is put back when web lets go.
    await w.local("web", [dir("web-site", `${w.root}/site`)]);
    const let_go = await w.reconcile();
    assertEquals(let_go.by("web")!.changes.find((c) => c.id === "web-motd")?.change, "restored");
    assertEquals(await Deno.readTextFile(`${w.root}/motd`), "before mesh\n");

    for (const bad of [["--take-from", "bundle"], ["--take-from", "web"]]) {
      const r = await w.host(["apply", webFile, "--source", "web", ...bad]);
      assertEquals(r.code, 2, r.stderr);
      assertStringIncludes(r.stderr, "--take-from");
    }
  });
});

Deno.test("reconcile keeps the bundle and every local declaration; a removed one leaves, a moved subject moves", async () => {
  await withWorld(bundleOf, async (w) => {
    await w.local("web", [
      dir("web", `${w.root}/web`),
      file("index", `${w.root}/web/index.html`, "hello\n"),
    ]);
    await w.local("db", [dir("db", `${w.root}/db`), file("cnf", `${w.root}/db/my.cnf`, "x=1\n")]);
    // A file named like the host's own source is refused alone, and is not the bundle.
    await Deno.writeTextFile(`${w.declarations}/bundle.json`, '{"version":1,"resources":[]}');
    // Not declarations: skipped.
    await Deno.writeTextFile(`${w.declarations}/README`, "not a declaration");
    await Deno.writeTextFile(`${w.declarations}/.web.json.swp`, "{");
    // An operator's hand-applied source is not one of the declarations directory's.
    assertEquals(
      (await w.apply(await w.file("hand.json", [dir("hand", `${w.root}/hand`)]), "hand")).code,
      0,
    );

    const refused = await w.reconcile();
    assertEquals(refused.code, 2, refused.stderr + refused.stdout);
    assertEquals(refused.results.map((r) => [r.source, r.outcome]), [
      ["bundle", "applied"],
      ["bundle.json", "refused"],
      ["db", "applied"],
      ["web", "applied"],
    ]);
    assertStringIncludes(refused.by("bundle.json")!.problems[0]!.message, "reserved");
    await Deno.remove(`${w.declarations}/bundle.json`);
    const first = await w.reconcile();
    assertEquals(first.code, 0, first.stderr + first.stdout);
    assertEquals(first.results.map((r) => [r.source, r.outcome]), [
      ["bundle", "applied"],
      ["db", "applied"],
      ["web", "applied"],
    ]);
    for (const p of ["mesh", "web/index.html", "db/my.cnf", "hand"]) {
      assert(await exists(`${w.root}/${p}`), p);
    }
    // As a drift check: nothing would change (0); a local declaration edited: 4, nothing done.
    const check = await w.host(["reconcile", "--dry-run", "--json"]);
    assertEquals(check.code, 0, check.stderr + check.stdout);
    await w.local("db", [dir("db", `${w.root}/db`), file("cnf", `${w.root}/db/my.cnf`, "x=2\n")]);
    const pending = await w.host(["reconcile", "--dry-run", "--json"]);
    assertEquals(pending.code, 4, pending.stderr + pending.stdout);
    assertStringIncludes(pending.stdout, '"detail":"--- ');
    assertEquals(await Deno.readTextFile(`${w.root}/db/my.cnf`), "x=1\n");
    await w.local("db", [dir("db", `${w.root}/db`), file("cnf", `${w.root}/db/my.cnf`, "x=1\n")]);
    assertEquals((await w.host(["reconcile", "--dry-run", "--every", "1m"])).code, 2);
    // The next reconcile changes nothing, and writes nothing.
    const store = await Deno.readTextFile(`${w.state}/store.json`);
    const again = await w.reconcile();
    assertEquals(again.code, 0, again.stderr);
    assert(again.results.every((r) => r.changes.every((c) => c.change === "unchanged")));
    assertEquals(await Deno.readTextFile(`${w.state}/store.json`), store);

    // A subject moving from one source to another in one run is a move: never removed.
    const inode = (await Deno.lstat(`${w.root}/db/my.cnf`)).ino;
    await w.local("db", [dir("db", `${w.root}/db`)]);
    await w.local("web", [
      dir("web", `${w.root}/web`),
      file("index", `${w.root}/web/index.html`, "hello\n"),
      file("cnf", `${w.root}/db/my.cnf`, "x=1\n"),
    ]);
    const moved = await w.reconcile();
    assertEquals(moved.code, 0, moved.stderr + moved.stdout);
    assertEquals(moved.by("db")!.changes.map((c) => c.change), ["unchanged"]);
    assertEquals(moved.by("web")!.changes.map((c) => c.change), [
      "unchanged",
      "unchanged",
      "unchanged",
    ]);
    assertEquals((await Deno.lstat(`${w.root}/db/my.cnf`)).ino, inode, "not removed and made");
    const cnf = (await w.owned()).find((e) => e.subject === `${w.root}/db/my.cnf`)!;
    assertEquals([cnf.source, cnf.created], ["web", true]);

    // A local declaration removed: its footprint leaves at the next reconcile; others stay.
    await Deno.remove(`${w.declarations}/web.json`);
    const gone = await w.reconcile();
    assertEquals(gone.code, 0, gone.stderr + gone.stdout);
    assertEquals(gone.by("web")!.changes.map((c) => [c.id, c.change]), [
      ["index", "removed"],
      ["web", "removed"],
      ["cnf", "removed"],
    ]);
    assertEquals(await exists(`${w.root}/web`), false);
    for (const p of ["mesh", "db", "hand"]) assert(await exists(`${w.root}/${p}`), p);
    assertEquals(
      [...new Set((await w.owned()).map((e) => e.source))].sort(),
      ["bundle", "db", "hand"],
    );
    const after = await w.reconcile();
    assertEquals(after.results.map((r) => r.source), ["bundle", "db"]);
  });
});

Deno.test("a local declaration that cannot be read is refused alone, its footprint untouched", async () => {
  await withWorld(bundleOf, async (w) => {
    await w.local("web", [dir("web", `${w.root}/web`)]);
    await w.local("db", [dir("db", `${w.root}/db`)]);
    assertEquals((await w.reconcile()).code, 0);
    // A repeated key at depth: JSON.parse would read an empty declaration and remove `web`.
    await Deno.writeTextFile(
      `${w.declarations}/web.json`,
      `{"version":1,"resources":[{"id":"web","type":"directory","path":"${w.root}/web",` +
        `"mode":"0755","mode":"0700"}],"resources":[]}`,
    );
    const r = await w.reconcile();
    assertEquals(r.code, 2, r.stderr);
    const web = r.by("web")!;
    assertEquals(web.outcome, "refused");
    assertEquals(web.problems.map((p) => p.path).sort(), ["resources", "resources[0].mode"]);
    assertEquals(r.by("db")?.outcome, "applied");
    // Said for people, the refused source names its file: the problems' paths are inside it.
    const text = await w.host(["reconcile"]);
    assertStringIncludes(
      text.stdout,
      `source web (file "${w.declarations}/web.json"): refused, nothing applied: `,
    );
    assert(await exists(`${w.root}/web`), "a refused source keeps its footprint");
    assertEquals(((await Deno.lstat(`${w.root}/web`)).mode ?? 0) & 0o777, 0o755);
  });
});

Deno.test("reconcile --no-bundle keeps the local declarations and leaves the bundle alone", async () => {
  await withWorld(bundleOf, async (w) => {
    // A node that is not its mesh's first node: its bundle (the substrate) is never raised.
    await w.local("web", [dir("web", `${w.root}/web`)]);
    const first = await w.host(["reconcile", "--no-bundle", "--json"]);
    assertEquals(first.code, 0, first.stderr);
    assert(await exists(`${w.root}/web`), "the local declaration applied");
    assert(!(await exists(`${w.root}/mesh`)), "the bundle was applied despite --no-bundle");
    assertEquals((await w.owned()).map((e) => e.source), ["web"]);

    // That node joined a mesh, and keeps that fact: a plain reconcile, its dry run and `bundle`
    // never speak of the carried bundle again (issue 26: a joined node's dry run offered to
    // raise a second substrate), and say why.
    const joined = JSON.parse(await Deno.readTextFile(`${w.state}/joined`));
    assertEquals([joined.joined, joined.by], [1, "reconcile --no-bundle"]);
    for (const args of [["reconcile", "--dry-run", "--json"], ["reconcile", "--json"]]) {
      const r = await w.host(args);
      assertEquals(r.code, 0, r.stderr);
      assert(!r.stdout.includes('"source":"bundle"'), r.stdout);
      assertStringIncludes(r.stderr, "this node joined a mesh");
      assertStringIncludes(r.stderr, `remove that file`);
    }
    assert(!(await exists(`${w.root}/mesh`)), "a joined node applied the bundle");
    const shown = await bundleCmd(w);
    assertEquals(shown.code, 0, shown.stderr);
    assertStringIncludes(shown.stdout, "Not shown: this node joined a mesh");
    assert(!shown.stdout.includes("would create"), shown.stdout);

    // Its own sources are its local declarations and the link's kept declaration (untrusted).
    const linked = JSON.stringify({ version: 1, resources: [dir("linked", `${w.root}/linked`)] });
    await Deno.mkdir(`${w.state}/link`, { recursive: true });
    await Deno.writeTextFile(
      `${w.state}/link/declaration.json`,
      JSON.stringify({
        kind: "declaration",
        node: "web1",
        generation: 3,
        digest: await declarationDigest(linked),
        pushedAt: new Date().toISOString(),
        declaration: linked,
      }),
    );
    const own = await w.reconcile();
    assertEquals(own.code, 0, own.stderr);
    assertEquals(own.results.map((r) => [r.source, r.outcome]), [["link", "applied"], [
      "web",
      "applied",
    ]]);
    assert(await exists(`${w.root}/linked`), "the link's kept declaration was not applied");
    await Deno.remove(`${w.state}/link/declaration.json`);
    await Deno.writeTextFile(
      `${w.state}/link/declaration.json`,
      JSON.stringify({
        kind: "declaration",
        node: "web1",
        generation: 4,
        digest: await declarationDigest('{"version":1,"resources":[]}'),
        pushedAt: new Date().toISOString(),
        declaration: '{"version":1,"resources":[]}',
      }),
    );
    assertEquals((await w.reconcile()).code, 0);
    assert(!(await exists(`${w.root}/linked`)), "the link's removed resource stayed");

    // Undone by removing the file (docs/mesh-host.md): the bundle is shown and taken again.
    await Deno.remove(`${w.state}/joined`);
    const plan = await bundleCmd(w);
    assertEquals(plan.code, 4, plan.stderr);
    assertStringIncludes(plan.stdout, "would create");

    // A node that took its bundle and then runs --no-bundle: the bundle's footprint is left as
    // it is (neither applied nor removed), and it is not recorded as joined (a first node).
    const taken = await w.reconcile();
    assertEquals(taken.code, 0, taken.stderr);
    assert(await exists(`${w.root}/mesh`));
    await Deno.remove(`${w.declarations}/web.json`);
    const after = await w.host(["reconcile", "--no-bundle", "--json"]);
    assertEquals(after.code, 0, after.stderr);
    // The source leaving is what happened: not "nothing to reconcile".
    assert(!after.stderr.includes("nothing to reconcile"), after.stderr);
    assert(await exists(`${w.root}/mesh`), "--no-bundle removed the bundle's work");
    assert(!(await exists(`${w.root}/web`)), "a removed local declaration leaves");
    assertEquals((await w.owned()).map((e) => e.source), ["bundle"]);
    assert(!(await exists(`${w.state}/joined`)), "a node that took its bundle was marked joined");

    // Nothing to keep is said, not refused: a declaration put there later is seen then.
    const nothing = await w.host(["reconcile", "--no-bundle"]);
    assertEquals(nothing.code, 0, nothing.stderr);
    assertStringIncludes(nothing.stderr, "nothing to reconcile");
  });
});

Deno.test("a joined record that cannot be read stops the host (exit 3), never taken as absent", async () => {
  await withWorld(bundleOf, async (w) => {
    await Deno.mkdir(w.state, { recursive: true });
    await Deno.writeTextFile(`${w.state}/joined`, "{not json");
    for (const args of [["reconcile"], ["reconcile", "--dry-run"], ["bundle"]]) {
      const r = args[0] === "bundle" ? await bundleCmd(w) : await w.host(args);
      assertEquals(r.code, 3, `${args.join(" ")}: ${r.stderr}`);
      assertStringIncludes(r.stderr, `Cannot read "${w.state}/joined"`);
    }
    assert(!(await exists(`${w.root}/mesh`)), "the bundle was applied");
  });
});
