/**
 * The `service` contract, run against both implementations in real lab machines: Debian booted
 * with systemd and Debian booted with OpenRC (tests/lab). Each machine is booted once for this
 * file and destroyed at the end.
 *
 * The host run inside a machine is a small entry written there (/root/service_entry.ts): a debian
 * system with the directory, file and service appliers, run through `hostMain` from the
 * read-only checkout at /mesh (`deno run --config /mesh/deno.json`, for the import map).
 *
 * What the applier runs is recorded honestly: a wrapper of the same name earlier on PATH
 * (/usr/local/sbin/systemctl, rc-service, rc-update) appends each argv to a log when
 * MESH_TOOL_LOG is set (only the applies under test set it) and execs the real tool. That is how
 * the order (boot state before running state) and the number of `systemctl show` calls are
 * asserted; a test asserting on the log first asserts that the log is not empty.
 *
 * Also here, without a lab: the parsers on outputs recorded in the lab, and detection on
 * directories laid out like each machine.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { bootLab, type LabKind, type LabMachine } from "../lab/mod.ts";
import { detectServiceManager } from "../../resources/service/applier.ts";
import { unitStates } from "../../resources/service/systemd.ts";
import { parseRunlevel, parseStatus } from "../../resources/service/openrc.ts";
import { ResourceError } from "../../host/applier.ts";
import type { CommandOutput } from "../../lib/command.ts";
import { HOST_PERMISSIONS } from "../../host/permissions.ts";

// --- without a lab -----------------------------------------------------------------------

Deno.test("detection: sd_booted's directory, OpenRC's softlevel, or neither", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-service-detect-" });
  try {
    const none = await detectServiceManager(root);
    assertEquals(none.manager, undefined);
    assertStringIncludes(none.reason, "Neither systemd nor OpenRC runs this machine");

    // A file where systemd's directory should be is not systemd.
    await Deno.mkdir(`${root}/run/systemd`, { recursive: true });
    await Deno.writeTextFile(`${root}/run/systemd/system`, "");
    assertEquals((await detectServiceManager(root)).manager, undefined);
    await Deno.remove(`${root}/run/systemd/system`);

    // /run/openrc alone proves nothing (a plain rc-status creates it): softlevel does.
    await Deno.mkdir(`${root}/run/openrc`, { recursive: true });
    assertEquals((await detectServiceManager(root)).manager, undefined);
    await Deno.writeTextFile(`${root}/run/openrc/softlevel`, "default");
    assertEquals((await detectServiceManager(root)).manager, "openrc");

    await Deno.mkdir(`${root}/run/systemd/system`);
    const both = await detectServiceManager(root);
    assertEquals(both.manager, "systemd", "sd_booted is asked first");
    assertStringIncludes(both.reason, "is a directory");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

const out = (argv: string[], code: number, stdout: string, stderr = ""): CommandOutput => ({
  argv,
  code,
  signal: null,
  stdout,
  stderr,
});

Deno.test("rc-service status: words and exit code, as recorded in the lab", () => {
  const argv = ["rc-service", "--", "meshtest", "status"];
  // Recorded: Debian bookworm, OpenRC 0.45.2.
  const started = parseStatus("meshtest", out(argv, 0, " * status: started\n"));
  assertEquals(started.kind === "status" && started.word, "started");
  const stopped = parseStatus("meshtest", out(argv, 3, " * status: stopped\n"));
  assertEquals(stopped.kind === "status" && stopped.word, "stopped");
  const missing = parseStatus(
    "nosuch",
    out(
      ["rc-service", "--", "nosuch", "status"],
      1,
      "",
      " * rc-service: service `nosuch' does not exist\n",
    ),
  );
  assertEquals(missing.kind, "missing");
  const unsupervised = parseStatus("meshsup", out(argv, 64, "", " * status: unsupervised\n"));
  assertEquals(unsupervised.kind === "status" && unsupervised.word, "unsupervised");
  // Not producible on Debian (no OpenRC start-stop-daemon): the words and code of `_status` in
  // /lib/rc/sh/openrc-run.sh, `eerror "status: crashed"; return 32`.
  const crashed = parseStatus("meshtest", out(argv, 32, "", " * status: crashed\n"));
  assertEquals(crashed.kind === "status" && crashed.word, "crashed");
  // Words and exit code must agree: "started" with exit 3 is not read as either.
  let error: unknown;
  try {
    parseStatus("meshtest", out(argv, 3, " * status: started\n"));
  } catch (e) {
    error = e;
  }
  assert(error instanceof ResourceError, "a disagreement fails");
  assertStringIncludes(error.message, "which OpenRC reports with exit code 0");
  // Another service's "does not exist" is not this one's.
  let other: unknown;
  try {
    parseStatus("meshtest", out(argv, 1, "", " * rc-service: service `nosuch' does not exist\n"));
  } catch (e) {
    other = e;
  }
  assert(other instanceof ResourceError);
});

Deno.test("rc-update show default, as recorded in the lab", () => {
  const names = parseRunlevel(
    out(
      ["rc-update", "show", "--", "default"],
      0,
      "             bootlogs | default\n             meshtest | default\n",
    ),
    "default",
  );
  assertEquals([...names], ["bootlogs", "meshtest"]);
  assertEquals(parseRunlevel(out(["rc-update", "show"], 0, ""), "default").size, 0);
});

Deno.test("systemctl show: one block per unit, in order, as recorded in the lab", () => {
  const argv = ["systemctl", "show"];
  const text = "Id=nosuch.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n" +
    "UnitFileState=\n\nId=dbus.service\nLoadState=loaded\nActiveState=active\n" +
    "SubState=running\nUnitFileState=static\n";
  const states = unitStates(text, ["nosuch", "dbus"], argv);
  assertEquals(states.get("nosuch"), {
    unit: "nosuch",
    id: "nosuch.service",
    load: "not-found",
    active: "inactive",
    sub: "dead",
    unitFile: "",
  });
  assertEquals(states.get("dbus")?.unitFile, "static");
  let error: unknown;
  try {
    unitStates(text, ["a", "b", "c"], argv);
  } catch (e) {
    error = e;
  }
  assert(error instanceof ResourceError, "a block missing is not a unit missing");
  assertStringIncludes(error.message, "printed 2 block(s), expected 3");
  // A line that is not KEY=VALUE is output this parser does not know: refused, never skipped.
  let garbled: unknown;
  try {
    unitStates(text.replace("SubState=dead", "SubState dead"), ["nosuch", "dbus"], argv);
  } catch (e) {
    garbled = e;
  }
  assert(garbled instanceof ResourceError, "a line that is not KEY=VALUE is refused");
  assertStringIncludes(garbled.message, 'a line that is not KEY=VALUE: "SubState dead"');
});

// --- in the lab ----------------------------------------------------------------------------

interface Result {
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; type: string; change: string }[];
  problems: { id?: string; path?: string; message: string }[];
  dryRun?: boolean;
}

type Resource = Record<string, unknown>;

/** What differs between the two machines; everything else is the contract. */
interface Driver {
  kind: LabKind;
  /** The file resource that makes `name` a service running `/bin/sleep ARG`. */
  unitFile(name: string, arg: string, options?: { install?: boolean; oneshot?: boolean }): Resource;
  /** The manager's own word that it runs, and the process itself. */
  running(m: LabMachine, name: string, arg: string): Promise<boolean>;
  /** Enabled at boot, read without the applier's method. */
  enabled(m: LabMachine, name: string): Promise<boolean>;
  byHand(m: LabMachine, name: string, what: "stop" | "start" | "enable" | "disable"): Promise<void>;
  /** The diagnosis only the missing-unit branch produces (not in the tool's own output). */
  missingDiagnosis: string;
  /** The tools the applier runs, wrapped to log them. */
  tools: { name: string; real: string }[];
  /** Logged calls that change boot state, running state, and the boot-state query. */
  isBootChange(call: string): boolean;
  isRunChange(call: string): boolean;
  isBatchQuery(call: string): boolean;
  /** A path to hide (tmpfs over it) so that the manager is not detected. */
  hide: string;
}

