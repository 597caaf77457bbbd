/**
 * The container applier on this machine's real container runtime (podman here) and the lab's
 * local registry, through `applyBytes` with the debian system plus the container and action
 * appliers, and a temporary state directory. Drift is made by hand between applies.
 *
 * Every container is named with a unique `meshct-` prefix and removed in `finally`: other tests
 * on this machine look at all of its containers.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import {
  denoRun,
  IMAGE,
  removeContainer,
  ROOT,
  startContainer,
  TEST_LABEL,
  uniqueName,
} from "../support/mod.ts";
import { pinnedBusybox, REGISTRY } from "../lab/mod.ts";
import { run } from "../../lib/command.ts";
import type { ApplyResult } from "../../host/apply.ts";
import { applyResources, type FootprintEntry, readFootprint } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import type { System } from "../../host/system.ts";
import type { ApplyContext } from "../../host/applier.ts";
import {
  containerApplier,
  containerRuntime,
  DECLARATION_LABEL,
  ID_LABEL,
  RESTART_POLICY,
  runArgv,
  type Runtime,
} from "../../resources/container/applier.ts";
import { actionApplier } from "../../resources/action/applier.ts";

const system: System = {
  ...debian,
  appliers: { ...debian.appliers, container: containerApplier, action: actionApplier },
};

/** A container command that runs until stopped and stops at once on SIGTERM. */
const SERVE = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"];

// The lab registry is plain HTTP: tests/support/mod.ts points podman at tests/lab/registries.conf.

