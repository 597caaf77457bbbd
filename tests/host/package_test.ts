/**
 * The package appliers against ONE contract, each where it can be real:
 *
 * - dpkg and apt FOR REAL, in a systemd lab machine (Debian), installing from Debian's archive;
 * - pacman FOR REAL (Debian's `pacman-package-manager`) on this machine, pointed by a wrapper
 *   first on PATH at a private configuration: its own root, database and a local repository
 *   of packages this file builds (the machine's own empty pacman database is never touched);
 * - apk from RECORDED outputs, replayed by a fake `apk` first on PATH (apk cannot run here);
 *   every output names its source in {@linkcode APK_RECORDED}.
 *
 * Each goes through the host's own command line (`hostMain`, `apply --json`) with a system
 * whose `package` applier is the one under test, as the wired host will run it. Spies (lab,
 * pacman) and the fake (apk) log the commands the applier ran, so "a dry run runs no install"
 * and "forgetting runs no uninstall" are asserted on the commands as well as on the machine.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { denoRun } from "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";
import { run } from "../../lib/command.ts";
import { queryDpkg } from "../../systems/debian/package_dpkg.ts";
import { runContract } from "./contract.ts";
import { arch } from "../../systems/arch/mod.ts";
import { alpine } from "../../systems/alpine/mod.ts";

/**
 * Runs `fn` with `PATH` (and the other variables of `env`) set in this process, for the generic
 * contract, which applies in-process; restores them after.
 */
async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, Deno.env.get(k)]));
  for (const [k, v] of Object.entries(env)) Deno.env.set(k, v);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) Deno.env.delete(k);
      else Deno.env.set(k, v);
    }
  }
}

interface ApplyResult {
  outcome: "applied" | "refused" | "failed";
  applied: number;
  total: number;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; path?: string; message: string }[];
  dryRun?: boolean;
}

interface Owned {
  id: string;
  type: string;
  subject: string;
  created: boolean;
}

type Resource = Record<string, unknown>;

/** One implementation, set up where it can be real. */
interface Subject {
  /** An installable package, absent at the start. */
  small: string;
  /** A package installed before the host ever ran, not by it. */
  preinstalled: string;
  /** A name the archive does not have, and how the failure names it. */
  missing: string;
  missingSays: RegExp;
  /** A path that does not exist: a directory declared after the failing package. */
  scratch: string;
  /** The command lines that install and that uninstall, as the spies log them. */
  installs: RegExp;
  uninstalls: RegExp;
  /** `mesh-host apply --json` with the applier under test. */
  apply(resources: Resource[], options?: { dryRun?: boolean }): Promise<ApplyResult>;
  /** `mesh-host owned --json`. */
  owned(): Promise<Owned[]>;
  /** Evidence independent of the applier's query where there is some (the package's file). */
  installed(name: string): Promise<boolean>;
  /** Uninstalls as a person would, bypassing the spies. */
  removeByHand(name: string): Promise<void>;
  exists(path: string): Promise<boolean>;
  /** The package manager commands the host ran since the last call, one line each. */
  calls(): Promise<string[]>;
}

const pkg = (id: string, name: string): Resource => ({ id, type: "package", package: name });
const changeOf = (r: ApplyResult, id: string) => r.changes.find((c) => c.id === id)?.change;
const show = (r: unknown) => JSON.stringify(r, null, 1);

