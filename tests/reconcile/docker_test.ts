/**
 * The docker observer against a real Docker daemon: a private `dockerd` (Debian's `docker.io`,
 * installed with `apt-get install --no-install-recommends docker.io`) on its own socket, data
 * root, exec root and pidfile under a temporary directory, with no iptables rules, no default
 * bridge and no sysctl changes, so it neither needs nor touches the host's firewall or podman.
 * The image is imported from Debian's busybox-static (nothing can be pulled here); the published
 * port goes through docker's userland proxy on its own bridge network, removed afterwards.
 *
 * A machine where dockerd cannot start fails this test, with the daemon's log: it is not skipped.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { freePort, IMAGE, TEST_LABEL, uniqueName } from "../support/mod.ts";
import { run } from "../../lib/command.ts";
import { readAccounts } from "../../lib/accounts.ts";
import {
  type ContainerObservation,
  leftoverState,
  observeContainers,
} from "../../reconcile/observe/containers.ts";

/** A dockerd started by this test. */
interface Dockerd {
  socket: string;
  host: string;
  pid: number;
  child: Deno.ChildProcess;
  /** The daemon's own log (stdout and stderr). */
  log(): Promise<string>;
}

const DOCKERD_START_MS = 30_000;
const DOCKERD_STOP_MS = 20_000;

/**
 * Starts dockerd with everything it writes under `dir` and waits until `docker info` answers.
 * The trust key (`/etc/docker/key.json` by default in 20.10) is moved there through the config
 * file, which has no command-line flag in Debian's build.
 *
 * @throws {Error} with the daemon's log when it does not answer in time or exits.
 */