let pinned: string | undefined;
/** The busybox image pushed as a Docker v2s2 manifest: in the registry, with another digest. */
async function otherPinned(): Promise<string> {
  await image();
  const dir = await Deno.makeTempDir();
  try {
    await run([
      "podman",
      "push",
      "--tls-verify=false",
      "--format",
      "v2s2",
      "--digestfile",
      `${dir}/digest`,
      IMAGE,
      `${REGISTRY}/mesh-busybox:v2s2`,
    ]);
    return `${REGISTRY}/mesh-busybox@${(await Deno.readTextFile(`${dir}/digest`)).trim()}`;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
async function image(): Promise<string> {
  return pinned ??= await pinnedBusybox();
}

interface Inspected {
  Id: string;
  State: { Running: boolean; Status: string };
  Config: { Labels: Record<string, string> | null; Image: string; Env: string[] };
  HostConfig: { RestartPolicy: { Name: string } };
}

async function inspect(name: string): Promise<Inspected | undefined> {
  const out = await run(["podman", "container", "inspect", name], { allowFailure: true });
  if (out.code !== 0) return undefined;
  return (JSON.parse(out.stdout) as Inspected[])[0];
}

class Fixture {
  readonly names: string[] = [];
  constructor(readonly dir: string) {}
  get state() {
    return `${this.dir}/state`;
  }
  name(): string {
    const name = uniqueName("meshct");
    this.names.push(name);
    return name;
  }
  async container(id: string, name: string, extra: Record<string, unknown> = {}) {
    return {
      id,
      type: "container",
      name,
      image: await image(),
      args: ["--label", TEST_LABEL],
      command: SERVE,
      ...extra,
    };
  }
  apply(resources: unknown[], options: { dryRun?: boolean } = {}): Promise<ApplyResult> {
    return applyResources(system, this.state, resources, options);
  }
  store(): Promise<FootprintEntry[]> {
    return readFootprint(this.state);
  }
}

async function withFixture(fn: (f: Fixture) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-container-" });
  const f = new Fixture(dir);
  try {
    await fn(f);
  } finally {
    for (const name of f.names) await removeContainer(name);
    await Deno.remove(dir, { recursive: true });
  }
}

const change = (r: ApplyResult, id: string) => r.changes.find((c) => c.id === id)?.change;
const problems = (r: ApplyResult) => r.problems.map((p) => `${p.id}: ${p.message}`).join("\n");

/** Runs `code` (a module body) in a new Deno process with `env` (PATH replaced). */
async function subprocess(
  code: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-runtime-" });
  try {
    await Deno.writeTextFile(`${dir}/main.ts`, code);
    return await denoRun([`${dir}/main.ts`], { env, cwd: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A directory of symlinks to the ordinary tools (`env`, `sh`, ...), without docker or podman. */
async function toolsWithoutRuntimes(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-path-" });
  for (const tool of ["env", "sh", "cat", "ls", "true", "false"]) {
    for (const where of ["/usr/bin", "/bin"]) {
      try {
        await Deno.symlink(await Deno.realPath(`${where}/${tool}`), `${dir}/${tool}`);
        break;
      } catch { /* try the next */ }
    }
  }
  return dir;
}

Deno.test("the runtime is detected by asking, and says why it was chosen", async () => {
  const runtime = await containerRuntime();
  const docker = await run(["docker", "info", "--format", "{{.ServerVersion}}"], {
    allowFailure: true,
  }).catch(() => undefined);
  const dockerAnswers = docker?.code === 0 && docker.stdout.trim() !== "";
  // This machine: podman answers; a docker CLI may be on PATH with no daemon behind it.
  assertEquals(runtime.program, dockerAnswers ? "docker" : "podman");
  assert(/^\d+\./.test(runtime.version), runtime.version);
  assertStringIncludes(runtime.why, `${runtime.program} ${runtime.version} answered`);
  assertStringIncludes(runtime.why, dockerAnswers ? "podman" : "docker did not answer");
  // Once per process: the same detection is handed out again.
  assertEquals(await containerRuntime(), runtime);
});

Deno.test("when docker and podman both answer, docker is used and the reason given", async () => {
  const podman = (await run(["sh", "-c", "command -v podman"])).stdout.trim();
  const fake = await toolsWithoutRuntimes();
  try {
    await Deno.writeTextFile(`${fake}/docker`, "#!/bin/sh\necho 29.7.2\n");
    await Deno.chmod(`${fake}/docker`, 0o755);
    await Deno.symlink(podman, `${fake}/podman`);
    const out = await subprocess(
      `import { containerRuntime } from "${ROOT}resources/container/applier.ts";\n` +
        `console.log(JSON.stringify(await containerRuntime()));\n`,
      { PATH: fake, CONTAINERS_CONF: `${ROOT}containers.conf` },
    );
    assertEquals(out.code, 0, out.stderr);
    const runtime = JSON.parse(out.stdout) as Runtime;
    assertEquals(runtime.program, "docker");
    assertEquals(runtime.version, "29.7.2");
    assertStringIncludes(runtime.why, "podman ");
    assertStringIncludes(runtime.why, "answered too; docker is preferred because");
  } finally {
    await Deno.remove(fake, { recursive: true });
  }
});

Deno.test("with neither docker nor podman on PATH the resource fails naming both", async () => {
  const tools = await toolsWithoutRuntimes();
  await Deno.writeTextFile(`${tools}/registries.conf`, "");
  const dir = await Deno.makeTempDir({ prefix: "mesh-container-" });
  try {
    const declaration = JSON.stringify({
      version: 1,
      resources: [{
        id: "c",
        type: "container",
        name: "meshct-never",
        // One the registry holds: asked over HTTP with no runtime (a loopback registry, plain
        // HTTP as podman and docker take it, with a registries.conf that says nothing of it),
        // it is admitted, and the plan fails naming both runtimes.
        image: await image(),
      }],
    });
    const out = await subprocess(
      `import { applyBytes } from "${ROOT}host/apply.ts";\n` +
        `import { debian } from "${ROOT}systems/debian/mod.ts";\n` +
        `import { containerApplier } from "${ROOT}resources/container/applier.ts";\n` +
        `const system = { ...debian, appliers: { ...debian.appliers, container: containerApplier } };\n` +
        `const r = await applyBytes(new TextEncoder().encode(${
          JSON.stringify(declaration)
        }), { system, stateDir: ${
          JSON.stringify(`${dir}/state`)
        }, trusted: true, version: "test" });\n` +
        `console.log(JSON.stringify(r));\n`,
      { PATH: tools, CONTAINERS_REGISTRIES_CONF: `${tools}/registries.conf` },
    );
    assertEquals(out.code, 0, out.stderr);
    const result = JSON.parse(out.stdout) as ApplyResult;
    assertEquals(result.outcome, "failed");
    assertEquals([result.applied, result.total], [0, 1]);
    const message = problems(result);
    assertStringIncludes(message, "No container runtime answers");
    assertStringIncludes(message, "docker: Command docker info");
    assertStringIncludes(message, "podman: Command podman info");
    assertStringIncludes(message, "could not be started");
  } finally {
    await Deno.remove(tools, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("created from the pinned digest, restart always and labelled; then unchanged", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const decl = [await f.container("web", name, { env: { GREETING: "hello" } })];
    const first = await f.apply(decl);
    assertEquals(first.outcome, "applied", problems(first));
    assertEquals(change(first, "web"), "created");
    const c = await inspect(name);
    assert(c, "the container exists");
    assert(c.State.Running, c.State.Status);
    assertEquals(c.Config.Image, await image());
    assertEquals(c.HostConfig.RestartPolicy.Name, "always");
    assert(/^sha256:[0-9a-f]{64}$/.test(c.Config.Labels?.[DECLARATION_LABEL] ?? ""));
    assertEquals(c.Config.Labels?.[ID_LABEL], "web");
    assert(c.Config.Env.includes("GREETING=hello"));
    assertEquals(
      (await f.store()).map(({ id, type, subject, created }) => ({ id, type, subject, created })),
      [{ id: "web", type: "container", subject: name, created: true }],
    );

    const second = await f.apply(decl);
    assertEquals(second.outcome, "applied", problems(second));
    assertEquals(change(second, "web"), "unchanged");
    assertEquals((await inspect(name))?.Id, c.Id);
  });
});

Deno.test("removed by hand is created again; stopped by hand is started", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const decl = [await f.container("web", name)];
    assertEquals((await f.apply(decl)).outcome, "applied");

    await run(["podman", "rm", "-f", "-t", "0", name]);
    const again = await f.apply(decl);
    assertEquals(again.outcome, "applied", problems(again));
    assertEquals(change(again, "web"), "created");
    const made = await inspect(name);
    assert(made?.State.Running);

    await run(["podman", "stop", "-t", "0", name]);
    assertEquals((await inspect(name))?.State.Running, false);
    const started = await f.apply(decl);
    assertEquals(started.outcome, "applied", problems(started));
    assertEquals(change(started, "web"), "updated");
    const now = await inspect(name);
    assert(now?.State.Running, now?.State.Status);
    assertEquals(now.Id, made.Id, "started, not replaced");
  });
});

Deno.test("a changed declaration replaces the container; leaving it removes the container", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const other = f.name();
    assertEquals(
      (await f.apply([
        await f.container("web", name, { env: { MODE: "a" } }),
        await f.container("other", other),
      ])).outcome,
      "applied",
    );
    const before = await inspect(name);

    const changed = await f.apply([
      await f.container("web", name, { env: { MODE: "b" } }),
      await f.container("other", other),
    ]);
    assertEquals(changed.outcome, "applied", problems(changed));
    assertEquals(change(changed, "web"), "updated");
    assertEquals(change(changed, "other"), "unchanged");
    const after = await inspect(name);
    assert(after?.State.Running);
    assert(after.Id !== before?.Id, "a new container");
    assert(after.Config.Env.includes("MODE=b"));
    assert(
      after.Config.Labels?.[DECLARATION_LABEL] !== before?.Config.Labels?.[DECLARATION_LABEL],
    );

    const left = await f.apply([await f.container("other", other)]);
    assertEquals(left.outcome, "applied", problems(left));
    assertEquals(change(left, "web"), "removed");
    assertEquals(await inspect(name), undefined);
    assert((await inspect(other))?.State.Running);
    assertEquals((await f.store()).map((e) => e.id), ["other"]);

    // Removing what is already gone is not an error.
    await run(["podman", "rm", "-f", "-t", "0", other]);
    const gone = await f.apply([]);
    assertEquals(gone.outcome, "applied", problems(gone));
    assertEquals(change(gone, "other"), "removed");
  });
});

Deno.test("a same-named container the host did not create fails, untouched; never removed", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    await startContainer(name);
    const foreign = await inspect(name);
    const result = await f.apply([await f.container("web", name)]);
    assertEquals(result.outcome, "failed");
    assertEquals([result.applied, result.total], [0, 1]);
    const message = problems(result);
    assertStringIncludes(message, `Container "${name}"`);
    assertStringIncludes(message, "was not created by this host");
    const still = await inspect(name);
    assertEquals(still?.Id, foreign?.Id);
    assert(still?.State.Running);

    // Removal: the host created one, somebody replaced it by hand with their own; the
    // declaration drops it: theirs is left alone ("forgotten", not "removed").
    const mine = f.name();
    assertEquals((await f.apply([await f.container("mine", mine)])).outcome, "applied");
    await removeContainer(mine);
    await startContainer(mine);
    const theirs = await inspect(mine);
    const dropped = await f.apply([]);
    assertEquals(dropped.outcome, "applied", problems(dropped));
    assertEquals(change(dropped, "mine"), "forgotten");
    assertEquals((await inspect(mine))?.Id, theirs?.Id);
    assertEquals(await f.store(), []);
  });
});