/** Parses `mesh-host apply --json` output, or fails showing what the host said. */
function parseResult(out: { code: number | null; stdout: string; stderr: string }): ApplyResult {
  let result: ApplyResult;
  try {
    result = JSON.parse(out.stdout) as ApplyResult;
  } catch {
    throw new Error(`mesh-host printed no JSON (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
  }
  // A dry run with changes pending exits 4 (0 only when nothing would change).
  const pending = result.dryRun === true && result.changes.some((c) => c.change !== "unchanged");
  const expected = result.outcome === "applied"
    ? (pending ? 4 : 0)
    : result.outcome === "failed"
    ? 1
    : 2;
  assertEquals(out.code, expected, `exit code of a ${result.outcome} apply:\n${show(result)}`);
  return result;
}

/**
 * The contract every package applier keeps (docs/design.md, "Declaration": present only, never
 * upgraded, never uninstalled, leaving the declaration makes it "forgotten").
 */
async function contract(t: Deno.TestContext, s: Subject): Promise<void> {
  await s.calls();

  await t.step("a dry run says created, installs nothing and runs no install", async () => {
    assert(!(await s.installed(s.small)), `${s.small} must be absent at the start`);
    const r = await s.apply([pkg("small", s.small)], { dryRun: true });
    assertEquals(
      [r.outcome, changeOf(r, "small"), r.dryRun],
      ["applied", "created", true],
      show(r),
    );
    assert(!(await s.installed(s.small)), `the dry run installed ${s.small}`);
    const calls = await s.calls();
    assertEquals(calls.filter((c) => s.installs.test(c)), [], `commands: ${calls.join("; ")}`);
    assertEquals(await s.owned(), []);
  });

  await t.step("an absent package is installed: created, and the footprint says so", async () => {
    const r = await s.apply([pkg("small", s.small)]);
    assertEquals([r.outcome, changeOf(r, "small")], ["applied", "created"], show(r));
    assert(await s.installed(s.small), `${s.small} is not installed`);
    const calls = await s.calls();
    assertEquals(calls.filter((c) => s.installs.test(c)).length, 1, calls.join("; "));
    const entry = (await s.owned()).find((e) => e.id === "small");
    assertEquals([entry?.subject, entry?.created], [s.small, true]);
  });

  await t.step("applying again changes nothing: unchanged, no install", async () => {
    const r = await s.apply([pkg("small", s.small)]);
    assertEquals([r.outcome, changeOf(r, "small")], ["applied", "unchanged"], show(r));
    const calls = await s.calls();
    assertEquals(calls.filter((c) => s.installs.test(c)), [], calls.join("; "));
  });

  await t.step("a package removed by hand is installed again: created", async () => {
    await s.removeByHand(s.small);
    assert(!(await s.installed(s.small)), `removing ${s.small} by hand did not remove it`);
    const r = await s.apply([pkg("small", s.small)]);
    assertEquals([r.outcome, changeOf(r, "small")], ["applied", "created"], show(r));
    assert(await s.installed(s.small), `${s.small} was not installed again`);
  });

  await t.step("a package installed before the host is unchanged, and not created", async () => {
    assert(await s.installed(s.preinstalled), `${s.preinstalled} must be installed already`);
    const r = await s.apply([pkg("small", s.small), pkg("pre", s.preinstalled)]);
    assertEquals([r.outcome, changeOf(r, "pre")], ["applied", "unchanged"], show(r));
    const entry = (await s.owned()).find((e) => e.id === "pre");
    assertEquals([entry?.subject, entry?.created], [s.preinstalled, false]);
  });

  await t.step("leaving the declaration: forgotten, still installed, no uninstall", async () => {
    await s.calls();
    const dry = await s.apply([pkg("pre", s.preinstalled)], { dryRun: true });
    assertEquals([dry.outcome, changeOf(dry, "small")], ["applied", "forgotten"], show(dry));
    // Even what this host created is only forgotten.
    const r = await s.apply([pkg("pre", s.preinstalled)]);
    assertEquals([r.outcome, changeOf(r, "small")], ["applied", "forgotten"], show(r));
    assert(await s.installed(s.small), `${s.small} was uninstalled`);
    assertEquals((await s.owned()).map((e) => e.id), ["pre"]);
    const none = await s.apply([]);
    assertEquals([none.outcome, changeOf(none, "pre")], ["applied", "forgotten"], show(none));
    assert(await s.installed(s.preinstalled), `${s.preinstalled} was uninstalled`);
    const calls = await s.calls();
    assertEquals(calls.filter((c) => s.uninstalls.test(c)), [], calls.join("; "));
  });

  await t.step("a package the archive lacks fails naming it; the apply stops there", async () => {
    const r = await s.apply([
      pkg("small", s.small),
      pkg("missing", s.missing),
      { id: "after", type: "directory", path: s.scratch, mode: "0755" },
    ]);
    assertEquals([r.outcome, r.applied, r.total], ["failed", 1, 3], show(r));
    assertEquals(r.changes.map((c) => [c.id, c.change]), [["small", "unchanged"]]);
    assertEquals(r.problems.length, 1, show(r));
    assertEquals(r.problems[0]!.id, "missing");
    assert(s.missingSays.test(r.problems[0]!.message), `problem: ${r.problems[0]!.message}`);
    assert(!(await s.exists(s.scratch)), "the resource after the failure was applied");
  });
}

// --- dpkg and apt, for real in the lab ------------------------------------------------------

/** Files that prove a package is installed, independent of dpkg's database. */
const DEBIAN_FILES: Record<string, string> = {
  hello: "/usr/bin/hello",
  netbase: "/etc/protocols",
  nano: "/bin/nano",
  whois: "/usr/bin/whois",
  ed: "/bin/ed",
};
const LAB_PATH = "/root/spy:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const APT_ENV = { DEBIAN_FRONTEND: "noninteractive", LC_ALL: "C" };

async function labWrite(m: LabMachine, path: string, text: string, mode = "0644") {
  await m.exec([
    "sh",
    "-c",
    'mkdir -p "$(dirname "$1")" && printf %s "$2" >"$1" && chmod "$3" "$1"',
    "sh",
    path,
    text,
    mode,
  ]);
}

/** The systemd lab machine with the dpkg applier's host entry and spies on apt and dpkg. */
async function debianSubject(m: LabMachine): Promise<Subject> {
  // The spies log each call, then run the real tool; only the host runs with them on PATH.
  for (const tool of ["apt-get", "apt-cache", "dpkg-query", "dpkg"]) {
    await labWrite(
      m,
      `/root/spy/${tool}`,
      `#!/bin/sh\necho "${tool} $*" >>/root/spy.log\nexec /usr/bin/${tool} "$@"\n`,
      "0755",
    );
  }
  await labWrite(
    m,
    "/root/pkg_entry.ts",
    `import { hostMain } from "file:///mesh/host/cli.ts";
import { debian } from "file:///mesh/systems/debian/mod.ts";
import { dpkgPackageApplier } from "file:///mesh/systems/debian/package_dpkg.ts";
const system = { ...debian, appliers: { ...debian.appliers, package: dpkgPackageApplier } };
Deno.exit(await hostMain(Deno.args, { system }));
`,
  );
  let n = 0;
  const host = (args: string[]) =>
    m.exec(
      [
        "deno",
        "run",
        "-A",
        "--quiet",
        "--config",
        "/mesh/deno.json",
        "/root/pkg_entry.ts",
        ...args,
      ],
      { allowFailure: true, env: { PATH: LAB_PATH } },
    );
  return {
    small: "hello",
    preinstalled: "netbase",
    missing: "mesh-no-such-package",
    missingSays: /Unable to locate package mesh-no-such-package/,
    scratch: "/root/scratch/after",
    installs: /^apt-get install /,
    uninstalls: /^(apt-get (remove|purge|autoremove)|dpkg (-r|-P|--remove|--purge))\b/,
    async apply(resources, options = {}) {
      const file = `/root/declaration-${++n}.json`;
      await labWrite(m, file, JSON.stringify({ version: 1, resources }));
      return parseResult(
        await host([
          "apply",
          file,
          "--json",
          "--state-dir",
          "/root/state",
          ...(options.dryRun ? ["--dry-run"] : []),
        ]),
      );
    },
    async owned() {
      const out = await host(["owned", "--json", "--state-dir", "/root/state"]);
      return JSON.parse(out.stdout) as Owned[];
    },
    async installed(name) {
      const file = DEBIAN_FILES[name];
      if (file === undefined) throw new Error(`no evidence file for ${name}`);
      return (await m.exec(["test", "-e", file], { allowFailure: true })).code === 0;
    },
    async removeByHand(name) {
      await m.exec(["/usr/bin/apt-get", "remove", "-y", "-q", name], { env: APT_ENV });
    },
    async exists(path) {
      return (await m.exec(["test", "-e", path], { allowFailure: true })).code === 0;
    },
    async calls() {
      const out = await m.exec(["sh", "-c", "cat /root/spy.log 2>/dev/null; : >/root/spy.log"]);
      return out.stdout.split("\n").filter(Boolean);
    },
  };
}

