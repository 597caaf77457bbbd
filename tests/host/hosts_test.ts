/**
 * Per-system hosts, bundles and the executable's identity.
 */

import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { cli, ROOT } from "../support/mod.ts";
import { applyBytes, applyDeclaration } from "../../host/apply.ts";
import { EmptyBundleError, loadBundle, NoBundleError } from "../../host/bundle.ts";
import { executableIdentity, executablePath, replacedSince } from "../../host/identity.ts";
import { android } from "../../systems/android/mod.ts";
import { arch } from "../../systems/arch/mod.ts";
import { debian } from "../../systems/debian/mod.ts";
import { confirmSystem, parseOsRelease, WrongSystemError } from "../../host/system.ts";
import { type Applier, lazyApplier, UnsupportedError } from "../../host/applier.ts";
import { loadedAtStart } from "../support/module_graph.ts";
import { imagesNotHeld } from "../support/substrate_lock.ts";

const read = (system: string) => Deno.readTextFileSync(`${ROOT}bundles/substrate-${system}.lock`);

/**
 * The debian bundle with only its directory and file resources, their paths moved under `dir`:
 * the rest (the runtime package, containers, actions) would act on this VM itself. The whole
 * bundle is applied in the lab (tests/lab/fleet_test.ts).
 */
function debianLayoutUnder(dir: string): string {
  const bundle = JSON.parse(read("debian")) as {
    declaration: { resources: { type: string }[] };
  };
  bundle.declaration.resources = bundle.declaration.resources.filter((r) =>
    r.type === "directory" || r.type === "file"
  );
  return JSON.stringify(bundle).replaceAll('"/', `"${dir}/`);
}

Deno.test("a host built for no system refuses everything, naming the hosts that exist", async () => {
  for (const args of [["apply", "x.json"], ["inventory"], []]) {
    const r = await cli("host/main.ts", args);
    assertEquals(r.code, 2);
    for (const s of ["arch", "alpine", "android", "debian"]) {
      assertStringIncludes(r.stderr, `mesh-host-${s}`);
    }
  }
});

