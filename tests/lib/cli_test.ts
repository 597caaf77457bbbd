/**
 * One command-line convention across mesh-host, mesh-control, mesh-reconcile and mesh-builder
 * (lib/cli.ts): help on stdout with 0, misuse on stderr with 2 (a command group without its
 * subcommand too), a misspelt option named as unknown rather than a required one as missing,
 * an unexpected error (a defect) exiting 70 with one line (`--verbose`: cause chain and stack),
 * arguments judged before connections are asked for, and a builder refusing at start what every
 * build would need. Each program runs as a real process with a clean environment.
 *
 * @module
 */

import { Command } from "commander";
import { addExitCodes, EXIT_DEFECT, runProgram } from "../../lib/cli.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

/** Host options that point at nothing on this machine. */
const NOWHERE = [
  "--state-dir",
  "/nonexistent/mesh-cli-test/state",
  "--declarations",
  "/nonexistent/mesh-cli-test/declarations",
];

const PROGRAMS = {
  host: "tests/support/host_no_bundle.ts",
  control: "control/main.ts",
  reconcile: "reconcile/main.ts",
  builder: "builder/main.ts",
} as const;

/** Runs a program with nothing in its environment but what Deno needs. */
async function run(program: keyof typeof PROGRAMS, args: string[]) {
  const keep: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) keep[name] = value;
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}${PROGRAMS[program]}`, ...args],
    env: keep,
    clearEnv: true,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

Deno.test("a misspelt option is named as unknown, on every program, before a missing required one", async () => {
  const cases: [keyof typeof PROGRAMS, string[], string][] = [
    ["reconcile", ["run", "--registy", "x"], "--registy"],
    ["reconcile", ["render", "caddy", "--registy", "x"], "--registy"],
    ["control", ["node", "enroll", "x", "--systme", "debian"], "--systme"],
    ["control", ["broker", "convert", "--queue-typ", "quorum"], "--queue-typ"],
    ["host", ["apply", "--stat-dir", "/x"], "--stat-dir"],
    ["builder", ["--brokr", "amqp://nobody:x@127.0.0.1:1/"], "--brokr"],
  ];
  for (const [program, args, flag] of cases) {
    const r = await run(program, args);
    assertEquals(r.code, 2, `${program} ${args.join(" ")}: ${r.stderr}`);
    assertStringIncludes(r.stderr, `unknown option '${flag}'`);
    assertEquals(r.stdout, "");
  }
  // A required option really missing is still said so.
  const missing = await run("reconcile", ["run"]);
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, "required option '--registry <file>' not specified");
});

Deno.test("a command group without its subcommand is misuse: help on stderr, exit 2", async () => {
  const groups: [keyof typeof PROGRAMS, string][] = [
    ["reconcile", "render"],
    ["reconcile", "port"],
    ["reconcile", "stamp"],
    ["reconcile", "batch"],
    ["control", "node"],
    ["control", "module"],
    ["control", "builder"],
    ["control", "broker"],
  ];
  for (const [program, group] of groups) {
    const r = await run(program, [group]);
    assertEquals(r.code, 2, `${program} ${group}`);
    assertStringIncludes(r.stderr, "Usage:");
    assertEquals(r.stdout, "");
  }
});

Deno.test("help is on stdout with exit 0, on every program and for a group's help", async () => {
  for (
    const [program, args] of [
      ["reconcile", ["--help"]],
      ["reconcile", ["render", "--help"]],
      ["reconcile", ["help", "run"]],
      ["control", ["node", "--help"]],
      ["host", ["--help"]],
      ["builder", ["--help"]],
    ] as [keyof typeof PROGRAMS, string[]][]
  ) {
    const r = await run(program, args);
    assertEquals(r.code, 0, `${program} ${args.join(" ")}: ${r.stderr}`);
    assertStringIncludes(r.stdout, "Usage:");
    assertEquals(r.stderr, "");
  }
});

Deno.test("the arguments are judged before a connection is asked for", async () => {
  const enroll = await run("control", ["node", "enroll", "x", "--system", "windows"]);
  assertEquals(enroll.code, 2);
  assertStringIncludes(enroll.stderr, 'system "windows" is not one of');
  assert(!/database|broker/i.test(enroll.stderr), enroll.stderr);
  const kind = await run("control", ["node", "kind", "x", "laptop"]);
  assertEquals(kind.code, 2);
  assertStringIncludes(kind.stderr, '"laptop" is not one of server, episodic');
  const build = await run("control", [
    "module",
    "build",
    "web",
    "--source",
    "https://user:secret@git.example.org/web.git",
    "--commit",
    "main",
    "--store",
    "127.0.0.1:5000",
  ]);
  assertEquals(build.code, 2);
  assertStringIncludes(build.stderr, "the source URL carries a credential");
  assert(!/database|broker/i.test(build.stderr), build.stderr);
  const noStore = await run("control", [
    "module",
    "build",
    "web",
    "--source",
    "x",
    "--commit",
    "c",
  ]);
  assertEquals(noStore.code, 2);
  assertStringIncludes(noStore.stderr, "the artifact store binding has no address");
});

Deno.test("mesh-builder refuses at start a --work-dir that cannot be used", async () => {
  // An unreachable broker: the refusal must come before any connection is tried.
  const broker = "amqp://nobody:x@127.0.0.1:1/";
  const missing = await run("builder", ["--work-dir", "/nonexistent-mesh-dir", "--broker", broker]);
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, 'Cannot use --work-dir "/nonexistent-mesh-dir"');
  const file = await Deno.makeTempFile();
  try {
    const notDir = await run("builder", ["--work-dir", file, "--broker", broker]);
    assertEquals(notDir.code, 2);
    assertStringIncludes(notDir.stderr, "not a directory");
  } finally {
    await Deno.remove(file);
  }
});

/** A program whose one command fails with `error`, run through the shared runner. */
async function runThrowing(error: unknown, args: string[]) {
  const said: string[] = [];
  const program = new Command().name("mesh-test").exitOverride()
    .configureOutput({ writeOut: (s) => said.push(s), writeErr: (s) => said.push(s) });
  program.command("go").action(() => {
    throw error;
  });
  const code = await runProgram(program, args, {
    err: (s) => said.push(s),
    code: () => 0,
    usageCode: 2,
    onError: (e) => {
      said.push(`known: ${(e as Error).message}\n`);
      return 2;
    },
  });
  return { code, text: said.join("") };
}

Deno.test("an unexpected error exits 70 with one line; --verbose adds the cause chain and stack", async () => {
  const defect = new TypeError("Cannot read properties of undefined (reading 'x')", {
    cause: new Error("the underlying reason"),
  });
  const plain = await runThrowing(defect, ["go"]);
  assertEquals(plain.code, EXIT_DEFECT);
  assertEquals(EXIT_DEFECT, 70);
  assertEquals(plain.text.trimEnd().split("\n").length, 1, plain.text);
  assertStringIncludes(plain.text, "mesh-test: unexpected error");
  assert(!plain.text.includes("the underlying reason"));
  const verbose = await runThrowing(defect, ["go", "--verbose"]);
  assertEquals(verbose.code, EXIT_DEFECT);
  assertStringIncludes(verbose.text, "caused by: Error: the underlying reason");
  assertStringIncludes(verbose.text, "at "); // a stack frame
  // A refusal the program knows keeps its own code, and so does a failed fetch (the network's).
  assertEquals((await runThrowing(new Error("refused"), ["go"])).code, 2);
  assertEquals((await runThrowing(new TypeError("fetch failed"), ["go"])).code, 2);
  // Input the language itself refuses (not UTF-8, not JSON) is the input's fault, not a defect.
  const thrownBy = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (error) {
      return error;
    }
    throw new Error("Expected the function to throw");
  };
  const notUtf8 = thrownBy(() =>
    new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff]))
  );
  assertEquals((await runThrowing(notUtf8, ["go"])).code, 2);
  assertEquals((await runThrowing(thrownBy(() => JSON.parse("{")), ["go"])).code, 2);
  assertEquals((await runThrowing("a string", ["go"])).code, EXIT_DEFECT);
});

Deno.test("every command's help lists its exit codes, from its program's one table", async () => {
  const leaves: [keyof typeof PROGRAMS, string[], string[]][] = [
    ["reconcile", ["run"], ["0  clean", "1  drift found", "2  refused", "70  unexpected"]],
    ["reconcile", ["watch"], ["3  new", "4  late", "5  down", "6  unreachable", "70  "]],
    ["reconcile", ["render", "caddy"], ["0  done", "2  refused", "70  "]],
    ["reconcile", ["port", "next"], ["0  done", "2  refused", "70  "]],
    ["reconcile", ["batch", "enable"], ["1  failed", "70  "]],
    ["reconcile", ["stamp", "serve"], ["0  stopped", "70  "]],
    ["control", ["status"], ["1  some nodes", "70  "]],
    ["control", ["node", "enroll"], ["0  done", "2  refused", "70  "]],
    ["control", ["module", "build"], ["1  the build failed", "70  "]],
    ["host", ["apply"], ["1  failed", "3  the host", "4  --dry-run", "70  "]],
    ["host", ["schema"], ["0  printed", "2  refused", "70  "]],
    ["builder", [], ["0  stopped", "2  refused", "70  "]],
  ];
  for (const [program, path, expected] of leaves) {
    const r = await run(program, [...path, "--help"]);
    assertEquals(r.code, 0, `${program} ${path.join(" ")}: ${r.stderr}`);
    const codes = r.stdout.slice(r.stdout.indexOf("Exit codes:"));
    assert(r.stdout.includes("Exit codes:"), `${program} ${path.join(" ")}: ${r.stdout}`);
    for (const text of expected) assertStringIncludes(codes, text);
  }
  // A line that does not apply to a command is not in its help.
  const render = await run("reconcile", ["render", "caddy", "--help"]);
  assert(!render.stdout.includes("drift found"), render.stdout);
});

Deno.test("an exit code table naming a command the program lacks is refused", () => {
  const program = new Command().name("mesh-test");
  program.command("go");
  let said = "";
  try {
    addExitCodes(program, [{ code: 1, meaning: "drift", commands: ["og"] }]);
  } catch (error) {
    said = (error as Error).message;
  }
  assertStringIncludes(said, 'names no command "og"');
});

Deno.test("a duration carries its unit: a bare number is refused naming the form it meant", async () => {
  const cases: [keyof typeof PROGRAMS, string[], string][] = [
    ["reconcile", ["run", "--registry", "/nonexistent.yaml", "--cert-warn", "14"], '"14d"'],
    ["reconcile", ["run", "--registry", "/nonexistent.yaml", "--timeout", "30"], '"30s"'],
    // The host carries no bundle and is pointed at nothing: were the refusal to regress, nothing
    // would be applied to this machine.
    ["host", ["reconcile", "--every", "15", ...NOWHERE], '"15s"'],
    ["host", ["link", "--every", "15", ...NOWHERE], '"15s"'],
    ["control", ["status", "--grace", "15"], '"15s"'],
    ["control", ["prune", "--keep", "30"], '"30d"'],
    ["control", ["module", "build", "m", "--timeout", "30"], '"30s"'],
  ];
  for (const [program, args, form] of cases) {
    const r = await run(program, args);
    assertEquals(r.code, 2, `${program} ${args.join(" ")}: ${r.stderr}`);
    assertStringIncludes(r.stderr, "a duration carries its unit", `${program} ${args.join(" ")}`);
    assertStringIncludes(r.stderr, form);
    assert(!/database|broker/i.test(r.stderr), r.stderr);
  }
  // With its unit, the same --timeout is taken: what is refused next is the registry.
  const unit = await run("reconcile", [
    "run",
    "--registry",
    "/nonexistent.yaml",
    "--timeout",
    "30s",
  ]);
  assertEquals(unit.code, 2);
  assertStringIncludes(unit.stderr, 'Cannot read registry "/nonexistent.yaml": no such file');
});

Deno.test("a defect's text is redacted before it is printed when the program says how", async () => {
  const said: string[] = [];
  const program = new Command().name("mesh-test").exitOverride();
  program.command("go").action(() => {
    throw new TypeError("Cannot read x of amqp://node:s3cret@broker:5672/");
  });
  const code = await runProgram(program, ["go", "--verbose"], {
    err: (s) => said.push(s),
    code: () => 0,
    usageCode: 2,
    onError: () => 2,
    redact: (text) => text.replaceAll("s3cret", "***"),
  });
  assertEquals(code, EXIT_DEFECT);
  assert(!said.join("").includes("s3cret"), said.join(""));
  assertStringIncludes(said.join(""), "amqp://node:***@broker");
});
