/**
 * `deno task hosts`: compiles each system's host for x86_64 and aarch64 Linux into `dist/`
 * (`dist/mesh-host-<system>-<arch>`), with the narrowest permissions that work: read and write
 * (files, store), run (the tools appliers drive), env (HOME for rootless tools), sys (uid,
 * hostname), net (the link to the broker).
 *
 * `deno compile` needs the `denort` runtime of each target, which it downloads unless
 * `DENORT_BIN` names a local one. Where it cannot be downloaded (these machines reach only
 * the npm registry and Debian's archive), the task stops and says so, naming `DENORT_BIN`.
 */

import { SYSTEM_NAMES } from "../systems/mod.ts";

const TARGETS = [
  { triple: "x86_64-unknown-linux-gnu", arch: "x86_64" },
  { triple: "aarch64-unknown-linux-gnu", arch: "aarch64" },
];
const PERMISSIONS = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-env",
  "--allow-sys=uid,gid,hostname,osRelease",
  "--allow-net",
];

const root = new URL("../", import.meta.url).pathname;
const denort = Deno.env.get("DENORT_BIN");
const native = Deno.build.target;
await Deno.mkdir(`${root}dist`, { recursive: true });
let built = 0;
for (const target of TARGETS) {
  if (denort !== undefined && target.triple !== native) {
    console.error(
      `skipping ${target.triple}: DENORT_BIN (${denort}) is one runtime, for this machine's target ${native}`,
    );
    continue;
  }
  for (const system of SYSTEM_NAMES) {
    const output = `${root}dist/mesh-host-${system}-${target.arch}`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "compile",
        "--quiet",
        "--no-check=remote",
        "--target",
        target.triple,
        ...PERMISSIONS,
        "--output",
        output,
        `${root}host/${system}.ts`,
      ],
      stdout: "inherit",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    if (!out.success) {
      if (
        denort === undefined &&
        /dns error|failed to lookup address|error sending request|Connection refused|denort/i.test(
          stderr,
        )
      ) {
        console.error(
          `deno task hosts: deno compile could not download the denort runtime for ${target.triple}, ` +
            `and this machine cannot reach its download site. Set DENORT_BIN to a denort binary for ` +
            `${native} (copied from a machine that can download it) to build that target here.\n` +
            `deno compile said: ${
              stderr.split("\n").filter((l) => /error|dns|lookup/i.test(l)).slice(0, 4).map((l) =>
                l.trim()
              ).join(" | ")
            }`,
        );
        Deno.exit(1);
      }
      console.error(`deno task hosts: compiling ${system} for ${target.triple} failed:\n${stderr}`);
      Deno.exit(1);
    }
    if (target.triple === native) {
      // A binary that was written is not one that runs: ask the native one for its schema.
      const probe = await new Deno.Command(output, {
        args: ["schema"],
        stdout: "piped",
        stderr: "piped",
      })
        .output().catch((error) => ({
          success: false,
          stdout: new Uint8Array(),
          stderr: new TextEncoder().encode(String(error)),
        }));
      const text = new TextDecoder().decode(probe.stdout);
      if (!probe.success || !text.includes(`mesh-host-${system}`)) {
        await Deno.remove(output).catch(() => {});
        console.error(
          `deno task hosts: ${output} was written but does not run (--help printed ${text.length} bytes: ${
            new TextDecoder().decode(probe.stderr).trim().slice(-300)
          }); is DENORT_BIN a denort runtime for ${native}?`,
        );
        Deno.exit(1);
      }
    }
    console.log(`built ${output}`);
    built++;
  }
}
console.log(`${built} hosts built in ${root}dist`);
