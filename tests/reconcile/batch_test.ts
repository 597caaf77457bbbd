/**
 * `batch enable` / `batch disable`: the registry edit keeps every other byte (comments beside and
 * above entries, folded notes, flow maps, order, blank lines), is validated before anything runs,
 * and is written only after systemd says the timer is what was asked. In the systemd lab machine,
 * with the real systemctl: enable and disable, refusals that run nothing, an enable whose start
 * fails (undone, registry unchanged), a registry edited meanwhile and a registry directory gone
 * read-only between the two steps (both undone), and a rootless account's user manager.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";
import { addEntry, RegistryEditError, removeEntry } from "../../reconcile/registry_edit.ts";
import { RegistryError } from "../../reconcile/registry.ts";
import { batchEnable, disablePlan, enableRefusal } from "../../reconcile/batch.ts";
import type { ObservedTimer } from "../../reconcile/observe/timers.ts";
import { installToolLog, lingeringUser, meshCli, sh, userctl, writeIn } from "./systemd_lab.ts";

const ORIGINAL = `# Registry of lab-systemd
# kept in /root/reg, outside any checkout

version: 1
accounts: [root] # the accounts asked
services:
  web:
    kind: service # a container service
    user: root
    container: web
    port: [8080, 8081]

  # the old blog only redirects: keep it declared, or the address it serves is rogue
  old-blog:
    kind: site
    web: old.example.org
    redirect: "https://app.example.org/"
    note: >-
      only redirects, and stays declared,
      or the address it serves is rogue
  sshd: {kind: daemon, user: root, port: 22}   # beside sshd
# trailing comment of the file
`;

/** The lines `batch enable publish --timer mesh-pub.timer --container publisher --user root` adds. */
const PUBLISH = `
  publish:
    kind: batch
    timer: mesh-pub.timer
    container: publisher
    user: root
`;
const AT = ORIGINAL.indexOf("# trailing comment");
const WITH_PUBLISH = ORIGINAL.slice(0, AT) + PUBLISH + ORIGINAL.slice(AT);

// --- without a lab ---------------------------------------------------------------------------

Deno.test("adding an entry changes nothing else, byte for byte", () => {
  const edited = addEntry(ORIGINAL, {
    name: "publish",
    fields: {
      kind: "batch",
      timer: "mesh-pub.timer",
      container: "publisher",
      user: "root",
    },
  });
  assertEquals(edited, WITH_PUBLISH);
  // Everything but the inserted lines is the original, in order.
  assertEquals(edited.replace(PUBLISH, ""), ORIGINAL);
  // Added, then removed: the original, byte for byte.
  assertEquals(removeEntry(edited, "publish"), ORIGINAL);
});

Deno.test("removing an entry takes its own lines and comments, and nothing else", () => {
  // Its comment above and the blank line that set it apart go with it.
  const blog = ORIGINAL.indexOf("\n  # the old blog");
  assertEquals(
    removeEntry(ORIGINAL, "old-blog"),
    ORIGINAL.slice(0, blog) + ORIGINAL.slice(ORIGINAL.indexOf("  sshd:")),
  );
  const noSshd = removeEntry(ORIGINAL, "sshd");
  assertEquals(
    noSshd,
    ORIGINAL.replace("  sshd: {kind: daemon, user: root, port: 22}   # beside sshd\n", ""),
  );
  assertStringIncludes(noSshd, "# the old blog only redirects: keep it declared");
  assertStringIncludes(noSshd, "# trailing comment of the file");
  // A comment written inside an entry goes with it; one below the map stays.
  const inside =
    "version: 1\naccounts: [root]\nservices:\n  a:\n    kind: batch\n    timer: a.timer\n" +
    "    # why a exists\n  b: {kind: daemon}\n# end\n";
  assertEquals(
    removeEntry(inside, "a"),
    "version: 1\naccounts: [root]\nservices:\n  b: {kind: daemon}\n# end\n",
  );
  // The last entry: `services` stays, as an empty map, and its comment stays beside it.
  assertEquals(
    removeEntry(
      "version: 1\naccounts: [root]\nservices: # the estate\n  a: {kind: batch, timer: a.timer}\n",
      "a",
    ),
    "version: 1\naccounts: [root]\nservices: {} # the estate\n",
  );
});