async function dpkgStatus(m: LabMachine, name: string): Promise<string> {
  const out = await m.exec(["dpkg-query", "-W", "-f", "${Status}", name], { allowFailure: true });
  return (out.stdout || out.stderr).trim();
}

Deno.test("package contract: dpkg and apt, for real in the systemd lab", async (t) => {
  const m = await bootLab("systemd");
  try {
    const s = await debianSubject(m);
    await contract(t, s);

    await t.step(
      "'unknown ok not-installed' (exit 0) is absent: installed, created",
      async () => {
        assertEquals(await dpkgStatus(m, "nano"), "unknown ok not-installed");
        const r = await s.apply([pkg("nano", "nano")]);
        assertEquals([r.outcome, changeOf(r, "nano")], ["applied", "created"], show(r));
        assert(await s.installed("nano"));
      },
    );

    await t.step("'deinstall ok config-files' is absent: installed again, created", async () => {
      await s.removeByHand("nano");
      assertEquals(await dpkgStatus(m, "nano"), "deinstall ok config-files");
      const r = await s.apply([pkg("nano", "nano")]);
      assertEquals([r.outcome, changeOf(r, "nano")], ["applied", "created"], show(r));
      assert(await s.installed("nano"));
      assertEquals(await dpkgStatus(m, "nano"), "install ok installed");
    });

    await t.step("'install ok unpacked' (interrupted) is broken: repaired, updated", async () => {
      await m.exec(["sh", "-c", "cd /tmp && apt-get download hello"], { env: APT_ENV });
      await s.removeByHand("hello");
      await m.exec(["sh", "-c", "dpkg --unpack /tmp/hello_*.deb"]);
      assertEquals(await dpkgStatus(m, "hello"), "install ok unpacked");
      const dry = await s.apply([pkg("hello", "hello")], { dryRun: true });
      assertEquals(changeOf(dry, "hello"), "updated", show(dry));
      const r = await s.apply([pkg("hello", "hello")]);
      assertEquals([r.outcome, changeOf(r, "hello")], ["applied", "updated"], show(r));
      assertEquals(await dpkgStatus(m, "hello"), "install ok installed");
      assertEquals((await m.exec(["hello"])).stdout.trim(), "Hello, world!");
    });

    await t.step(
      "lists without the packages: apt-get update runs once per apply, not per package",
      async () => {
        await m.exec(["sh", "-c", "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin"]);
        await s.calls();
        const r = await s.apply([
          pkg("whois", "whois"),
          pkg("ed", "ed"),
          pkg("missing", "mesh-no-such-package"),
        ]);
        assertEquals(
          [r.outcome, r.applied, changeOf(r, "whois"), changeOf(r, "ed")],
          ["failed", 2, "created", "created"],
          show(r),
        );
        assertStringIncludes(
          r.problems[0]!.message,
          "Unable to locate package mesh-no-such-package",
        );
        assertStringIncludes(
          r.problems[0]!.message,
          "apt-get update already ran during this apply",
        );
        const updates = (await s.calls()).filter((c) => c.startsWith("apt-get update"));
        assertEquals(updates.length, 1, `apt-get update ran ${updates.length} times`);
        assert(await s.installed("whois") && await s.installed("ed"));
      },
    );

    await t.step(
      "a name apt would read as a regular expression installs nothing",
      async () => {
        const count = async () =>
          (await m.exec(["dpkg-query", "-W", "-f", "${Package} ${Status}\n"])).stdout
            .split("\n").filter((l) => l.endsWith(" installed")).length;
        const before = await count();
        await s.calls();
        // "hell." matches hello, shell-fm, ... as a regex: apt-get install would take them all.
        const r = await s.apply([pkg("regex", "hell.")]);
        assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
        assertStringIncludes(r.problems[0]!.message, "Unable to locate package hell.");
        assertEquals(await count(), before, "packages were installed");
        const calls = await s.calls();
        assertEquals(calls.filter((c) => c.startsWith("apt-get install")), [], calls.join("; "));
      },
    );

    await t.step("a status file dpkg cannot parse fails the apply; not absent", async () => {
      await m.exec(["cp", "-p", "/var/lib/dpkg/status", "/root/status.saved"]);
      try {
        await m.exec(["sh", "-c", "echo 'mesh garbage' >>/var/lib/dpkg/status"]);
        const r = await s.apply([pkg("hello", "hello")]);
        assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
        assertStringIncludes(r.problems[0]!.message, "Cannot read dpkg's status");
        assertStringIncludes(r.problems[0]!.message, "parsing file '/var/lib/dpkg/status'");
      } finally {
        await m.exec(["cp", "-p", "/root/status.saved", "/var/lib/dpkg/status"]);
      }
    });
  } finally {
    await m.destroy();
  }
});

