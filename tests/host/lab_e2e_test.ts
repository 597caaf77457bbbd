/**
 * The debian host in the lab machines, end to end: one declaration that installs a Debian
 * package, writes a service definition, enables and starts it, runs a container from an image
 * pinned by digest and runs an action with a verify. First apply converges; the second changes
 * nothing; drift made by hand (service stopped and disabled, file mode widened, container
 * removed) is restored by the third. The same on systemd and on OpenRC.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab, type LabKind, type LabMachine, pinnedBusybox } from "../lab/mod.ts";

interface Result {
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; message: string }[];
}

async function apply(
  m: LabMachine,
  resources: unknown[],
): Promise<Result & { code: number | null; stderr: string }> {
  const text = JSON.stringify({ version: 1, resources });
  await m.exec(["sh", "-c", 'printf %s "$1" > /root/declaration.json', "sh", text]);
  const r = await m.host("systems/debian/main.ts", ["apply", "/root/declaration.json", "--json"], {
    allowFailure: true,
  });
  let parsed: Result;
  try {
    parsed = JSON.parse(r.stdout) as Result;
  } catch {
    throw new Error(`apply printed no result (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...parsed, code: r.code, stderr: r.stderr };
}

/** Asserts, by asking the machine's own init, that the demo service runs and starts at boot. */
async function assertRunningAtBoot(m: LabMachine, kind: LabKind): Promise<void> {
  if (kind === "systemd") {
    const ask = async (verb: string) =>
      (await m.exec(["systemctl", verb, "meshdemo.service"], { allowFailure: true })).stdout.trim();
    assertEquals(await ask("is-active"), "active");
    assertEquals(await ask("is-enabled"), "enabled");
  } else {
    const status = await m.exec(["rc-service", "meshdemo", "status"], { allowFailure: true });
    assertStringIncludes(status.stdout, "started");
    assertStringIncludes((await m.exec(["rc-update", "show", "default"])).stdout, "meshdemo");
  }
}

const changes = (r: Result) => Object.fromEntries(r.changes.map((c) => [c.id, c.change]));

const UNIT = `[Unit]
Description=mesh lab demo

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`;

const INIT_SCRIPT = `#!/sbin/openrc-run
description="mesh lab demo"
command=/bin/sleep
command_args=infinity
command_background=yes
pidfile=/run/meshdemo.pid
`;

function declaration(kind: LabKind, image: string) {
  return [
    { id: "hello", type: "package", package: "hello" },
    kind === "systemd"
      ? {
        id: "unit",
        type: "file",
        path: "/etc/systemd/system/meshdemo.service",
        content: UNIT,
        mode: "0644",
      }
      : {
        id: "unit",
        type: "file",
        path: "/etc/init.d/meshdemo",
        content: INIT_SCRIPT,
        mode: "0755",
      },
    {
      id: "demo",
      type: "service",
      unit: kind === "systemd" ? "meshdemo.service" : "meshdemo",
      state: "running",
      boot: "enabled",
    },
    { id: "web", type: "container", name: "meshweb", image, command: ["sleep", "3600"] },
    {
      id: "ready",
      type: "action",
      command: ["sh", "-c", "echo ready > /tmp/ready"],
      verify: ["sh", "-c", "test -f /tmp/ready"],
      in: "meshweb",
    },
  ];
}

for (const kind of ["systemd", "openrc"] as const) {
  Deno.test({
    name: `the debian host converges a whole machine in the ${kind} lab, and restores drift`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const image = await pinnedBusybox();
      const m = await bootLab(kind);
      try {
        const resources = declaration(kind, image);
        const first = await apply(m, resources);
        assertEquals(
          [first.code, first.outcome, first.applied, first.total],
          [0, "applied", 5, 5],
          first.stderr + JSON.stringify(first.problems),
        );
        assertEquals(changes(first), {
          hello: "created",
          unit: "created",
          demo: "updated",
          web: "created",
          ready: "updated",
        });
        assertStringIncludes((await m.exec(["hello"])).stdout, "Hello, world!");
        await assertRunningAtBoot(m, kind);
        const inspect = await m.exec([
          "podman",
          "inspect",
          "meshweb",
          "--format",
          "{{.State.Running}} {{.HostConfig.RestartPolicy.Name}}",
        ]);
        assertEquals(inspect.stdout.trim(), "true always");
        assertEquals(
          (await m.exec(["podman", "exec", "meshweb", "cat", "/tmp/ready"])).stdout,
          "ready\n",
        );

        const second = await apply(m, resources);
        assertEquals(second.code, 0, second.stderr);
        assertEquals(new Set(second.changes.map((c) => c.change)), new Set(["unchanged"]));

        // Drift, by hand.
        const path = kind === "systemd"
          ? "/etc/systemd/system/meshdemo.service"
          : "/etc/init.d/meshdemo";
        if (kind === "systemd") {
          await m.exec(["systemctl", "stop", "meshdemo.service"]);
          await m.exec(["systemctl", "disable", "meshdemo.service"]);
        } else {
          await m.exec(["rc-service", "meshdemo", "stop"]);
          await m.exec(["rc-update", "del", "meshdemo", "default"]);
        }
        await m.exec(["chmod", "0666", path]);
        await m.exec(["podman", "rm", "-f", "-t", "0", "meshweb"]);

        const third = await apply(m, resources);
        assertEquals(
          [third.code, third.outcome],
          [0, "applied"],
          third.stderr + JSON.stringify(third.problems),
        );
        assertEquals(changes(third), {
          hello: "unchanged",
          unit: "updated",
          demo: "updated",
          web: "created",
          ready: "updated",
        });
        assertEquals(
          (await m.exec(["stat", "-c", "%a", path])).stdout.trim(),
          kind === "systemd" ? "644" : "755",
        );
        await assertRunningAtBoot(m, kind);
        assertEquals(
          (await m.exec(["podman", "exec", "meshweb", "cat", "/tmp/ready"])).stdout,
          "ready\n",
        );

        // Bad input: the apply stops at the first failed resource; what came before is kept.
        const bad = [
          ...resources,
          { id: "a", type: "directory", path: "/srv/a", mode: "0755" },
          { id: "nope", type: "package", package: "mesh-no-such-package" },
          { id: "b", type: "directory", path: "/srv/b", mode: "0755" },
        ];
        const failed = await apply(m, bad);
        assertEquals([failed.code, failed.outcome, failed.applied, failed.total], [
          1,
          "failed",
          6,
          8,
        ]);
        assertEquals(failed.problems.map((p) => p.id), ["nope"]);
        assertStringIncludes(failed.problems[0]!.message, "mesh-no-such-package");
        assert((await m.exec(["test", "-d", "/srv/a"], { allowFailure: true })).code === 0);
        assert(
          (await m.exec(["test", "-d", "/srv/b"], { allowFailure: true })).code !== 0,
          "stops at the failure",
        );
        const owned = await m.host("systems/debian/main.ts", ["owned", "--json"]);
        assert(owned.stdout.includes('"/srv/a"'), owned.stdout);
      } finally {
        await m.destroy();
      }
    },
  });
}
