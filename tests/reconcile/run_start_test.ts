/**
 * When `mesh-reconcile run` asks its first question: podman is asked (reconcile/observe/start.ts)
 * only once the whole input is accepted (the arguments, the registry, the output paths), never
 * for input it then refuses (a never-used podman would create its storage), and what it spawned
 * early is counted in `subprocesses` like the rest. A fake `podman` on `PATH` records each call.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";

const REGISTRY = "version: 1\naccounts: [root]\nservices: {}\n";

/** A directory with a fake `podman` that appends its arguments to `calls` and lists nothing. */
async function fakePodman(dir: string): Promise<{ env: Record<string, string>; calls: string }> {
  const calls = `${dir}/calls`;
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(
    `${dir}/bin/podman`,
    `#!/bin/sh\necho "$*" >> '${calls}'\necho '[]'\n`,
  );
  await Deno.chmod(`${dir}/bin/podman`, 0o755);
  return { env: { PATH: `${dir}/bin:${Deno.env.get("PATH")}` }, calls };
}

async function callsIn(file: string): Promise<string[]> {
  try {
    return (await Deno.readTextFile(file)).split("\n").filter(Boolean);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

Deno.test("run asks podman nothing for input it refuses, and counts the podman it asked early", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-run-start-" });
  try {
    const { env, calls } = await fakePodman(dir);
    const registry = `${dir}/registry.yaml`;
    await Deno.writeTextFile(registry, REGISTRY);
    await Deno.writeTextFile(
      `${dir}/bad.yaml`,
      "version: 1\naccounts: [root]\nservices:\n  a: {kind: daemon, colour: blue}\n",
    );
    const run = ["run", "--caddy-admin", "none", "--boot", "none"];
    const refused: [string[], string][] = [
      [[...run, "--registry", `${dir}/bad.yaml`], "colour"],
      [[...run, "--registry", `${dir}/missing.yaml`], "no such file"],
      [[...run, "--registry", registry, "--stamp", `${dir}/nope/stamp`], "does not exist"],
      [[...run, "--registry", registry, "--textfile", `${dir}/nope/m.prom`], "does not exist"],
      [[...run, "--registry", registry, "--stamp", registry], "same file as --registry"],
      [[...run, "--registry", registry, "--interval", "15m"], "--interval is only used"],
      [[...run, "--registry", registry, "--result", `${dir}/result.json`], "--result needs"],
      [[...run, "--registry", registry, "--behind-days", "3"], "--behind-days needs --repo"],
      [
        [...run, "--registry", registry, "--repo", `${dir}/bin`, "--state-dir", `${dir}/no`],
        "--state-dir",
      ],
      [[...run, "--registry", registry, "--repo", dir], "inside --repo"],
      [[...run, "--registry", registry, "--timeout", "0s"], "--timeout"],
    ];
    for (const [args, said] of refused) {
      const r = await reconcileCli(args, env);
      assertEquals(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assertStringIncludes(r.stderr, said);
      assertEquals(await callsIn(calls), [], `podman was asked for: ${args.join(" ")}`);
    }
    // Accepted: podman is asked once per account, and that call is counted.
    const r = await reconcileCli([...run, "--registry", registry, "--json"], env);
    assert(r.code === 0 || r.code === 1, r.stderr);
    assertEquals(await callsIn(calls), ["ps --all --format json"]);
    assertEquals((JSON.parse(r.stdout) as { subprocesses: number }).subprocesses, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
