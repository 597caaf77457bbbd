/**
 * `deno task lab` as a tool: `--help`, `-h` and `help` print the usage and exit 0; an unknown
 * command, or an `up` argument that is not a machine kind, prints the usage on stderr and exits 2
 * before anything starts. Runs scripts/lab.ts as a process; boots nothing. And a build stage of
 * `lab up` says what it is doing as it goes (labStage, with a short heartbeat).
 */

import {
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { CommandError, run } from "../../lib/command.ts";
import { labStage } from "./mod.ts";

async function lab(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}scripts/lab.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("deno task lab --help, -h and help print the usage and exit 0", async () => {
  for (const args of [["--help"], ["-h"], ["help"], ["up", "--help"]]) {
    const r = await lab(args);
    assertEquals(r.code, 0, `lab ${args.join(" ")}: ${r.stderr}`);
    assertStringIncludes(r.stdout, "usage: deno task lab COMMAND");
    assertStringIncludes(r.stdout, "up [--bare] [systemd|openrc|musl|android]");
    assertEquals(r.stderr, "", `lab ${args.join(" ")} wrote on stderr`);
  }
});

Deno.test("deno task lab refuses an unknown command or machine kind with the usage and exit 2", async () => {
  const unknown = await lab(["frobnicate"]);
  assertEquals(unknown.code, 2, unknown.stderr);
  assertStringIncludes(unknown.stderr, 'lab: "frobnicate" is not a command');
  assertStringIncludes(unknown.stderr, "usage: deno task lab COMMAND");
  assertEquals(unknown.stdout, "");
  const kind = await lab(["up", "--bare", "gentoo"]);
  assertEquals(kind.code, 2, kind.stderr);
  assertStringIncludes(
    kind.stderr,
    '"gentoo" is not a machine kind (systemd, openrc, musl, android)',
  );
  assertStringIncludes(kind.stderr, "usage: deno task lab COMMAND");
  // Refused before anything started: no machine of that name, nothing on stdout.
  assertEquals(kind.stdout, "");
});

Deno.test("a lab build stage says that it starts, that it still runs, and how it ended", async () => {
  const lines: string[] = [];
  const say = (line: string) => lines.push(line);
  await labStage(say, "systemd: 1/4 debootstrap", () => run(["sleep", "0.35"]), 100);
  assertEquals(lines[0], "systemd: 1/4 debootstrap ...");
  const beats = lines.filter((l) => /^systemd: 1\/4 debootstrap: still running \(\d+ s\)$/.test(l));
  assertEquals(beats.length >= 2, true, lines.join("\n"));
  assertMatch(lines.at(-1)!, /^systemd: 1\/4 debootstrap: done \(\d+ s\)$/);
  lines.length = 0;
  await assertRejects(
    () => labStage(say, "openrc: 4/4 podman import", () => run(["false"]), 100),
    CommandError,
  );
  assertEquals(lines[0], "openrc: 4/4 podman import ...");
  assertMatch(lines.at(-1)!, /^openrc: 4\/4 podman import: failed \(\d+ s\)$/);
});
