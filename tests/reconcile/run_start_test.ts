/**
 * When `mesh-reconcile run` asks its first question: podman is asked (reconcile/observe/start.ts)
 * only once the whole input is accepted (the arguments, the registry, the output paths), never
 * for input it then refuses (a never-used podman would create its storage), and what it spawned
 * early is counted in `subprocesses` like the rest. A fake `podman` on `PATH` records each call.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { PODMAN_INSPECT_FORMAT } from "../../reconcile/observe/boot.ts";

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

Deno.test("run of a valid registry loads no zod: its registry and podman's outputs are read by plain checks", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-run-nozod-" });
  try {
    const calls = `${dir}/calls`;
    await Deno.mkdir(`${dir}/bin`);
    // podman ps lists one running container; its inspect (one JSON object a line) says `always`.
    const ps = JSON.stringify([{
      Id: "abc123",
      Names: ["web"],
      Image: "localhost/web:1",
      Labels: { app: "web" },
      Ports: [{ host_ip: "127.0.0.1", host_port: 18080, container_port: 80, protocol: "tcp" }],
      State: "running",
      ExitCode: 0,
    }]);
    const inspect = JSON.stringify({
      Name: "web",
      State: { Status: "running" },
      HostConfig: { RestartPolicy: { Name: "always" } },
      Config: { Labels: null },
    });
    await Deno.writeTextFile(
      `${dir}/bin/podman`,
      `#!/bin/sh\necho "$*" >> '${calls}'\n` +
        `case "$1" in ps) echo '${ps}';; container) echo '${inspect}';; esac\n`,
    );
    await Deno.chmod(`${dir}/bin/podman`, 0o755);
    await Deno.writeTextFile(
      `${dir}/registry.yaml`,
      "version: 1\naccounts: [root]\nservices:\n  web:\n    kind: service\n    user: root\n" +
        "    container: web\n    port: 18080\n",
    );
    const root = new URL("../../", import.meta.url).pathname;
    await Deno.writeTextFile(
      `${dir}/main.ts`,
      `import { main } from "${root}reconcile/main.ts";\n` +
        `const code = await main(Deno.args);\n` +
        `console.error(JSON.stringify({ zod: "__zod_globalConfig" in globalThis }));\n` +
        `Deno.exit(code);\n`,
    );
    const run = async (registry: string) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--config", `${root}deno.json`, `${dir}/main.ts`, "run"]
          .concat(["--registry", registry, "--caddy-admin", "none", "--json"]),
        env: { PATH: `${dir}/bin:${Deno.env.get("PATH")}` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      const last = stderr.trim().split("\n").at(-1)!;
      return { stdout: new TextDecoder().decode(out.stdout), stderr, zod: JSON.parse(last).zod };
    };
    const r = await run(`${dir}/registry.yaml`);
    const result = JSON.parse(r.stdout) as {
      sources: { source: string; state: string }[];
      observed: { containers: number };
    };
    // podman was asked and read: the container listed, its inspect read by the boot view.
    assertEquals(await callsIn(calls), [
      "ps --all --format json",
      `container inspect --format ${PODMAN_INSPECT_FORMAT} abc123`,
    ]);
    assertEquals(result.observed.containers, 1, r.stderr);
    for (const source of ["podman", "boot-podman"]) {
      assertEquals(result.sources.find((s) => s.source === source)?.state, "observed", r.stdout);
    }
    assertEquals(r.zod, false, "a run of a valid registry loaded zod");
    // An output the plain check refuses is left to zod, which says what is wrong.
    await Deno.writeTextFile(
      `${dir}/bin/podman`,
      `#!/bin/sh\ncase "$1" in ps) echo '[{"Id": 1}]';; esac\n`,
    );
    const bad = await run(`${dir}/registry.yaml`);
    const failed = (JSON.parse(bad.stdout) as { sources: { source: string; detail: string }[] })
      .sources.find((s) => s.source === "podman");
    assertStringIncludes(failed?.detail ?? "", "podman ps --all --format json: Invalid input");
    assertStringIncludes(failed?.detail ?? "", "expected string");
    assertEquals(bad.zod, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