Deno.test("an image digest the registry does not have refuses the whole source before anything, naming each image", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const other = f.name();
    const missing = `${REGISTRY}/mesh-busybox@sha256:${"0".repeat(64)}`;
    const elsewhere = `${REGISTRY}/mesh-nothing@sha256:${"1".repeat(64)}`;
    const dir = `${f.dir}/made-first`;
    const resources = [
      { id: "first", type: "directory", path: dir, mode: "0755" },
      await f.container("ok", f.name()),
      await f.container("web", name, { image: missing, env: { TOKEN: "s3cr3t-value" } }),
      await f.container("db", other, { image: elsewhere }),
    ];
    for (const dryRun of [true, false]) {
      const result = await f.apply(resources, { dryRun });
      // Refused (exit 2), not failed part-way: the field's bundle stopped at 8 of 14.
      assertEquals([result.outcome, result.applied], ["refused", 0], problems(result));
      assertEquals(result.problems.map((p) => p.id), ["web", "db"]);
      const message = problems(result);
      assertStringIncludes(message, `web: Cannot have image ${missing} for container "${name}"`);
      assertStringIncludes(message, `db: Cannot have image ${elsewhere} for container "${other}"`);
      assertStringIncludes(message, "its registry does not hold it");
      assertStringIncludes(message, "manifest unknown");
      assertStringIncludes(message, "nothing of this source was applied");
      assert(!message.includes("s3cr3t-value"), "an environment value reached the message");
      assert(!(await Deno.stat(dir).then(() => true, () => false)), "the directory was made");
      assertEquals(await inspect(name), undefined);
      // Nothing recorded (no store written at all, or an empty one).
      assertEquals(await f.store().catch(() => []), []);
    }
  });
});

