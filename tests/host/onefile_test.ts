/**
 * The one-file host (scripts/onefile.ts), run as a process on this VM: argv, exit codes and
 * signals are the program's own; it unpacks once into a content-addressed cache and verifies
 * what it unpacked; it refuses, naming why, when it cannot unpack.
 *
 * @tier whole (compiles the one-file host, 26 s of CPU in test:fast, for what only a build
 * changes; tests/host/onefile_cache_test.ts keeps the cache's rules in the fast tier)
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { NATIVE_ARCH, oneFileHost } from "../support/onefile.ts";
import { TEST_KEYS } from "../support/signing.ts";
import { deferredImports } from "../../scripts/onefile.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

async function runFile(
  path: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(path, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("a one-file host keeps argv and exit codes, and unpacks once into a content-addressed cache", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  const env = { MESH_RUNTIME_CACHE: `${dir}/cache` };
  try {
    const help = await runFile(file, ["--help"], env);
    assertEquals(help.code, 0, help.stderr);
    assertStringIncludes(help.stdout, "Usage: mesh-host-debian");
    // A short command keeps Deno's code cache (only the link goes without it: the next test).
    assert(
      [...Deno.readDirSync(`${dir}/cache/deno-dir`)].some((e) => e.name === "v8_code_cache_v2"),
      "--help wrote no code cache",
    );
    const [runtime] = [...Deno.readDirSync(`${dir}/cache/runtime`)].filter((e) => e.isDirectory)
      .map((e) => e.name);
    const [program] = [...Deno.readDirSync(`${dir}/cache/program`)].filter((e) => e.isDirectory)
      .map((e) => e.name);
    assert(runtime && /^[0-9a-f]{64}$/.test(runtime), `runtime dir ${runtime}`);
    assert(program && /^[0-9a-f]{64}$/.test(program), `program dir ${program}`);
    // The directories are named by the digest of what is in them.
    const sum = async (path: string) =>
      decode(
        (await new Deno.Command("sha256sum", { args: [path], stdout: "piped" }).output()).stdout,
      ).split(" ")[0];
    assertEquals(await sum(`${dir}/cache/runtime/${runtime}/deno`), runtime);
    // The program's directory is named by the digest of its SHA256SUMS, which lists every file
    // of the split bundle with its digest.
    const programDir = `${dir}/cache/program/${program}`;
    assertEquals(await sum(`${programDir}/SHA256SUMS`), program);
    const listed = Deno.readTextFileSync(`${programDir}/SHA256SUMS`).trimEnd().split("\n");
    const files = [...Deno.readDirSync(programDir)].map((e) => e.name).sort();
    assertEquals(listed.map((l) => l.slice(66)), files.filter((f) => f !== "SHA256SUMS"));
    assert(files.includes("main.js") && files.length > 3, `program files ${files}`);
    for (const line of listed) {
      assertEquals(await sum(`${programDir}/${line.slice(66)}`), line.slice(0, 64));
    }
    // What every start loads (main.js and what it imports statically) imports no Node built-in:
    // those come with the parts that use them (the link's AMQP client, a command's module),
    // imported when first used, as from the sources; Deno's `require` helper, which imported
    // node:module for every part, is lazy.
    const loaded = new Set<string>();
    const external = new Set<string>();
    const visit = (name: string) => {
      if (loaded.has(name)) return;
      loaded.add(name);
      const text = Deno.readTextFileSync(`${programDir}/${name}`);
      for (const m of text.matchAll(/^import\s+(?:[^"';]*?\s+from\s+)?"([^"]+)";/gms)) {
        if (m[1]!.startsWith("./")) visit(m[1]!.slice(2));
        else external.add(m[1]!);
      }
    };
    visit("main.js");
    assertEquals([...external], [], `main.js's static imports: ${[...loaded]}`);
    assert(loaded.size < files.length - 1, `every part is loaded at start: ${[...loaded]}`);
    // Nor is a part it does not load read at start: Deno reads every module a literal specifier
    // names, a dynamic import's too, so each part is imported by a specifier it reads only then.
    for (const name of files.filter((f) => f.endsWith(".js"))) {
      const literal = Deno.readTextFileSync(`${programDir}/${name}`).match(/\bimport\("\.\//g);
      assertEquals(literal, null, `${name} imports a part by a literal specifier`);
    }
    assert(
      Deno.readTextFileSync(`${programDir}/main.js`).includes('import(String("./'),
      "main.js imports no part when first used: the check above would see nothing",
    );
    assert(
      files.some((f) => Deno.readTextFileSync(`${programDir}/${f}`).includes('from "node:')),
      "no part imports a Node built-in: the check above would see nothing",
    );
    const mtime = Deno.statSync(`${dir}/cache/runtime/${runtime}/deno`).mtime?.getTime();

    // argv reaches the program word for word, and its exit codes are its own.
    const unknown = await runFile(file, ["no such", "command"], env);
    assertEquals(unknown.code, 2);
    assertStringIncludes(unknown.stderr, "unknown command 'no such'");
    await Deno.writeTextFile(`${dir}/bad decl.json`, '{"version": 1, "resources": [{"id": 1}]}');
    const refused = await runFile(file, [
      "apply",
      `${dir}/bad decl.json`,
      "--state-dir",
      `${dir}/state`,
    ], env);
    assertEquals(refused.code, 2, refused.stderr + refused.stdout);
    assertStringIncludes(refused.stdout + refused.stderr, "resources[0]");
    const owned = await runFile(file, ["owned", "--json", "--state-dir", `${dir}/state`], env);
    assertEquals(owned.code, 0, owned.stderr);

    // A program file changed in the cache is noticed and unpacked again, not run: the entry, or
    // a part it imports only later, or a part gone.
    const entrySum = await sum(`${programDir}/main.js`);
    await Deno.writeTextFile(`${programDir}/main.js`, "Deno.exit(42);\n");
    const again = await runFile(file, ["--help"], env);
    assertEquals(again.code, 0, again.stderr);
    assertEquals(await sum(`${programDir}/main.js`), entrySum);
    const part = files.find((f) => f !== "main.js" && f !== "SHA256SUMS")!;
    const partSum = await sum(`${programDir}/${part}`);
    await Deno.writeTextFile(`${programDir}/${part}`, "Deno.exit(42);\n");
    assertEquals((await runFile(file, ["--help"], env)).code, 0);
    assertEquals(await sum(`${programDir}/${part}`), partSum);
    await Deno.remove(`${programDir}/${part}`);
    assertEquals((await runFile(file, ["--help"], env)).code, 0);
    assertEquals(await sum(`${programDir}/${part}`), partSum);
    // The runtime was not unpacked a second time.
    assertEquals(Deno.statSync(`${dir}/cache/runtime/${runtime}/deno`).mtime?.getTime(), mtime);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Waits (up to 60 s) until process `pid` has exec'd the runtime and its command line is there:
 * `/proc/PID/exe` names the new file before the kernel has laid out the new arguments, so a
 * command line read at that moment is empty.
 */
