/**
 * Batch entries graded by their timer. Without a lab: `systemctl show` parsed from output
 * recorded in the lab (Debian bookworm, systemd 252.39), every documented word graded in its own
 * words, and a machine without systemd (this one) where the source is absent and the timer
 * missing. In the systemd lab machine: real timers in every state systemd 252 has, all asked in
 * ONE `systemctl show` (counted through a logging wrapper), `is-enabled` compared with `show`
 * for each, and a rootless account's timers asked in its own user manager.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import type { Finding, Observation } from "../../reconcile/compare.ts";
import { compare } from "../../reconcile/compare.ts";
import {
  compareTimers,
  gradeTimer,
  TIMER_ACTIVE_WORDS,
  TIMER_BOOT_WORDS,
  TIMER_LOAD_WORDS,
} from "../../reconcile/compare_timers.ts";
import {
  type ObservedTimer,
  observeTimers,
  TIMER_PROPERTIES,
  unknownWords,
} from "../../reconcile/observe/timers.ts";
import {
  ACTIVE_STATES,
  LOAD_STATES,
  parseShow,
  SystemdFormatError,
  UNIT_FILE_STATES,
} from "../../lib/systemd.ts";
import { sdBooted } from "../../lib/init_system.ts";
import { installToolLog, lingeringUser, meshCli, sh, userctl, writeIn } from "./systemd_lab.ts";

// --- without a lab ---------------------------------------------------------------------------

/**
 * Recorded in the lab (systemd 252.39): `systemctl show -p Id,LoadState,ActiveState,SubState,
 * UnitFileState,NextElapseUSecRealtime,NextElapseUSecMonotonic,LastTriggerUSec,Unit -- mesh-ok.timer
 * mesh-elapsed.timer mesh-masked.timer nosuch.timer mesh-aka.timer mesh-transient.timer`
 * (mesh-aka.timer is an alias of mesh-alias.timer), exit 0.
 */
const RECORDED = `Unit=mesh-ok.service
NextElapseUSecRealtime=Mon 2026-11-30 15:00:00 UTC
NextElapseUSecMonotonic=0
LastTriggerUSec=
Id=mesh-ok.timer
LoadState=loaded
ActiveState=active
SubState=waiting
UnitFileState=enabled

Unit=mesh-elapsed.service
NextElapseUSecRealtime=
NextElapseUSecMonotonic=infinity
LastTriggerUSec=Mon 2026-11-30 14:33:31 UTC
Id=mesh-elapsed.timer
LoadState=loaded
ActiveState=active
SubState=elapsed
UnitFileState=enabled

Unit=
NextElapseUSecRealtime=
NextElapseUSecMonotonic=infinity
LastTriggerUSec=
Id=mesh-masked.timer
LoadState=masked
ActiveState=inactive
SubState=dead
UnitFileState=masked

Unit=
NextElapseUSecRealtime=
NextElapseUSecMonotonic=infinity
LastTriggerUSec=
Id=nosuch.timer
LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=

Unit=mesh-alias.service
NextElapseUSecRealtime=Mon 2026-11-30 15:00:00 UTC
NextElapseUSecMonotonic=0
LastTriggerUSec=
Id=mesh-alias.timer
LoadState=loaded
ActiveState=active
SubState=waiting
UnitFileState=enabled

Unit=mesh-transient.service
NextElapseUSecRealtime=
NextElapseUSecMonotonic=1h 34min 9.319635s
LastTriggerUSec=
Id=mesh-transient.timer
LoadState=loaded
ActiveState=active
SubState=waiting
UnitFileState=transient
`;
const RECORDED_UNITS = [
  "mesh-ok.timer",
  "mesh-elapsed.timer",
  "mesh-masked.timer",
  "nosuch.timer",
  "mesh-aka.timer",
  "mesh-transient.timer",
];

function timersFrom(text: string, units: string[], account = "root"): ObservedTimer[] {
  return parseShow(text, units).map((b, i) => ({
    account,
    unit: units[i]!,
    id: b.Id!,
    load: b.LoadState!,
    active: b.ActiveState!,
    sub: b.SubState!,
    unitFile: b.UnitFileState!,
    nextRealtime: b.NextElapseUSecRealtime!,
    nextMonotonic: b.NextElapseUSecMonotonic!,
    lastTrigger: b.LastTriggerUSec!,
    triggers: b.Unit!,
  }));
}