Deno.test("a container that does not stay running fails naming its state, and does not stay", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const result = await f.apply([
      await f.container("web", name, { command: ["sh", "-c", "echo giving up >&2; exit 3"] }),
    ]);
    assertEquals(result.outcome, "failed");
    const message = problems(result);
    assertStringIncludes(message, `Container "${name}" was created`);
    assertStringIncludes(message, "it is not running");
    assertStringIncludes(message, "giving up");
    assertEquals(await inspect(name), undefined);
  });
});

Deno.test("a dry run changes nothing and says what would", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const decl = [await f.container("web", name)];
    const dry = await f.apply(decl, { dryRun: true });
    assertEquals(dry.outcome, "applied", problems(dry));
    assertEquals(change(dry, "web"), "created");
    assertEquals(await inspect(name), undefined);

    assertEquals((await f.apply(decl)).outcome, "applied");
    const id = (await inspect(name))?.Id;
    await run(["podman", "stop", "-t", "0", name]);
    const dryStart = await f.apply(decl, { dryRun: true });
    assertEquals(change(dryStart, "web"), "updated");
    assertEquals((await inspect(name))?.State.Running, false);

    const dryChange = await f.apply([await f.container("web", name, { env: { X: "1" } })], {
      dryRun: true,
    });
    assertEquals(change(dryChange, "web"), "updated");
    // Why it would be replaced: what the runtime shows that differs, env by name only.
    const why = dryChange.changes.find((c) => c.id === "web")?.detail ?? "";
    assertStringIncludes(why, `replace container "${name}": environment X changed`);
    assert(!why.includes("X=1"), why);
    // Another image the registry holds (the same one pushed as a Docker v2s2 manifest): a
    // digest it lacks is refused before any plan (the test above).
    const other = await otherPinned();
    const dryImage = await f.apply([await f.container("web", name, { image: other })], {
      dryRun: true,
    });
    assertStringIncludes(
      dryImage.changes.find((c) => c.id === "web")?.detail ?? "",
      `-> ${other}`,
    );
    const dryRemove = await f.apply([], { dryRun: true });
    assertEquals(change(dryRemove, "web"), "removed");
    const still = await inspect(name);
    assertEquals(still?.Id, id);
    assertEquals(still?.State.Running, false);
  });
});

