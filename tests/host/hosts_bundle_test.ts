/**
 * `deno task hosts --system debian --bundle FILE`: a host carrying another bundle. The file is
 * validated as the host validates its carried bundle (host/bundle.ts `loadBundle`), refused with
 * exit 2 naming the problem otherwise; the build names the bundle and its digest; the checkout's
 * bundles/ and the entry points (systems/<system>/main.ts) are untouched and nothing is left in the temporary directory.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { NATIVE_ARCH } from "../support/onefile.ts";
import { pinnedBusybox, REGISTRY } from "../lab/mod.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** Runs scripts/build_hosts.ts with its temporary files under `tmp`. */
const build = (args: string[], tmp: string) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}scripts/build_hosts.ts`, ...args],
    env: { TMPDIR: tmp },
    stdout: "piped",
    stderr: "piped",
  }).output();

/** The checkout's bundles and host entry points, to show they are left as they were. */
async function checkout(): Promise<string> {
  const parts = [];
  for (
    const dir of ["bundles", "systems/debian", "systems/arch", "systems/alpine", "systems/android"]
  ) {
    for await (const e of Deno.readDir(`${ROOT}${dir}`)) {
      if (e.isFile) {
        parts.push(`${dir}/${e.name}:${await Deno.readTextFile(`${ROOT}${dir}/${e.name}`)}`);
      }
    }
  }
  return parts.sort().join("\n");
}

const listed = async (dir: string) => {
  const names = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
};

Deno.test("deno task hosts --bundle refuses what the host would refuse, with exit 2, writing nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tmp = `${dir}/tmp`;
    await Deno.mkdir(tmp);
    const out = `${dir}/out`;
    await Deno.writeTextFile(`${dir}/not-json.lock`, "{ not json");
    await Deno.writeTextFile(
      `${dir}/arch.lock`,
      JSON.stringify({
        bundle: 1,
        system: "arch",
        says: "for arch",
        declaration: { version: 1, resources: [{ id: "d", type: "directory", path: "/x" }] },
      }),
    );
    await Deno.writeTextFile(
      `${dir}/empty.lock`,
      JSON.stringify({
        bundle: 1,
        system: "debian",
        says: "nothing yet",
        declaration: { version: 1, resources: [] },
      }),
    );
    await Deno.writeTextFile(
      `${dir}/bad-resource.lock`,
      JSON.stringify({
        bundle: 1,
        system: "debian",
        says: "a directory without a path",
        declaration: { version: 1, resources: [{ id: "d", type: "directory" }] },
      }),
    );
    await Deno.writeTextFile(
      `${dir}/format.lock`,
      JSON.stringify({ bundle: 2, system: "debian", says: "x", declaration: {} }),
    );
    const before = await checkout();
    for (
      const [args, says] of [
        [["--bundle", `${dir}/not-json.lock`], "The debian bundle is not JSON"],
        [["--bundle", `${dir}/arch.lock`], "The bundle carried is for arch"],
        [["--bundle", `${dir}/empty.lock`], "The debian bundle is empty: nothing yet"],
        [["--bundle", `${dir}/bad-resource.lock`], "path"],
        [["--bundle", `${dir}/format.lock`], "this host reads bundle 1"],
        [["--bundle", `${dir}/missing.lock`], `Cannot read bundle "${dir}/missing.lock"`],
      ] as const
    ) {
      const r = await build(["--system", "debian", ...args, "--out", out], tmp);
      const err = decode(r.stderr);
      assertEquals(r.code, 2, `${args.join(" ")}: ${err}`);
      assertStringIncludes(err, says);
      assertStringIncludes(err, args[1]);
    }
    const r = await build(["--bundle", `${dir}/empty.lock`, "--out", out], tmp);
    assertEquals(r.code, 2);
    assertStringIncludes(decode(r.stderr), "--bundle needs exactly one --system");
    assertEquals(await Deno.stat(out).then(() => true, () => false), false, "out was created");
    assertEquals(await listed(tmp), [], "temporary files were left behind");
    assertEquals(await checkout(), before, "the checkout changed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task hosts --bundle builds the host carrying that bundle, names it and its digest, and leaves nothing behind", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tmp = `${dir}/tmp`;
    await Deno.mkdir(tmp);
    const out = `${dir}/out`;
    const declaration = {
      version: 1,
      resources: [
        { id: "carried-dir", type: "directory", path: `${dir}/carried`, mode: "0755" },
        {
          id: "carried-file",
          type: "file",
          path: `${dir}/carried/said`,
          mode: "0644",
          content: "carried, not committed\n",
        },
      ],
    };
    const lock = `${dir}/other.lock`;
    await Deno.writeTextFile(
      lock,
      JSON.stringify({ bundle: 1, system: "debian", says: "another bundle", declaration }),
    );
    const before = await checkout();
    const r = await build(
      ["--system", "debian", "--arch", NATIVE_ARCH, "--out", out, "--bundle", lock],
      tmp,
    );
    const said = decode(r.stdout);
    assertEquals(r.code, 0, decode(r.stderr));
    const digest = /digest (sha256:[0-9a-f]{64})/.exec(said)?.[1];
    assert(digest, said);
    assertStringIncludes(said, `carrying the bundle ${lock} (2 resources, digest ${digest})`);
    const manifest = JSON.parse(await Deno.readTextFile(`${out}/hosts.json`)) as {
      bundle?: { source: string; digest: string; resources: number };
    }[];
    assertEquals(manifest[0]?.bundle, { source: lock, digest, resources: 2 });

    // The host itself says it carries that bundle, and reconciles it.
    const host = `${out}/mesh-host-debian-${NATIVE_ARCH}`;
    const run = (args: string[]) =>
      new Deno.Command(host, {
        args,
        env: { MESH_RUNTIME_CACHE: `${dir}/cache` },
        stdout: "piped",
        stderr: "piped",
      }).output();
    const shown = await run(["bundle", "--state-dir", `${dir}/state`]);
    // Nothing applied yet: the bundle would change something, which a dry run says with 4.
    assertEquals(shown.code, 4, decode(shown.stderr));
    assertStringIncludes(
      decode(shown.stdout),
      `bundle substrate-debian (2 resources, ${digest})\nanother bundle`,
    );
    const applied = await run(["reconcile", "--json", "--state-dir", `${dir}/state`]);
    assertEquals(applied.code, 0, decode(applied.stdout) + decode(applied.stderr));
    // Applied: the bundle would change nothing now, and says so with 0.
    const again = await run(["bundle", "--state-dir", `${dir}/state`]);
    assertEquals(again.code, 0, decode(again.stdout) + decode(again.stderr));
    assertEquals(await Deno.readTextFile(`${dir}/carried/said`), "carried, not committed\n");

    assertEquals(await listed(tmp), [], "temporary files were left behind");
    assertEquals(await checkout(), before, "the checkout changed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task hosts refuses to embed a bundle pinning an image its registry lacks, naming deno task substrate; --skip-image-check builds anyway", async () => {
  // The lab registry, as `deno task substrate --registry 127.0.0.1:5000` pushes to it.
  const held = await pinnedBusybox();
  const missing = `${REGISTRY}/mesh-postgres@sha256:${"0".repeat(64)}`;
  const ran = `${REGISTRY}/mesh-control@sha256:${"1".repeat(64)}`;
  const dir = await Deno.makeTempDir();
  try {
    const tmp = `${dir}/tmp`;
    await Deno.mkdir(tmp);
    const out = `${dir}/out`;
    const lock = `${dir}/site.lock`;
    await Deno.writeTextFile(
      lock,
      JSON.stringify({
        bundle: 1,
        system: "debian",
        says: "pins one image the registry holds and two it lacks",
        declaration: {
          version: 1,
          resources: [
            { id: "held", type: "container", name: "meshhb-held", image: held },
            { id: "store", type: "container", name: "meshhb-store", image: missing },
            {
              id: "schema",
              type: "action",
              command: ["sh", "-c", `exec podman run --rm ${ran} migrate`],
              verify: ["true"],
            },
          ],
        },
      }),
    );
    const args = ["--system", "debian", "--arch", NATIVE_ARCH, "--out", out, "--bundle", lock];
    const r = await build(args, tmp);
    const said = decode(r.stderr);
    assertEquals(r.code, 2, said);
    assertStringIncludes(said, `Cannot embed the debian bundle ${lock}: 2 of its 3 images`);
    assertStringIncludes(said, `  ${missing}: the registry ${REGISTRY} does not hold it`);
    assertStringIncludes(said, `  ${ran}: the registry ${REGISTRY} does not hold it`);
    assert(!said.includes(`  ${held}:`), said);
    assertStringIncludes(said, `Run \`deno task substrate --registry ${REGISTRY} --lock ${lock}\``);
    assertStringIncludes(said, "--skip-image-check");
    assertEquals(await Deno.stat(out).then(() => true, () => false), false, "out was created");

    // Told otherwise, it goes on to build (here with a runtime that does not run: exit 1, past
    // the check, which would have exited 2).
    const skipped = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/build_hosts.ts`,
        ...args,
        "--skip-image-check",
      ],
      env: { TMPDIR: tmp, DENORT_BIN: "/bin/true" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(skipped.code, 1, decode(skipped.stderr));
    assertStringIncludes(decode(skipped.stderr), "was written but does not run");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
