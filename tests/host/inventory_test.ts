/**
 * The inventory, for real on this machine and against fake programs for what it cannot show.
 *
 * This machine (verified by hand before writing the assertions): Debian 12, root, PID 1 is not
 * systemd (`systemctl is-system-running` prints "offline", exit 1), dpkg 1.21.22 and podman 4.3.1
 * installed, the docker CLI installed with no daemon, nft and iptables usable as root, Debian's
 * `pacman-package-manager` installed with an empty database, no rc-status, no apk.
 *
 * The fakes are small sh scripts put on PATH, each printing output recorded from the real tool;
 * the comment beside each names where the output comes from. A fake refuses (exit 99) any argv
 * other than the one the probe is meant to run, so a probe that changes its command fails here,
 * and refuses (exit 98) to run without `LC_ALL=C`, since the messages mapped are untranslated.
 *
 * @module
 */

import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { run } from "../../lib/command.ts";
import {
  DEFAULT_PROBE_TIMEOUT_MS,
  formatInventory,
  type Inventory,
  type ProbeFailure,
  takeInventory,
  type Verdict,
} from "../../host/inventory.ts";

/** One fake program: the argv it accepts and what it prints. */
interface Fake {
  /** The arguments (after the program name) the probe must pass. */
  args: string[];
  stdout?: string;
  stderr?: string;
  code?: number;
  /** Shell run instead of printing (e.g. to hang or to die of a signal). */
  script?: string;
}

