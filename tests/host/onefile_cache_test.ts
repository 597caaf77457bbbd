/**
 * The one-file form's runtime cache stays tidy (scripts/onefile.ts, `prune` in the header): when a
 * start unpacks a version the cache did not have, what earlier versions of the same program
 * unpacked is removed, except a version a process still runs (the programs import their modules
 * lazily: removing them under a running process would break it), one a start is about to run
 * (its entry's lock is held), and the host's known-good version (MESH_STATE_DIR/known-good,
 * MESH_LIB/mesh-host-VERSION); runtimes no program left names go too, and what a start that died
 * mid-unpack left behind.
 *
 * Three versions of one small program, each a real one-file build (buildOneFile with the runtime
 * `deno task hosts` embeds, as a host is built), run as processes on this VM.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { NATIVE_ARCH } from "../support/onefile.ts";
import {
  buildCacheDir,
  buildOneFile,
  fetchRuntime,
  type OneFileArch,
} from "../../scripts/onefile.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const NAME = `mesh-cachetest-${NATIVE_ARCH}`;

/** Builds version `version` of the test program as a one-file executable in `dir`. */
async function buildVersion(dir: string, version: number): Promise<string> {
  const src = `${dir}/src-${version}`;
  await Deno.mkdir(src, { recursive: true });
  // The part is imported only when the program has waited: a file of its own in the bundle,
  // read from the cache long after the start, as a host's command modules are.
  await Deno.writeTextFile(
    `${src}/part.ts`,
    `export const part = (v: string): string => \`\${v}: the lazily imported part loaded\`;\n`,
  );
  await Deno.writeTextFile(
    `${src}/main.ts`,
    `const VERSION = "v${version}";
const [mode, go] = Deno.args;
if (mode === "hold") {
  console.log(\`\${VERSION} holding\`);
  for (;;) {
    try {
      Deno.statSync(go!);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const { part } = await import("./part.ts");
  console.log(part(VERSION));
} else {
  console.log(\`\${VERSION} ran\`);
}
`,
  );
  const runtime = await fetchRuntime(NATIVE_ARCH as OneFileArch, buildCacheDir());
  const out = `${dir}/${NAME}-v${version}`;
  await buildOneFile(`${src}/main.ts`, out, {
    name: NAME,
    runtime,
    permissions: ["--allow-read"],
    config: `${ROOT}deno.json`,
  });
  return out;
}

/** The header's `program_sha` of a one-file executable. */
async function programSha(file: string): Promise<string> {
  const head = decode((await Deno.readFile(file)).subarray(0, 4096));
  const m = head.match(/^program_sha=([0-9a-f]{64})$/m);
  assert(m, `no program_sha in ${file}`);
  return m[1]!;
}

/**
 * The shells a header is run by: the file itself (`#!/bin/sh`, Debian's dash with GNU grep) and
 * busybox's sh, whose applets (its grep, as on Alpine) it then uses.
 */
const SHELLS: { name: string; argv: string[] }[] = [
  { name: "/bin/sh", argv: [] },
  { name: "busybox sh", argv: ["busybox", "sh"] },
];

