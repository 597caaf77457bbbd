/**
 * The field case of an upgrade by symlink (issue 32, item 3): the installed `mesh-host` is a
 * symlink, repointed to a new version with `ln -sfn`. The launcher runs the real host (through
 * `deno run`, behind a one-line wrapper per version) and the host must notice the repoint as it
 * notices a copied file renamed onto its path: stand aside (exit 0), be started again as the new
 * version, and not be counted as a failure.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

const LAUNCHER = Deno.env.get("MESH_LAUNCHER") ?? `${ROOT}launcher.sh`;

/** The Debian bundle's directories and files, moved under `dir` (as tests/host/hosts_test.ts). */
function layoutUnder(dir: string): string {
  const bundle = JSON.parse(Deno.readTextFileSync(`${ROOT}bundles/substrate-debian.lock`)) as {
    declaration: { resources: { type: string }[] };
  };
  bundle.declaration.resources = bundle.declaration.resources.filter((r) =>
    r.type === "directory" || r.type === "file"
  );
  return JSON.stringify(bundle).replaceAll('"/', `"${dir}/`);
}

async function until(what: string, ok: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("launcher: a mesh-host symlink repointed to a new version makes the real host stand aside, uncounted", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-repoint-" });
  const lib = `${dir}/lib`;
  const state = `${dir}/state`;
  await Deno.mkdir(lib);
  await Deno.mkdir(`${dir}/root`);
  await Deno.writeTextFile(`${dir}/bundle.lock`, layoutUnder(`${dir}/root`));
  const entry = `${dir}/host.ts`;
  await Deno.writeTextFile(
    entry,
    `import { debian } from "${ROOT}systems/debian/mod.ts";\n` +
      `import { hostMain } from "${ROOT}host/cli.ts";\n` +
      `Deno.exit(await hostMain(Deno.args, { system: debian, bundle: Deno.readTextFileSync(${
        JSON.stringify(`${dir}/bundle.lock`)
      }) }));\n`,
  );
  // Each version is its own file: what the symlink names is what changes, never the entry.
  for (const v of ["0.1.0", "0.2.0"]) {
    await Deno.writeTextFile(
      `${lib}/mesh-host-${v}`,
      `#!/bin/sh\necho "start ${v}" >>"${dir}/log"\n` +
        `exec "${Deno.execPath()}" run -A --quiet --config "${ROOT}deno.json" "${entry}" "$@"\n`,
      { mode: 0o755 },
    );
  }
  await Deno.symlink("mesh-host-0.1.0", `${lib}/mesh-host`);
  const child = new Deno.Command("setsid", {
    args: ["sh", LAUNCHER],
    env: {
      MESH_LIB: lib,
      MESH_STATE_DIR: state,
      MESH_HOST_ARGS: `reconcile --every 200ms --state-dir ${state}`,
      MESH_RESTART_DELAY: "0",
    },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = () => Deno.readTextFile(`${dir}/log`).catch(() => "");
  try {
    await until(
      "the first clean reconcile",
      () => Deno.stat(`${state}/known-good`).then(() => true, () => false),
    );
    await new Deno.Command("ln", { args: ["-sfn", "mesh-host-0.2.0", `${lib}/mesh-host`] })
      .output();
    // A host that misses the repoint runs 0.1.0 forever: the wait times out and the test fails.
    await until(
      "the launcher starting 0.2.0",
      async () => (await log()).includes("start 0.2.0"),
      15_000,
    );
    await until(
      "0.2.0 completing a reconcile",
      async () => (await Deno.readTextFile(`${state}/known-good`).catch(() => "")).length > 0,
    );
  } finally {
    try {
      Deno.kill(child.pid, "SIGTERM");
    } catch { /* gone */ }
    const guard = setTimeout(() => {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch { /* gone */ }
    }, 10_000);
    const out = await child.output();
    clearTimeout(guard);
    const said = new TextDecoder().decode(out.stderr);
    const starts = (await log()).split("\n").filter(Boolean);
    await Deno.remove(dir, { recursive: true });
    assertEquals(starts.slice(0, 2), ["start 0.1.0", "start 0.2.0"], said);
    assertStringIncludes(said, "the host exited cleanly (standing aside)");
    assertStringIncludes(said, `the executable "${lib}/mesh-host" was replaced`);
    assert(!said.includes("failure 1 of"), `the repoint was counted as a failure:\n${said}`);
  }
});