Deno.test("systemctl show: one block per unit named, in order, as recorded in the lab", () => {
  const blocks = parseShow(RECORDED, RECORDED_UNITS);
  assertEquals(blocks.length, 6);
  assertEquals(blocks[0]!.Id, "mesh-ok.timer");
  assertEquals(blocks[0]!.NextElapseUSecRealtime, "Mon 2026-11-30 15:00:00 UTC");
  assertEquals(blocks[3]!.UnitFileState, "", "an empty value is kept, not dropped");
  assertEquals(blocks[4]!.Id, "mesh-alias.timer", "an alias is shown as the unit it names");
  let error: unknown;
  try {
    parseShow(RECORDED, [...RECORDED_UNITS, "one-more.timer"]);
  } catch (e) {
    error = e;
  }
  assert(error instanceof SystemdFormatError, "a block missing is not a unit missing");
  assertStringIncludes((error as Error).message, "printed 6 block(s), expected 7");
});

Deno.test("every documented systemd word has its own grading, and an unknown one is refused", () => {
  for (const w of UNIT_FILE_STATES) assert(w in TIMER_BOOT_WORDS, w);
  for (const w of LOAD_STATES) assert(w in TIMER_LOAD_WORDS, w);
  for (const w of ACTIVE_STATES) assert(w in TIMER_ACTIVE_WORDS, w);
  assertEquals(
    Object.entries(TIMER_BOOT_WORDS).filter(([, v]) => v === undefined).map(([k]) => k),
    ["enabled"],
    "only enabled starts at boot",
  );
  // Distinct outcomes keep distinct words: no two states share a sentence.
  const sentences = Object.values(TIMER_BOOT_WORDS).filter((v) => v !== undefined);
  assertEquals(new Set(sentences).size, sentences.length);
  const [ok] = timersFrom(RECORDED, RECORDED_UNITS);
  assertEquals(unknownWords(ok!), []);
  assertEquals(unknownWords({ ...ok!, unitFile: "frobbed" }), [
    'mesh-ok.timer: UnitFileState="frobbed" (LoadState=loaded)',
  ]);
  assertEquals(unknownWords({ ...ok!, active: "dozing" }), ['mesh-ok.timer: ActiveState="dozing"']);
  assertEquals(unknownWords({ ...ok!, unitFile: "" }).length, 1, "loaded with no state is unknown");
});

Deno.test("grading recorded timers: enabled+active is clean; each other state is said", () => {
  const t = Object.fromEntries(timersFrom(RECORDED, RECORDED_UNITS).map((x) => [x.unit, x]));
  assertEquals(gradeTimer(t["mesh-ok.timer"]!), []);
  assertEquals(gradeTimer(t["mesh-aka.timer"]!), [], "an alias is graded by the unit it names");
  const elapsed = gradeTimer(t["mesh-elapsed.timer"]!);
  assertEquals(elapsed.length, 1);
  assertStringIncludes(elapsed[0]!, "active with no next trigger (SubState=elapsed");
  assertEquals(gradeTimer(t["mesh-masked.timer"]!), [
    TIMER_BOOT_WORDS.masked!,
    TIMER_ACTIVE_WORDS.inactive!,
  ]);
  assertEquals(gradeTimer(t["nosuch.timer"]!), [TIMER_LOAD_WORDS["not-found"]!]);
  // Scheduled by a monotonic time span only: scheduled, but gone at the next boot.
  assertEquals(gradeTimer(t["mesh-transient.timer"]!), [TIMER_BOOT_WORDS.transient!]);
});

function observation(
  timers: ObservedTimer[],
  state: "observed" | "absent" | "failed",
): Observation {
  return {
    time: "2026-11-30T00:00:00Z",
    containers: [],
    listeners: [],
    addresses: [],
    probes: [],
    timers,
    sources: [{ source: "timers", account: "root", state, method: "test", detail: "why" }],
  };
}