const sh = async (m: LabMachine, script: string, ...args: string[]) =>
  await m.exec(["sh", "-c", script, "sh", ...args]);

async function processRuns(m: LabMachine, arg: string): Promise<boolean> {
  const r = await m.exec(["pgrep", "-x", "-f", `/bin/sleep ${arg}`], { allowFailure: true });
  return r.code === 0;
}

const SYSTEMD: Driver = {
  kind: "systemd",
  unitFile(name, arg, options = {}) {
    return {
      id: `unit-${name}`,
      type: "file",
      path: `/etc/systemd/system/${name}.service`,
      mode: "0644",
      content: `[Unit]\nDescription=mesh test ${name}\n[Service]\n` +
        (options.oneshot
          ? "Type=oneshot\nExecStart=/bin/true\n"
          : `ExecStart=/bin/sleep ${arg}\n`) +
        (options.install === false ? "" : "[Install]\nWantedBy=multi-user.target\n"),
    };
  },
  async running(m, name, arg) {
    const word = await m.exec(["systemctl", "is-active", name], { allowFailure: true });
    return word.stdout.trim() === "active" && await processRuns(m, arg);
  },
  async enabled(m, name) {
    const word = await m.exec(["systemctl", "is-enabled", name], { allowFailure: true });
    return word.stdout.trim() === "enabled";
  },
  async byHand(m, name, what) {
    await m.exec(["systemctl", what, name]);
  },
  missingDiagnosis: "does not exist: systemd has no unit file for it",
  tools: [{ name: "systemctl", real: "/usr/bin/systemctl" }],
  isBootChange: (c) => /^systemctl .*\b(enable|disable)\b/.test(c),
  isRunChange: (c) => /^systemctl .*\b(start|stop|restart)\b/.test(c),
  isBatchQuery: (c) => /^systemctl show /.test(c),
  hide: "/run/systemd",
};