async function runtimeOf(pid: number): Promise<{ exe: string; argv: string[] }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const exe = await Deno.readLink(`/proc/${pid}/exe`).catch(() => "");
    const argv = (await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => ""))
      .split("\0").filter((a) => a !== "");
    if (exe.endsWith("/deno") && argv.some((a) => a.endsWith("/main.js"))) return { exe, argv };
    assert(
      Date.now() < deadline,
      `pid ${pid} never became the runtime (${exe}: ${argv.join(" ")})`,
    );
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("the process a caller starts is the program itself: signals reach it", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  try {
    // The link retries an unreachable broker until it is stopped; SIGTERM stops it cleanly (0).
    const child = new Deno.Command(file, {
      args: [
        "link",
        "--control-key",
        TEST_KEYS.controlKey,
        "--broker",
        "amqp://n:p@127.0.0.1:1/%2F",
        "--node",
        "onefile-probe",
        "--state-dir",
        `${dir}/state`,
      ],
      env: { MESH_RUNTIME_CACHE: `${dir}/cache` },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const { exe, argv } = await runtimeOf(child.pid);
    assert(exe.startsWith(`${dir}/cache/runtime/`), `pid ${child.pid} runs ${exe}`);
    // The link, which runs for days, starts without Deno's code cache and with V8's gc exposed,
    // to collect after each apply (HOST_COMMAND_FLAGS of scripts/host_flags.ts): the flags are on
    // the runtime's command line, and the link writes no code cache into the cache's DENO_DIR (a
    // short command does: the first test).
    for (const flag of ["--no-code-cache", "--v8-flags=--expose-gc"]) {
      assert(argv.includes(flag), `the link runs as ${argv.join(" ")}`);
      assert(
        argv.indexOf(flag) < argv.findIndex((a) => a.endsWith("/main.js")),
        `${flag} is the runtime's, not the program's: ${argv.join(" ")}`,
      );
    }
    // Wait until the program itself is up (it says so on stderr), then stop it.
    const reader = child.stderr.getReader();
    let said = "";
    while (!said.includes("retrying")) {
      const { value, done } = await reader.read();
      if (done) break;
      said += decode(value);
    }
    child.kill("SIGTERM");
    reader.releaseLock();
    const status = await child.status;
    assertEquals([status.code, status.signal], [0, null], said);
    await child.stdout.cancel();
    await child.stderr.cancel();
    assertEquals(
      [...Deno.readDirSync(`${dir}/cache/deno-dir`)].filter((e) =>
        e.name.startsWith("v8_code_cache")
      ),
      [],
      "the link wrote Deno's code cache",
    );

    // A signal the program does not handle ends it, and the caller sees that signal.
    // The command is the first argument that is not an option, as the program reads it.
    const killed = new Deno.Command(file, {
      args: [
        "--verbose",
        "link",
        "--control-key",
        TEST_KEYS.controlKey,
        "--broker",
        "amqp://n:p@127.0.0.1:1/%2F",
        "--node",
        "onefile-probe",
        // Never this machine's own state directory.
        "--state-dir",
        `${dir}/killed-state`,
      ],
      env: { MESH_RUNTIME_CACHE: `${dir}/cache` },
      stdout: "null",
      stderr: "null",
    }).spawn();
    const verbose = (await runtimeOf(killed.pid)).argv;
    assert(verbose.includes("--no-code-cache"), `--verbose link runs as ${verbose.join(" ")}`);
    await new Promise((r) => setTimeout(r, 300));
    killed.kill("SIGKILL");
    const k = await killed.status;
    assertEquals(k.signal, "SIGKILL");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a one-file host that cannot unpack refuses with exit 3, naming why, and runs nothing", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  try {
    // No writable cache.
    await Deno.writeTextFile(`${dir}/not-a-dir`, "");
    const blocked = await runFile(file, ["--help"], {
      MESH_RUNTIME_CACHE: `${dir}/not-a-dir/cache`,
    });
    assertEquals(blocked.code, 3, blocked.stderr);
    assertEquals(blocked.stdout, "");
    assertStringIncludes(blocked.stderr, `cannot create the cache directory "${dir}/not-a-dir`);
    assertStringIncludes(blocked.stderr, "MESH_RUNTIME_CACHE");
    const relative = await runFile(file, ["--help"], { MESH_RUNTIME_CACHE: "cache" });
    assertEquals(relative.code, 3);
    assertStringIncludes(relative.stderr, "must be an absolute path");

    // A truncated file: the program segment is cut short. Refused before anything is unpacked.
    const bytes = await Deno.readFile(file);
    await Deno.writeFile(`${dir}/truncated`, bytes.subarray(0, bytes.length - 1000), {
      mode: 0o755,
    });
    const truncated = await runFile(`${dir}/truncated`, ["--help"], {
      MESH_RUNTIME_CACHE: `${dir}/cache`,
    });
    assertEquals(truncated.code, 3, truncated.stderr);
    assertStringIncludes(
      truncated.stderr,
      `"${dir}/truncated" has ${bytes.length - 1000} bytes and was built with ${bytes.length}: ` +
        "it is truncated or altered",
    );
    assertEquals(truncated.stdout, "");

    // A damaged file whose gzip still decodes: the digest catches it. The last bytes of the
    // program segment are gzip's CRC and size; flipping a byte of the deflate stream in a stored
    // block would pass gzip only by luck, so the recorded digest is changed instead.
    const text = decode(bytes.subarray(0, 4096));
    const sha = /program_sha=([0-9a-f]{64})/.exec(text)![1]!;
    const forged = new TextEncoder().encode(
      text.replace(`program_sha=${sha}`, `program_sha=${"0".repeat(64)}`),
    );
    const copy = bytes.slice();
    copy.set(forged.subarray(0, 4096), 0);
    await Deno.writeFile(`${dir}/damaged`, copy, { mode: 0o755 });
    const damaged = await runFile(`${dir}/damaged`, ["--help"], {
      MESH_RUNTIME_CACHE: `${dir}/cache`,
    });
    assertEquals(damaged.code, 3, damaged.stderr);
    assertStringIncludes(damaged.stderr, `does not have the sha256 ${"0".repeat(64)}`);
    assertEquals(
      await Deno.stat(`${dir}/cache/program/${"0".repeat(64)}`).then(() => true, () => false),
      false,
      "nothing unverified is left in the cache",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a one-file host runs only a whole program: a damaged copy put back beside the unpack is refused, not run", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  const env = { MESH_RUNTIME_CACHE: `${dir}/cache` };
  try {
    assertEquals((await runFile(file, ["--help"], env)).code, 0);
    const [program] = [...Deno.readDirSync(`${dir}/cache/program`)].filter((e) => e.isDirectory)
      .map((e) => e.name);
    const programDir = `${dir}/cache/program/${program}`;
    // Another start, in the moment between this one removing the damaged copy and renaming its
    // own into place, puts a damaged copy back (played here by an `rm` first in PATH that does
    // so right after removing the program's directory): the rename then lands inside it and is
    // dropped, and what is left is not the program.
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(
      `${dir}/bin/rm`,
      `#!/bin/sh\n/bin/rm "$@" || exit\nfor a in "$@"; do\n` +
        `  if [ "$a" = "${programDir}" ]; then mkdir "$a" && echo 'Deno.exit(42);' >"$a/main.js"; fi\n` +
        `done\n`,
      { mode: 0o755 },
    );
    await Deno.writeTextFile(`${programDir}/main.js`, "Deno.exit(42);\n");
    const raced = await runFile(file, ["--help"], { ...env, PATH: `${dir}/bin:/usr/bin:/bin` });
    assertEquals(raced.code, 3, raced.stderr + raced.stdout);
    assertStringIncludes(raced.stderr, `"${programDir}" does not hold it whole after the rename`);
    // The next start, with nothing racing it, repairs the cache.
    const again = await runFile(file, ["--help"], env);
    assertEquals(again.code, 0, again.stderr);
    assertStringIncludes(again.stdout, "Usage: mesh-host-debian");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a one-file host stands aside when the file it was started from is replaced", async () => {
  const built = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  try {
    // The file's own path is what is watched, not the runtime in the cache (which does not
    // change when the file is replaced).
    await Deno.copyFile(built, `${dir}/mesh-host`);
    const child = new Deno.Command("./mesh-host", {
      args: [
        "link",
        "--control-key",
        TEST_KEYS.controlKey,
        "--broker",
        "amqp://n:p@127.0.0.1:1/%2F",
        "--node",
        "onefile-probe",
        "--every",
        "1s",
        "--state-dir",
        `${dir}/state`,
      ],
      cwd: dir,
      env: { MESH_RUNTIME_CACHE: `${dir}/cache` },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stderr.getReader();
    let said = "";
    while (!said.includes("retrying")) {
      const { value, done } = await reader.read();
      if (done) break;
      said += decode(value);
    }
    await Deno.copyFile(built, `${dir}/mesh-host.new`);
    await Deno.rename(`${dir}/mesh-host.new`, `${dir}/mesh-host`);
    // A host that misses the replacement would run forever: stopped after a minute, it fails.
    const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      said += decode(value);
    }
    const status = await child.status;
    clearTimeout(guard);
    await child.stdout.cancel();
    assertEquals([status.code, status.signal], [0, null], said);
    assertMatch(said, /the executable "[^"]*\/mesh-host" was replaced/);
    assertStringIncludes(said, `the executable "${dir}/`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a one-file host that is not whole never runs, even when what it carries is already unpacked", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  const env = { MESH_RUNTIME_CACHE: `${dir}/cache` };
  try {
    const bytes = await Deno.readFile(file);
    await Deno.writeFile(`${dir}/mesh-host`, bytes, { mode: 0o755 });
    assertEquals((await runFile(`${dir}/mesh-host`, ["--version"], env)).code, 0);
    // The runtime and the program are unpacked: an interrupted upgrade leaves a copy cut short
    // (here, in the middle of the runtime's segment) where the whole one was.
    const text = decode(bytes.subarray(0, 4096));
    const runtimeOff = Number(/^runtime_off=(\d+)/m.exec(text)![1]);
    await Deno.writeFile(`${dir}/mesh-host`, bytes.subarray(0, runtimeOff + 5_000_000), {
      mode: 0o755,
    });
    const cut = await runFile(`${dir}/mesh-host`, ["--version"], env);
    assertEquals(cut.code, 3, cut.stderr + cut.stdout);
    assertStringIncludes(cut.stderr, "it is truncated or altered; copy it again");
    assertEquals(cut.stdout, "");
    // Altered, its length kept: a byte of the runtime's segment changed. New to the cache (a
    // new inode and ctime), its payload is hashed, and it is refused.
    const altered = bytes.slice();
    altered[runtimeOff + 1_000_000] = altered[runtimeOff + 1_000_000]! ^ 0xff;
    await Deno.remove(`${dir}/mesh-host`);
    await Deno.writeFile(`${dir}/mesh-host`, altered, { mode: 0o755 });
    const bad = await runFile(`${dir}/mesh-host`, ["--version"], env);
    assertEquals(bad.code, 3, bad.stderr + bad.stdout);
    assertStringIncludes(bad.stderr, "is damaged: what it carries does not have the sha256");
    assertEquals(bad.stdout, "");
    // The whole file again: hashed once, then known (its identity recorded beside the program's
    // entry), so a warm start reads no payload: the sha256sum shim below logs each call made
    // without a file argument, which is only the payload's hash.
    await Deno.remove(`${dir}/mesh-host`);
    await Deno.writeFile(`${dir}/mesh-host`, bytes, { mode: 0o755 });
    await Deno.mkdir(`${dir}/bin`);
    const real = new TextDecoder().decode(
      (await new Deno.Command("sh", { args: ["-c", "command -v sha256sum"], stdout: "piped" })
        .output()).stdout,
    ).trim();
    await Deno.writeTextFile(
      `${dir}/bin/sha256sum`,
      `#!/bin/sh\n[ $# -gt 0 ] || echo payload >>"${dir}/hashed"\nexec ${real} "$@"\n`,
      { mode: 0o755 },
    );
    const shimmed = { ...env, PATH: `${dir}/bin:/usr/bin:/bin` };
    for (let i = 0; i < 3; i++) {
      const ok = await runFile(`${dir}/mesh-host`, ["--version"], shimmed);
      assertEquals(ok.code, 0, ok.stderr);
    }
    assertEquals(
      await Deno.readTextFile(`${dir}/hashed`),
      "payload\n",
      "hashed once, not at every start",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a one-file host on another architecture refuses with exit 2, saying what it is built for", async () => {
  const file = await oneFileHost("debian");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/bin`);
    const other = NATIVE_ARCH === "x86_64" ? "aarch64" : "x86_64";
    await Deno.writeTextFile(`${dir}/bin/uname`, `#!/bin/sh\necho ${other}\n`, { mode: 0o755 });
    const r = await runFile(file, ["--version"], {
      MESH_RUNTIME_CACHE: `${dir}/cache`,
      PATH: `${dir}/bin:/usr/bin:/bin`,
    });
    assertEquals(r.code, 2, r.stderr);
    assertStringIncludes(
      r.stderr,
      `this file is built for debian on ${NATIVE_ARCH}, and this machine is ${other}`,
    );
    assertEquals(r.stdout, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a part is imported by a specifier read when the import runs; nothing else is rewritten", () => {
  const names = ["main.js", "apply-A1.js", "chunk-B2.js"];
  const text = 'const a = import("./apply-A1.js");\nimport { x } from "./chunk-B2.js";\n' +
    'const b = import("./elsewhere.js"); const c = reimport("./apply-A1.js");\n';
  assertEquals(
    deferredImports(text, names),
    'const a = import(String("./apply-A1.js"));\nimport { x } from "./chunk-B2.js";\n' +
      'const b = import("./elsewhere.js"); const c = reimport("./apply-A1.js");\n',
  );
});