Deno.test("compare: findings carry check timer, the entry, and the triggered unit is never asked", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  ok: {kind: batch, timer: mesh-ok.timer}
  elapsed: {kind: batch, timer: mesh-elapsed.timer}
  gone: {kind: batch, timer: nosuch.timer}
`);
  const timers = timersFrom(RECORDED, RECORDED_UNITS);
  const f = compareTimers(registry, observation(timers, "observed"));
  assertEquals(f.map((x) => [x.check, x.direction, x.service, x.subject]), [
    ["timer", "missing", "elapsed", "root/mesh-elapsed.timer"],
    ["timer", "missing", "gone", "root/nosuch.timer"],
  ]);
  assertStringIncludes(f[0]!.detail, "which triggers mesh-elapsed.service");
  // The same through compare(), the anti-join run uses.
  const all = compare(registry, observation(timers, "observed"), { certWarnMs: 0, now: 0 });
  assertEquals(all.filter((x) => x.check === "timer").length, 2);
  // A failed source is not compared; an absent one makes every declared timer missing.
  assertEquals(compareTimers(registry, observation([], "failed")), []);
  const absent = compareTimers(registry, observation([], "absent"));
  assertEquals(absent.map((x) => x.service), ["ok", "elapsed", "gone"]);
  assert(absent.every((x: Finding) => x.detail.includes("cannot run: why")));
});

Deno.test("a machine not booted with systemd: the timers source is absent and the batch missing", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-timers-" });
  try {
    assertEquals(sdBooted(root).booted, false);
    const seen = await observeTimers([{ account: "root", units: ["publish.timer"] }], {
      passwd: new Map([["root", { name: "root", uid: 0, gid: 0, home: "/root" }]]),
      root,
    });
    assertEquals(seen.sources.map((s) => [s.source, s.account, s.state]), [
      ["timers", "root", "absent"],
    ]);
    assertStringIncludes(seen.sources[0]!.detail, "not booted with systemd");
    const registry = parseRegistry(
      "version: 1\naccounts: [root]\nservices:\n  publish: {kind: batch, timer: publish.timer}\n",
    );
    const f = compareTimers(registry, {
      ...observation(seen.timers, "absent"),
      sources: seen.sources,
    });
    assertEquals(f.map((x) => [x.check, x.direction, x.service]), [[
      "timer",
      "missing",
      "publish",
    ]]);
    await Deno.mkdir(`${root}/run/systemd/system`, { recursive: true });
    assertEquals(sdBooted(root).booted, true, "sd_booted(3): the directory decides");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a template without an instance is refused by the registry (it would fail every timer's call)", () => {
  let error: unknown;
  try {
    parseRegistry(
      "version: 1\naccounts: [root]\nservices:\n  t: {kind: batch, timer: job@.timer}\n",
    );
  } catch (e) {
    error = e;
  }
  assertStringIncludes(String(error), "a template needs an instance");
  parseRegistry(
    "version: 1\naccounts: [root]\nservices:\n  t: {kind: batch, timer: job@x.timer}\n",
  );
});

// --- in the lab ------------------------------------------------------------------------------

const UNIT_DIR = "/usr/local/lib/systemd/system"; // not /etc: a unit file in /etc cannot be masked
const INSTALL = "[Install]\nWantedBy=timers.target\n";

/** Each lab timer: how it is made, what `is-enabled` says, and the words it is graded with. */
interface Case {
  timer: string;
  /** Timer section and install section. */
  spec?: { timer: string; install: string };
  /** Shell run after daemon-reload to put it in its state. */
  then?: string;
  /** `systemctl is-enabled` output, or a fragment of its error. */
  isEnabled: string;
  /** `show` UnitFileState (and LoadState) the same unit reports. */
  show: { unitFile: string; load: string };
  /** Fragments of the finding's detail; `[]`: no finding. */
  graded: string[];
}

const CASES: Case[] = [
  {
    timer: "mesh-ok.timer",
    spec: { timer: "OnCalendar=hourly", install: INSTALL },
    then: "systemctl enable --now mesh-ok.timer",
    isEnabled: "enabled",
    show: { unitFile: "enabled", load: "loaded" },
    graded: [],
  },
  {
    timer: "mesh-off.timer",
    spec: { timer: "OnCalendar=hourly", install: INSTALL },
    isEnabled: "disabled",
    show: { unitFile: "disabled", load: "loaded" },
    graded: ["disabled: it does not start at boot", "inactive: it is not started"],
  },
  {
    timer: "mesh-masked.timer",
    spec: { timer: "OnCalendar=hourly", install: INSTALL },
    then: "systemctl mask mesh-masked.timer",
    isEnabled: "masked",
    show: { unitFile: "masked", load: "masked" },
    graded: ["masked: it cannot be started at all", "inactive"],
  },
  {
    timer: "mesh-elapsed.timer",
    spec: { timer: "OnActiveSec=1s", install: INSTALL },
    then: "systemctl enable --now mesh-elapsed.timer",
    isEnabled: "enabled",
    show: { unitFile: "enabled", load: "loaded" },
    graded: ["active with no next trigger (SubState=elapsed"],
  },
  {
    timer: "mesh-past.timer",
    spec: { timer: "OnCalendar=2020-01-01 00:00:00\nPersistent=false", install: INSTALL },
    then: "systemctl enable --now mesh-past.timer",
    isEnabled: "enabled",
    show: { unitFile: "enabled", load: "loaded" },
    graded: ["active with no next trigger (SubState=elapsed, last triggered never)"],
  },
  {
    timer: "mesh-static.timer",
    spec: { timer: "OnCalendar=hourly", install: "" },
    then: "systemctl start mesh-static.timer",
    isEnabled: "static",
    show: { unitFile: "static", load: "loaded" },
    graded: ["static: it has no [Install] section"],
  },
  {
    timer: "mesh-rt.timer",
    spec: { timer: "OnCalendar=hourly", install: INSTALL },
    then: "systemctl enable --runtime --now mesh-rt.timer",
    isEnabled: "enabled-runtime",
    show: { unitFile: "enabled-runtime", load: "loaded" },
    graded: ["enabled-runtime: enabled only under /run"],
  },
  {
    timer: "mesh-aka.timer", // an alias of mesh-alias.timer
    then: "systemctl enable --now mesh-alias.timer",
    isEnabled: "alias",
    show: { unitFile: "enabled", load: "loaded" },
    graded: [],
  },
  {
    timer: "mesh-indirect.timer",
    spec: { timer: "OnCalendar=hourly", install: "[Install]\nAlso=mesh-ok.timer\n" },
    isEnabled: "indirect",
    show: { unitFile: "indirect", load: "loaded" },
    graded: ["indirect: it is not enabled itself", "inactive"],
  },
  {
    timer: "mesh-linked.timer",
    then: "systemctl link /opt/mesh/mesh-linked.timer",
    isEnabled: "linked",
    show: { unitFile: "linked", load: "loaded" },
    graded: ["linked: made available with systemctl link", "inactive"],
  },
  {
    timer: "mesh-linkedrt.timer",
    then: "systemctl link --runtime /opt/mesh/mesh-linkedrt.timer",
    isEnabled: "linked-runtime",
    show: { unitFile: "linked-runtime", load: "loaded" },
    graded: ["linked-runtime: linked under /run only"],
  },
  {
    timer: "mesh-maskrt.timer",
    spec: { timer: "OnCalendar=hourly", install: INSTALL },
    then: "systemctl mask --runtime mesh-maskrt.timer",
    isEnabled: "masked-runtime",
    show: { unitFile: "masked-runtime", load: "masked" },
    graded: ["masked-runtime: masked under /run until the next boot"],
  },
  {
    timer: "mesh-gen.timer", // made by /etc/systemd/system-generators/mesh-gen
    isEnabled: "generated",
    show: { unitFile: "generated", load: "loaded" },
    graded: ["generated: a generator made it"],
  },
  {
    timer: "mesh-transient.timer",
    then: "systemd-run --unit=mesh-transient --on-active=1h /bin/true",
    isEnabled: "transient",
    show: { unitFile: "transient", load: "loaded" },
    graded: ["transient: created at runtime"],
  },
  {
    timer: "mesh-bad.timer", // "[Install" never closes: systemd cannot parse it
    isEnabled: "Failed to get unit file state for mesh-bad.timer: Bad message",
    show: { unitFile: "bad", load: "error" },
    graded: ["error: its unit file cannot be loaded (LoadState=error)"],
  },
  {
    timer: "mesh-bad2.timer", // loads, but its [Install] has an invalid Also=
    isEnabled: "Failed to get unit file state for mesh-bad2.timer: Invalid argument",
    show: { unitFile: "bad", load: "loaded" },
    graded: ["bad: systemd cannot read its unit file", "inactive"],
  },
  {
    timer: "nosuch.timer",
    isEnabled: "Failed to get unit file state for nosuch.timer: No such file or directory",
    show: { unitFile: "", load: "not-found" },
    graded: ["not-found: the timer does not exist"],
  },
];

async function prepare(m: LabMachine): Promise<void> {
  const service = "[Service]\nType=oneshot\nExecStart=/bin/true\n"; // static: no [Install]
  for (const c of CASES) {
    const base = c.timer.replace(/\.timer$/, "");
    if (c.spec) {
      await writeIn(m, `${UNIT_DIR}/${c.timer}`, `[Timer]\n${c.spec.timer}\n${c.spec.install}`);
    }
    // The unit each timer triggers (not for the generated and transient ones: they bring
    // their own, and a unit file of that name would clash with systemd-run's).
    if (c.spec || /linked|bad/.test(base)) await writeIn(m, `${UNIT_DIR}/${base}.service`, service);
  }
  await writeIn(
    m,
    `${UNIT_DIR}/mesh-alias.timer`,
    `[Timer]\nOnCalendar=hourly\n[Install]\nWantedBy=timers.target\nAlias=mesh-aka.timer\n`,
  );
  await writeIn(m, `${UNIT_DIR}/mesh-alias.service`, service);
  for (const name of ["mesh-linked", "mesh-linkedrt"]) {
    await writeIn(m, `/opt/mesh/${name}.timer`, `[Timer]\nOnCalendar=hourly\n${INSTALL}`);
  }
  await writeIn(m, `${UNIT_DIR}/mesh-bad.timer`, "[Timer]\nOnCalendar=hourly\n[Install\n");
  await writeIn(
    m,
    `${UNIT_DIR}/mesh-bad2.timer`,
    "[Timer]\nOnCalendar=hourly\n[Install]\nWantedBy=timers.target\nAlso=not/valid\n",
  );
  await writeIn(
    m,
    "/etc/systemd/system-generators/mesh-gen",
    '#!/bin/sh\nprintf "[Timer]\\nOnCalendar=hourly\\n" > "$1/mesh-gen.timer"\n' +
      'printf "[Service]\\nType=oneshot\\nExecStart=/bin/true\\n" > "$1/mesh-gen.service"\n',
  );
  await sh(m, "chmod 0755 /etc/systemd/system-generators/mesh-gen && systemctl daemon-reload");
  for (const c of CASES) if (c.then) await sh(m, c.then);
  // Let the one-second timer fire, so that it has nothing left to schedule.
  for (let i = 0; i < 50; i++) {
    const sub = await m.exec(["systemctl", "show", "-P", "SubState", "mesh-elapsed.timer"]);
    if (sub.stdout.trim() === "elapsed") break;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const registryOf = (cases: Case[], extra = "") =>
  `version: 1\naccounts: [root]\nservices:\n${
    cases.map((c) => `  ${c.timer.replace(/\.timer$/, "")}: {kind: batch, timer: ${c.timer}}\n`)
      .join("")
  }${extra}`;

interface RunJson {
  status: string;
  findings: Finding[];
  sources: { source: string; account?: string; state: string; detail: string; method: string }[];
}

Deno.test({
  name: "timers in the systemd lab: every state graded in ONE systemctl show per manager",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const m = await bootLab("systemd");
    try {
      await installToolLog(m);
      await prepare(m);

      await t.step("is-enabled and show agree, except for not-found, alias and bad", async () => {
        for (const c of CASES) {
          const said = await m.exec(["systemctl", "is-enabled", c.timer], { allowFailure: true });
          assertStringIncludes(
            (said.stdout + said.stderr).trim(),
            c.isEnabled,
            `is-enabled ${c.timer}`,
          );
          const show = await m.exec([
            "systemctl",
            "show",
            "-p",
            "UnitFileState,LoadState",
            "--",
            c.timer,
          ]);
          assertStringIncludes(show.stdout, `UnitFileState=${c.show.unitFile}\n`, c.timer);
          assertStringIncludes(show.stdout, `LoadState=${c.show.load}\n`, c.timer);
        }
        // The service a timer triggers is static, legitimately.
        const svc = await m.exec(["systemctl", "is-enabled", "mesh-ok.service"], {
          allowFailure: true,
        });
        assertEquals(svc.stdout.trim(), "static");
      });

      await t.step("mesh-reconcile run grades each, and asks once", async () => {
        await writeIn(m, "/root/timers.yaml", registryOf(CASES));
        const r = await meshCli(m, [
          "run",
          "--registry",
          "/root/timers.yaml",
          "--json",
          "--caddy-admin",
          "none",
        ]);
        const result = JSON.parse(r.stdout) as RunJson;
        assertEquals(
          result.sources.filter((s) => s.source === "timers").map((s) => [s.account, s.state]),
          [["root", "observed"]],
        );
        const timers = result.findings.filter((f) => f.check === "timer");
        for (const c of CASES) {
          const f = timers.filter((x) => x.subject === `root/${c.timer}`);
          if (c.graded.length === 0) {
            assertEquals(f, [], `${c.timer} is healthy`);
            continue;
          }
          assertEquals(f.length, 1, `${c.timer}: ${JSON.stringify(timers)}`);
          assertEquals([f[0]!.direction, f[0]!.service], ["missing", c.timer.slice(0, -6)]);
          for (const words of c.graded) assertStringIncludes(f[0]!.detail, words, c.timer);
        }
        assert(r.calls.length > 0, "the wrapper logged the run's systemctl calls");
        const asked = r.calls.filter((c) => /systemctl show .*\.timer/.test(c));
        assertEquals(asked.length, 1, r.calls.join("\n"));
        assertStringIncludes(asked[0]!, `-p ${TIMER_PROPERTIES.join(",")} -- `);
        for (const c of CASES) assertStringIncludes(asked[0]!, ` ${c.timer}`);
        assertEquals(r.code, 1, "drift");
      });

      await t.step("a clean registry of healthy timers: no timer finding", async () => {
        const healthy = CASES.filter((c) => c.graded.length === 0);
        await writeIn(m, "/root/healthy.yaml", registryOf(healthy));
        const r = await meshCli(m, [
          "run",
          "--registry",
          "/root/healthy.yaml",
          "--json",
          "--caddy-admin",
          "none",
        ]);
        const result = JSON.parse(r.stdout) as RunJson;
        assertEquals(result.findings.filter((f) => f.check === "timer"), []);
      });

      await t.step("a rootless account's timers are asked in its own user manager", async () => {
        const uid = await lingeringUser(m, "meshu");
        const dir = "/home/meshu/.config/systemd/user";
        await writeIn(m, `${dir}/ujob.timer`, `[Timer]\nOnCalendar=hourly\n${INSTALL}`);
        await writeIn(m, `${dir}/ujob.service`, "[Service]\nType=oneshot\nExecStart=/bin/true\n");
        await writeIn(m, `${dir}/uoff.timer`, `[Timer]\nOnCalendar=hourly\n${INSTALL}`);
        await writeIn(m, `${dir}/uoff.service`, "[Service]\nType=oneshot\nExecStart=/bin/true\n");
        await sh(m, "chown -R meshu:meshu /home/meshu/.config");
        await userctl(m, "meshu", uid, ["daemon-reload"]);
        const enabled = await userctl(m, "meshu", uid, ["enable", "--now", "ujob.timer"]);
        assertEquals(enabled.code, 0, enabled.stderr);
        // A second account without linger or login: no user manager at all.
        await sh(m, "id meshv >/dev/null 2>&1 || useradd -m meshv");
        await writeIn(
          m,
          "/root/users.yaml",
          registryOf(
            [CASES[0]!],
            "  ujob: {kind: batch, timer: ujob.timer, user: meshu}\n" +
              "  uoff: {kind: batch, timer: uoff.timer, user: meshu}\n" +
              "  vjob: {kind: batch, timer: vjob.timer, user: meshv}\n",
          ),
        );
        const r = await meshCli(m, [
          "run",
          "--registry",
          "/root/users.yaml",
          "--json",
          "--caddy-admin",
          "none",
        ]);
        const result = JSON.parse(r.stdout) as RunJson;
        const sources = result.sources.filter((s) => s.source === "timers");
        assertEquals(sources.map((s) => [s.account, s.state]).sort(), [
          ["meshu", "observed"],
          ["meshv", "absent"],
          ["root", "observed"],
        ]);
        assertStringIncludes(sources.find((s) => s.account === "meshv")!.detail, "does not linger");
        const user = r.calls.filter((c) => c.startsWith("meshu: systemctl --user show"));
        assertEquals(user.length, 1, r.calls.join("\n"));
        assertStringIncludes(user[0]!, "-- ujob.timer uoff.timer");
        const timers = result.findings.filter((f) => f.check === "timer");
        assertEquals(timers.map((f) => f.service).sort(), ["uoff", "vjob"]);
        assertStringIncludes(
          timers.find((f) => f.service === "uoff")!.detail,
          "in the user manager of meshu",
        );
        assertStringIncludes(timers.find((f) => f.service === "vjob")!.detail, "cannot run");
      });
    } finally {
      await m.destroy();
    }
  },
});