Deno.test("dpkg: every state of dpkg(1) is mapped by name, read by the real dpkg-query", async () => {
  // A status file written here, read by this machine's own dpkg-query (DPKG_ADMINDIR).
  const dir = await Deno.makeTempDir({ prefix: "mesh-dpkg-" });
  const saved = Deno.env.get("DPKG_ADMINDIR");
  try {
    await Deno.mkdir(`${dir}/info`);
    await Deno.mkdir(`${dir}/updates`);
    await Deno.writeTextFile(`${dir}/available`, "");
    const stanza = (name: string, status: string, extra = "") =>
      `Package: ${name}\nStatus: ${status}\nPriority: optional\nSection: misc\n` +
      `Maintainer: mesh <mesh@example.org>\nArchitecture: all\nVersion: 1.0\n${extra}` +
      `Description: mesh test\n\n`;
    const cases: [string, string, string, boolean, boolean][] = [
      // name, status, extra fields, present, broken
      ["p-installed", "install ok installed", "", true, false],
      ["p-hold", "hold ok installed", "", true, false],
      ["p-tpend", "install ok triggers-pending", "Triggers-Pending: mesh-trigger\n", true, false],
      ["p-tawait", "install ok triggers-awaited", "Triggers-Awaited: p-tpend\n", true, false],
      ["p-notinst", "unknown ok not-installed", "", false, false],
      ["p-conf", "deinstall ok config-files", "", false, false],
      ["p-half", "install reinstreq half-installed", "", false, true],
      ["p-unpacked", "install ok unpacked", "", false, true],
      ["p-halfconf", "install ok half-configured", "", false, true],
    ];
    await Deno.writeTextFile(
      `${dir}/status`,
      cases.map(([name, status, extra]) => stanza(name, status, extra)).join(""),
    );
    Deno.env.set("DPKG_ADMINDIR", dir);
    for (const [name, status, , present, broken] of cases) {
      const seen = await queryDpkg(name);
      assertEquals([seen.present, seen.broken], [present, broken], `${status}: ${seen.reason}`);
      assertStringIncludes(seen.reason, status);
    }
    const none = await queryDpkg("p-none");
    assertEquals([none.present, none.broken], [false, false], none.reason);
    assertStringIncludes(none.reason, "no packages found matching p-none");
  } finally {
    if (saved === undefined) Deno.env.delete("DPKG_ADMINDIR");
    else Deno.env.set("DPKG_ADMINDIR", saved);
    await Deno.remove(dir, { recursive: true });
  }
});

// --- host-side entries (pacman, apk) --------------------------------------------------------

/**
 * Writes an entry running `hostMain` for `system` with `applier` as its package applier, and
 * an os-release saying the machine is that system.
 */
async function hostEntry(
  dir: string,
  system: "arch" | "alpine",
  applier: { module: string; name: string },
): Promise<(args: string[], env: Record<string, string>) => Promise<CommandOut>> {
  const url = (path: string) => new URL(`../../${path}`, import.meta.url).href;
  await Deno.writeTextFile(`${dir}/os-release`, `ID=${system}\nPRETTY_NAME="${system} (test)"\n`);
  await Deno.writeTextFile(
    `${dir}/entry.ts`,
    `import { hostMain } from "${url("host/cli.ts")}";
import { ${system} } from "${url(`systems/${system}/mod.ts`)}";
import { ${applier.name} } from "${url(`systems/${system}/${applier.module}`)}";
const system = { ...${system}, appliers: { ...${system}.appliers, package: ${applier.name} } };
Deno.exit(await hostMain(Deno.args, { system, osRelease: ${JSON.stringify(`${dir}/os-release`)} }));
`,
  );
  return async (args, env) => {
    return await denoRun([`${dir}/entry.ts`, ...args], { env, cwd: dir });
  };
}

