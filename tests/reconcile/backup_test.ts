/**
 * Backup coverage watched: the registry's `backup` names a restic repository, `run` reads its
 * snapshots with `restic snapshots --json` and judges every declared state directory by the
 * newest snapshot of this machine that holds it. Against a real restic repository in a temporary
 * directory (Debian's `restic`): `render backup --files-from` feeds `restic backup --files-from`,
 * and the `backup` findings are seen before and cleared after; an old snapshot (`--time`) or a
 * tiny `maxAge` is stale; a wrong or missing password file is unobservable with the reason.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { compare, type Finding, type Observation } from "../../reconcile/compare.ts";
import { backupRequest } from "../../reconcile/run.ts";
import { normalisePath, observeBackup, parseSnapshots } from "../../reconcile/observe/backup.ts";
import type { SourceStatus } from "../../reconcile/observe/source.ts";

async function restic(args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command("restic", {
    args,
    env: { RESTIC_PASSWORD: "", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`restic ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

interface Lab {
  dir: string;
  repo: string;
  password: string;
  /** Two declared state directories; the second reached through a symlinked parent. */
  state: [string, string];
  registryText(options?: { maxAge?: string; passwordFile?: string }): string;
  registryFile(options?: { maxAge?: string; passwordFile?: string }): Promise<string>;
  backup(files: string, extra?: string[]): Promise<void>;
}

async function lab(): Promise<Lab> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "mesh-backup-" }));
  const repo = `${dir}/repo`;
  const password = `${dir}/password`;
  await Deno.writeTextFile(password, "correct horse battery staple\n");
  await restic(["init", "-r", repo, "--password-file", password]);
  await Deno.mkdir(`${dir}/srv/web`, { recursive: true });
  await Deno.writeTextFile(`${dir}/srv/web/data.db`, "state of web");
  await Deno.mkdir(`${dir}/real/notes`, { recursive: true });
  await Deno.writeTextFile(`${dir}/real/notes/n.txt`, "state of notes");
  // /DIR/link -> /DIR/real: notes is declared through the symlinked parent, with a trailing slash.
  await Deno.symlink(`${dir}/real`, `${dir}/link`);
  const state: [string, string] = [`${dir}/srv/web`, `${dir}/link/notes/`];
  const registryText = (o: { maxAge?: string; passwordFile?: string } = {}) =>
    `version: 1
accounts: [root]
backup:
  restic: { repository: ${repo}, passwordFile: ${o.passwordFile ?? password} }
  maxAge: ${o.maxAge ?? "26h"}
services:
  web: { kind: service, user: root, container: web, state: [${state[0]}] }
  notes: { kind: daemon, state: [${state[1]}], database: notes }
`;
  let n = 0;
  return {
    dir,
    repo,
    password,
    state,
    registryText,
    async registryFile(o = {}) {
      const file = `${dir}/registry-${n++}.yaml`;
      await Deno.writeTextFile(file, registryText(o));
      return file;
    },
    async backup(files, extra = []) {
      const list = `${dir}/files-${n++}`;
      await Deno.writeTextFile(list, files);
      await restic([
        "-r",
        repo,
        "--password-file",
        password,
        "backup",
        "--files-from",
        list,
        ...extra,
      ]);
    },
  };
}

/** The `backup` check of `run`, on its own: the snapshots observed, then the check table. */
async function backupCheck(
  text: string,
  now = Date.now(),
): Promise<{ findings: Finding[]; sources: SourceStatus[] }> {
  const registry = parseRegistry(text);
  const observed = await observeBackup(backupRequest(registry)!);
  const observation: Observation = {
    time: new Date(now).toISOString(),
    containers: [],
    listeners: [],
    addresses: [],
    probes: [],
    sources: observed.sources,
    ...(observed.backup ? { backup: observed.backup } : {}),
  };
  const findings = compare(registry, observation, { certWarnMs: 0, now })
    .filter((f) => f.check === "backup");
  return { findings, sources: observed.sources };
}

/** `render backup --files-from` of `registry`, through the CLI. */
async function renderFiles(registry: string): Promise<string> {
  const out = await reconcileCli(["render", "backup", "--registry", registry, "--files-from"]);
  assertEquals(out.code, 0, out.stderr);
  return out.stdout;
}