/** Quotes `text` for sh, single-quoted. */
function sq(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * Writes the fakes into a temporary directory, puts it on PATH (`"only"`: PATH is that directory
 * alone, so every tool not faked is not on PATH; `"first"`: before the real PATH), runs `fn`, and
 * restores PATH and removes the directory whatever happens.
 */
async function withFakes<T>(
  fakes: Record<string, Fake>,
  path: "only" | "first",
  fn: (dir: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-inventory-" });
  const saved = Deno.env.get("PATH");
  try {
    for (const [name, fake] of Object.entries(fakes)) {
      const lines = [
        "#!/bin/sh",
        `if [ "$*" != ${sq(fake.args.join(" "))} ]; then`,
        `  printf 'fake ${name}: unexpected arguments: %s\\n' "$*" >&2`,
        "  exit 99",
        "fi",
        // The probes map untranslated messages, so they must ask for them.
        'if [ "$LC_ALL" != C ]; then',
        `  printf 'fake ${name}: LC_ALL is "%s", not C\\n' "$LC_ALL" >&2`,
        "  exit 98",
        "fi",
      ];
      if (fake.script !== undefined) lines.push(fake.script);
      if (fake.stdout !== undefined) lines.push(`printf '%s' ${sq(fake.stdout)}`);
      if (fake.stderr !== undefined) lines.push(`printf '%s' ${sq(fake.stderr)} >&2`);
      lines.push(`exit ${fake.code ?? 0}`);
      await Deno.writeTextFile(`${dir}/${name}`, `${lines.join("\n")}\n`);
      await Deno.chmod(`${dir}/${name}`, 0o755);
    }
    Deno.env.set("PATH", path === "only" || saved === undefined ? dir : `${dir}:${saved}`);
    return await fn(dir);
  } finally {
    if (saved === undefined) Deno.env.delete("PATH");
    else Deno.env.set("PATH", saved);
    await Deno.remove(dir, { recursive: true });
  }
}

/** Takes an inventory with the fakes alone on PATH. */
function inventoryWith(
  fakes: Record<string, Fake>,
  options: { timeoutMs?: number; openrcStateDir?: string } = {},
): Promise<Inventory> {
  return withFakes(fakes, "only", () => takeInventory(options));
}

/** The verdict for `tool`, failing the test (with the inventory) when there is none. */
function verdictOf(inventory: Inventory, tool: Verdict["tool"]): Verdict {
  const found = inventory.verdicts.filter((v) => v.tool === tool);
  assertEquals(found.length, 1, `Expected one verdict for ${tool}:\n${formatInventory(inventory)}`);
  return found[0]!;
}

/** The probe failure for `tool`, failing the test (with the inventory) when there is none. */
function failureOf(inventory: Inventory, tool: Verdict["tool"]): ProbeFailure {
  const found = inventory.failures.filter((f) => f.tool === tool);
  assertEquals(found.length, 1, `Expected one failure for ${tool}:\n${formatInventory(inventory)}`);
  return found[0]!;
}

// --- Recorded outputs ------------------------------------------------------------------------

const SYSTEMCTL_ARGS = ["is-system-running"];
const RC_STATUS_ARGS = ["--runlevel"];
const DPKG_QUERY_ARGS = ["-W", "-f", "${Status} ${Version}", "dpkg"];
const PACMAN_ARGS = ["-Q", "pacman"];
const APK_ARGS = ["info", "-e", "apk-tools"];
const DOCKER_ARGS = ["info", "--format", "{{.ServerVersion}}"];
const PODMAN_ARGS = ["info", "--format", "{{.Version.Version}}"];
const NFT_ARGS = ["list", "tables"];
const IPTABLES_ARGS = ["-S"];

/**
 * systemd 252 (Debian 252.38-1~deb12u1) on this machine, where PID 1 is not systemd. Its
 * `is-system-running` short-circuits to "offline" here (it cannot read /proc/1/root, so it takes
 * itself to be in a chroot); where it does not, it goes on to connect to the manager and fails in
 * `acquire_bus` with these two lines, recorded from `systemctl status` on this machine, which
 * takes the same path.
 */
const SYSTEMD_NOT_BOOTED: Fake = {
  args: SYSTEMCTL_ARGS,
  stderr: "System has not been booted with systemd as init system (PID 1). Can't operate.\n" +
    "Failed to connect to bus: Host is down\n",
  code: 1,
};

/** One state word as systemctl(1) "is-system-running output" lists it: exit 0 only for running. */
function systemctlSays(state: string): Fake {
  return { args: SYSTEMCTL_ARGS, stdout: `${state}\n`, code: state === "running" ? 0 : 1 };
}

/**
 * OpenRC 0.45.2 (Debian `openrc`, binaries extracted with `apt-get download` + `dpkg -x`, not
 * installed): `rc-status --runlevel` printed "sysinit" and exited 0 on this machine, which
 * OpenRC did not boot (no /run/openrc); and "default" inside a private mount namespace whose
 * /run/openrc/softlevel held "default".
 */
const RC_STATUS_SYSINIT: Fake = { args: RC_STATUS_ARGS, stdout: "sysinit\n" };
const RC_STATUS_DEFAULT: Fake = { args: RC_STATUS_ARGS, stdout: "default\n" };
/**
 * The refusal in OpenRC 0.45.2's /lib/rc/sh/openrc-run.sh (printed by eerror, " * " prefixed)
 * for a service run on a system OpenRC did not boot. rc-status itself does not print it (see
 * above), but a wrapper or a future version might: the probe maps it to absent.
 */
const RC_STATUS_NOT_BOOTED: Fake = {
  args: RC_STATUS_ARGS,
  stderr: " * You are attempting to run an openrc service on a\n" +
    " * system which openrc did not boot.\n" +
    " * You may be inside a chroot or you may have used\n" +
    " * another initialization system to boot this system.\n" +
    " * In this situation, you will get unpredictable results!\n" +
    " * \n" +
    " * If you really want to do this, issue the following command:\n" +
    " * touch /run/openrc/softlevel\n",
  code: 1,
};

/**
 * pacman v6.0.2 (Debian `pacman-package-manager` 6.0.2-3, installed on this machine for this):
 * on its empty database, and with `--dbpath` pointing at a database holding a pacman 6.0.2-3
 * entry.
 */
const PACMAN_NOT_FOUND: Fake = {
  args: PACMAN_ARGS,
  stderr: "error: package 'pacman' was not found\n",
  code: 1,
};
const PACMAN_PRESENT: Fake = { args: PACMAN_ARGS, stdout: "pacman 6.0.2-3\n" };

/**
 * apk-tools' apk-info(8) (doc/apk-info.8.scd): "-e ... For each installed package, print it's
 * name. The exit status is the number of given packages not installed." Older apk exits 0 with
 * the same empty output (docs/design.md rule 2: apk reports absence by empty output and exits zero
 * either way).
 */
const APK_PRESENT: Fake = { args: APK_ARGS, stdout: "apk-tools\n" };
const APK_ABSENT_EXIT_0: Fake = { args: APK_ARGS, stdout: "", code: 0 };
const APK_ABSENT_EXIT_1: Fake = { args: APK_ARGS, stdout: "", code: 1 };

/** dpkg-query 1.21.22 on this machine (a package name it does not know, renamed to dpkg). */
const DPKG_PRESENT: Fake = { args: DPKG_QUERY_ARGS, stdout: "install ok installed 1.21.22" };
const DPKG_NO_PACKAGE: Fake = {
  args: DPKG_QUERY_ARGS,
  stderr: "dpkg-query: no packages found matching dpkg\n",
  code: 1,
};
/** dpkg-query on this machine for a package the database knows but is not installed. */
const DPKG_NOT_INSTALLED: Fake = { args: DPKG_QUERY_ARGS, stdout: "unknown ok not-installed " };

/**
 * docker CLI 28.2.2 on this machine, with no daemon (stdout is an empty line). The version a
 * daemon answers with is from the host's commit history (f04294c3c1: "docker info --format
 * '{{.ServerVersion}}' -> 29.7.2").
 */
const DOCKER_NO_DAEMON: Fake = {
  args: DOCKER_ARGS,
  stdout: "\n",
  stderr:
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n",
  code: 1,
};
const DOCKER_PRESENT: Fake = { args: DOCKER_ARGS, stdout: "29.7.2\n" };

/** podman 4.3.1 on this machine: as root; with `--remote` to a socket nobody serves; and with
 * `CONTAINERS_STORAGE_CONF` naming a missing file. */
const PODMAN_PRESENT: Fake = { args: PODMAN_ARGS, stdout: "4.3.1\n" };
const PODMAN_NO_SERVICE: Fake = {
  args: PODMAN_ARGS,
  stderr:
    "Cannot connect to Podman. Please verify your connection to the Linux system using `podman system connection list`, or try `podman machine init` and `podman machine start` to manage a new Linux VM\n" +
    'Error: unable to connect to Podman socket: Get "http://d/v4.3.1/libpod/_ping": dial unix /nonexistent/podman.sock: connect: no such file or directory\n',
  code: 125,
};
const PODMAN_BROKEN_STORAGE: Fake = {
  args: PODMAN_ARGS,
  stderr:
    'time="2026-11-30T11:41:56Z" level=error msg="stat /nonexistent/x.conf: no such file or directory"\n',
  code: 1,
};

/** nftables 1.0.6 and iptables 1.8.9 (nf_tables) on this machine, run as `nobody`. */
const NFT_NO_PRIVILEGE: Fake = {
  args: NFT_ARGS,
  stderr: "Operation not permitted (you must be root)\n" +
    "netlink: Error: cache initialization failed: Operation not permitted\n",
  code: 1,
};
const IPTABLES_NO_PRIVILEGE: Fake = {
  args: IPTABLES_ARGS,
  stderr:
    "iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)\n",
  code: 4,
};

// --- This machine, for real ------------------------------------------------------------------

Deno.test("on this machine: dpkg and podman are present with the versions they report", async () => {
  const inventory = await takeInventory();
  // Read independently: dpkg's version from its status file, podman's from `podman version`.
  const status = await Deno.readTextFile("/var/lib/dpkg/status");
  const stanza = status.split("\n\n").find((s) => /^Package: dpkg$/m.test(s));
  const dpkgVersion = /^Version: (.+)$/m.exec(stanza ?? "")?.[1];
  assert(dpkgVersion !== undefined, "dpkg has no stanza in /var/lib/dpkg/status");
  const podmanVersion = (await run(["podman", "version", "--format", "{{.Client.Version}}"])).stdout
    .trim();

  const dpkg = verdictOf(inventory, "dpkg");
  assertEquals(dpkg.present, true, dpkg.reason);
  assertEquals(dpkg.capability, "package-manager");
  assertEquals(dpkg.detail, dpkgVersion);
  assertStringIncludes(dpkg.reason, '"install ok installed"');
  assertEquals(dpkg.method, 'dpkg-query -W -f "${Status} ${Version}" dpkg');

  const podman = verdictOf(inventory, "podman");
  assertEquals(podman.present, true, podman.reason);
  assertEquals(podman.capability, "container-runtime");
  assertEquals(podman.detail, podmanVersion);
  assertEquals(podman.method, 'podman info --format "{{.Version.Version}}"');
});

Deno.test("on this machine: systemd is absent because it is not the init, not a failure", async () => {
  const comm = (await Deno.readTextFile("/proc/1/comm")).trim();
  assert(comm !== "systemd", "PID 1 is systemd here: this test describes another machine");
  const inventory = await takeInventory();
  const systemd = verdictOf(inventory, "systemd");
  assertEquals(systemd.present, false);
  assertEquals(systemd.capability, "service-manager");
  assertEquals(systemd.method, "systemctl is-system-running");
  // systemctl says either "offline" (as here) or "has not been booted with systemd".
  assert(
    /says "offline"|has not been booted with systemd/.test(systemd.reason),
    `Unexpected reason: ${systemd.reason}`,
  );
});

Deno.test("on this machine: docker's CLI without a daemon is absent, saying so", async () => {
  const inventory = await takeInventory();
  const docker = verdictOf(inventory, "docker");
  assertEquals(docker.present, false);
  assertStringIncludes(docker.reason, "Cannot connect to the Docker daemon");
  assertStringIncludes(docker.reason, "no daemon answers");
  assertEquals(docker.detail, undefined);
});

Deno.test("on this machine: every probe reaches a verdict, firewalls as root, in probe order", async () => {
  const inventory = await takeInventory();
  assertEquals(inventory.failures, [], formatInventory(inventory));
  assertEquals(
    inventory.verdicts.map((v) => v.tool),
    ["systemd", "openrc", "dpkg", "pacman", "apk", "docker", "podman", "nft", "iptables"],
  );
  for (const v of inventory.verdicts) {
    assert(v.reason.length > 0 && v.method.length > 0, `${v.tool} has no reason or method`);
  }
  // Whatever pacman's state here (not installed, or Debian's with an empty database): absent.
  assertEquals(verdictOf(inventory, "pacman").present, false);
  const root = Deno.uid() === 0;
  for (const tool of ["nft", "iptables"] as const) {
    const v = verdictOf(inventory, tool);
    assertEquals(v.present, root, v.reason);
    if (!root) assertStringIncludes(v.reason, "no privilege");
  }
});

// --- Fakes: what this machine cannot show ----------------------------------------------------

Deno.test("a program not on PATH is absent with that reason, never a failure", async () => {
  const inventory = await inventoryWith({});
  assertEquals(inventory.failures, []);
  assertEquals(inventory.verdicts.length, 9);
  const programs: Record<Verdict["tool"], string> = {
    systemd: "systemctl",
    openrc: "rc-status",
    dpkg: "dpkg-query",
    pacman: "pacman",
    apk: "apk",
    docker: "docker",
    podman: "podman",
    nft: "nft",
    iptables: "iptables",
  };
  for (const v of inventory.verdicts) {
    assertEquals(v.present, false, `${v.tool}: ${v.reason}`);
    assertEquals(v.reason, `${programs[v.tool]} is not on PATH`);
  }
});

Deno.test("systemd degraded (exit 1) is present, with the reason", async () => {
  const inventory = await inventoryWith({ systemctl: systemctlSays("degraded") });
  const v = verdictOf(inventory, "systemd");
  assertEquals(v.present, true);
  assertEquals(v.detail, "degraded");
  assertStringIncludes(v.reason, 'systemctl is-system-running says "degraded"');
  assertStringIncludes(v.reason, "units failed");
});

Deno.test("systemd: every state of is-system-running is mapped explicitly", async () => {
  const expected: Record<string, boolean | "failure"> = {
    initializing: true,
    starting: true,
    running: true,
    degraded: true,
    maintenance: true,
    stopping: true,
    offline: false,
    unknown: "failure",
    // Not a state systemctl(1) lists: no verdict can be read from it.
    rebooting: "failure",
  };
  for (const [state, want] of Object.entries(expected)) {
    const inventory = await inventoryWith({ systemctl: systemctlSays(state) });
    if (want === "failure") {
      const f = failureOf(inventory, "systemd");
      assertStringIncludes(f.message, state);
      assertEquals(f.method, "systemctl is-system-running");
    } else {
      const v = verdictOf(inventory, "systemd");
      assertEquals(v.present, want, `${state}: ${v.reason}`);
      assertEquals(v.detail, state);
    }
  }
});

Deno.test("systemd: 'not booted with systemd' on stderr is absent with that reason", async () => {
  const inventory = await inventoryWith({ systemctl: SYSTEMD_NOT_BOOTED });
  const v = verdictOf(inventory, "systemd");
  assertEquals(v.present, false);
  assertStringIncludes(v.reason, "System has not been booted with systemd as init system");
  assertEquals(inventory.failures, []);
});

Deno.test('openrc: runlevel "default" with the softlevel file is present', async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "mesh-openrc-" });
  try {
    await Deno.writeTextFile(`${stateDir}/softlevel`, "default\n");
    const inventory = await inventoryWith({ "rc-status": RC_STATUS_DEFAULT }, {
      openrcStateDir: stateDir,
    });
    const v = verdictOf(inventory, "openrc");
    assertEquals(v.present, true, v.reason);
    assertEquals(v.capability, "service-manager");
    assertEquals(v.detail, "default");
    assertEquals(v.method, `rc-status --runlevel; stat ${stateDir}/softlevel`);
  } finally {
    await Deno.remove(stateDir, { recursive: true });
  }
});