Deno.test("flow maps, an empty map and CRLF files are edited in their own style", () => {
  assertEquals(
    addEntry("version: 1\naccounts: [root]\nservices: {} # none yet\n", {
      name: "a",
      fields: {
        kind: "batch",
        timer: "a.timer",
      },
    }),
    "version: 1\naccounts: [root]\nservices: # none yet\n  a:\n    kind: batch\n    timer: a.timer\n",
  );
  const flow = "version: 1\naccounts: [root]\nservices: {b: {kind: daemon}}\n";
  const added = addEntry(flow, { name: "a", fields: { kind: "batch", timer: "a.timer" } });
  assertEquals(
    added,
    "version: 1\naccounts: [root]\nservices: {b: {kind: daemon}, a: {kind: batch, timer: a.timer}}\n",
  );
  assertEquals(removeEntry(added, "a"), flow);
  const crlf = ORIGINAL.replaceAll("\n", "\r\n");
  const edited = addEntry(crlf, { name: "n", fields: { kind: "batch", timer: "n.timer" } });
  assert(!/[^\r]\n/.test(edited), "every line still ends in CRLF");
  assertEquals(removeEntry(edited, "n"), crlf);
});

Deno.test("an edit that would make the registry invalid, or repeat or miss an entry, is refused", () => {
  const refused = (f: () => unknown, type: new (...a: never[]) => Error, words: string) => {
    let error: unknown;
    try {
      f();
    } catch (e) {
      error = e;
    }
    assert(error instanceof type, `${String(error)}`);
    assertStringIncludes((error as Error).message, words);
  };
  refused(
    () => addEntry(ORIGINAL, { name: "web", fields: { kind: "batch", timer: "x.timer" } }),
    RegistryEditError,
    'already has an entry "web" (kind service)',
  );
  refused(
    () =>
      addEntry(ORIGINAL, {
        name: "x",
        fields: { kind: "batch", timer: "x.timer", container: "c", user: "bob" },
      }),
    RegistryError,
    'Account "bob" is not in accounts',
  );
  refused(
    () =>
      addEntry(ORIGINAL, {
        name: "x",
        fields: { kind: "batch", timer: "x.timer", container: "web", user: "root" },
      }),
    RegistryError,
    'Container "web" of account "root" is already claimed by "web"',
  );
  refused(
    () => addEntry(ORIGINAL, { name: "x", fields: { kind: "batch", timer: "x.service" } }),
    RegistryError,
    "Must be a systemd timer unit",
  );
  refused(() => removeEntry(ORIGINAL, "nothere"), RegistryEditError, 'has no entry "nothere"');
  refused(
    () => removeEntry(ORIGINAL, "web", { kind: "batch" }),
    RegistryEditError,
    "is of kind service, not batch",
  );
});

const timer = (over: Partial<ObservedTimer>): ObservedTimer => ({
  account: "root",
  unit: "x.timer",
  id: "x.timer",
  load: "loaded",
  active: "inactive",
  sub: "dead",
  unitFile: "disabled",
  nextRealtime: "",
  nextMonotonic: "infinity",
  lastTrigger: "",
  triggers: "x.service",
  ...over,
});

Deno.test("what enable and disable refuse before running anything", () => {
  assertEquals(enableRefusal(timer({})), undefined);
  assertEquals(enableRefusal(timer({ unitFile: "enabled", active: "active" })), undefined);
  assertStringIncludes(
    enableRefusal(timer({ unitFile: "static" }))!,
    "systemctl enable of a static unit exits 0 and enables nothing",
  );
  assertStringIncludes(
    enableRefusal(timer({ load: "not-found", unitFile: "" }))!,
    "does not exist",
  );
  assertStringIncludes(enableRefusal(timer({ load: "masked", unitFile: "masked" }))!, "masked");
  assertStringIncludes(enableRefusal(timer({ id: "y.timer" }))!, "an alias of y.timer");
  for (const w of ["enabled-runtime", "linked", "indirect", "generated", "transient", "bad"]) {
    assert(enableRefusal(timer({ unitFile: w })) !== undefined, w);
  }
  assertEquals(disablePlan(timer({ unitFile: "enabled", active: "active" })), {
    argv: ["disable", "--now"],
    why: "",
  });
  assertEquals(disablePlan(timer({ active: "active" })), { argv: ["stop"], why: "" });
  assertEquals("argv" in disablePlan(timer({})) && disablePlan(timer({})), {
    argv: [],
    why: "x.timer is already disabled and inactive.",
  });
  assertEquals(disablePlan(timer({ load: "not-found", unitFile: "" })), {
    argv: [],
    why: "x.timer does not exist: there is nothing to disable.",
  });
  assert("refuse" in disablePlan(timer({ unitFile: "static", active: "active" })));
});

