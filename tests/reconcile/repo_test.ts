/**
 * `mesh-reconcile run --repo`: the deployment repository, against real git repositories (a bare
 * origin, a clone where commits are made and pushed, and the checkout "on the box"), with real
 * commits dated by GIT_COMMITTER_DATE and a different GIT_AUTHOR_DATE, real files with real
 * owners and modes, and the real CLI.
 *
 * @tier alone (its clean run adopts the whole machine with `init`: a port another test opens or
 * closes meanwhile is drift, so test:fast runs it with nothing beside it)
 */

import { parse } from "yaml";
import { run } from "../../lib/command.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { parsePorcelainV2 } from "../../reconcile/observe/repo.ts";
import type { Finding } from "../../reconcile/compare.ts";
import type { ReconcileJson as JsonResult } from "../../reconcile/report.ts";

const DAY = 86_400_000;
const IDENTITY = {
  GIT_AUTHOR_NAME: "Mac",
  GIT_AUTHOR_EMAIL: "mac@mesh.test",
  GIT_COMMITTER_NAME: "Mac",
  GIT_COMMITTER_EMAIL: "mac@mesh.test",
};

async function git(cwd: string, args: string[], env: Record<string, string> = {}) {
  return (await run(["git", ...args], { cwd, env: { ...IDENTITY, ...env } })).stdout;
}

/** A commit in `repo` with its committer and author times set apart. */
async function commit(
  repo: string,
  message: string,
  dates: { committer: Date; author: Date },
): Promise<string> {
  await git(repo, ["commit", "-q", "--allow-empty", "-am", message], {
    GIT_COMMITTER_DATE: dates.committer.toISOString(),
    GIT_AUTHOR_DATE: dates.author.toISOString(),
  });
  return (await git(repo, ["rev-parse", "HEAD"])).trim();
}

interface Estate {
  dir: string;
  /** Where commits are made and pushed from (the operator's machine). */
  mac: string;
  /** The checkout on the box, which `--repo` names. */
  box: string;
  /** Where the deploy map's destinations are. */
  dest: string;
  registry: string;
}

const MAP_HEADER = "version: 1\nfiles:\n";

/** A bare origin, a clone that commits, and the box's clone; the box is up to date. */
async function estate(mapBody = "[]"): Promise<Estate> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-repo-" });
  const mac = `${dir}/mac`;
  const box = `${dir}/box`;
  const dest = `${dir}/dest`;
  await git(dir, ["init", "-q", "--bare", "-b", "main", `${dir}/origin.git`]);
  await git(dir, ["clone", "-q", `${dir}/origin.git`, mac]);
  await Deno.writeTextFile(`${mac}/deploy.yaml`, `version: 1\nfiles: ${mapBody}\n`);
  await git(mac, ["add", "-A"]);
  await commit(mac, "init", { committer: new Date(), author: new Date() });
  await git(mac, ["push", "-q", "origin", "main"]);
  await git(dir, ["clone", "-q", `${dir}/origin.git`, box]);
  await Deno.mkdir(dest);
  const registry = `${dir}/registry.yaml`;
  await Deno.writeTextFile(registry, "version: 1\naccounts: [root]\nservices: {}\n");
  return { dir, mac, box, dest, registry };
}

/** Runs `run --repo` and returns the result with only the repo findings. */
async function runRepo(e: Estate, extra: string[] = []) {
  const r = await reconcileCli([
    "run",
    "--registry",
    e.registry,
    "--caddy-admin",
    "none",
    "--boot",
    "none", // this VM is not booted with systemd: what a reboot would produce cannot be read
    "--repo",
    e.box,
    "--json",
    ...extra,
  ]);
  let result: JsonResult | undefined;
  try {
    result = JSON.parse(r.stdout) as JsonResult;
  } catch {
    // not JSON: a refusal, said on stderr
  }
  const repo = result?.findings.filter((f) => f.check === "repo") ?? [];
  return { ...r, result, repo };
}

function show(findings: Finding[]): string {
  return JSON.stringify(findings, null, 1);
}