Deno.test('openrc: rc-status saying "sysinit" (exit 0) without the softlevel file is absent', async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "mesh-openrc-" });
  try {
    const inventory = await inventoryWith({ "rc-status": RC_STATUS_SYSINIT }, {
      openrcStateDir: stateDir,
    });
    const v = verdictOf(inventory, "openrc");
    assertEquals(v.present, false);
    assertStringIncludes(v.reason, `${stateDir}/softlevel does not exist`);
    assertStringIncludes(v.reason, "OpenRC did not boot this machine");
  } finally {
    await Deno.remove(stateDir, { recursive: true });
  }
});

Deno.test("openrc: 'openrc did not boot' is absent with that reason", async () => {
  const inventory = await inventoryWith({ "rc-status": RC_STATUS_NOT_BOOTED });
  const v = verdictOf(inventory, "openrc");
  assertEquals(v.present, false);
  assertStringIncludes(
    v.reason,
    '"You are attempting to run an openrc service on a system which openrc did not boot"',
  );
});

Deno.test("pacman: 'pacman x.y' is present with its version", async () => {
  const v = verdictOf(await inventoryWith({ pacman: PACMAN_PRESENT }), "pacman");
  assertEquals(v.present, true);
  assertEquals(v.capability, "package-manager");
  assertEquals(v.detail, "6.0.2-3");
  assertEquals(v.method, "pacman -Q pacman");
});

