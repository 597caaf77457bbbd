/**
 * The aarch64 one-file hosts for the systems without glibc (alpine, android), on this x86_64
 * machine: what they carry is checked, and the runtime they carry is started the way their
 * header starts it, through the carried loader, under Debian's `qemu-aarch64-static` (user-mode
 * emulation, no binfmt registration needed). The whole file is not run under emulation: its
 * header reads `uname -m` and would refuse; on an aarch64 machine it runs as the x86_64 one does
 * here (tests/lab/noglibc_test.ts, tests/host/onefile_test.ts).
 *
 * @tier whole (builds two aarch64 one-file hosts and starts their runtime under qemu: about 86 s,
 * for what only a cross-architecture build changes)
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { oneFileHost } from "../support/onefile.ts";

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** The header's `NAME=value` assignments (values unquoted, padding trimmed). */
function headerValues(bytes: Uint8Array): Record<string, string> {
  const text = decode(bytes.subarray(0, 16384));
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/^([a-z_]+)=('([^']*)'|(\S*))\s*$/gm)) {
    out[m[1]!] = m[3] ?? m[4] ?? "";
  }
  return out;
}

/** ELF `e_machine` of a file (little-endian ELF64): 62 x86-64, 183 AArch64. */
async function elfMachine(path: string): Promise<number> {
  const head = (await Deno.readFile(path)).subarray(0, 20);
  assertEquals(decode(head.subarray(1, 4)), "ELF", `${path} is not an ELF file`);
  return head[18]! | (head[19]! << 8);
}

async function sh(script: string, args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command("sh", {
    args: ["-c", script, "sh", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, out: decode(r.stdout) + decode(r.stderr) };
}

Deno.test("the aarch64 alpine and android hosts carry aarch64 glibc, and their runtime starts through it under qemu", async () => {
  const files = await Promise.all(["alpine", "android"].map((s) => oneFileHost(s, "aarch64")));
  const dir = await Deno.makeTempDir({ prefix: "mesh-aarch64-" });
  try {
    const runtimes = new Set<string>();
    for (const file of files) {
      const bytes = await Deno.readFile(file);
      const v = headerValues(bytes);
      assertEquals(v.arch, "aarch64", file);
      assertEquals(v.loader, "ld-linux-aarch64.so.1", file);
      assertEquals(v.runtime_form, "tar", file);
      assertEquals(Number(v.file_len), bytes.length, `${file}: the length its header records`);
      runtimes.add(v.runtime_sha!);
      // Nothing of the build machine in what the header says.
      assert(!decode(bytes.subarray(0, 16384)).includes(ROOT), `${file} names ${ROOT}`);
      // On this x86_64 machine it refuses, saying what it is for.
      // The android file's first line names Android's /system/bin/sh: run by this machine's sh.
      assertEquals(
        decode(bytes.subarray(0, 20)).split("\n")[0],
        file.includes("android") ? "#!/system/bin/sh" : "#!/bin/sh",
      );
      const wrong = await new Deno.Command("sh", {
        args: [file, "--version"],
        env: { MESH_RUNTIME_CACHE: `${dir}/cache` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(wrong.code, 2, decode(wrong.stderr));
      assertStringIncludes(
        decode(wrong.stderr),
        `this file is built for ${
          file.includes("alpine") ? "alpine" : "android"
        } on aarch64, and this machine is x86_64`,
      );
    }
    assertEquals(runtimes.size, 1, "both carry the same runtime segment");

    // Unpacked as the header unpacks it: the runtime's tar (xz) and the program's (gzip).
    const file = files[0]!;
    const v = headerValues(await Deno.readFile(file));
    const unpacked = await sh(
      'mkdir -p "$2/rt" "$2/prog" && tail -c +"$3" "$1" | head -c "$4" | xz -dc | tar -x -C "$2/rt" && ' +
        'tail -c +"$5" "$1" | head -c "$6" | gzip -dc | tar -x -C "$2/prog" && ' +
        'cd "$2/rt" && sha256sum -c SHA256SUMS',
      [file, dir, v.runtime_off!, v.runtime_len!, v.program_off!, v.program_len!],
    );
    assertEquals(unpacked.code, 0, unpacked.out);
    const listed = (await Deno.readTextFile(`${dir}/rt/SHA256SUMS`)).trim().split("\n")
      .map((l) => l.slice(66)).sort();
    assert(listed.includes("deno") && listed.includes("lib/ld-linux-aarch64.so.1"), `${listed}`);
    assert(listed.includes("lib/libc.so.6") && listed.includes("lib/libgcc_s.so.1"), `${listed}`);
    for (const name of listed) {
      assertEquals(await elfMachine(`${dir}/rt/${name}`), 183, `${name} is not AArch64`);
    }
    // The runtime, through the carried loader and libraries only, as the header execs it.
    const start = [
      `${dir}/rt/lib/ld-linux-aarch64.so.1`,
      "--library-path",
      `${dir}/rt/lib`,
      "--argv0",
      `${dir}/rt/deno`,
      `${dir}/rt/deno`,
    ];
    const version = await new Deno.Command("qemu-aarch64-static", {
      args: [...start, "--version"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(version.code, 0, decode(version.stderr));
    assertStringIncludes(decode(version.stdout), "aarch64-unknown-linux-gnu");
    const program = await new Deno.Command("qemu-aarch64-static", {
      args: [
        ...start,
        "run",
        "--quiet",
        "--no-config",
        "--no-lock",
        "-A",
        `${dir}/prog/main.js`,
        "--help",
      ],
      env: { DENO_DIR: `${dir}/deno-dir`, DENO_NO_UPDATE_CHECK: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(program.code, 0, decode(program.stderr));
    assertStringIncludes(decode(program.stdout), "Usage: mesh-host-alpine");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