async function startDockerd(dir: string): Promise<Dockerd> {
  const socket = `${dir}/docker.sock`;
  const host = `unix://${socket}`;
  await Deno.writeTextFile(
    `${dir}/daemon.json`,
    JSON.stringify({ "deprecated-key-path": `${dir}/key.json` }),
  );
  const argv = [
    "dockerd",
    "--host",
    host,
    "--config-file",
    `${dir}/daemon.json`,
    "--data-root",
    `${dir}/data`,
    "--exec-root",
    `${dir}/exec`,
    "--pidfile",
    `${dir}/docker.pid`,
    // No firewall rules, no docker0, no sysctl writes: published ports go through
    // docker-proxy, which needs none of them.
    "--iptables=false",
    "--ip6tables=false",
    "--ip-forward=false",
    "--ip-masq=false",
    "--bridge=none",
  ];
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("sh", {
      args: ["-c", 'log="$1"; shift; exec "$@" >>"$log" 2>&1', "sh", `${dir}/dockerd.log`, ...argv],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (cause) {
    throw new Error(`Cannot start dockerd: ${(cause as Error).message}`, { cause });
  }
  const daemon: Dockerd = {
    socket,
    host,
    pid: child.pid,
    child,
    log: () => Deno.readTextFile(`${dir}/dockerd.log`).catch(() => ""),
  };
  let exited: Deno.CommandStatus | undefined;
  child.status.then((s) => exited = s);
  const deadline = Date.now() + DOCKERD_START_MS;
  let last = "";
  while (Date.now() < deadline && exited === undefined) {
    const info = await run(["docker", "--host", host, "info", "--format", "{{.ServerVersion}}"], {
      allowFailure: true,
      timeoutMs: 5_000,
    }).catch((e) => ({ code: -1, stdout: "", stderr: String(e) }));
    if (info.code === 0) return daemon;
    last = info.stderr.trim();
    await new Promise((r) => setTimeout(r, 100));
  }
  const log = (await daemon.log()).split("\n").slice(-40).join("\n");
  if (exited === undefined) {
    child.kill("SIGKILL");
    await child.status;
  }
  throw new Error(
    (exited
      ? `dockerd exited with code ${exited.code} before answering on ${host}`
      : `dockerd did not answer on ${host} within ${DOCKERD_START_MS} ms (killed)`) +
      ` (it comes from "apt-get install --no-install-recommends docker.io").` +
      ` Last "docker info": ${last}\ndockerd log:\n${log}`,
  );
}

/** Stops dockerd with `signal` (SIGKILL after {@linkcode DOCKERD_STOP_MS}) and reaps it. */
async function stopDockerd(daemon: Dockerd, signal: Deno.Signal = "SIGTERM"): Promise<void> {
  try {
    daemon.child.kill(signal);
  } catch { /* already gone */ }
  const timer = setTimeout(() => {
    try {
      daemon.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, DOCKERD_STOP_MS);
  await daemon.child.status;
  clearTimeout(timer);
}

/** Pids of live processes whose command line mentions `dir` (containerd, its shims). */
function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      const state = /^State:\s+(\S)/m.exec(Deno.readTextFileSync(`/proc/${entry.name}/status`));
      if (cmdline.includes(dir) && state?.[1] !== "Z") pids.push(Number(entry.name));
    } catch { /* exited meanwhile */ }
  }
  return pids;
}

/** Mount points at or under `dir`, deepest first (a killed dockerd leaves its data root bound). */
function mountsUnder(dir: string): string[] {
  return Deno.readTextFileSync("/proc/self/mounts").split("\n")
    .map((line) => (line.split(" ")[1] ?? "").replace(/\\040/g, " "))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

async function waitFor(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Removes whatever a daemon (stopped or killed) left under `dir`: runc containers, containerd
 * and shims, mounts, the bridge, then the directory itself.
 */
async function cleanUp(dir: string, bridge: string): Promise<void> {
  const runcRoot = `${dir}/exec/runtime-runc/moby`;
  const list = await run(["runc", "--root", runcRoot, "list", "--quiet"], { allowFailure: true })
    .catch(() => undefined);
  for (const id of list?.code === 0 ? list.stdout.split("\n").filter(Boolean) : []) {
    await run(["runc", "--root", runcRoot, "delete", "--force", id], { allowFailure: true });
  }
  for (const pid of processesUnder(dir)) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
  await waitFor(`processes of ${dir} to exit`, () => processesUnder(dir).length === 0)
    .catch(() => {});
  for (const mount of mountsUnder(dir)) {
    await run(["umount", "--lazy", mount], { allowFailure: true });
  }
  await run(["ip", "link", "delete", bridge], { allowFailure: true });
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/** Makes `tag` in the daemon from a busybox rootfs, as `ensureImage` does for podman. */
async function importImage(host: string, dir: string, tag: string): Promise<void> {
  await Deno.mkdir(`${dir}/rootfs/bin`, { recursive: true });
  await Deno.mkdir(`${dir}/rootfs/tmp`, { recursive: true });
  await Deno.copyFile("/bin/busybox", `${dir}/rootfs/bin/busybox`);
  await Deno.chmod(`${dir}/rootfs/bin/busybox`, 0o755);
  for (const applet of ["sh", "sleep", "httpd"]) {
    await Deno.symlink("busybox", `${dir}/rootfs/bin/${applet}`);
  }
  await run(["tar", "-C", `${dir}/rootfs`, "-cf", `${dir}/rootfs.tar`, "."]);
  await run([
    "docker",
    "--host",
    host,
    "import",
    "--change",
    'CMD ["/bin/sh"]',
    `${dir}/rootfs.tar`,
    tag,
  ]);
}

/** Observes root's docker with `DOCKER_HOST` set to `host`. */
async function observeDocker(host: string): Promise<ContainerObservation> {
  Deno.env.set("DOCKER_HOST", host);
  return await observeContainers(["root"], {
    passwd: await readAccounts(),
    runtimes: ["docker"],
    timeoutMs: 30_000,
  });
}

Deno.test("a real dockerd's containers are observed; a stopped one is absent, a dead one failed", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-dockerd-" });
  const bridge = uniqueName("meshd"); // 14 characters: a Linux interface name holds 15
  const network = bridge;
  const savedHost = Deno.env.get("DOCKER_HOST");
  // dockerd 20.10 makes /run/docker/plugins whatever its exec root is.
  const hadRunDocker = await Deno.stat("/run/docker").then(() => true, () => false);
  let daemon: Dockerd | undefined;
  const name = uniqueName("mesh-docker");
  try {
    daemon = await startDockerd(dir);
    const { host, socket } = daemon;
    const docker = (...args: string[]) => run(["docker", "--host", host, ...args]);

    await importImage(host, dir, IMAGE);
    await docker(
      "network",
      "create",
      "--driver",
      "bridge",
      "--opt",
      `com.docker.network.bridge.name=${bridge}`,
      network,
    );
    const port = freePort();
    const [labelKey, labelValue] = TEST_LABEL.split("=") as [string, string];
    const started = await docker(
      "run",
      "--detach",
      "--name",
      name,
      "--network",
      network,
      "--label",
      TEST_LABEL,
      "--label",
      "mesh.role=web",
      "--publish",
      `127.0.0.1:${port}:8080`,
      IMAGE,
      "httpd",
      "-f",
      "-p",
      "8080",
    );
    const id = started.stdout.trim();

    await t.step("a running container is observed with its name, image, labels, port", async () => {
      const seen = await observeDocker(host);
      assertEquals(seen.sources, [{
        source: "docker",
        account: "root",
        state: "observed",
        method: "docker ps --all; docker inspect",
        detail: "1 running",
      }]);
      assertEquals(seen.containers, [{
        account: "root",
        runtime: "docker",
        name,
        id,
        image: IMAGE,
        labels: { [labelKey]: labelValue, "mesh.role": "web" },
        ports: [{ hostIp: "127.0.0.1", hostPort: port, containerPort: 8080, protocol: "tcp" }],
      }]);
      // The port is real: busybox httpd answers through docker-proxy (404: no index page).
      const response = await fetch(`http://127.0.0.1:${port}/`);
      await response.body?.cancel();
      assertEquals(response.status, 404);
    });

    await t.step("P: a paused container is not running", async () => {
      await docker("pause", name);
      const seen = await observeDocker(host);
      assertEquals(seen.containers, []);
      assertEquals(seen.leftovers.map((c) => [c.name, c.state]), [[name, "paused"]]);
      await docker("unpause", name);
    });

    await t.step("a stopped container is a leftover, with its exit code", async () => {
      await docker("stop", "--time", "0", name);
      const seen = await observeDocker(host);
      assertEquals(seen.containers, []);
      assertEquals(seen.leftovers.map((c) => [c.name, leftoverState(c)]), [[
        name,
        "exited with code 137",
      ]]);
      assertEquals(seen.sources.map((s) => s.detail), ["0 running, 1 not"]);
    });

    await docker("rm", "--force", name);
    await docker("network", "rm", network);

    await t.step("a daemon stopped cleanly removes its socket: absent", async () => {
      await stopDockerd(daemon!);
      const exists = await Deno.stat(socket).then(() => true, () => false);
      assert(!exists, `dockerd left ${socket} behind after SIGTERM`);
      const seen = await observeDocker(host);
      assertEquals(seen.containers, []);
      assertEquals(seen.sources.map((s) => [s.state, s.method, s.detail]), [
        ["absent", `stat ${socket}`, `no docker daemon socket at ${socket}`],
      ]);
    });

    // A socket that nobody answers is a daemon that should be there: its containers may still
    // run (containerd-shim outlives a killed dockerd), so this is failed, never absent.
    await t.step("a daemon that died leaves its socket, which nobody answers: failed", async () => {
      daemon = await startDockerd(dir);
      await stopDockerd(daemon, "SIGKILL");
      // Its containerd dies with it (parent-death signal); wait so nothing else answers.
      await waitFor("containerd to exit", () => processesUnder(dir).length === 0);
      assert((await Deno.stat(socket)).isSocket, `${socket} is not there after SIGKILL`);
      const seen = await observeDocker(host);
      assertEquals(seen.containers, []);
      assertEquals(seen.sources.length, 1);
      const status = seen.sources[0]!;
      assertEquals([status.source, status.account, status.state], ["docker", "root", "failed"]);
      assertEquals(status.method, `env DOCKER_HOST=${host} docker ps --all --quiet --no-trunc`);
      assertStringIncludes(status.detail, "exited with code 1");
      assertStringIncludes(status.detail, `Cannot connect to the Docker daemon at ${host}`);
    });
  } finally {
    if (savedHost === undefined) Deno.env.delete("DOCKER_HOST");
    else Deno.env.set("DOCKER_HOST", savedHost);
    if (daemon !== undefined) {
      await run(["docker", "--host", daemon.host, "rm", "--force", name], {
        allowFailure: true,
        timeoutMs: 20_000,
      }).catch(() => {});
      await run(["docker", "--host", daemon.host, "network", "rm", network], {
        allowFailure: true,
        timeoutMs: 20_000,
      }).catch(() => {});
      await stopDockerd(daemon);
    }
    await cleanUp(dir, bridge);
    if (!hadRunDocker) {
      // Only if empty: another daemon may have made it meanwhile.
      await Deno.remove("/run/docker/plugins").catch(() => {});
      await Deno.remove("/run/docker").catch(() => {});
    }
  }
});