Deno.test("pacman: 'package was not found' (exit 1) is absent, not a failure", async () => {
  const inventory = await inventoryWith({ pacman: PACMAN_NOT_FOUND });
  const v = verdictOf(inventory, "pacman");
  assertEquals(v.present, false);
  assertStringIncludes(v.reason, "error: package 'pacman' was not found");
  assertEquals(inventory.failures, []);
});

Deno.test("apk: present only when it prints apk-tools", async () => {
  const v = verdictOf(await inventoryWith({ apk: APK_PRESENT }), "apk");
  assertEquals(v.present, true);
  assertEquals(v.method, "apk info -e apk-tools");
});

Deno.test("apk: empty output is absent, whether it exits 0 or 1", async () => {
  for (const fake of [APK_ABSENT_EXIT_0, APK_ABSENT_EXIT_1]) {
    const inventory = await inventoryWith({ apk: fake });
    const v = verdictOf(inventory, "apk");
    assertEquals(v.present, false, `exit ${fake.code}: ${v.reason}`);
    assertStringIncludes(v.reason, `printed nothing (exit ${fake.code})`);
  }
});

Deno.test("apk: output that is neither apk-tools nor empty is a failure", async () => {
  const inventory = await inventoryWith({ apk: { args: APK_ARGS, stdout: "apk-tools-doc\n" } });
  assertStringIncludes(failureOf(inventory, "apk").message, "apk-tools-doc");
});