const OPENRC: Driver = {
  kind: "openrc",
  unitFile(name, arg) {
    return {
      id: `unit-${name}`,
      type: "file",
      path: `/etc/init.d/${name}`,
      mode: "0755",
      content: `#!/sbin/openrc-run\ncommand=/bin/sleep\ncommand_args=${arg}\n` +
        `command_background=yes\npidfile=/run/${name}.pid\n`,
    };
  },
  async running(m, name, arg) {
    const word = await m.exec(["rc-service", name, "status"], { allowFailure: true });
    return word.stdout.includes("status: started") && await processRuns(m, arg);
  },
  async enabled(m, name) {
    return (await m.exec(["test", "-L", `/etc/runlevels/default/${name}`], { allowFailure: true }))
      .code === 0;
  },
  async byHand(m, name, what) {
    if (what === "enable") await m.exec(["rc-update", "add", name, "default"]);
    else if (what === "disable") await m.exec(["rc-update", "del", name, "default"]);
    else await m.exec(["rc-service", name, what]);
  },
  missingDiagnosis: "does not exist: OpenRC has no init script /etc/init.d/",
  tools: [
    { name: "rc-service", real: "/usr/sbin/rc-service" },
    { name: "rc-update", real: "/usr/sbin/rc-update" },
  ],
  isBootChange: (c) => /^rc-update (add|del)\b/.test(c),
  isRunChange: (c) => /^rc-service -- \S+ (start|stop|restart|zap)$/.test(c),
  isBatchQuery: (c) => /^rc-update show\b/.test(c),
  hide: "/run/openrc",
};