Deno.test("porcelain v2 from real git: spaces, quotes, newlines, a rename, a conflict, untracked and ignored", async () => {
  const e = await estate();
  try {
    const box = e.box;
    const names = ["a b.txt", 'q"uote.txt', "new\nline.txt", "keep.txt"];
    for (const n of names) await Deno.writeTextFile(`${box}/${n}`, `${n}\n`);
    await git(box, ["add", "-A"]);
    await commit(box, "files", { committer: new Date(), author: new Date() });
    // A conflict first: the same line changed on two branches, merged.
    await git(box, ["checkout", "-q", "-b", "other"]);
    await Deno.writeTextFile(`${box}/keep.txt`, "theirs\n");
    await commit(box, "theirs", { committer: new Date(), author: new Date() });
    await git(box, ["checkout", "-q", "main"]);
    await Deno.writeTextFile(`${box}/keep.txt`, "ours\n");
    await commit(box, "ours", { committer: new Date(), author: new Date() });
    await run(["git", "merge", "-q", "other"], { cwd: box, env: IDENTITY, allowFailure: true });
    // Then edits of every kind.
    await Deno.writeTextFile(`${box}/a b.txt`, "changed\n");
    await git(box, ["mv", 'q"uote.txt', "re named\n.txt"]);
    await Deno.writeTextFile(`${box}/untracked "x" y`, "u\n");
    await Deno.writeTextFile(`${box}/.gitignore`, "*.log\n");
    await Deno.writeTextFile(`${box}/debug.log`, "l\n");

    const out = await git(box, [
      "status",
      "--porcelain=v2",
      "-z",
      "--branch",
      "--untracked-files=all",
      "--ignored",
      "--renames",
    ]);
    const status = parsePorcelainV2(out);
    assertEquals(status.branch.head, "main");
    assertEquals(status.branch.upstream, "origin/main");
    assertEquals(status.branch.ab, { ahead: 2, behind: 0 });
    const byPath = new Map(status.entries.map((x) => [x.path, x]));
    assertEquals(byPath.get("a b.txt")?.kind, "ordinary");
    assertEquals((byPath.get("a b.txt") as { xy: string }).xy, ".M");
    const renamed = byPath.get("re named\n.txt");
    assertEquals(renamed?.kind, "renamed");
    assertEquals((renamed as { origPath: string }).origPath, 'q"uote.txt');
    assertEquals(byPath.get("keep.txt")?.kind, "unmerged");
    assertEquals((byPath.get("keep.txt") as { xy: string }).xy, "UU");
    assertEquals(byPath.get('untracked "x" y')?.kind, "untracked");
    assertEquals(byPath.get("debug.log")?.kind, "ignored");
    assertEquals(byPath.get(".gitignore")?.kind, "untracked");
    assertEquals(status.entries.length, 6, JSON.stringify(status.entries));
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("porcelain v2: output that is not the format is refused whole, never read in part", () => {
  const oid = "0".repeat(40);
  const line = `1 .M N... 100644 100644 100644 ${oid} ${oid} a`;
  assertEquals(parsePorcelainV2(`${line}\0`).entries.length, 1);
  for (
    const [bad, why] of [
      [`${line}`, "does not end with NUL"],
      [`3 x\0`, "unknown line type"],
      [`2 R. N... 100644 100644 100644 ${oid} ${oid} R100 new\0`, "no original path"],
      [`1 .Z N... 100644 100644 100644 ${oid} ${oid} a\0`, "unknown status"],
      [`1 .M N... 100644 10064x 100644 ${oid} ${oid} a\0`, "malformed mode"],
      [`1 .M N... 100644 ${oid} a\0`, "too few fields"],
      ["# branch.ab 3 4\0", "ahead/behind"],
    ] as const
  ) {
    let error: Error | undefined;
    try {
      parsePorcelainV2(bad);
    } catch (caught) {
      error = caught as Error;
    }
    assert(error?.message.includes(why), `${JSON.stringify(bad)}: ${error?.message}`);
  }
  // Headers it does not know are ignored, as git-status(1) asks of parsers.
  assertEquals(parsePorcelainV2("# stash 3\0").entries, []);
});

Deno.test("run --repo: every uncommitted path is its own finding, named unambiguously", async () => {
  const e = await estate();
  try {
    const box = e.box;
    await Deno.writeTextFile(`${box}/a b`, "1\n");
    await Deno.writeTextFile(`${box}/q"uote`, "2\n");
    await git(box, ["add", "-A"]);
    await commit(box, "files", { committer: new Date(), author: new Date() });
    await git(box, ["push", "-q", "origin", "main"]);
    await Deno.writeTextFile(`${box}/a b`, "changed\n");
    await git(box, ["mv", 'q"uote', "re\nnamed"]);
    await Deno.writeTextFile(`${box}/new\nline`, "n\n");
    await Deno.writeTextFile(`${box}/.git/info/exclude`, "*.log\n");
    await Deno.writeTextFile(`${box}/ignored.log`, "i\n");

    // A file touched without a change: a `git status` that may write would refresh the index.
    await Deno.utime(`${box}/deploy.yaml`, new Date(), new Date(Date.now() + DAY));
    const index = await Deno.readFile(`${box}/.git/index`);

    const r = await runRepo(e);
    assertEquals(r.code, 1, r.stdout + r.stderr);
    assertEquals(await Deno.readFile(`${box}/.git/index`), index, "observing wrote the index");
    const uncommitted = r.repo.filter((f) => f.detail.startsWith("uncommitted edit"));
    assertEquals(
      uncommitted.map((f) => [f.direction, f.subject]).sort(),
      [["rogue", "a b"], ["rogue", "new\nline"], ["rogue", "re\nnamed"]],
      show(r.repo),
    );
    const detail = (subject: string) => uncommitted.find((f) => f.subject === subject)!.detail;
    assertStringIncludes(detail("a b"), '"a b" modified in the work tree');
    assertStringIncludes(detail("re\nnamed"), '"re\\nnamed" renamed from "q\\"uote"');
    assertStringIncludes(detail("new\nline"), '"new\\nline" untracked');
    assert(!r.repo.some((f) => f.subject === "ignored.log"), "an ignored file is not an edit");
    // The text form says the same, and no newline of a name reaches the terminal raw.
    const text = await reconcileCli([
      "run",
      "--registry",
      e.registry,
      "--caddy-admin",
      "none",
      "--boot",
      "none",
      "--repo",
      box,
    ]);
    assertStringIncludes(text.stdout, '"re\\nnamed" renamed from "q\\"uote"');
    assert(!text.stdout.includes("re\nnamed"), text.stdout);
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("run --repo: commits not deployed are graded by committer time or first sighting, never author time", async (t) => {
  const e = await estate();
  try {
    const now = Date.now();
    // Committed ten days ago, written (author) just now: waiting ten days.
    const old = await commit(e.mac, "old", {
      committer: new Date(now - 10 * DAY),
      author: new Date(now),
    });
    // Committed just now, written thirty days ago (a rebase, a long-lived branch): waiting 0.
    const recent = await commit(e.mac, "recent", {
      committer: new Date(now),
      author: new Date(now - 30 * DAY),
    });
    await git(e.mac, ["push", "-q", "origin", "main"]);
    await git(e.box, ["fetch", "-q"]);
    const seenFile = `${e.dir}/repo-seen.json`;

    await t.step(
      "the commit committed ten days ago is late; the one authored long ago is not",
      async () => {
        const r = await runRepo(e);
        assertEquals(r.code, 1, r.stdout + r.stderr);
        const late = r.repo.filter((f) => f.detail.startsWith("not deployed"));
        assertEquals(late.length, 1, show(r.repo));
        assertEquals([late[0]!.direction, late[0]!.subject], ["missing", "origin/main"]);
        assertStringIncludes(late[0]!.detail, "1 of the 2 commits");
        assertStringIncludes(late[0]!.detail, old.slice(0, 12));
        assertStringIncludes(late[0]!.detail, "more than 7d");
        assert(!late[0]!.detail.includes(recent.slice(0, 12)), late[0]!.detail);
      },
    );

    await t.step(
      "with --behind-days 11 nothing is late: 30 days of author time do not count",
      async () => {
        const r = await runRepo(e, ["--behind-days", "11"]);
        assertEquals(r.repo, [], show(r.repo));
        assertEquals(r.code, r.result!.findings.length > 0 ? 1 : 0);
      },
    );

    await t.step("first sightings are kept in the state directory and not reset", async () => {
      const seen = JSON.parse(await Deno.readTextFile(seenFile));
      const box = await Deno.realPath(e.box);
      assertEquals(Object.keys(seen.repos[box]).sort(), [old, recent].sort());
      // Say the recent commit was first seen twelve days ago (its committer clock was wrong).
      seen.repos[box][recent] = new Date(now - 12 * DAY).toISOString();
      await Deno.writeTextFile(seenFile, JSON.stringify(seen));
      const r = await runRepo(e, ["--behind-days", "11"]);
      const late = r.repo.filter((f) => f.detail.startsWith("not deployed"));
      assertEquals(late.length, 1, show(r.repo));
      assertStringIncludes(late[0]!.detail, "1 of the 2 commits");
      assertStringIncludes(late[0]!.detail, recent.slice(0, 12));
      assertStringIncludes(late[0]!.detail, "first seen on the upstream");
      const after = JSON.parse(await Deno.readTextFile(seenFile));
      assertEquals(after.repos[box][recent], new Date(now - 12 * DAY).toISOString());
    });

    await t.step("--state-dir puts the state elsewhere", async () => {
      const elsewhere = await Deno.makeTempDir({ dir: e.dir });
      await runRepo(e, ["--state-dir", elsewhere]);
      assert((await Deno.stat(`${elsewhere}/repo-seen.json`)).isFile);
      const missing = await runRepo(e, ["--state-dir", `${e.dir}/nope`]);
      assertEquals(missing.code, 2);
      assertStringIncludes(missing.stderr, "--state-dir");
    });

    await t.step("deployed: nothing late, and the state forgets deployed commits", async () => {
      await git(e.box, ["merge", "-q", "--ff-only", "origin/main"]);
      const r = await runRepo(e);
      assertEquals(r.repo, [], show(r.repo));
      const seen = JSON.parse(await Deno.readTextFile(seenFile));
      assertEquals(seen.repos[await Deno.realPath(e.box)], {});
    });

    await t.step("a state file that cannot be read stops the run, untouched", async () => {
      await Deno.writeTextFile(seenFile, '{"version": 1, "repos": {"x": 3}}');
      const r = await runRepo(e);
      assertEquals(r.code, 2, r.stdout);
      assertStringIncludes(r.stderr, `Cannot read first-seen state "${seenFile}"`);
      assertStringIncludes(r.stderr, "repos.x");
      assertEquals(await Deno.readTextFile(seenFile), '{"version": 1, "repos": {"x": 3}}');
    });
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("run --repo: no upstream, a detached HEAD, an upstream gone and local commits are findings", async () => {
  const e = await estate();
  try {
    const box = e.box;
    const says = async (words: string) => {
      const r = await runRepo(e);
      const f = r.repo.filter((x) => x.detail.startsWith(words));
      assertEquals(f.length, 1, `${words}: ${show(r.repo)}`);
      return f[0]!;
    };
    const local = await commit(box, "made on the box", {
      committer: new Date(),
      author: new Date(),
    });
    const ahead = await says("local commit");
    assertEquals([ahead.direction, ahead.subject], ["rogue", "origin/main"]);
    assertStringIncludes(ahead.detail, "has 1 commit that");

    await git(box, ["checkout", "-q", "-b", "loose"]);
    const none = await says("no upstream");
    assertStringIncludes(none.detail, 'branch "loose"');
    assertStringIncludes(none.detail, "tracks no upstream branch");

    await git(box, ["checkout", "-q", "--detach", local]);
    assertStringIncludes((await says("no upstream")).detail, `detached at ${local.slice(0, 12)}`);

    await git(box, ["checkout", "-q", "-b", "gone", "--track", "origin/main"]);
    await git(box, ["update-ref", "-d", "refs/remotes/origin/main"]);
    const gone = await says("upstream gone");
    assertStringIncludes(gone.detail, 'tracks "origin/main", which does not exist here');
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("run --repo: each destination that differs from the deploy map is its own finding", async () => {
  const e = await estate();
  try {
    const { mac, dest } = e;
    await Deno.mkdir(`${mac}/bin`);
    const script = "#!/bin/sh\necho deployed\n";
    await Deno.writeTextFile(`${mac}/bin/tool`, script, { mode: 0o755 });
    await Deno.writeTextFile(`${mac}/bin/my "odd" name`, "odd\n");
    await Deno.writeTextFile(`${mac}/app.conf`, "setting = 1\n");
    await Deno.symlink("/etc/hostname", `${mac}/escape`);
    const rows: [string, string, string, string, string][] = [
      // source, destination, owner, group, mode
      ["bin/tool", `${dest}/ok-tool`, "root", "root", "0755"],
      ['bin/my "odd" name', `${dest}/ok nobody`, "nobody", "nogroup", "0640"],
      ["bin/tool", `${dest}/noexec`, "root", "root", "0755"],
      ["app.conf", `${dest}/exec`, "root", "root", "0644"],
      ["app.conf", `${dest}/mode`, "root", "root", "0640"],
      ["app.conf", `${dest}/owner`, "nobody", "root", "0644"],
      ["app.conf", `${dest}/group`, "root", "nogroup", "0644"],
      ["app.conf", `${dest}/content`, "root", "root", "0644"],
      ["app.conf", `${dest}/missing`, "root", "root", "0644"],
      ["app.conf", `${dest}/link`, "root", "root", "0644"],
      ["not-there", `${dest}/nosource`, "root", "root", "0644"],
      ["escape", `${dest}/escape`, "root", "root", "0644"],
      ["app.conf", `${dest}/ghost`, "meshghost", "root", "0644"],
    ];
    await Deno.writeTextFile(
      `${mac}/deploy.yaml`,
      MAP_HEADER +
        rows.map(([s, d, o, g, m]) =>
          `  - source: ${JSON.stringify(s)}\n    destination: ${
            JSON.stringify(d)
          }\n    owner: ${o}\n    group: ${g}\n    mode: "${m}"\n`
        ).join(""),
    );
    await git(mac, ["add", "-A"]);
    await commit(mac, "map", { committer: new Date(), author: new Date() });
    await git(mac, ["push", "-q", "origin", "main"]);
    await git(e.box, ["pull", "-q", "--ff-only"]);

    const put = async (name: string, text: string, mode: number, owner = "0:0") => {
      await Deno.writeTextFile(`${dest}/${name}`, text);
      await Deno.chmod(`${dest}/${name}`, mode);
      const [uid, gid] = owner.split(":").map(Number);
      await Deno.chown(`${dest}/${name}`, uid!, gid!);
    };
    const conf = "setting = 1\n";
    await put("ok-tool", script, 0o755);
    await put("ok nobody", "odd\n", 0o640, "65534:65534");
    await put("noexec", script, 0o644);
    await put("exec", conf, 0o755);
    await put("mode", conf, 0o600);
    await put("owner", conf, 0o644);
    await put("group", conf, 0o644);
    await put("content", "setting = 2\n", 0o644);
    await Deno.symlink(`${e.box}/app.conf`, `${dest}/link`);
    await put("nosource", conf, 0o644);
    await put("escape", "x\n", 0o644);
    await put("ghost", conf, 0o644);

    const r = await runRepo(e);
    assertEquals(r.code, 1, r.stdout + r.stderr);
    assertEquals(r.result!.sources.find((s) => s.source === "deploy-map")?.state, "observed");
    const at = (name: string) => r.repo.filter((f) => f.subject === `${dest}/${name}`);
    const only = (name: string, words: string) => {
      const f = at(name);
      assertEquals(f.length, 1, `${name}: ${show(f)}`);
      assertEquals(f[0]!.direction, "missing");
      assertStringIncludes(f[0]!.detail, words);
      return f[0]!.detail;
    };
    assertEquals(at("ok-tool"), []);
    assertEquals(at("ok nobody"), [], "an exact copy owned by another account is fine");
    only("noexec", "has mode 0644, the deploy map says 0755: the executable bit is missing");
    only("exec", "has mode 0755, the deploy map says 0644: executable, and the map says it is not");
    const mode = only("mode", "has mode 0600, the deploy map says 0640");
    assert(!mode.includes("executable"), mode);
    only("owner", "is owned by root (uid 0), the deploy map says nobody (uid 65534)");
    only("group", "has group root (gid 0), the deploy map says nogroup (gid 65534)");
    only(
      "content",
      "differs in content from the repository's (12 bytes here, 12 in the repository)",
    );
    only("missing", "is missing");
    only("link", "is a symbolic link to");
    assertStringIncludes(at("link")[0]!.detail, "not a file (not followed)");
    only("nosource", "deploy map source missing: deploy.yaml:");
    only("escape", "deploy map source outside the repository");
    assertStringIncludes(at("escape")[0]!.detail, 'resolves to "/etc/hostname"');
    only("ghost", "deploy map owner unknown: deploy.yaml:");
    assertStringIncludes(at("ghost")[0]!.detail, 'says "meshghost" for');
    assertStringIncludes(at("ghost")[0]!.detail, "not an account on this machine");
    // The line of each entry is named.
    assertStringIncludes(at("noexec")[0]!.detail, '(deploy.yaml:13, from "bin/tool")');
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("run --repo: a deploy map naming a path outside the repository refuses the map: exit 2, every problem placed", async () => {
  const e = await estate();
  try {
    await Deno.writeTextFile(
      `${e.box}/deploy.yaml`,
      `${MAP_HEADER}  - source: ../outside\n    destination: /tmp/x\n    owner: root\n    group: root\n    mode: "0644"\n` +
        `  - source: /etc/passwd\n    destination: /tmp/y\n    owner: root\n    group: root\n    mode: 0644\n    extra: 1\n`,
    );
    const r = await runRepo(e);
    assertEquals(r.code, 2, r.stdout + r.stderr);
    assertEquals(r.result!.status, "unobservable");
    const map = r.result!.sources.find((s) => s.source === "deploy-map")!;
    assertEquals(map.state, "failed");
    for (
      const words of [
        'deploy.yaml:3:13: files[0].source: "../outside" leaves the repository through ".."',
        'deploy.yaml:8:13: files[1].source: "/etc/passwd" is an absolute path, outside the repository',
        "deploy.yaml:12:11: files[1].mode: Must be an octal string",
        'deploy.yaml:13:5: files[1].extra: Unknown field "extra"',
      ]
    ) assertStringIncludes(map.detail, words);
    assertEquals(r.repo.filter((f) => f.subject === "/tmp/x"), []);

    await Deno.remove(`${e.box}/deploy.yaml`);
    const none = await runRepo(e);
    assertEquals(none.code, 2);
    assertStringIncludes(
      none.result!.sources.find((s) => s.source === "deploy-map")!.detail,
      "the repository has no deploy.yaml",
    );
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test("run --repo: a directory that is not the top of a git checkout is exit 2, never clean", async () => {
  const e = await estate();
  try {
    const cases: [string, string][] = [
      [e.dest, "is not a git repository"],
      [`${e.dir}/nowhere`, "does not exist"],
      [`${e.dir}/origin.git`, "is a bare repository, not a checkout"],
    ];
    await Deno.mkdir(`${e.box}/sub`);
    cases.push([`${e.box}/sub`, "not the top of one"]);
    for (const [dir, words] of cases) {
      const r = await reconcileCli([
        "run",
        "--registry",
        e.registry,
        "--caddy-admin",
        "none",
        "--boot",
        "none",
        "--repo",
        dir,
        "--json",
      ]);
      assertEquals(r.code, 2, `${dir}: ${r.stdout}${r.stderr}`);
      const result = JSON.parse(r.stdout) as JsonResult;
      const repo = result.sources.find((s) => s.source === "repo")!;
      assertEquals(repo.state, "failed", dir);
      assertStringIncludes(repo.detail, words);
    }
    const flags = await reconcileCli([
      "run",
      "--registry",
      e.registry,
      "--boot",
      "none",
      "--behind-days",
      "3",
    ]);
    assertEquals(flags.code, 2);
    assertStringIncludes(flags.stderr, "--behind-days needs --repo");
    const days = await runRepo(e, ["--behind-days", "soon"]);
    assertEquals(days.code, 2);
    assertStringIncludes(days.stderr, "--behind-days: must be a number of days");
  } finally {
    await Deno.remove(e.dir, { recursive: true });
  }
});

Deno.test({
  name: "run --repo: a deployed, committed, up-to-date checkout adds nothing, and the run is clean",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const e = await estate();
    try {
      await Deno.writeTextFile(`${e.dest}/motd`, "hello\n");
      await Deno.chmod(`${e.dest}/motd`, 0o644);
      await Deno.writeTextFile(`${e.mac}/motd`, "hello\n");
      await Deno.writeTextFile(
        `${e.mac}/deploy.yaml`,
        `${MAP_HEADER}  - source: motd\n    destination: ${e.dest}/motd\n    owner: root\n    group: root\n    mode: "0644"\n`,
      );
      await git(e.mac, ["add", "-A"]);
      await commit(e.mac, "motd", {
        committer: new Date(Date.now() - 30 * DAY),
        author: new Date(),
      });
      await git(e.mac, ["push", "-q", "origin", "main"]);
      await git(e.box, ["pull", "-q", "--ff-only"]);
      // The machine as it is, adopted, so that only the repository can make the run unclean.
      const init = await reconcileCli(["init", "--caddy-admin", "none"]);
      assertEquals(init.code, 0, init.stderr);
      const adopted = parse(init.stdout) as { services: unknown };
      await Deno.writeTextFile(e.registry, init.stdout);
      assert(adopted.services !== undefined);
      const r = await runRepo(e);
      assertEquals(r.repo, [], show(r.repo));
      assertEquals(
        r.result!.sources.filter((s) => s.source === "repo" || s.source === "deploy-map")
          .map((s) => s.state),
        ["observed", "observed"],
      );
      assertEquals(
        r.result!.findings,
        [],
        `the machine changed between init and run? ${r.stdout}`,
      );
      assertEquals([r.code, r.result!.status], [0, "clean"], r.stdout);
    } finally {
      await Deno.remove(e.dir, { recursive: true });
    }
  },
});