Deno.test("a host on the wrong machine refuses, naming both", async () => {
  const r = await cli("systems/arch/main.ts", ["owned"]);
  assertEquals(r.code, 2);
  assertStringIncludes(r.stderr, "(ID=debian), not arch: mesh-host-arch refuses to run here");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/os-release`,
      'NAME="Alpine Linux"\nID=alpine\nPRETTY_NAME="Alpine Linux v3.20"\n',
    );
    await assertRejects(
      () => confirmSystem(debian, { osRelease: `${dir}/os-release` }),
      WrongSystemError,
    );
    await confirmSystem(arch, { osRelease: `${dir}/os-release` }).then(
      () => assert(false, "arch must refuse an Alpine machine"),
      (e) => assertStringIncludes(String(e), "Alpine Linux v3.20 (ID=alpine), not arch"),
    );
    // Android has no os-release; it is recognised by /system/build.prop.
    await Deno.writeTextFile(`${dir}/build.prop`, "ro.build.version.release=14\n");
    await confirmSystem(android, {
      osRelease: `${dir}/none`,
      androidBuildProp: `${dir}/build.prop`,
    });
    await assertRejects(
      () =>
        confirmSystem(android, {
          osRelease: `${dir}/os-release`,
          androidBuildProp: `${dir}/build.prop`,
        }),
      WrongSystemError,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("os-release is read with its quoting", () => {
  assertEquals(
    parseOsRelease(
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n# c\nX=\'a \\"b\\"\'\n',
    ),
    { PRETTY_NAME: "Debian GNU/Linux 12 (bookworm)", ID: "debian", X: 'a "b"' },
  );
});

Deno.test("android refuses service, package and container by name, before anything is applied", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const declaration = {
      version: 1,
      resources: [
        { id: "d", type: "directory", path: `${dir}/d`, mode: "0755" },
        { id: "s", type: "service", unit: "x.service", state: "running" },
        { id: "p", type: "package", package: "curl" },
        { id: "c", type: "container", name: "c", image: `x@sha256:${"0".repeat(64)}` },
      ],
    };
    const r = await applyBytes(new TextEncoder().encode(JSON.stringify(declaration)), {
      system: android,
      stateDir: `${dir}/state`,
      version: "test",
      trusted: true,
    });
    assertEquals([r.outcome, r.applied], ["refused", 0]);
    assertEquals(r.problems.map((p) => p.id), ["s", "p", "c"]);
    for (const p of r.problems) {
      assertStringIncludes(p.message, "android refuses");
      // Naming what it does apply.
      assertStringIncludes(p.message, "(it applies directory, file, action)");
    }
    assertEquals(await Deno.stat(`${dir}/d`).then(() => true, () => false), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Each refused type's applier, never reached, fails loudly if it is, saying why.
  for (const [type, why] of Object.entries(android.refuses)) {
    const applier = android.appliers[type as keyof typeof android.appliers]!;
    const error = await assertRejects(
      () => applier.observe({} as never, {} as never),
      UnsupportedError,
    );
    assertStringIncludes(error.message, why!);
  }
});

Deno.test("no bundle and an empty bundle are different errors; android says why it cannot raise a mesh", async () => {
  const none = await assertRejects(() => loadBundle(undefined, undefined), NoBundleError);
  assertStringIncludes(none.message, "built for no system");
  for (const system of ["arch", "alpine"] as const) {
    const empty = await assertRejects(() => loadBundle(read(system), system), EmptyBundleError);
    assertStringIncludes(empty.message, "not yet known");
  }
  const a = await assertRejects(() => loadBundle(read("android"), "android"), EmptyBundleError);
  assertStringIncludes(a.message, "can join a mesh but cannot raise one");
  assert(!(a instanceof NoBundleError));
  await assertRejects(() => loadBundle(read("arch"), "debian"), Error);
});

Deno.test("what `bundle` validates is exactly what `reconcile` applies", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // The debian bundle's layout, with its paths moved under a temporary root so the test does
    // not touch /etc; the same text goes through both commands' path.
    const text = debianLayoutUnder(dir);
    const bundle = await loadBundle(text, "debian");
    const shown = await applyDeclaration(bundle.declaration, {
      system: debian,
      stateDir: `${dir}/state`,
      digest: bundle.digest,
      dryRun: true,
      version: "t",
    });
    const applied = await applyDeclaration(bundle.declaration, {
      system: debian,
      stateDir: `${dir}/state`,
      digest: bundle.digest,
      version: "t",
    });
    assertEquals(shown.declaration, applied.declaration);
    // The same changes; the dry run also says what each would be (its detail).
    assertEquals(
      shown.changes.map(({ id, type, change }) => ({ id, type, change })),
      applied.changes,
    );
    assert(shown.changes.every((c) => c.detail !== undefined), JSON.stringify(shown.changes));
    assertEquals([applied.outcome, applied.applied], [
      "applied",
      bundle.declaration.resources.length,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("`bundle` shows the carried bundle and what it would do, changing nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // The committed lock pins the images of the machine that made it (127.0.0.1:5000): which of
    // them this machine can have decides the answer, so ask first.
    const missing = await imagesNotHeld();
    const shown = await cli("systems/debian/main.ts", ["bundle", "--state-dir", `${dir}/state`]);
    assertStringIncludes(shown.stdout, "bundle substrate-debian");
    if (missing.length === 0) {
      // A dry run like every other: changes pending exit 4 (EXIT_PENDING), as `reconcile --dry-run`.
      assertEquals(shown.code, 4, shown.stdout + shown.stderr);
      assertStringIncludes(shown.stdout, "dry run: would have applied");
    } else {
      // Refused whole before anything, naming each image it cannot have, and nothing else.
      assertEquals(shown.code, 2, shown.stdout + shown.stderr);
      assertStringIncludes(shown.stdout, "source bundle: refused, none of its");
      for (const ref of missing) assertStringIncludes(shown.stdout, `Cannot have image ${ref}`);
      const problems = shown.stdout.split("\nproblems:\n")[1]?.split("\n").filter((l) => l !== "");
      assert(problems !== undefined && problems.length > 0, shown.stdout);
      for (const line of problems) assert(/^ {2}\[[a-z-]+\]: Cannot have image /.test(line), line);
    }
    assertEquals(
      await Deno.stat(`${dir}/state`).then(() => true, () => false),
      false,
      "bundle changes nothing",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the executable's identity tells an overwrite and a rename from the same file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/mesh-host`;
    await Deno.writeTextFile(path, "version 1");
    const start = executableIdentity(path);
    assertEquals(replacedSince(start), undefined);
    await Deno.writeTextFile(`${dir}/new`, "version 2");
    await Deno.rename(`${dir}/new`, path);
    assertStringIncludes(replacedSince(start)!, "was replaced");
    const second = executableIdentity(path);
    await new Promise((r) => setTimeout(r, 10));
    await Deno.writeTextFile(path, "version 3, longer");
    assertStringIncludes(replacedSince(second)!, "overwritten in place");
    await Deno.remove(path);
    assertStringIncludes(replacedSince(second)!, "was removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// Field case (issue 32): /usr/lib/mesh/mesh-host is a symlink, repointed with `ln -sfn` to a new
// version. A compiled host's Deno.execPath() is the symlink's target, which does not change; the
// path the launcher names (MESH_EXECUTABLE) is watched instead, following the symlink.
Deno.test("a compiled host watches the installed path it was started from, not the symlink's target", () => {
  const facts = {
    standalone: true,
    execPath: "/usr/lib/mesh/mesh-host-0.1.0",
    mainModule: "file:///ignored.ts",
  };
  assertEquals(
    executablePath({ ...facts, named: "/usr/lib/mesh/mesh-host" }),
    "/usr/lib/mesh/mesh-host",
  );
  assertEquals(executablePath({ ...facts, named: undefined }), "/usr/lib/mesh/mesh-host-0.1.0");
  assertEquals(executablePath({ ...facts, named: "relative/mesh-host" }), facts.execPath);
  assertEquals(
    executablePath({ ...facts, standalone: false, named: undefined }),
    "/ignored.ts",
  );
});

Deno.test("a symlink repointed to another version is a replaced executable", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/mesh-host-0.1.0`, "version 1");
    await Deno.writeTextFile(`${dir}/mesh-host-0.2.0`, "version 1");
    await Deno.symlink("mesh-host-0.1.0", `${dir}/mesh-host`);
    const start = executableIdentity(`${dir}/mesh-host`);
    assertEquals(replacedSince(start), undefined);
    const ln = await new Deno.Command("ln", {
      args: ["-sfn", "mesh-host-0.2.0", `${dir}/mesh-host`],
    }).output();
    assertEquals(ln.code, 0);
    assertStringIncludes(replacedSince(start)!, `"${dir}/mesh-host" was replaced`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reconcile --every stands aside (exit 0) when its executable is replaced", async () => {
  // A host entry of its own, so that replacing it does not touch the real ones.
  const entry = `${ROOT}host/_identity_probe_${crypto.randomUUID().slice(0, 8)}.ts`;
  const dir = await Deno.makeTempDir();
  const bundle = debianLayoutUnder(dir);
  await Deno.writeTextFile(`${dir}/bundle.lock`, bundle);
  const source =
    `import { debian } from "../systems/debian/mod.ts";\nimport { hostMain } from "./cli.ts";\n` +
    `Deno.exit(await hostMain(Deno.args, { system: debian, bundle: Deno.readTextFileSync(${
      JSON.stringify(`${dir}/bundle.lock`)
    }) }));\n`;
  await Deno.writeTextFile(entry, source);
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        entry,
        "reconcile",
        "--every",
        "200ms",
        "--state-dir",
        `${dir}/state`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const started = Date.now();
    while (!(await Deno.stat(`${dir}/state/known-good`).then(() => true, () => false))) {
      assert(Date.now() - started < 30_000, "the host never completed a reconcile");
      await new Promise((r) => setTimeout(r, 50));
    }
    await Deno.writeTextFile(`${entry}.new`, source + "// a new version\n");
    await Deno.rename(`${entry}.new`, entry);
    const out = await child.output();
    assertEquals(out.code, 0);
    assertStringIncludes(new TextDecoder().decode(out.stderr), "was replaced");
    assertStringIncludes(new TextDecoder().decode(out.stderr), "stand aside");
  } finally {
    await Deno.remove(entry).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reconcile refuses, saying why, on a host with an empty bundle or none", async () => {
  const dir = await Deno.makeTempDir();
  const entry = `${ROOT}host/_bundle_probe_${crypto.randomUUID().slice(0, 8)}.ts`;
  await Deno.writeTextFile(`${dir}/os-release`, 'ID=arch\nPRETTY_NAME="Arch Linux"\n');
  await Deno.writeTextFile(
    entry,
    `import { arch } from "../systems/arch/mod.ts";\nimport { debian } from "../systems/debian/mod.ts";\n` +
      `import { hostMain } from "./cli.ts";\n` +
      `const [which, ...args] = Deno.args;\n` +
      `Deno.exit(await hostMain(args, which === "arch"\n` +
      `  ? { system: arch, bundle: Deno.readTextFileSync(${
        JSON.stringify(`${ROOT}bundles/substrate-arch.lock`)
      }), ` +
      `osRelease: ${JSON.stringify(`${dir}/os-release`)} }\n` +
      `  : { system: debian }));\n`,
  );
  try {
    for (const command of ["reconcile", "bundle"]) {
      const empty = await cli(entry.slice(ROOT.length), [
        "arch",
        command,
        "--state-dir",
        `${dir}/state`,
      ]);
      assertEquals(empty.code, 2, empty.stderr);
      assertStringIncludes(empty.stderr, "The arch bundle is empty: Placeholder.");
      const none = await cli(entry.slice(ROOT.length), [
        "none",
        command,
        "--state-dir",
        `${dir}/state`,
      ]);
      assertEquals(none.code, 2, none.stderr);
      assertStringIncludes(none.stderr, "This host carries no bundle: no bundle exists for debian");
    }
    assertEquals(await Deno.stat(`${dir}/state`).then(() => true, () => false), false);
  } finally {
    await Deno.remove(entry).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("android's unreachable appliers throw unsupported rather than answer", async () => {
  const { UnsupportedError } = await import("../../host/applier.ts");
  for (const type of ["service", "package", "container"] as const) {
    const applier = android.appliers[type]!;
    // deno-lint-ignore no-explicit-any
    const anyApplier = applier as any;
    await assertRejects(() => anyApplier.observe({}, {}), UnsupportedError);
    await assertRejects(() => anyApplier.plan({}, {}, {}), UnsupportedError);
    await assertRejects(() => anyApplier.act({}, {}, {}), UnsupportedError);
    await assertRejects(() => anyApplier.planRemoval({}, {}), UnsupportedError);
    await assertRejects(() => anyApplier.remove({}, {}, {}), UnsupportedError);
  }
});

Deno.test("deno task hosts: a runtime that does not run is refused and removed; bad arguments are refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const build = (args: string[], env: Record<string, string> = {}) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", `${ROOT}scripts/build_hosts.ts`, ...args],
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
    const native = Deno.build.arch;
    const fake = await build([
      "--system",
      "debian",
      "--arch",
      native,
      "--out",
      dir,
      "--skip-image-check",
    ], {
      DENORT_BIN: "/bin/true",
    });
    assertEquals(fake.code, 1);
    assertStringIncludes(new TextDecoder().decode(fake.stderr), "was written but does not run");
    assertEquals(
      await Deno.stat(`${dir}/mesh-host-debian-${native}`).then(() => true, () => false),
      false,
    );
    for (
      const [args, says] of [
        [["--system", "solaris"], "--system solaris is not a system"],
        [["--arch", "mips"], "--arch mips is not an architecture"],
        [["--out", "dist"], "--out must be an absolute path"],
        [["--bogus"], "bogus"],
      ] as const
    ) {
      const r = await build([...args]);
      assertEquals(r.code, 2, args.join(" "));
      assertStringIncludes(new TextDecoder().decode(r.stderr), says);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a system loads its service, package, container and action appliers when first used, the service applier only its manager's", async () => {
  const lazy = [
    "resources/service/applier.ts",
    "resources/container/applier.ts",
    "resources/action/applier.ts",
    "systems/debian/package_dpkg.ts",
    "systems/alpine/package_apk.ts",
    "systems/arch/package_pacman.ts",
    "resources/service/systemd.ts",
    "resources/service/openrc.ts",
  ];
  for (
    const entry of [
      "systems/debian/mod.ts",
      "systems/alpine/mod.ts",
      "systems/arch/mod.ts",
      "systems/android/mod.ts",
    ]
  ) {
    const loaded = await loadedAtStart(entry);
    assert(loaded.some((s) => s.endsWith("/resources/file/applier.ts")), entry);
    assert(loaded.some((s) => s.endsWith("/resources/directory/applier.ts")), entry);
    assertEquals(loaded.filter((s) => lazy.some((l) => s.endsWith(`/${l}`))), [], entry);
  }
  const service = await loadedAtStart("resources/service/applier.ts");
  assertEquals(service.filter((s) => /\/resources\/service\/(systemd|openrc)\.ts$/.test(s)), []);
});

Deno.test("a lazy applier loads its module once, at the first call, and hands every call on", async () => {
  let loads = 0;
  const calls: string[] = [];
  const inner: Applier = {
    observe: (r) => Promise.resolve(calls.push(`observe ${r.id}`)),
    plan: (r) =>
      Promise.resolve({ result: { change: "unchanged", created: false }, steps: [r.id] }),
    act: (r) => Promise.resolve({ change: "updated", created: false, detail: r.id }),
    planRemoval: (e) =>
      Promise.resolve({ change: e.id === "gone" ? "removed" : "forgotten", act: e.id === "gone" }),
    remove: (e, plan) => {
      calls.push(`remove ${e.id}`);
      return Promise.resolve(plan.change);
    },
  };
  const applier = lazyApplier(() => {
    loads++;
    return Promise.resolve(inner);
  });
  assertEquals(loads, 0);
  const r = { id: "a", type: "action" as const, command: ["true"], verify: ["true"] };
  const context = {} as Parameters<Applier["observe"]>[1];
  assertEquals(await applier.observe(r, context), 1);
  const plan = await applier.plan(r, 1, context);
  assertEquals(plan.steps, ["a"]);
  assertEquals((await applier.act(r, plan, context)).detail, "a");
  const entry = { source: "local", id: "gone", type: "action", subject: "gone" } as const;
  const gone = { ...entry, created: true, applied: "2026-01-01T00:00:00Z" };
  const removal = await applier.planRemoval!(gone, context);
  assertEquals(removal, { change: "removed", act: true });
  assertEquals(await applier.remove!(gone, removal, context), "removed");
  assertEquals([loads, calls], [1, ["observe a", "remove gone"]]);
  // A module without a removal plan forgets what leaves: the thing is left as it is.
  const plain = lazyApplier(() => Promise.resolve({ ...inner, planRemoval: undefined }));
  assertEquals(await plain.planRemoval!(gone, context), { change: "forgotten", act: false });
  const failing = lazyApplier(() => Promise.reject(new Error("Cannot load the applier")));
  const error = await assertRejects(() => failing.observe(r, context), Error);
  assertEquals(error.message, "Cannot load the applier");
});