// The system is assembled here from the file appliers and the service applier alone, so this
// suite tests the service appliers and does not depend on the other appliers systems/debian/mod.ts
// imports. It is named and matched as debian, as the debian host is.
const ENTRY = `import { hostMain } from "file:///mesh/host/cli.ts";
import { directoryApplier } from "file:///mesh/resources/directory/applier.ts";
import { fileApplier } from "file:///mesh/resources/file/applier.ts";
import { serviceApplier } from "file:///mesh/resources/service/applier.ts";

const system = {
  name: "debian",
  matches: (release) => release?.ID === "debian",
  appliers: { directory: directoryApplier, file: fileApplier, service: serviceApplier },
  refuses: {},
};
Deno.exit(await hostMain(Deno.args, { system }));
`;

const LOG = "/run/mesh-tools.log";

/** Writes the entry and the logging wrappers into the machine. */
async function prepare(m: LabMachine, d: Driver): Promise<void> {
  await sh(m, 'printf %s "$1" > /root/service_entry.ts', ENTRY);
  for (const tool of d.tools) {
    await sh(
      m,
      'printf %s "$2" > "/usr/local/sbin/$1" && chmod 0755 "/usr/local/sbin/$1"',
      tool.name,
      `#!/bin/sh\n[ -n "$MESH_TOOL_LOG" ] && printf '%s %s\\n' '${tool.name}' "$*" >> "$MESH_TOOL_LOG"\n` +
        `exec ${tool.real} "$@"\n`,
    );
  }
}

