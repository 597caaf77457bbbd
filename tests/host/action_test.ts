/**
 * The action applier on this machine, through `applyBytes` with the debian system plus the
 * container and action appliers and a temporary state directory: verify as the idempotency
 * check and the read-back, `in` a real podman container, dry runs, and an apply that stops at
 * the first failed resource. Side-effect files prove what ran and what did not.
 *
 * Every container is named with a unique `meshac-` prefix and removed in `finally`.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { removeContainer, startContainer, TEST_LABEL, uniqueName } from "../support/mod.ts";
import { pinnedBusybox } from "../lab/mod.ts";
import { run } from "../../lib/command.ts";
import type { ApplyResult } from "../../host/apply.ts";
import { applyResources, type FootprintEntry, readFootprint } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import type { System } from "../../host/system.ts";
import { containerApplier } from "../../resources/container/applier.ts";
import { actionApplier } from "../../resources/action/applier.ts";

const system: System = {
  ...debian,
  appliers: { ...debian.appliers, container: containerApplier, action: actionApplier },
};

// The lab registry is plain HTTP: tests/support/mod.ts points podman at tests/lab/registries.conf.

class Fixture {
  readonly names: string[] = [];
  constructor(readonly dir: string) {}
  get state() {
    return `${this.dir}/state`;
  }
  /** A file whose existence proves something ran. */
  mark(name: string): string {
    return `${this.dir}/${name}`;
  }
  name(): string {
    const name = uniqueName("meshac");
    this.names.push(name);
    return name;
  }
  apply(resources: unknown[], options: { dryRun?: boolean } = {}): Promise<ApplyResult> {
    return applyResources(system, this.state, resources, options);
  }
  store(): Promise<FootprintEntry[]> {
    return readFootprint(this.state);
  }
}

async function withFixture(fn: (f: Fixture) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-action-" });
  const f = new Fixture(dir);
  try {
    await fn(f);
  } finally {
    for (const name of f.names) {
      await removeContainer(name);
      // A command wrongly run on the host (not inside) would have left this.
      await Deno.remove(`/tmp/${name}`).catch(() => {});
    }
    await Deno.remove(dir, { recursive: true });
  }
}

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);
const change = (r: ApplyResult, id: string) => r.changes.find((c) => c.id === id)?.change;
const problems = (r: ApplyResult) => r.problems.map((p) => `${p.id}: ${p.message}`).join("\n");
const sh = (script: string) => ["sh", "-c", script];

Deno.test("verify satisfied: unchanged, and the command does not run", async () => {
  await withFixture(async (f) => {
    const ran = f.mark("ran");
    const result = await f.apply([
      { id: "act", type: "action", command: ["touch", ran], verify: ["true"] },
    ]);
    assertEquals(result.outcome, "applied", problems(result));
    assertEquals(change(result, "act"), "unchanged");
    assertEquals(await exists(ran), false, "the command ran although verify was satisfied");
  });
});

Deno.test("verify unsatisfied: the command runs, verify passes, updated; then unchanged", async () => {
  await withFixture(async (f) => {
    const done = f.mark("done");
    const runs = f.mark("runs");
    const decl = [{
      id: "act",
      type: "action",
      command: sh(`echo run >> '${runs}'; touch '${done}'`),
      verify: ["test", "-e", done],
    }];
    const first = await f.apply(decl);
    assertEquals(first.outcome, "applied", problems(first));
    assertEquals(change(first, "act"), "updated");
    assert(await exists(done));
    const second = await f.apply(decl);
    assertEquals(change(second, "act"), "unchanged");
    assertEquals(await Deno.readTextFile(runs), "run\n", "ran once");
    assertEquals(
      (await f.store()).map(({ id, type, created }) => ({ id, type, created })),
      [{ id: "act", type: "action", created: false }],
    );
    // Leaving the declaration: what it did stays.
    const left = await f.apply([]);
    assertEquals(change(left, "act"), "forgotten");
    assert(await exists(done));
  });
});

Deno.test("a command that exits 0 while verify still fails fails with both outputs", async () => {
  await withFixture(async (f) => {
    const result = await f.apply([{
      id: "act",
      type: "action",
      command: sh("echo command-said-out; echo command-said-err >&2"),
      verify: sh("echo verify-said-out; echo verify-said-err >&2; exit 4"),
    }]);
    assertEquals(result.outcome, "failed");
    assertEquals([result.applied, result.total], [0, 1]);
    const message = problems(result);
    assertStringIncludes(message, "exited 0 but the action is not done");
    assertStringIncludes(message, "still exits 4");
    for (
      const said of ["command-said-out", "command-said-err", "verify-said-out", "verify-said-err"]
    ) {
      assertStringIncludes(message, said);
    }
  });
});

Deno.test("a failed command's problem carries its argv, exit code and stderr tail", async () => {
  await withFixture(async (f) => {
    const result = await f.apply([{
      id: "act",
      type: "action",
      command: sh("echo early >&2; echo the-real-reason >&2; exit 7"),
      verify: ["false"],
    }]);
    assertEquals(result.outcome, "failed");
    const message = problems(result);
    assertStringIncludes(message, `sh -c "echo early >&2; echo the-real-reason >&2; exit 7"`);
    assertStringIncludes(message, "exited with code 7");
    assertStringIncludes(message, "the-real-reason");
  });
});