Deno.test("render backup --files-from into restic backup: missing before, clean after", async () => {
  const l = await lab();
  try {
    const registry = await l.registryFile();
    const files = await renderFiles(registry);
    assertEquals(files, `${l.state[1]}\n${l.state[0]}\n`);

    // An empty repository: every declared directory is missing.
    let seen = await backupCheck(l.registryText());
    assertEquals(seen.sources.map((s) => [s.source, s.state, s.detail]), [
      ["backup", "observed", "0 snapshots"],
    ]);
    assertEquals(seen.findings.map((f) => [f.direction, f.subject, f.service]), [
      ["missing", l.state[1], "notes"],
      ["missing", l.state[0], "web"],
    ]);
    for (const f of seen.findings) assertStringIncludes(f.detail, "missing: state directory");

    // A snapshot of an unrelated directory covers neither.
    await Deno.mkdir(`${l.dir}/other`);
    await l.backup(`${l.dir}/other\n`);
    seen = await backupCheck(l.registryText());
    assertEquals(seen.findings.length, 2);

    // The nightly pair, for real: restic backs up what render backup lists.
    await l.backup(files);
    seen = await backupCheck(l.registryText());
    assertEquals(seen.findings, []);
    assertEquals(seen.sources[0]!.detail, "2 snapshots");

    // And `run` itself (the CLI) says no backup finding, the source observed.
    const run = await reconcileCli([
      "run",
      "--registry",
      registry,
      "--json",
      "--caddy-admin",
      "none",
      "--boot",
      "none",
    ]);
    const result = JSON.parse(run.stdout) as { findings: Finding[]; sources: SourceStatus[] };
    assertEquals(result.findings.filter((f) => f.check === "backup"), []);
    const source = result.sources.find((s) => s.source === "backup");
    assertEquals([source?.state, source?.detail], ["observed", "2 snapshots"]);
  } finally {
    await Deno.remove(l.dir, { recursive: true });
  }
});

Deno.test("a parent directory's snapshot holds the state below it; each directory judged by its newest", async () => {
  const l = await lab();
  try {
    // The symlink's target's parent (as restic sees it), and the web directory's parent.
    await l.backup(`${l.dir}/real/\n${l.dir}/srv\n`);
    assertEquals((await backupCheck(l.registryText())).findings, []);
    // Ten days later that snapshot is stale for both, named with its age.
    const later = await backupCheck(l.registryText(), Date.now() + 10 * 86_400_000);
    assertEquals(later.findings.map((f) => f.subject), [l.state[1], l.state[0]]);
    for (const f of later.findings) {
      assertStringIncludes(f.detail, "stale: the newest snapshot holding state directory");
      assertStringIncludes(f.detail, "past maxAge 26h");
    }
  } finally {
    await Deno.remove(l.dir, { recursive: true });
  }
});

Deno.test("an old snapshot (restic backup --time) is stale; a newer one of the same directory clears it", async () => {
  const l = await lab();
  try {
    const files = await renderFiles(await l.registryFile());
    await l.backup(files, ["--time", "2020-01-02 03:04:05"]);
    let seen = await backupCheck(l.registryText());
    assertEquals(seen.findings.map((f) => f.subject), [l.state[1], l.state[0]]);
    for (const f of seen.findings) assertStringIncludes(f.detail, "stale:");
    // Only web is backed up again: notes stays stale, judged by its own newest snapshot.
    await l.backup(`${l.state[0]}\n`);
    seen = await backupCheck(l.registryText());
    assertEquals(seen.findings.map((f) => f.subject), [l.state[1]]);
    // A tiny maxAge makes the fresh one stale too.
    await new Promise((r) => setTimeout(r, 1100));
    seen = await backupCheck(l.registryText({ maxAge: "1s" }));
    assertEquals(seen.findings.map((f) => f.subject), [l.state[1], l.state[0]]);
  } finally {
    await Deno.remove(l.dir, { recursive: true });
  }
});