/** One apply inside the machine, with the calls it made to the manager's tools. */
async function apply(
  m: LabMachine,
  scenario: string,
  resources: Resource[],
  options: { dryRun?: boolean; wrap?: string[] } = {},
): Promise<{ code: number | null; result: Result; calls: string[]; stderr: string }> {
  await sh(
    m,
    'printf %s "$1" > /tmp/x.json && : > "$2"',
    JSON.stringify({ version: 1, resources }),
    LOG,
  );
  const r = await m.exec([
    ...(options.wrap ?? []),
    "deno",
    "run",
    // The permissions the built host runs with, not -A: a read the shipped host is refused (a
    // path under /proc) must fail here as it does on a node.
    ...HOST_PERMISSIONS,
    "--quiet",
    "--config",
    "/mesh/deno.json",
    "/root/service_entry.ts",
    "apply",
    "/tmp/x.json",
    "--json",
    "--state-dir",
    `/var/lib/mesh/host/${scenario}`,
    ...(options.dryRun ? ["--dry-run"] : []),
  ], { allowFailure: true, env: { MESH_TOOL_LOG: LOG } });
  let result: Result;
  try {
    result = JSON.parse(r.stdout) as Result;
  } catch {
    throw new Error(`apply printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  const calls = (await m.exec(["cat", LOG])).stdout.split("\n").filter((l) => l !== "");
  return { code: r.code, result, calls, stderr: r.stderr };
}

const changeOf = (result: Result, id: string) => result.changes.find((c) => c.id === id)?.change;

function service(unit: string, state: string, boot?: string): Resource {
  return { id: `svc-${unit}`, type: "service", unit, state, ...(boot ? { boot } : {}) };
}

function assertBootFirst(d: Driver, calls: string[]): void {
  const boot = calls.findIndex((c) => d.isBootChange(c));
  const runs = calls.findIndex((c) => d.isRunChange(c));
  assert(
    boot >= 0 && runs >= 0,
    `expected a boot change and a run change in:\n${calls.join("\n")}`,
  );
  assert(
    boot < runs,
    `boot state must be made true first, but the calls were:\n${calls.join("\n")}`,
  );
}

/** The contract: the same steps on both machines. */
async function contract(t: Deno.TestContext, m: LabMachine, d: Driver): Promise<void> {
  const main = d.unitFile("meshtest", "infinity");
  const idle = d.unitFile("meshidle", "2000001");
  const declared = (state: string, boot: string) => [
    main,
    service("meshtest", state, boot),
    idle,
    service("meshidle", "stopped"), // boot absent: asserts nothing
  ];

  await t.step(
    "running and enabled from scratch: unit written, then enabled, then started",
    async () => {
      // The dry run first, its unit files not written yet: systemd plans a daemon-reload and a
      // judgement after it (updated, both); OpenRC plans a new service as stopped, which it
      // will be (meshidle unchanged, as in the apply). Nothing changes, no command that changes
      // anything runs.
      const dry = await apply(m, "life", declared("running", "enabled"), { dryRun: true });
      assertEquals(dry.result.outcome, "applied", JSON.stringify(dry.result));
      assertEquals(changeOf(dry.result, "svc-meshtest"), "updated");
      assertEquals(
        changeOf(dry.result, "svc-meshidle"),
        d.kind === "systemd" ? "updated" : "unchanged",
      );
      const said = (dry.result.changes.find((c) => c.id === "svc-meshtest") as {
        detail?: string;
      }).detail ?? "";
      assertStringIncludes(
        said,
        d.kind === "systemd"
          ? "systemctl daemon-reload"
          : "boot disabled -> enabled\nstate stopped",
      );
      assertEquals(
        dry.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c) || /daemon-reload/.test(c)),
        [],
      );
      assert(!(await d.running(m, "meshtest", "infinity")), "the dry run started meshtest");
      const r = await apply(m, "life", declared("running", "enabled"));
      assertEquals(r.code, 0, JSON.stringify(r.result));
      assertEquals(r.result.outcome, "applied");
      assertEquals([r.result.applied, r.result.total], [4, 4]);
      assertEquals(changeOf(r.result, main.id as string), "created");
      assertEquals(changeOf(r.result, "svc-meshtest"), "updated");
      // systemd: meshidle's new unit file was reloaded, which is something done; OpenRC has
      // nothing to reload.
      assertEquals(
        changeOf(r.result, "svc-meshidle"),
        d.kind === "systemd" ? "updated" : "unchanged",
      );
      if (d.kind === "systemd") {
        // Two unit files written at two points of the apply: each reloaded before its unit.
        assertEquals(r.calls.filter((c) => /\bdaemon-reload\b/.test(c)).length, 2);
      }
      assert(await d.running(m, "meshtest", "infinity"), "meshtest runs");
      assert(await d.enabled(m, "meshtest"), "meshtest is enabled");
      assert(!(await d.running(m, "meshidle", "2000001")), "meshidle does not run");
      assert(!(await d.enabled(m, "meshidle")), "meshidle was not enabled: boot absent");
      assertBootFirst(d, r.calls);
    },
  );

  await t.step("applied again: everything unchanged, one batch query, nothing run", async () => {
    const r = await apply(m, "life", declared("running", "enabled"));
    assertEquals(r.result.outcome, "applied");
    assertEquals(r.result.changes.map((c) => c.change), [
      "unchanged",
      "unchanged",
      "unchanged",
      "unchanged",
    ]);
    assert(r.calls.length > 0, "the wrapper logged the applier's calls");
    assertEquals(r.calls.filter((c) => d.isBatchQuery(c)).length, 1, r.calls.join("\n"));
    assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
    if (d.kind === "systemd") {
      // The only call: one `systemctl show` naming both units.
      assertEquals(r.calls.length, 1, r.calls.join("\n"));
      assertStringIncludes(r.calls[0]!, "-- meshtest meshidle");
    }
  });

  await t.step("dry run over drift made by hand: says updated, changes nothing", async () => {
    await d.byHand(m, "meshtest", "stop");
    await d.byHand(m, "meshtest", "disable");
    const r = await apply(m, "life", declared("running", "enabled"), { dryRun: true });
    assertEquals(r.result.outcome, "applied");
    assertEquals(r.result.dryRun, true);
    assertEquals(changeOf(r.result, "svc-meshtest"), "updated");
    assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
    assert(!(await d.running(m, "meshtest", "infinity")), "still stopped");
    assert(!(await d.enabled(m, "meshtest")), "still disabled");
  });

  await t.step(
    "drift made by hand (stopped, disabled) is restored; boot absent is left",
    async () => {
      await d.byHand(m, "meshidle", "enable"); // not declared: must stay as the operator left it
      const r = await apply(m, "life", declared("running", "enabled"));
      assertEquals(r.result.outcome, "applied");
      assertEquals(changeOf(r.result, "svc-meshtest"), "updated");
      assertEquals(changeOf(r.result, "svc-meshidle"), "unchanged");
      assert(await d.running(m, "meshtest", "infinity"), "meshtest runs again");
      assert(await d.enabled(m, "meshtest"), "meshtest is enabled again");
      assert(await d.enabled(m, "meshidle"), "meshidle is still enabled: boot absent");
      assertBootFirst(d, r.calls);
      if (d.kind === "systemd") {
        // One query for both units, and one more after this applier changed something.
        assertEquals(r.calls.filter((c) => d.isBatchQuery(c)).length, 2, r.calls.join("\n"));
      }
      await d.byHand(m, "meshidle", "disable");
    },
  );

  await t.step("stopped and disabled: disabled first, then stopped; then unchanged", async () => {
    const r = await apply(m, "life", declared("stopped", "disabled"));
    assertEquals(r.result.outcome, "applied");
    assertEquals(changeOf(r.result, "svc-meshtest"), "updated");
    assert(!(await d.running(m, "meshtest", "infinity")), "meshtest stopped");
    assert(!(await d.enabled(m, "meshtest")), "meshtest disabled");
    assertBootFirst(d, r.calls);
    const again = await apply(m, "life", declared("stopped", "disabled"));
    assertEquals(again.result.changes.map((c) => c.change), [
      "unchanged",
      "unchanged",
      "unchanged",
      "unchanged",
    ]);
  });

  await t.step(
    "a unit that does not exist fails naming it, and the apply stops there",
    async () => {
      const before = {
        id: "before",
        type: "file",
        path: "/root/mesh-before",
        content: "1\n",
        mode: "0644",
      };
      const after = {
        id: "after",
        type: "file",
        path: "/root/mesh-after",
        content: "3\n",
        mode: "0644",
      };
      // Declared stopped: the trap is reading a missing unit as a stopped one and succeeding.
      const r = await apply(m, "missing", [before, service("mesh-nosuch", "stopped"), after]);
      assertEquals(r.code, 1);
      assertEquals(r.result.outcome, "failed");
      assertEquals([r.result.applied, r.result.total], [1, 3]);
      assertEquals(r.result.changes.map((c) => c.id), ["before"]);
      assertEquals(r.result.problems.length, 1);
      assertEquals(r.result.problems[0]!.id, "svc-mesh-nosuch");
      assertStringIncludes(r.result.problems[0]!.message, d.missingDiagnosis);
      assertStringIncludes(r.result.problems[0]!.message, "mesh-nosuch");
      assertStringIncludes(r.result.problems[0]!.message, 'never "stopped"');
      assertEquals(
        (await m.exec(["test", "-e", "/root/mesh-after"], { allowFailure: true })).code,
        1,
      );
      assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
      // Declared running, the same diagnosis (not the tool's own failure to start it).
      const running = await apply(m, "missing", [before, service("mesh-nosuch", "running"), after]);
      assertEquals(running.result.outcome, "failed");
      assertStringIncludes(running.result.problems[0]!.message, d.missingDiagnosis);
      assertEquals(running.calls.filter((c) => d.isRunChange(c)), []);
    },
  );

  await t.step("neither manager detected: every service resource fails saying so", async () => {
    const r = await apply(m, "neither", [service("meshtest", "running")], {
      wrap: ["unshare", "--mount", "sh", "-c", `mount -t tmpfs none ${d.hide} && exec "$@"`, "sh"],
    });
    assertEquals(r.result.outcome, "failed");
    assertStringIncludes(
      r.result.problems[0]!.message,
      "Neither systemd nor OpenRC runs this machine",
    );
    assertEquals(r.calls, []);
  });
}

async function systemdOnly(t: Deno.TestContext, m: LabMachine): Promise<void> {
  const d = SYSTEMD;
  await t.step(
    "masked, declared running, fails saying it is masked; nothing is started",
    async () => {
      await sh(
        m,
        "printf '[Service]\\nExecStart=/bin/sleep 2000002\\n[Install]\\nWantedBy=multi-user.target\\n' " +
          "> /usr/lib/systemd/system/meshmasked.service && systemctl daemon-reload && " +
          "systemctl mask meshmasked.service",
      );
      const r = await apply(m, "masked", [service("meshmasked", "running")]);
      assertEquals(r.result.outcome, "failed");
      assertStringIncludes(r.result.problems[0]!.message, 'Unit "meshmasked" is masked');
      assertStringIncludes(r.result.problems[0]!.message, "so it cannot be started");
      assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
      assert(!(await processRuns(m, "2000002")));
    },
  );

  await t.step(
    "static (no [Install]) declared boot enabled fails saying so; never enabled",
    async () => {
      const unit = d.unitFile("meshstatic", "2000003", { install: false });
      const r = await apply(m, "static", [unit, service("meshstatic", "running", "enabled")]);
      assertEquals(r.result.outcome, "failed");
      assertEquals([r.result.applied, r.result.total], [1, 2]);
      const message = r.result.problems[0]!.message;
      assertStringIncludes(message, "is static (UnitFileState=static)");
      assertStringIncludes(message, "has no [Install] section of its own");
      assertStringIncludes(message, "it is not enabled");
      assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
      const word = await m.exec(["systemctl", "is-enabled", "meshstatic"], { allowFailure: true });
      assertEquals(word.stdout.trim(), "static");
      assert(!(await processRuns(m, "2000003")), "not started either: boot is judged first");
    },
  );

  await t.step(
    "an [Install] with only Alias= declared boot enabled fails saying nothing would start it",
    async () => {
      // `systemctl enable` of such a unit exits 0 and makes only the alias; UnitFileState then
      // reads `enabled`, yet nothing wants or requires it, so nothing starts it at boot.
      const unit = {
        ...d.unitFile("meshaka", "2000006", { install: false }),
        content: "[Service]\nExecStart=/bin/sleep 2000006\n[Install]\nAlias=meshaka2.service\n",
      };
      const r = await apply(m, "aka", [unit, service("meshaka", "running", "enabled")]);
      assertEquals(r.result.outcome, "failed", JSON.stringify(r.result));
      assertEquals([r.result.applied, r.result.total], [1, 2]);
      const message = r.result.problems[0]!.message;
      assertStringIncludes(message, "nothing would start it at boot");
      assertStringIncludes(message, "Alias=");
      assertEquals(r.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
      assert(!(await processRuns(m, "2000006")), "not started either: boot is judged first");
      // Enabled by hand (the alias made, UnitFileState=enabled): still not enabled for boot.
      await sh(m, "systemctl enable meshaka.service");
      const word = await m.exec(["systemctl", "is-enabled", "meshaka"], { allowFailure: true });
      assertEquals(word.stdout.trim(), "enabled");
      const again = await apply(m, "aka", [unit, service("meshaka", "running", "enabled")]);
      assertEquals(again.result.outcome, "failed", JSON.stringify(again.result));
      assertStringIncludes(again.result.problems[0]!.message, "nothing wants or requires it");
      assertEquals(again.calls.filter((c) => d.isBootChange(c) || d.isRunChange(c)), []);
      await sh(m, "systemctl disable meshaka.service");
    },
  );

  await t.step("a changed unit file is reloaded once before its unit is judged", async () => {
    const decl = (a: string, b: string) => [
      d.unitFile("meshreload", a),
      d.unitFile("meshreload2", b),
      service("meshreload", "running"),
      service("meshreload2", "running"),
    ];
    const first = await apply(m, "reload", decl("2000004", "2000005"));
    assertEquals(first.result.outcome, "applied", JSON.stringify(first.result));
    const r = await apply(m, "reload", decl("2000014", "2000015"));
    assertEquals(r.result.outcome, "applied", JSON.stringify(r.result));
    assertEquals(changeOf(r.result, "unit-meshreload"), "updated");
    assertEquals(r.calls.filter((c) => /\bdaemon-reload\b/.test(c)).length, 1, r.calls.join("\n"));
    for (const [unit, arg] of [["meshreload", "2000014"], ["meshreload2", "2000015"]]) {
      const exec = await m.exec(["systemctl", "show", "-p", "ExecStart", unit!]);
      assertStringIncludes(exec.stdout, `argv[]=/bin/sleep ${arg} `);
      const need = await m.exec(["systemctl", "show", "-p", "NeedDaemonReload", "--value", unit!]);
      assertEquals(need.stdout.trim(), "no");
    }
    const again = await apply(m, "reload", decl("2000014", "2000015"));
    assertEquals(again.calls.filter((c) => /\bdaemon-reload\b/.test(c)), []);
  });

  await t.step("a unit that exits at once is not running although start exited 0", async () => {
    const unit = d.unitFile("meshoneshot", "", { oneshot: true });
    const r = await apply(m, "oneshot", [unit, service("meshoneshot", "running")]);
    assertEquals(r.result.outcome, "failed");
    assertStringIncludes(
      r.result.problems[0]!.message,
      "was started and systemctl exited 0, but it is not running",
    );
    assert(r.calls.some((c) => d.isRunChange(c)), "it was started");
  });
}

async function openrcOnly(t: Deno.TestContext, m: LabMachine): Promise<void> {
  const d = OPENRC;
  await t.step("a daemon killed by hand, declared running, is started again", async () => {
    const decl = [d.unitFile("meshcrash", "2000006"), service("meshcrash", "running", "enabled")];
    const first = await apply(m, "crash", decl);
    assertEquals(first.result.outcome, "applied", JSON.stringify(first.result));
    const pid = (await m.exec(["cat", "/run/meshcrash.pid"])).stdout.trim();
    assert(/^\d+$/.test(pid));
    await m.exec(["kill", pid]);
    await sh(m, 'while [ -e "/proc/$1" ]; do sleep 0.05; done', pid);
    // Recorded: Debian's OpenRC still says started, exit 0, since dpkg's start-stop-daemon
    // does not register the daemon with OpenRC ("crashed" never appears here).
    const said = await m.exec(["rc-service", "meshcrash", "status"], { allowFailure: true });
    assertEquals([said.code, said.stdout.trim()], [0, "* status: started"]);
    const r = await apply(m, "crash", decl);
    assertEquals(r.result.outcome, "applied", JSON.stringify(r.result));
    assertEquals(changeOf(r.result, "svc-meshcrash"), "updated");
    assertEquals(r.calls.filter((c) => d.isRunChange(c)), [
      "rc-service -- meshcrash zap",
      "rc-service -- meshcrash start",
    ]);
    const now = (await m.exec(["cat", "/run/meshcrash.pid"])).stdout.trim();
    assert(now !== pid, "a new daemon");
    assert(await d.running(m, "meshcrash", "2000006"));
  });
}

for (const d of [SYSTEMD, OPENRC]) {
  Deno.test(`service contract on ${d.kind}`, async (t) => {
    const m = await bootLab(d.kind);
    try {
      await prepare(m, d);
      await contract(t, m, d);
      if (d.kind === "systemd") await systemdOnly(t, m);
      else await openrcOnly(t, m);
    } finally {
      await m.destroy();
    }
  });
}