Deno.test("a verify that cannot be run fails the action, and the command does not run", async () => {
  await withFixture(async (f) => {
    const ran = f.mark("ran");
    const result = await f.apply([
      { id: "act", type: "action", command: ["touch", ran], verify: ["/no/such/verify"] },
    ]);
    assertEquals(result.outcome, "failed");
    assertStringIncludes(problems(result), "Verify could not be run");
    assertStringIncludes(problems(result), "/no/such/verify");
    assertEquals(await exists(ran), false);
  });
});

Deno.test("a dry run runs verify only", async () => {
  await withFixture(async (f) => {
    const ran = f.mark("ran");
    const verified = f.mark("verified");
    const result = await f.apply([{
      id: "act",
      type: "action",
      command: ["touch", ran],
      // Writes outside what it checks only to prove it ran; a real verify changes nothing.
      verify: sh(`touch '${verified}'; test -e '${ran}'`),
    }], { dryRun: true });
    assertEquals(result.outcome, "applied", problems(result));
    assertEquals(result.dryRun, true);
    assertEquals(change(result, "act"), "updated");
    assert(await exists(verified), "verify ran");
    assertEquals(await exists(ran), false, "the command ran in a dry run");
  });
});

Deno.test("in: command and verify run inside a running container", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    await startContainer(name);
    // Unique, so a command wrongly run on the host leaves a file no other run can mistake.
    const inside = `/tmp/${name}`;
    const decl = [{
      id: "act",
      type: "action",
      in: name,
      command: sh(`echo inside > ${inside}`),
      verify: sh(`test -e ${inside}`),
    }];
    const first = await f.apply(decl);
    assertEquals(first.outcome, "applied", problems(first));
    assertEquals(change(first, "act"), "updated");
    const out = await run(["podman", "exec", name, "cat", inside]);
    assertEquals(out.stdout, "inside\n");
    assertEquals(await exists(inside), false, "ran on the host, not inside");
    assertEquals(change(await f.apply(decl), "act"), "unchanged");
  });
});

Deno.test("in: a verify the container cannot run fails, and the command does not run", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    await startContainer(name);
    // Unique, so a command wrongly run on the host leaves a file no other run can mistake.
    const inside = `/tmp/${name}`;
    const result = await f.apply([{
      id: "act",
      type: "action",
      in: name,
      command: sh(`echo ran > ${inside}`),
      verify: ["no-such-program-here"],
    }]);
    assertEquals(result.outcome, "failed");
    assertStringIncludes(problems(result), "Verify could not be run");
    assertStringIncludes(problems(result), `podman exec ${name} no-such-program-here`);
    const read = await run(["podman", "exec", name, "cat", inside], { allowFailure: true });
    assert(read.code !== 0, "the command ran although verify could not");
  });
});

Deno.test("in: a missing container fails naming it", async () => {
  await withFixture(async (f) => {
    const name = uniqueName("meshac-missing");
    const result = await f.apply([
      { id: "act", type: "action", in: name, command: ["true"], verify: ["false"] },
    ]);
    assertEquals(result.outcome, "failed");
    assertStringIncludes(problems(result), `Container "${name}"`);
    assertStringIncludes(problems(result), "does not exist");
  });
});

Deno.test("in: a dry run before the container is made says the action would run", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const result = await f.apply([
      {
        id: "box",
        type: "container",
        name,
        image: await pinnedBusybox(),
        args: ["--label", TEST_LABEL],
        command: sh("trap 'exit 0' TERM; while true; do sleep 1; done"),
      },
      { id: "act", type: "action", in: name, command: ["true"], verify: ["false"] },
    ], { dryRun: true });
    assertEquals(result.outcome, "applied", problems(result));
    assertEquals(change(result, "box"), "created");
    assertEquals(change(result, "act"), "updated");
  });
});

Deno.test("resources apply in order and stop at the first failure: applied 2 of 4", async () => {
  await withFixture(async (f) => {
    const name = f.name();
    const result = await f.apply([
      { id: "dir", type: "directory", path: `${f.dir}/app`, mode: "0755" },
      {
        id: "box",
        type: "container",
        name,
        image: await pinnedBusybox(),
        args: ["--label", TEST_LABEL],
        command: sh("trap 'exit 0' TERM; while true; do sleep 1; done"),
      },
      { id: "act", type: "action", in: name, command: ["false"], verify: ["false"] },
      { id: "after", type: "file", path: `${f.dir}/app/after`, content: "x\n", mode: "0644" },
    ]);
    assertEquals(result.outcome, "failed");
    assertEquals([result.applied, result.total], [2, 4]);
    assertEquals(result.changes.map((c) => [c.id, c.change]), [["dir", "created"], [
      "box",
      "created",
    ]]);
    assertEquals(result.problems.map((p) => p.id), ["act"]);
    assertStringIncludes(problems(result), `podman exec ${name} false`);
    assertEquals(await exists(`${f.dir}/app/after`), false, "applied past the failure");
    assertEquals(
      (await f.store()).map(({ id, type, created }) => ({ id, type, created })),
      [{ id: "dir", type: "directory", created: true }, {
        id: "box",
        type: "container",
        created: true,
      }],
    );
  });
});
