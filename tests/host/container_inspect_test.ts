/**
 * The host's container inspect (resources/container/applier.ts `inspectContainers`) reads what the
 * runtime answers through lib/runtime_output.ts, the reader reconcile's boot view shares: a fake
 * runtime (a script answering `container inspect`) says what a real one would, and what no
 * runtime says.
 */

import { assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { inspectContainers, type Runtime } from "../../resources/container/applier.ts";
import { ResourceError } from "../../host/applier.ts";

/** A runtime whose `container inspect` prints `stdout` and `stderr` and exits `code`. */
async function fakeRuntime(dir: string, stdout: unknown, stderr = "", code = 0): Promise<Runtime> {
  const program = `${dir}/podman`;
  await Deno.writeTextFile(`${dir}/out`, JSON.stringify(stdout));
  await Deno.writeTextFile(
    program,
    `#!/bin/sh\ncat '${dir}/out'\nprintf '%s' '${stderr}' >&2\nexit ${code}\n`,
  );
  await Deno.chmod(program, 0o755);
  return { program: program as Runtime["program"], version: "4.3.1", why: "fake" };
}

const WHOLE = {
  Id: "abc123",
  Name: "/web",
  RestartCount: 2,
  State: { Status: "running", Running: true, Paused: false, Restarting: false, ExitCode: 0 },
  Config: { Labels: { "mesh.id": "w" }, Image: "x@sha256:00", Env: ["A=b"] },
  HostConfig: { RestartPolicy: { Name: "always", MaximumRetryCount: 0 } },
};

Deno.test("inspect: the runtime's answer is read field by field; a name it lacks is absent", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const runtime = await fakeRuntime(dir, [WHOLE], "Error: no such container gone", 125);
    const found = await inspectContainers(runtime, ["web", "gone"]);
    assertEquals([...found.keys()], ["web"]);
    assertEquals(found.get("web"), {
      id: "abc123",
      name: "web",
      running: true,
      status: "running",
      paused: false,
      restarting: false,
      restartCount: 2,
      exitCode: 0,
      error: "",
      labels: { "mesh.id": "w" },
      restartPolicy: "always",
      image: "x@sha256:00",
      env: ["A=b"],
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("inspect: an answer that is not a container inspect fails naming the schema's problem", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { Name: _, ...nameless } = WHOLE;
    for (const answer of [{ Name: "web" }, [nameless]]) {
      const runtime = await fakeRuntime(dir, answer);
      const error = await assertRejects(() => inspectContainers(runtime, ["web"]), ResourceError);
      assertStringIncludes(error.message, "answered (Invalid input: expected");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