Deno.test("a missing or wrong password file: unobservable with the reason, never clean", async () => {
  const l = await lab();
  try {
    await l.backup(await renderFiles(await l.registryFile()));
    const gone = `${l.dir}/no-such-password`;
    let seen = await backupCheck(l.registryText({ passwordFile: gone }));
    assertEquals(seen.sources.map((s) => [s.source, s.state]), [["backup", "failed"]]);
    assertStringIncludes(seen.sources[0]!.detail, `Cannot read restic password file "${gone}"`);
    assertEquals(seen.findings, []); // not compared: missing data is not evidence

    const wrong = `${l.dir}/wrong-password`;
    await Deno.writeTextFile(wrong, "not the password\n");
    seen = await backupCheck(l.registryText({ passwordFile: wrong }));
    assertEquals(seen.sources[0]!.state, "failed");
    assertStringIncludes(seen.sources[0]!.detail, `Cannot read the snapshots of "${l.repo}"`);
    assertStringIncludes(seen.sources[0]!.detail, "wrong password");

    // The whole run: exit 2, status unobservable, the reason in its sources.
    const run = await reconcileCli([
      "run",
      "--registry",
      await l.registryFile({ passwordFile: gone }),
      "--json",
      "--caddy-admin",
      "none",
      "--boot",
      "none",
    ]);
    assertEquals(run.code, 2, run.stderr);
    const result = JSON.parse(run.stdout) as { status: string; sources: SourceStatus[] };
    assertEquals(result.status, "unobservable");
    const source = result.sources.find((s) => s.source === "backup");
    assertStringIncludes(source!.detail, "Cannot read restic password file");
  } finally {
    await Deno.remove(l.dir, { recursive: true });
  }
});

Deno.test("restic's JSON read with one schema: fields named where they are wrong", () => {
  const one = parseSnapshots(
    `[{"time":"2026-12-06T05:50:01.123456789+01:00","tree":"t","paths":["/srv/web"],` +
      `"hostname":"n1","username":"root","id":"${"a".repeat(64)}","short_id":"aaaaaaaa"}]`,
  );
  assertEquals(one[0]!.time, Date.parse("2026-12-06T04:50:01.123Z"));
  assertEquals(one[0]!.tags, []);
  for (
    const [text, says] of [
      ["{}", "not an array"],
      ['[{"id":"x","time":"yesterday","hostname":"h","paths":[]}]', 'time "yesterday"'],
      ['[{"id":"x","time":"2026-01-01T00:00:00Z","hostname":"h"}]', "paths is not a list"],
      ['[{"id":"x","time":"2026-01-01T00:00:00Z","paths":[]}]', "hostname is not"],
    ]
  ) {
    let message = "";
    try {
      parseSnapshots(text!);
    } catch (error) {
      message = (error as Error).message;
    }
    assertStringIncludes(message, says!);
  }
  assertEquals(normalisePath("/srv//web/./"), "/srv/web");
  assertEquals(normalisePath("/"), "/");
});

Deno.test("the registry's backup is checked: maxAge a duration with its unit, passwordFile absolute", async () => {
  const base = (backup: string) =>
    `version: 1\naccounts: [root]\nbackup: ${backup}\nservices: {}\n`;
  const ok = parseRegistry(
    base("{ restic: { repository: /srv/restic, passwordFile: /etc/restic.pw }, maxAge: 26h }"),
  );
  assertEquals(ok.backup?.maxAge, "26h");
  for (
    const [backup, says] of [
      [
        "{ restic: { repository: /r, passwordFile: /p }, maxAge: 26 }",
        "maxAge: Must be a duration with its unit, e.g. 26h",
      ],
      [
        "{ restic: { repository: /r, passwordFile: /p }, maxAge: soon }",
        "maxAge: Must be a duration",
      ],
      ["{ restic: { repository: /r, passwordFile: p }, maxAge: 26h }", "passwordFile"],
      ["{ restic: { repository: /r }, maxAge: 26h }", "passwordFile"],
      ["{ restic: { repository: /r, passwordFile: /p }, maxAge: 26h, extra: 1 }", "extra"],
    ]
  ) {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/r.yaml`;
    await Deno.writeTextFile(file, base(backup!));
    const out = await reconcileCli(["check-registry", file]);
    await Deno.remove(dir, { recursive: true });
    assertEquals(out.code, 2, out.stdout);
    assertStringIncludes(out.stderr, says!);
    assert(out.stderr.includes(`${file}:3:`), out.stderr);
  }
});

Deno.test("render backup --files-from: one form at a time, and a path with a line break refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-backup-render-" });
  try {
    const file = `${dir}/r.yaml`;
    await Deno.writeTextFile(
      file,
      `version: 1\naccounts: [root]\nservices:\n  x: { kind: daemon, state: ["/srv/a\\nb"] }\n`,
    );
    const both = await reconcileCli([
      "render",
      "backup",
      "--registry",
      file,
      "--json",
      "--files-from",
    ]);
    assertEquals(both.code, 2, both.stderr);
    assertStringIncludes(both.stderr, "--json and --files-from are two forms");
    const broken = await reconcileCli(["render", "backup", "--registry", file, "--files-from"]);
    assertEquals(broken.code, 2, broken.stderr);
    assertStringIncludes(broken.stderr, "holds a line break");
    assertEquals(broken.stdout, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