Deno.test("dpkg: present from its status; absent when not installed or not known", async () => {
  const present = verdictOf(await inventoryWith({ "dpkg-query": DPKG_PRESENT }), "dpkg");
  assertEquals([present.present, present.detail], [true, "1.21.22"]);
  const notInstalled = verdictOf(await inventoryWith({ "dpkg-query": DPKG_NOT_INSTALLED }), "dpkg");
  assertEquals(notInstalled.present, false);
  assertStringIncludes(notInstalled.reason, '"unknown ok not-installed"');
  const unknown = verdictOf(await inventoryWith({ "dpkg-query": DPKG_NO_PACKAGE }), "dpkg");
  assertEquals(unknown.present, false);
  assertStringIncludes(unknown.reason, "no packages found matching dpkg");
});

Deno.test("docker: a daemon's version is present; no daemon is absent", async () => {
  const present = verdictOf(await inventoryWith({ docker: DOCKER_PRESENT }), "docker");
  assertEquals([present.present, present.detail], [true, "29.7.2"]);
  const absent = verdictOf(await inventoryWith({ docker: DOCKER_NO_DAEMON }), "docker");
  assertEquals(absent.present, false);
  assertStringIncludes(absent.reason, "Cannot connect to the Docker daemon");
});

Deno.test("podman: version is present; no service is absent; an error is a failure", async () => {
  const present = verdictOf(await inventoryWith({ podman: PODMAN_PRESENT }), "podman");
  assertEquals([present.present, present.detail], [true, "4.3.1"]);
  const noService = verdictOf(await inventoryWith({ podman: PODMAN_NO_SERVICE }), "podman");
  assertEquals(noService.present, false);
  assertStringIncludes(noService.reason, "Cannot connect to Podman");
  const broken = await inventoryWith({ podman: PODMAN_BROKEN_STORAGE });
  const f = failureOf(broken, "podman");
  assertStringIncludes(f.message, "exited 1");
  assertStringIncludes(f.message, "/nonexistent/x.conf");
});