interface CommandOut {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A Subject's apply and owned over a host-side entry, with `env` for every run. */
function hostSide(
  dir: string,
  host: (args: string[], env: Record<string, string>) => Promise<CommandOut>,
  env: () => Record<string, string>,
): Pick<Subject, "apply" | "owned" | "exists"> {
  let n = 0;
  return {
    async apply(resources, options = {}) {
      const file = `${dir}/declaration-${++n}.json`;
      await Deno.writeTextFile(file, JSON.stringify({ version: 1, resources }));
      return parseResult(
        await host([
          "apply",
          file,
          "--json",
          "--state-dir",
          `${dir}/state`,
          ...(options.dryRun ? ["--dry-run"] : []),
        ], env()),
      );
    },
    async owned() {
      const out = await host(["owned", "--json", "--state-dir", `${dir}/state`], env());
      return JSON.parse(out.stdout) as Owned[];
    },
    exists(path) {
      return Deno.stat(path).then(() => true, () => false);
    },
  };
}

// --- pacman, for real with a private configuration ------------------------------------------

/** Installs Debian's pacman when this machine lacks it (its own database stays empty). */
async function ensurePacman(): Promise<void> {
  const has = await run(["sh", "-c", "command -v pacman"], { allowFailure: true });
  if (has.code === 0) return;
  await run(["apt-get", "install", "-y", "-q", "pacman-package-manager"], {
    env: APT_ENV,
    timeoutMs: 10 * 60_000,
  });
}

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Builds a pacman package (a tar.gz holding `.PKGINFO` and one file) and its entry of a sync
 * database, in the formats pacman reads: `.PKGINFO` as makepkg writes it, `desc` as repo-add
 * does (Debian's repo-add needs makepkg's libraries, which Debian ships separately).
 */
async function pacmanPackage(
  dir: string,
  name: string,
  extra: { provides?: string; group?: string } = {},
): Promise<void> {
  const build = `${dir}/build/${name}`;
  await Deno.mkdir(`${build}/usr/share/mesh-test`, { recursive: true });
  await Deno.writeTextFile(`${build}/usr/share/mesh-test/${name}`, `${name}\n`);
  await Deno.writeTextFile(
    `${build}/.PKGINFO`,
    [
      `pkgname = ${name}`,
      `pkgbase = ${name}`,
      "pkgver = 1.0-1",
      `pkgdesc = mesh test package ${name}`,
      "builddate = 1700000000",
      "packager = mesh tests",
      `size = ${name.length + 1}`,
      "arch = any",
      ...(extra.provides ? [`provides = ${extra.provides}`] : []),
      ...(extra.group ? [`group = ${extra.group}`] : []),
    ].join("\n") + "\n",
  );
  const file = `${name}-1.0-1-any.pkg.tar.gz`;
  await run(["tar", "-czf", `${dir}/repo/${file}`, "-C", build, ".PKGINFO", "usr"]);
  const field = (key: string, value: string | number) => `%${key}%\n${value}\n\n`;
  await Deno.mkdir(`${dir}/dbsrc/${name}-1.0-1`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/dbsrc/${name}-1.0-1/desc`,
    field("FILENAME", file) + field("NAME", name) + field("BASE", name) +
      field("VERSION", "1.0-1") + field("DESC", `mesh test package ${name}`) +
      field("CSIZE", (await Deno.stat(`${dir}/repo/${file}`)).size) +
      field("ISIZE", name.length + 1) + field("SHA256SUM", await sha256(`${dir}/repo/${file}`)) +
      field("ARCH", "any") + field("BUILDDATE", 1700000000) + field("PACKAGER", "mesh tests") +
      (extra.provides ? field("PROVIDES", extra.provides) : "") +
      (extra.group ? field("GROUPS", extra.group) : ""),
  );
}

/**
 * A private pacman: root, database, cache, log and a `file://` repository under `dir`, and a
 * wrapper named `pacman` that logs each call and runs the real pacman with that configuration.
 * `repositories: false` configures none (the state of this machine's own pacman).
 */
async function privatePacman(dir: string, repositories: boolean): Promise<string> {
  for (const sub of ["root", "db", "cache", "hooks", "gnupg", "bin"]) {
    await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
  }
  await Deno.writeTextFile(
    `${dir}/pacman.conf`,
    `[options]
RootDir = ${dir}/root
DBPath = ${dir}/db/
CacheDir = ${dir}/cache/
LogFile = ${dir}/pacman.log
GPGDir = ${dir}/gnupg/
HookDir = ${dir}/hooks/
Architecture = auto
SigLevel = Never
${repositories ? `\n[mesh]\nSigLevel = Never\nServer = file://${dir}/repo\n` : ""}`,
  );
  await Deno.writeTextFile(
    `${dir}/bin/pacman`,
    `#!/bin/sh\necho "pacman $*" >>"${dir}/calls"\nexec /usr/bin/pacman --config "${dir}/pacman.conf" "$@"\n`,
  );
  await Deno.chmod(`${dir}/bin/pacman`, 0o755);
  return `${dir}/bin`;
}

Deno.test("package contract: pacman, for real with a private configuration", async (t) => {
  await ensurePacman();
  const dir = await Deno.makeTempDir({ prefix: "mesh-pacman-" });
  try {
    await Deno.mkdir(`${dir}/repo`);
    for (const name of ["meshhello", "meshpre", "meshother"]) await pacmanPackage(dir, name);
    await pacmanPackage(dir, "meshprov", { provides: "meshvirt" });
    await pacmanPackage(dir, "meshgrp1", { group: "meshgroup" });
    await run(["sh", "-c", `cd "$1/dbsrc" && tar -czf ../repo/mesh.db.tar.gz *`, "sh", dir]);
    await Deno.symlink("mesh.db.tar.gz", `${dir}/repo/mesh.db`);
    const bin = await privatePacman(dir, true);
    // By hand, bypassing the wrapper's log: sync the repository, install one package.
    const byHand = (...args: string[]) =>
      run(["/usr/bin/pacman", "--config", `${dir}/pacman.conf`, ...args], {
        env: { LC_ALL: "C" },
      });
    await byHand("-Sy");
    await byHand("-S", "--noconfirm", "meshpre");

    const host = await hostEntry(dir, "arch", {
      module: "package_pacman.ts",
      name: "pacmanPackageApplier",
    });
    let path = `${bin}:${Deno.env.get("PATH")}`;
    const s: Subject = {
      ...hostSide(dir, host, () => ({ PATH: path })),
      small: "meshhello",
      preinstalled: "meshpre",
      missing: "meshnosuch",
      // Refused by the plan, which asks pacman -Si: in a dry run as in the apply.
      missingSays:
        /Cannot install package "meshnosuch": unknown package, no repository pacman knows has it \(pacman -Si says "error: package 'meshnosuch' was not found"\)/,
      scratch: `${dir}/scratch/after`,
      installs: /^pacman -S\s/,
      uninstalls: /^pacman -R/,
      installed(name) {
        return Deno.stat(`${dir}/root/usr/share/mesh-test/${name}`).then(() => true, () => false);
      },
      async removeByHand(name) {
        await byHand("-R", "--noconfirm", name);
      },
      async calls() {
        const text = await Deno.readTextFile(`${dir}/calls`).catch(() => "");
        await Deno.writeTextFile(`${dir}/calls`, "");
        return text.split("\n").filter(Boolean);
      },
    };
    await contract(t, s);

    await t.step("the generic applier contract (tests/host/contract.ts)", async () => {
      const seen = await withEnv({ PATH: path }, () =>
        runContract({
          name: "package on pacman",
          system: arch,
          resource: { id: "pkg", type: "package", package: "meshother" },
          snapshot: async () =>
            `${await s.installed("meshother")} ${
              (await run(["/usr/bin/pacman", "--config", `${dir}/pacman.conf`, "-Q"], {
                allowFailure: true,
              })).stdout
            }`,
          drift: async () => void await byHand("-R", "--noconfirm", "meshother"),
          removeByHand: async () => void await byHand("-R", "--noconfirm", "meshother"),
        }, `${dir}/contract-state`));
      assertEquals(seen.length, 6, seen.join("\n"));
      assertStringIncludes(seen.join("\n"), "plan [pacman -S meshother]");
    });

    await t.step("a virtual name answered by its provider is not present: fails", async () => {
      await byHand("-S", "--noconfirm", "meshprov");
      const q = await run(["pacman", "-Q", "meshvirt"], { env: { PATH: path, LC_ALL: "C" } });
      assertEquals(q.stdout.trim(), "meshprov 1.0-1", "pacman -Q answers with the provider");
      // Refused by the plan: the dry run fails as the apply does.
      const dry = await s.apply([pkg("virt", "meshvirt")], { dryRun: true });
      assertEquals([dry.outcome, dry.applied], ["failed", 0], show(dry));
      assertStringIncludes(dry.problems[0]!.message, "meshprov provides meshvirt");
      const r = await s.apply([pkg("virt", "meshvirt")]);
      assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
      assertStringIncludes(r.problems[0]!.message, "meshprov provides meshvirt");
    });

    await t.step("a group name is refused before anything is installed", async () => {
      // The dry run says what the apply does: refused (it used to say `created`).
      const dry = await s.apply([pkg("group", "meshgroup")], { dryRun: true });
      assertEquals([dry.outcome, dry.applied], ["failed", 0], show(dry));
      assertStringIncludes(dry.problems[0]!.message, "is a package group (pacman -Sg: meshgrp1)");
      // A package no repository has is refused by the plan: the dry run fails as the apply.
      const unknown = await s.apply([pkg("nope", "meshnosuch")], { dryRun: true });
      assertEquals([unknown.outcome, unknown.applied], ["failed", 0], show(unknown));
      assertStringIncludes(unknown.problems[0]!.message, "unknown package");
      const known = await s.apply([pkg("other", "meshother")], { dryRun: true });
      assertStringIncludes(
        (known.changes.find((c) => c.id === "other") as { detail?: string }).detail ?? "",
        "install package meshother (pacman -S",
        show(known),
      );
      const r = await s.apply([pkg("group", "meshgroup")]);
      assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
      assertStringIncludes(r.problems[0]!.message, "is a package group (pacman -Sg: meshgrp1)");
      assert(!(await s.installed("meshgrp1")), "the group's member was installed");
    });

    await t.step("a database pacman cannot read is a failure, not absence", async () => {
      const version = `${dir}/db/local/ALPM_DB_VERSION`;
      const saved = await Deno.readTextFile(version);
      try {
        await Deno.writeTextFile(version, "8\n");
        const r = await s.apply([pkg("other", "meshother")]);
        assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
        assertStringIncludes(r.problems[0]!.message, "Cannot read pacman's database");
        assertStringIncludes(r.problems[0]!.message, "database is incorrect version");
        assert(!(await s.installed("meshother")));
      } finally {
        await Deno.writeTextFile(version, saved);
      }
    });

    await t.step(
      "no repository configured: absent, and the install fails with pacman's own cause",
      async () => {
        const bare = `${dir}/bare`;
        path = `${await privatePacman(bare, false)}:${Deno.env.get("PATH")}`;
        const r = await s.apply([pkg("other", "meshother")]);
        assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
        assertStringIncludes(
          r.problems[0]!.message,
          'Cannot install package "meshother": Command pacman -S --noconfirm --needed meshother',
        );
        assertStringIncludes(r.problems[0]!.message, "no usable package repositories configured");
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// --- apk, from recorded outputs --------------------------------------------------------------

/**
 * apk's outputs, recorded from apk-tools' documentation and source (alpinelinux/apk-tools), since
 * apk cannot run here. `@NAME@` is the name asked about (for a provider, the provider's name),
 * `@VERSION@` its version in the fake's archive.
 */
const APK_RECORDED = {
  /**
   * apk-info(8), `-e`: "For each installed package, print it's name"; src/app_info.c
   * `info_exists` prints `pkg->name->name` and a newline for the installed provider of the name
   * (the package itself, or a package providing it). Exit 0: no given package missing.
   */
  present: { stdout: "@NAME@\n", stderr: "", code: 0 },
  /**
   * Nothing printed for a package not installed (apk-info(8)), exit 0: the apk of the seed
   * history (docs/design.md rule 2: absence is empty output, exit 0 either way), and today's
   * apk for an argument `info_exists` skips (src/app_info.c: one that does not parse as a
   * dependency is `continue`d past without counting an error).
   */
  absentExit0: { stdout: "", stderr: "", code: 0 },
  /**
   * Nothing printed, exit 1: apk-info(8) today, "The exit status is the number of given
   * packages not installed".
   */
  absentExit1: { stdout: "", stderr: "", code: 1 },
  /**
   * src/commit.c: `print_change` ("(%i/%i) Installing %s (%s)") and the closing
   * "OK: %zu MiB in %d packages", both `apk_message` on stdout. Exit 0.
   */
  addOk: {
    stdout: "(1/1) Installing @NAME@ (@VERSION@)\nOK: 8 MiB in 15 packages\n",
    stderr: "",
    code: 0,
  },
  /**
   * src/commit.c `apk_solver_print_errors`: `apk_error("unable to select packages:")` on STDERR
   * (src/print.c: `apk_log_err` writes to stderr), then `analyze_name`'s "  %s (no such
   * package):" and "    required by: world[%s]" by printf on STDOUT. Exit 1 (one error).
   */
  addMissing: {
    stdout: "  @NAME@ (no such package):\n    required by: world[@NAME@]\n",
    stderr: "ERROR: unable to select packages:\n",
    code: 1,
  },
  /** Nothing to do (the name's provider is installed): src/commit.c prints only "OK: ...". */
  addNothing: { stdout: "OK: 8 MiB in 15 packages\n", stderr: "", code: 0 },
  /** src/commit.c `print_change` "Purging" (what `apk del` prints). */
  delOk: {
    stdout: "(1/1) Purging @NAME@ (@VERSION@)\nOK: 8 MiB in 14 packages\n",
    stderr: "",
    code: 0,
  },
  /**
   * src/apk.c: `apk_err(out, "Failed to open apk database: %s", apk_error_str(r))` on stderr, and
   * a negative result exits 250 (`if (r < 0) r = 250`).
   */
  openFailed: {
    stdout: "",
    stderr: "ERROR: Failed to open apk database: Permission denied\n",
    code: 250,
  },
};

/** The fake: state under $MESH_FAKE_APK, outputs replayed from files written from APK_RECORDED. */
const FAKE_APK = `#!/bin/sh
# A fake apk replaying outputs recorded from apk-tools (APK_RECORDED in tests/host/package_test.ts).
S="$MESH_FAKE_APK"
echo "apk $*" >>"$S/calls"
replay() { # case name version
  sed -e "s/@NAME@/$2/g" -e "s/@VERSION@/$3/g" "$S/out/$1.stdout"
  sed -e "s/@NAME@/$2/g" -e "s/@VERSION@/$3/g" "$S/out/$1.stderr" >&2
  exit "$(cat "$S/out/$1.code")"
}
provider() { # the installed package providing $1
  awk -v n="$1" '$1 == n { print $2 }' "$S/provides" | while read -r p; do
    grep -qxF -- "$p" "$S/installed" && echo "$p"
  done | head -n 1
}
version() { awk -v n="$1" '$1 == n { print $2 }' "$S/archive"; }
if [ "$1" = info ] && [ "$2" = -e ] && [ $# -eq 3 ]; then
  [ -e "$S/unreadable" ] && replay openFailed "$3" ""
  grep -qxF -- "$3" "$S/installed" && replay present "$3" ""
  p=$(provider "$3")
  [ -n "$p" ] && replay present "$p" ""
  replay "$(cat "$S/absent")" "$3" ""
fi
if [ "$1" = add ] && [ $# -eq 2 ]; then
  [ -n "$(provider "$2")" ] && replay addNothing "$2" ""
  v=$(version "$2")
  [ -z "$v" ] && replay addMissing "$2" ""
  echo "$2" >>"$S/installed"
  replay addOk "$2" "$v"
fi
if [ "$1" = del ] && [ $# -eq 2 ] && grep -qxF -- "$2" "$S/installed"; then
  grep -vxF -- "$2" "$S/installed" >"$S/installed.new"; mv "$S/installed.new" "$S/installed"
  replay delOk "$2" "$(version "$2")"
fi
echo "fake apk: nothing recorded for: apk $*" >&2
exit 99
`;

Deno.test("package contract: apk, from recorded outputs (a fake apk first on PATH)", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-apk-" });
  try {
    const state = `${dir}/fake`;
    await Deno.mkdir(`${state}/out`, { recursive: true });
    for (const [name, out] of Object.entries(APK_RECORDED)) {
      await Deno.writeTextFile(`${state}/out/${name}.stdout`, out.stdout);
      await Deno.writeTextFile(`${state}/out/${name}.stderr`, out.stderr);
      await Deno.writeTextFile(`${state}/out/${name}.code`, `${out.code}\n`);
    }
    await Deno.writeTextFile(`${state}/installed`, "busybox\n");
    await Deno.writeTextFile(
      `${state}/archive`,
      "hello 2.12.1-r0\nbusybox 1.36.1-r29\nmeshprov 1.0-r0\nmesh-other 1.0-r0\n",
    );
    await Deno.writeTextFile(`${state}/provides`, "meshvirt meshprov\n");
    // The dangerous case first: absence is empty output AND exit 0.
    await Deno.writeTextFile(`${state}/absent`, "absentExit0\n");
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(`${dir}/bin/apk`, FAKE_APK);
    await Deno.chmod(`${dir}/bin/apk`, 0o755);
    const host = await hostEntry(dir, "alpine", {
      module: "package_apk.ts",
      name: "apkPackageApplier",
    });
    const env = () => ({ PATH: `${dir}/bin:${Deno.env.get("PATH")}`, MESH_FAKE_APK: state });
    const installedNow = async () =>
      (await Deno.readTextFile(`${state}/installed`)).split("\n").filter(Boolean);
    const s: Subject = {
      ...hostSide(dir, host, env),
      small: "hello",
      preinstalled: "busybox",
      missing: "mesh-no-such-package",
      // The package's name is on apk's STDOUT, after the ERROR line on its stderr.
      missingSays:
        /ERROR: unable to select packages:\s+mesh-no-such-package \(no such package\):\s+required by: world\[mesh-no-such-package\]/,
      scratch: `${dir}/scratch/after`,
      installs: /^apk add /,
      uninstalls: /^apk del /,
      async installed(name) {
        return (await installedNow()).includes(name);
      },
      async removeByHand(name) {
        await Deno.writeTextFile(
          `${state}/installed`,
          (await installedNow()).filter((n) => n !== name).map((n) => `${n}\n`).join(""),
        );
      },
      async calls() {
        const text = await Deno.readTextFile(`${state}/calls`).catch(() => "");
        await Deno.writeTextFile(`${state}/calls`, "");
        return text.split("\n").filter(Boolean);
      },
    };
    await contract(t, s);

    await t.step("the generic applier contract (tests/host/contract.ts)", async () => {
      const seen = await withEnv(env(), () =>
        runContract({
          name: "package on apk",
          system: alpine,
          resource: { id: "pkg", type: "package", package: "mesh-other" },
          snapshot: () => Deno.readTextFile(`${state}/installed`),
          drift: () => s.removeByHand("mesh-other"),
          removeByHand: () => s.removeByHand("mesh-other"),
        }, `${dir}/contract-state`));
      assertEquals(seen.length, 6, seen.join("\n"));
      assertStringIncludes(seen.join("\n"), "plan [apk add mesh-other]");
    });

    await t.step("absence as apk-info(8) has it today (exit 1) is absent too", async () => {
      await Deno.writeTextFile(`${state}/absent`, "absentExit1\n");
      const r = await s.apply([pkg("other", "mesh-other")]);
      assertEquals([r.outcome, changeOf(r, "other")], ["applied", "created"], show(r));
      assert(await s.installed("mesh-other"));
    });

    await t.step("a provider printed for a virtual name is not presence: fails", async () => {
      await Deno.writeTextFile(
        `${state}/installed`,
        [...await installedNow(), "meshprov"].map((n) => `${n}\n`).join(""),
      );
      const r = await s.apply([pkg("virt", "meshvirt")]);
      assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
      assertStringIncludes(r.problems[0]!.message, "meshprov provides meshvirt");
    });

    await t.step("an apk ERROR on stderr is a failure, not absence", async () => {
      await Deno.writeTextFile(`${state}/unreadable`, "");
      try {
        const r = await s.apply([pkg("small", "hello")]);
        assertEquals([r.outcome, r.applied], ["failed", 0], show(r));
        assertStringIncludes(r.problems[0]!.message, "Cannot read apk's database");
        assertStringIncludes(r.problems[0]!.message, "Failed to open apk database");
      } finally {
        await Deno.remove(`${state}/unreadable`);
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
