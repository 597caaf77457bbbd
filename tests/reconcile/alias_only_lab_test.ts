/**
 * A unit whose `[Install]` names only `Alias=`: `systemctl enable` exits 0 and `UnitFileState`
 * reads `enabled`, yet nothing wants or requires it, so nothing starts it at boot. In the
 * systemd lab, with the real systemctl: `batch enable` refuses to register such a timer, the
 * `timer` check reports it, and the `boot` check reports a daemon whose unit is such a service.
 */
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab } from "../lab/mod.ts";
import type { Finding } from "../../reconcile/compare.ts";
import { installToolLog, meshCli, sh, writeIn } from "./systemd_lab.ts";

const UNIT_DIR = "/usr/local/lib/systemd/system";
const REG = "/root/reg/registry.yaml";
const EMPTY = "version: 1\naccounts: [root]\nservices: {}\n";

Deno.test({
  name: "alias-only units in the systemd lab: refused by batch enable, reported by timer and boot",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const m = await bootLab("systemd");
    try {
      await installToolLog(m);
      await writeIn(
        m,
        `${UNIT_DIR}/aka-job.timer`,
        "[Timer]\nOnCalendar=hourly\n[Install]\nAlias=aka-job2.timer\n",
      );
      await writeIn(
        m,
        `${UNIT_DIR}/aka-job.service`,
        "[Service]\nType=oneshot\nExecStart=/bin/true\n",
      );
      await writeIn(
        m,
        `${UNIT_DIR}/aka-daemon.service`,
        "[Service]\nExecStart=/bin/sleep 3000001\n[Install]\nAlias=aka-daemon2.service\n",
      );
      await writeIn(m, REG, EMPTY);
      await sh(m, "systemctl daemon-reload");

      await t.step(
        "batch enable refuses it before running anything; the registry is untouched",
        async () => {
          const r = await meshCli(m, [
            "batch",
            "enable",
            "aka",
            "--timer",
            "aka-job.timer",
            "--registry",
            REG,
            "--json",
          ]);
          const json = JSON.parse(r.stdout) as { outcome: string; message: string };
          assertEquals([r.code, json.outcome], [2, "refused"], r.stdout + r.stderr);
          assertStringIncludes(json.message, "nothing would start it at boot");
          assertStringIncludes(json.message, "Alias=");
          assert(r.calls.length > 0, "the wrapper logged the calls");
          assertEquals(r.calls.filter((c) => / enable /.test(c)), [], r.calls.join("\n"));
          assertEquals((await m.exec(["cat", REG])).stdout, EMPTY);
          const word = await m.exec(["systemctl", "is-enabled", "aka-job.timer"], {
            allowFailure: true,
          });
          assertEquals(word.stdout.trim(), "disabled");
        },
      );

      await sh(m, "systemctl enable --now aka-job.timer aka-daemon.service");
      const said = await m.exec(["systemctl", "is-enabled", "aka-job.timer", "aka-daemon.service"]);
      assertEquals(said.stdout.trim().split("\n"), ["enabled", "enabled"], "the trap: enabled");

      await t.step("batch enable of it enabled by hand is refused too", async () => {
        const r = await meshCli(m, [
          "batch",
          "enable",
          "aka",
          "--timer",
          "aka-job.timer",
          "--registry",
          REG,
          "--json",
        ]);
        const json = JSON.parse(r.stdout) as { outcome: string; message: string };
        assertEquals([r.code, json.outcome], [2, "refused"], r.stdout + r.stderr);
        assertStringIncludes(json.message, "nothing wants or requires it");
        assertEquals((await m.exec(["cat", REG])).stdout, EMPTY);
      });

      await t.step("run: the timer check and the boot check report it", async () => {
        await writeIn(
          m,
          "/root/reg/aka.yaml",
          "version: 1\naccounts: [root]\nservices:\n" +
            "  aka: {kind: batch, timer: aka-job.timer}\n" +
            "  akad: {kind: daemon, unit: aka-daemon.service}\n",
        );
        const r = await meshCli(m, [
          "run",
          "--registry",
          "/root/reg/aka.yaml",
          "--json",
          "--caddy-admin",
          "none",
        ]);
        const result = JSON.parse(r.stdout) as { findings: Finding[] };
        const timer = result.findings.filter((f) => f.check === "timer" && f.service === "aka");
        assertEquals(timer.length, 1, JSON.stringify(result.findings));
        assertStringIncludes(timer[0]!.detail, "nothing wants or requires it");
        const boot = result.findings.filter((f) => f.check === "boot" && f.service === "akad");
        assertEquals(boot.length, 1, JSON.stringify(result.findings));
        assertStringIncludes(boot[0]!.detail, "nothing wants, requires or triggers it");
        assertEquals(boot[0]!.direction, "missing");
      });
    } finally {
      await m.destroy();
    }
  },
});