Deno.test("nft and iptables without privilege are absent, 'no privilege'", async () => {
  const inventory = await inventoryWith({ nft: NFT_NO_PRIVILEGE, iptables: IPTABLES_NO_PRIVILEGE });
  assertEquals(inventory.failures, []);
  const nft = verdictOf(inventory, "nft");
  assertEquals([nft.present, nft.capability], [false, "firewall"]);
  assertStringIncludes(nft.reason, "Operation not permitted");
  assertStringIncludes(nft.reason, "no privilege");
  const iptables = verdictOf(inventory, "iptables");
  assertEquals(iptables.present, false);
  assertStringIncludes(iptables.reason, "Permission denied (you must be root)");
  assertStringIncludes(iptables.reason, "no privilege");
});

Deno.test("a probe that hangs past its timeout is a failure; the others still answer", async () => {
  const started = performance.now();
  const inventory = await withFakes(
    { systemctl: { args: SYSTEMCTL_ARGS, script: "exec /bin/sleep 120" } },
    "first",
    // Long enough for the real probes on a loaded machine, far shorter than the 120 s hang.
    () => takeInventory({ timeoutMs: 5_000 }),
  );
  const elapsed = performance.now() - started;
  const f = failureOf(inventory, "systemd");
  assertStringIncludes(f.message, "did not finish within 5000 ms");
  // Not waited for: the hang is 120 s; the bound leaves a loaded machine room past the 5 s.
  assert(elapsed < 60_000, `The inventory took ${elapsed} ms`);
  // The real probes ran alongside it and reached their verdicts.
  assertEquals(verdictOf(inventory, "dpkg").present, true);
  assertEquals(inventory.verdicts.length, 8, formatInventory(inventory));
});