Deno.test("on a machine without systemd, enable is refused and the registry not touched", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-batch-" });
  try {
    const file = `${dir}/registry.yaml`;
    await Deno.writeTextFile(file, ORIGINAL);
    const before = await Deno.stat(file);
    const r = await batchEnable("publish", { registry: file, timer: "mesh-pub.timer" });
    assertEquals(r.outcome, "refused");
    assertStringIncludes(r.message, "not booted with systemd");
    assertEquals(r.steps, []);
    assertEquals(await Deno.readTextFile(file), ORIGINAL);
    assertEquals((await Deno.stat(file)).mtime, before.mtime);
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["registry.yaml"], "no leftovers");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// --- in the lab ------------------------------------------------------------------------------

const REG = "/root/reg/registry.yaml";
const UNIT_DIR = "/usr/local/lib/systemd/system";
const SERVICE = "[Service]\nType=oneshot\nExecStart=/bin/true\n";
const TIMER = "[Timer]\nOnCalendar=hourly\n[Install]\nWantedBy=timers.target\n";

interface Json {
  outcome: string;
  message: string;
  steps: string[];
}

async function batch(m: LabMachine, args: string[], env?: Record<string, string>) {
  const r = await meshCli(m, ["batch", ...args, "--registry", REG, "--json"], { env });
  let json: Json;
  try {
    json = JSON.parse(r.stdout) as Json;
  } catch {
    throw new Error(`batch printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...r, json };
}

const word = async (m: LabMachine, verb: string, unit: string) =>
  (await m.exec(["systemctl", verb, unit], { allowFailure: true })).stdout.trim();

/** The registry's bytes and modification time, read inside the machine. */
const snapshot = async (m: LabMachine) =>
  (await sh(m, `stat -c %Y.%y "${REG}"; cat "${REG}"`)).stdout;

Deno.test({
  name: "batch enable and disable in the systemd lab, with the real systemctl",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const m = await bootLab("systemd");
    try {
      await installToolLog(m);
      for (const name of ["mesh-pub", "mesh-other", "mesh-gone"]) {
        await writeIn(m, `${UNIT_DIR}/${name}.timer`, TIMER);
        await writeIn(m, `${UNIT_DIR}/${name}.service`, SERVICE);
      }
      await writeIn(m, `${UNIT_DIR}/mesh-static.timer`, "[Timer]\nOnCalendar=hourly\n");
      await writeIn(m, `${UNIT_DIR}/mesh-static.service`, SERVICE);
      // Enabling works; starting fails (it triggers a unit that does not exist).
      await writeIn(
        m,
        `${UNIT_DIR}/mesh-broken.timer`,
        "[Timer]\nOnCalendar=hourly\nUnit=nosuchsvc.service\n[Install]\nWantedBy=timers.target\n",
      );
      await sh(m, "systemctl daemon-reload");
      await writeIn(m, REG, ORIGINAL);

      await t.step(
        "enable: switched on first, then the entry added, nothing else changed",
        async () => {
          const r = await batch(m, [
            "enable",
            "publish",
            "--timer",
            "mesh-pub.timer",
            "--container",
            "publisher",
            "--user",
            "root",
          ]);
          assertEquals([r.code, r.json.outcome], [0, "enabled"], r.json.message);
          assertEquals(await word(m, "is-enabled", "mesh-pub.timer"), "enabled");
          assertEquals(await word(m, "is-active", "mesh-pub.timer"), "active");
          assertEquals((await m.exec(["cat", REG])).stdout, WITH_PUBLISH);
          assertEquals(
            r.calls.map((c) => c.split(" ")[2]),
            ["show", "enable", "show"],
            r.calls.join("\n"),
          );
          assertStringIncludes(r.calls[1]!, "enable --now -- mesh-pub.timer");
          assertEquals(r.json.steps.at(-1), `write ${REG} (atomically)`);
        },
      );

      await t.step("a run afterwards grades the new entry's timer healthy", async () => {
        const r = await meshCli(m, ["run", "--registry", REG, "--json", "--caddy-admin", "none"]);
        const result = JSON.parse(r.stdout) as { findings: { check: string; service?: string }[] };
        assertEquals(result.findings.filter((f) => f.check === "timer"), []);
        assertEquals(
          result.findings.filter((f) => f.service === "publish").map((f) => f.check),
          [],
          "its container is not required to run, and not rogue when it does",
        );
      });

      await t.step("refusals run nothing and leave the file as it was", async () => {
        const before = await snapshot(m);
        const again = await batch(m, ["enable", "publish", "--timer", "mesh-pub.timer"]);
        assertEquals([again.code, again.json.outcome], [2, "refused"]);
        assertStringIncludes(again.json.message, 'already has an entry "publish"');
        assertEquals(again.calls, [], "not even asked");
        const statik = await batch(m, ["enable", "st", "--timer", "mesh-static.timer"]);
        assertEquals([statik.code, statik.json.outcome], [2, "refused"]);
        assertStringIncludes(statik.json.message, "exits 0 and enables nothing");
        assertEquals(statik.calls.map((c) => c.split(" ")[2]), ["show"]);
        const none = await batch(m, ["enable", "gone", "--timer", "nosuch.timer"]);
        assertEquals(none.json.outcome, "refused");
        assertStringIncludes(none.json.message, "nosuch.timer is not-found");
        const noUser = await batch(m, [
          "enable",
          "x",
          "--timer",
          "mesh-other.timer",
          "--container",
          "c",
        ]);
        assertEquals(noUser.json.outcome, "refused");
        assertStringIncludes(noUser.json.message, "must name the account it runs in");
        assertEquals(noUser.calls, []);
        assertEquals(await snapshot(m), before, "bytes and modification time unchanged");
        assertEquals(await word(m, "is-enabled", "mesh-static.timer"), "static");
      });

      await t.step(
        "an enable that fails to start is undone; the registry is unchanged",
        async () => {
          const before = await snapshot(m);
          const r = await batch(m, ["enable", "broken", "--timer", "mesh-broken.timer"]);
          assertEquals([r.code, r.json.outcome], [1, "failed"], r.json.message);
          assertStringIncludes(r.json.message, "mesh-broken.timer was not enabled");
          assertStringIncludes(r.json.message, "Undone (disable)");
          assertStringIncludes(r.json.message, "was not changed");
          assertEquals(await word(m, "is-enabled", "mesh-broken.timer"), "disabled");
          assertEquals(await snapshot(m), before);
        },
      );

      await t.step(
        "the registry edited meanwhile: the enable is undone, their edit kept",
        async () => {
          const r = await batch(m, ["enable", "other", "--timer", "mesh-other.timer"], {
            MESH_TOOL_AFTER_ENABLE: `printf '# edited meanwhile\\n' >> ${REG}`,
          });
          assertEquals([r.code, r.json.outcome], [1, "failed"], r.json.message);
          assertStringIncludes(r.json.message, "was changed by someone else meanwhile");
          assertStringIncludes(r.json.message, "Undone (disable and stop)");
          assertEquals(await word(m, "is-enabled", "mesh-other.timer"), "disabled");
          assertEquals(await word(m, "is-active", "mesh-other.timer"), "inactive");
          assertEquals((await m.exec(["cat", REG])).stdout, WITH_PUBLISH + "# edited meanwhile\n");
          await writeIn(m, REG, WITH_PUBLISH);
        },
      );

      await t.step(
        "the registry's directory read-only after enabling: the write fails, undone",
        async () => {
          const before = await snapshot(m);
          const r = await batch(m, ["enable", "other", "--timer", "mesh-other.timer"], {
            MESH_TOOL_AFTER_ENABLE: "mount -o bind,ro /root/reg /root/reg",
          });
          await sh(m, "umount /root/reg");
          assertEquals([r.code, r.json.outcome], [1, "failed"], r.json.message);
          assertStringIncludes(r.json.message, "the registry was not written");
          assertStringIncludes(r.json.message, "Read-only file system");
          assertStringIncludes(r.json.message, "Undone (disable and stop)");
          assertEquals(await word(m, "is-enabled", "mesh-other.timer"), "disabled");
          assertEquals(await snapshot(m), before);
        },
      );

      await t.step(
        "disable: stopped and disabled, then removed: the file as before enable",
        async () => {
          const r = await batch(m, ["disable", "publish"]);
          assertEquals([r.code, r.json.outcome], [0, "disabled"], r.json.message);
          assertEquals(await word(m, "is-enabled", "mesh-pub.timer"), "disabled");
          assertEquals(await word(m, "is-active", "mesh-pub.timer"), "inactive");
          assertEquals((await m.exec(["cat", REG])).stdout, ORIGINAL, "byte for byte");
          assertEquals(r.calls.map((c) => c.split(" ")[2]), ["show", "disable", "show"]);
          assertStringIncludes(r.calls[1]!, "disable --now -- mesh-pub.timer");
        },
      );

      await t.step("disable refuses other kinds and absent entries", async () => {
        const web = await batch(m, ["disable", "web"]);
        assertEquals([web.code, web.json.outcome], [2, "refused"]);
        assertStringIncludes(web.json.message, "is of kind service, not batch");
        const absent = await batch(m, ["disable", "nothere"]);
        assertEquals([absent.code, absent.json.outcome], [2, "refused"]);
        assertEquals((await m.exec(["cat", REG])).stdout, ORIGINAL);
      });

      await t.step(
        "a timer that no longer exists: its entry is removed, nothing is run",
        async () => {
          const on = await batch(m, ["enable", "gone", "--timer", "mesh-gone.timer"]);
          assertEquals(on.json.outcome, "enabled", on.json.message);
          await sh(
            m,
            `systemctl disable --now mesh-gone.timer && rm ${UNIT_DIR}/mesh-gone.timer && ` +
              "systemctl daemon-reload",
          );
          const off = await batch(m, ["disable", "gone"]);
          assertEquals([off.code, off.json.outcome], [0, "disabled"], off.json.message);
          assertStringIncludes(off.json.message, "does not exist: there is nothing to disable");
          assertEquals(off.calls.map((c) => c.split(" ")[2]), ["show"]);
          assertEquals((await m.exec(["cat", REG])).stdout, ORIGINAL);
        },
      );

      await t.step("a rootless account's timer, in its own user manager", async () => {
        const uid = await lingeringUser(m, "meshu");
        const dir = "/home/meshu/.config/systemd/user";
        await writeIn(m, `${dir}/ujob.timer`, TIMER);
        await writeIn(m, `${dir}/ujob.service`, SERVICE);
        await sh(m, "chown -R meshu:meshu /home/meshu/.config");
        await userctl(m, "meshu", uid, ["daemon-reload"]);
        const on = await batch(m, ["enable", "ujob", "--timer", "ujob.timer", "--user", "meshu"]);
        assertEquals([on.code, on.json.outcome], [0, "enabled"], on.json.message);
        assertEquals(
          (await userctl(m, "meshu", uid, ["is-enabled", "ujob.timer"])).stdout.trim(),
          "enabled",
        );
        assert(
          on.calls.every((c) => c.startsWith("meshu: systemctl --user ")),
          on.calls.join("\n"),
        );
        assertEquals(await word(m, "is-enabled", "ujob.timer"), "", "not a system unit");
        const off = await batch(m, ["disable", "ujob"]);
        assertEquals(off.json.outcome, "disabled", off.json.message);
        assertEquals(
          (await userctl(m, "meshu", uid, ["is-enabled", "ujob.timer"])).stdout.trim(),
          "disabled",
        );
        assertEquals((await m.exec(["cat", REG])).stdout, ORIGINAL);
      });
    } finally {
      await m.destroy();
    }
  },
});