Deno.test("an image not pinned by digest is refused by the schema and by the applier", async () => {
  await withFixture(async (f) => {
    const result = await f.apply([
      { id: "web", type: "container", name: "meshct-unpinned", image: "busybox:latest" },
    ]);
    assertEquals(result.outcome, "refused");
    assertStringIncludes(problems(result), "pinned by digest");
  });
  const runtime = await containerRuntime();
  try {
    await containerApplier.plan(
      { id: "web", type: "container", name: "meshct-unpinned", image: "busybox:latest" },
      { runtime, state: undefined },
      { dryRun: true } as ApplyContext,
    );
    throw new Error("applied an unpinned image");
  } catch (error) {
    assertStringIncludes((error as Error).message, "is not pinned by digest");
  }
});

Deno.test("migration: a container an earlier host created unless-stopped is replaced once with always", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const decl = [await f.container("web", name)];
    // Created exactly as the earlier host did (same label digest), with its restart policy.
    const first = await f.apply(decl);
    assertEquals(first.outcome, "applied", problems(first));
    const runtime = await containerRuntime();
    const digest = (await inspect(name))!.Config.Labels![DECLARATION_LABEL]!;
    await removeContainer(name);
    const argv = runArgv(runtime, decl[0] as Parameters<typeof runArgv>[1], digest);
    const at = argv.indexOf(RESTART_POLICY);
    assertEquals(argv[at - 1], "--restart");
    argv[at] = "unless-stopped";
    await run(argv);
    const old = (await inspect(name))!;
    assertEquals(old.HostConfig.RestartPolicy.Name, "unless-stopped");
    const migrated = await f.apply(decl);
    assertEquals(change(migrated, "web"), "updated", problems(migrated));
    const now = (await inspect(name))!;
    assertEquals(now.HostConfig.RestartPolicy.Name, "always");
    assert(now.Id !== old.Id, "replaced, not changed in place");
    assertEquals(change(await f.apply(decl), "web"), "unchanged");
  });
});