Deno.test("a probe whose command dies of a signal is a failure naming it", async () => {
  const inventory = await inventoryWith({ nft: { args: NFT_ARGS, script: "kill -SEGV $$" } });
  const f = failureOf(inventory, "nft");
  assertStringIncludes(f.message, "killed by SIGSEGV");
  assertEquals(f.method, "nft list tables");
});

Deno.test("the default timeout is 10 s, and a timeout that is not positive is refused", async () => {
  assertEquals(DEFAULT_PROBE_TIMEOUT_MS, 10_000);
  // A probe taking 1 s finishes under the default limit.
  const inventory = await withFakes(
    { systemctl: { args: SYSTEMCTL_ARGS, script: "/bin/sleep 1", stdout: "running\n" } },
    "only",
    () => takeInventory(),
  );
  assertEquals(verdictOf(inventory, "systemd").present, true);
  for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    const e = await assertRejects(() => takeInventory({ timeoutMs }), RangeError);
    assertStringIncludes(e.message, "Probe timeout must be a positive number");
  }
});

Deno.test("formatInventory: one line per verdict and failure, with distinct words", () => {
  const text = formatInventory({
    verdicts: [
      {
        capability: "container-runtime",
        tool: "podman",
        present: true,
        reason: "podman info answers, version 4.3.1",
        method: 'podman info --format "{{.Version.Version}}"',
        detail: "4.3.1",
      },
      {
        capability: "service-manager",
        tool: "systemd",
        present: false,
        reason: 'systemctl is-system-running says "offline"',
        method: "systemctl is-system-running",
        detail: "offline",
      },
    ],
    failures: [{
      capability: "firewall",
      tool: "nft",
      method: "nft list tables",
      message: "nft list tables was killed by SIGSEGV",
    }],
  });
  assert(text.endsWith("\n"), "The last line does not end with a newline");
  const lines = text.slice(0, -1).split("\n");
  assertEquals(lines.length, 3, text);
  // In probe order: systemd, podman, nft.
  assertStringIncludes(lines[0]!, "service-manager");
  assertStringIncludes(lines[0]!, " absent ");
  assertStringIncludes(lines[0]!, "[systemctl is-system-running]");
  assertStringIncludes(lines[1]!, " present ");
  assertStringIncludes(lines[1]!, "4.3.1: podman info answers");
  assertStringIncludes(lines[2]!, " probe failed ");
  assertStringIncludes(lines[2]!, "killed by SIGSEGV [nft list tables]");
  assertEquals(formatInventory({ verdicts: [], failures: [] }), "");
});