/** `file` with `args`, run by `shell` (an empty argv: the file itself). */
function command(shell: string[], file: string, args: string[], env: Record<string, string>) {
  const [exe, ...pre] = shell.length > 0 ? shell : [file];
  return new Deno.Command(exe!, {
    args: [...pre, ...(shell.length > 0 ? [file] : []), ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  });
}

async function runFile(
  shell: string[],
  file: string,
  args: string[],
  env: Record<string, string>,
) {
  const out = await command(shell, file, args, env).output();
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const entries = (dir: string) =>
  [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).map((e) => e.name).sort();

Deno.test("the one-file cache keeps the running and known-good versions and removes older ones", async (t) => {
  await Deno.mkdir(`${ROOT}dist/test`, { recursive: true });
  const built = await Deno.makeTempDir({ dir: `${ROOT}dist/test`, prefix: "cache-" });
  try {
    const files = await Promise.all([1, 2, 3].map((v) => buildVersion(built, v)));
    const shas = await Promise.all(files.map(programSha));
    assert(new Set(shas).size === 3, "the three versions are one program");
    for (const shell of SHELLS) {
      await t.step(`run by ${shell.name}`, async () => {
        const dir = await Deno.makeTempDir({ dir: built, prefix: "run-" });
        await prune(shell.argv, dir, files, shas);
      });
    }
  } finally {
    await Deno.remove(built, { recursive: true });
  }
});

/** The three versions `files` (program shas `shas`) started by `shell` on a cache in `dir`. */
async function prune(
  shell: string[],
  dir: string,
  [v1, v2, v3]: string[],
  [p1, p2, p3]: string[],
): Promise<void> {
  const cache = `${dir}/cache`;
  const state = `${dir}/state`;
  const lib = `${dir}/lib`;
  await Deno.mkdir(state);
  await Deno.mkdir(lib);
  const env = { MESH_RUNTIME_CACHE: cache, MESH_STATE_DIR: state, MESH_LIB: lib };
  let holder: Deno.ChildProcess | undefined;
  let locker: Deno.ChildProcess | undefined;
  const readers: ReadableStreamDefaultReader<string>[] = [];
  try {
    // v1 starts and keeps running; its parts not yet imported.
    holder = command(shell, v1!, ["hold", `${dir}/go`], env).spawn();
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    readers.push(reader);
    const first = await reader.read();
    assertEquals(first.value?.trim(), "v1 holding");
    const [runtime] = entries(`${cache}/runtime`);
    assertEquals(Deno.readTextFileSync(`${cache}/program/${p1}.name`), `${NAME} ${runtime}\n`);

    // v2 unpacks: v1 is still running, so it stays.
    const r2 = await runFile(shell, v2!, [], env);
    assertEquals([r2.code, r2.stdout.trim()], [0, "v2 ran"], r2.stderr);
    assertEquals(entries(`${cache}/program`), [p1, p2].sort());
    const parts = [...Deno.readDirSync(`${cache}/program/${p1}`)].filter((e) =>
      e.name.endsWith(".js")
    );
    assert(
      parts.length >= 2,
      `v1's lazily imported part is not a file of its own: ${parts.map((e) => e.name)}`,
    );

    // The running v1 imports its lazily loaded part, from the cache, after v2's prune.
    await Deno.writeTextFile(`${dir}/go`, "");
    const rest = (await reader.read()).value ?? "";
    const status = await holder.status;
    assertStringIncludes(rest, "v1: the lazily imported part loaded");
    assertEquals(status.code, 0);

    // The host records v2 as known-good (a version, its file beside the others in MESH_LIB).
    await Deno.copyFile(v2!, `${lib}/mesh-host-0.2.0`);
    await Deno.writeTextFile(`${state}/known-good`, "0.2.0\n");
    // Beside them: the entry of another program (its own to prune, with its runtime), a runtime
    // nothing names, one a start holds the lock of (about to run it), and what a start that
    // died mid-unpack left.
    const other = "a".repeat(64);
    const otherRuntime = "b".repeat(64);
    const stale = "c".repeat(64);
    const locked = "d".repeat(64);
    await Deno.mkdir(`${cache}/program/${other}`);
    await Deno.writeTextFile(
      `${cache}/program/${other}.name`,
      `mesh-other-x86_64 ${otherRuntime}\n`,
    );
    for (const r of [otherRuntime, stale, locked]) {
      await Deno.mkdir(`${cache}/runtime/${r}`);
      await Deno.writeTextFile(`${cache}/runtime/${r}/deno`, "");
    }
    await Deno.writeTextFile(`${cache}/runtime/${locked}.lock`, "");
    locker = new Deno.Command("flock", {
      args: ["-s", `${cache}/runtime/${locked}.lock`, "sh", "-c", "echo locked; exec sleep 120"],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lockerOut = locker.stdout.pipeThrough(new TextDecoderStream()).getReader();
    readers.push(lockerOut);
    assertEquals((await lockerOut.read()).value?.trim(), "locked");
    const dead = await new Deno.Command("true").spawn();
    await dead.status;
    await Deno.mkdir(`${cache}/program/${p1}.tmp.${dead.pid}`);
    await Deno.writeTextFile(`${cache}/program/${p1}.tmp.${dead.pid}.tar`, "");

    // v3 unpacks: v1 (not running, not known-good) goes; v2 (known-good) and v3 stay.
    const r3 = await runFile(shell, v3!, [], env);
    assertEquals([r3.code, r3.stdout.trim()], [0, "v3 ran"], r3.stderr);
    assertEquals(entries(`${cache}/program`), [p2, p3, other].sort());
    assertEquals(entries(`${cache}/runtime`), [runtime!, otherRuntime, locked].sort());
    const left = [...Deno.readDirSync(`${cache}/program`)].map((e) => e.name).sort();
    assertEquals(
      left.filter((n) => n.startsWith(p1!)),
      [],
      `v1's entry, lock, name and dead unpack are gone: ${left}`,
    );
    assert(!left.some((n) => n.startsWith(".prune")), `the prune left its pattern: ${left}`);
    // v2, the known-good one, still runs whole.
    const again = await runFile(shell, v2!, [], env);
    assertEquals([again.code, again.stdout.trim()], [0, "v2 ran"], again.stderr);
  } finally {
    for (const child of [holder, locker]) {
      try {
        child?.kill("SIGKILL");
      } catch { /* exited */ }
    }
    for (const reader of readers) await reader.cancel().catch(() => {});
    for (const child of [holder, locker]) {
      if (child) {
        await child.stderr.cancel().catch(() => {});
        await child.status;
      }
    }
  }
}
