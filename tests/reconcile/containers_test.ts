import { assert, assertEquals } from "../support/assert.ts";
import { observeContainers } from "../../reconcile/observe/containers.ts";
import { readAccounts } from "../../lib/accounts.ts";
import {
  ensureImage,
  ensureRootlessAccount,
  fakeProgram,
  freePort,
  IMAGE,
  removeContainer,
  ROOTLESS_ACCOUNT,
  startContainer,
  uniqueName,
} from "../support/mod.ts";

Deno.test("a running podman container is observed with its image, labels and published ports", async () => {
  const name = uniqueName("obs");
  const port = freePort();
  await startContainer(name, {
    publish: [{ host: port, container: 8080 }],
    labels: { role: "web" },
  });
  try {
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.sources.map((s) => [s.source, s.account, s.state]), [[
      "podman",
      "root",
      "observed",
    ]]);
    const c = seen.containers.find((x) => x.name === name);
    assert(c, `${name} not observed`);
    assertEquals(c.account, "root");
    assertEquals(c.runtime, "podman");
    assertEquals(c.image, IMAGE);
    assertEquals(c.labels.role, "web");
    assertEquals(c.ports, [{
      hostIp: "127.0.0.1",
      hostPort: port,
      containerPort: 8080,
      protocol: "tcp",
    }]);
  } finally {
    await removeContainer(name);
  }
});

Deno.test("a stopped container is not running", async () => {
  const name = uniqueName("stopped");
  await startContainer(name);
  try {
    await new Deno.Command("podman", {
      args: ["stop", "-t", "0", name],
      stdout: "null",
      stderr: "null",
    }).output();
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.containers.filter((c) => c.name === name), []);
  } finally {
    await removeContainer(name);
  }
});

Deno.test("an account that does not exist fails its source, naming it", async () => {
  const seen = await observeContainers(["no-such-account"], {
    passwd: await readAccounts(),
    runtimes: ["podman"],
  });
  assertEquals(seen.sources.map((s) => s.state), ["failed"]);
  assert(seen.sources[0]!.detail.includes('"no-such-account"'));
});

Deno.test("a runtime that does not answer fails its source with argv, exit code and stderr", async () => {
  const dir = await fakeProgram("podman", 125, "Error: cannot open database: permission denied");
  const path = Deno.env.get("PATH")!;
  Deno.env.set("PATH", `${dir}:${path}`);
  try {
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.sources.map((s) => s.state), ["failed"]);
    const detail = seen.sources[0]!.detail;
    assert(detail.includes("podman ps --all --format json"), detail);
    assert(detail.includes("exited with code 125"), detail);
    assert(detail.includes("cannot open database"), detail);
    assertEquals(seen.containers, []);
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a runtime that is not installed is absent, not failed, and says so", async () => {
  const path = Deno.env.get("PATH")!;
  const empty = await Deno.makeTempDir();
  // env and runuser are still found; podman and docker are not.
  Deno.env.set("PATH", `${empty}:/usr/sbin:/sbin`);
  try {
    const seen = await observeContainers(["root"], { passwd: await readAccounts() });
    assertEquals(seen.sources.map((s) => [s.source, s.state]), [["podman", "absent"], [
      "docker",
      "absent",
    ]]);
    assert(seen.sources[0]!.detail.includes("not installed"));
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(empty);
  }
});

Deno.test("docker with no daemon socket is absent, with the socket named, and is not run", async () => {
  const saved = Deno.env.get("DOCKER_HOST");
  // A docker CLI that fails if it is run at all: absence is established from the socket.
  const dir = await fakeProgram("docker", 99, "this docker must not be run");
  const path = Deno.env.get("PATH")!;
  Deno.env.set("PATH", `${dir}:${path}`);
  Deno.env.set("DOCKER_HOST", "unix:///nonexistent/docker.sock");
  try {
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["docker"],
    });
    assertEquals(seen.sources.map((s) => s.state), ["absent"]);
    assert(seen.sources[0]!.detail.includes("/nonexistent/docker.sock"), seen.sources[0]!.detail);
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
    if (saved === undefined) Deno.env.delete("DOCKER_HOST");
    else Deno.env.set("DOCKER_HOST", saved);
  }
});

Deno.test("a rootless account is asked as that account, and its containers are its own", async () => {
  const podman = await ensureRootlessAccount();
  const name = uniqueName("rootless");
  // Rootless networking needs /dev/net/tun, which these VMs do not grant: no network.
  await podman(["run", "-d", "--name", name, "--network", "none", IMAGE, "sleep", "3600"]);
  try {
    const seen = await observeContainers(["root", ROOTLESS_ACCOUNT], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.sources.map((s) => [s.account, s.state]), [["root", "observed"], [
      ROOTLESS_ACCOUNT,
      "observed",
    ]]);
    const found = seen.containers.filter((c) => c.name === name);
    assertEquals(found.map((c) => c.account), [ROOTLESS_ACCOUNT]);
  } finally {
    await podman(["rm", "-f", "-t", "0", name]).catch(() => "");
  }
});

Deno.test("an account that never used podman runs nothing, and is not made to", async () => {
  const account = "meshnopodman";
  const id = await new Deno.Command("id", { args: ["-u", account], stdout: "null", stderr: "null" })
    .output();
  if (!id.success) {
    const add = await new Deno.Command("useradd", { args: ["--create-home", account] }).output();
    assert(add.success, new TextDecoder().decode(add.stderr));
  }
  // A podman that fails if it is run: the verdict must come from the account's missing storage.
  const dir = await fakeProgram("podman", 99, "this podman must not be run");
  const path = Deno.env.get("PATH")!;
  Deno.env.set("PATH", `${dir}:${path}`);
  try {
    const seen = await observeContainers([account], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.sources.map((s) => s.state), ["observed"]);
    assert(seen.sources[0]!.detail.includes("never used podman"), seen.sources[0]!.detail);
    assertEquals(seen.containers, []);
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("P: a published port range is every port of the range", async () => {
  const name = uniqueName("range");
  const port = freePort();
  await ensureImage();
  const r = await new Deno.Command("podman", {
    args: [
      "run",
      "-d",
      "--name",
      name,
      "--label",
      "mesh.test=1",
      "-p",
      `127.0.0.1:${port}-${port + 1}:8080-8081`,
      IMAGE,
      "sleep",
      "3600",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert(r.success, new TextDecoder().decode(r.stderr));
  try {
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    const c = seen.containers.find((x) => x.name === name);
    assertEquals(c?.ports.map((p) => [p.hostPort, p.containerPort]), [
      [port, 8080],
      [port + 1, 8081],
    ]);
  } finally {
    await removeContainer(name);
  }
});

Deno.test("P: podman exiting 0 but logging an error: the error is kept in the detail", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-fake-podman-" });
  await Deno.writeTextFile(
    `${dir}/podman`,
    `#!/bin/sh\necho '[]'\necho 'time="2026" level=error msg="no subuid ranges found for user"' >&2\n`,
  );
  await Deno.chmod(`${dir}/podman`, 0o755);
  const path = Deno.env.get("PATH")!;
  Deno.env.set("PATH", `${dir}:${path}`);
  try {
    const seen = await observeContainers(["root"], {
      passwd: await readAccounts(),
      runtimes: ["podman"],
    });
    assertEquals(seen.sources.map((s) => s.state), ["observed"]);
    assert(
      seen.sources[0]!.detail.includes("podman said: no subuid ranges found for user"),
      seen.sources[0]!.detail,
    );
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
  }
});
