/**
 * The nightly pair for real, in a systemd lab machine: a `batch` entry's timer starts a service
 * that runs `mesh-reconcile render backup --files-from` into `restic backup --files-from`, and
 * `mesh-reconcile run` inside the machine finds the declared state directory missing from the
 * backup before the service ran and nothing after. restic is this VM's (Debian 12's `restic`,
 * linked against libc only), copied in.
 */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab } from "../lab/mod.ts";
import type { Finding } from "../../reconcile/finding.ts";
import type { SourceStatus } from "../../reconcile/observe/source.ts";
import { meshCli, sh, writeIn } from "./systemd_lab.ts";

const REGISTRY = "/var/lib/mesh/reconcile/registry.yaml";

Deno.test({
  name: "lab: the nightly restic backup of render backup's list clears the backup findings",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const m = await bootLab("systemd");
    try {
      await m.copyIn("/usr/bin/restic", "/usr/local/bin/restic");
      await writeIn(m, "/etc/mesh/secrets/restic", "lab backup password\n");
      await sh(
        m,
        "chmod 0600 /etc/mesh/secrets/restic && " +
          "restic init -r /srv/restic --password-file /etc/mesh/secrets/restic >/dev/null && " +
          "mkdir -p /srv/web /srv/notes && echo web > /srv/web/data && echo n > /srv/notes/n",
      );
      await writeIn(
        m,
        REGISTRY,
        `version: 1
accounts: [root]
backup:
  restic: { repository: /srv/restic, passwordFile: /etc/mesh/secrets/restic }
  maxAge: 26h
services:
  nightly-backup:
    kind: batch
    timer: mesh-backup.timer
    state: [/srv/web, /srv/notes/]
`,
      );
      await writeIn(
        m,
        "/etc/systemd/system/mesh-backup.service",
        `[Unit]
Description=nightly backup of what the registry declares

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'deno run -A --quiet /mesh/reconcile/main.ts render backup --registry ${REGISTRY} --files-from > /run/mesh-backup.list && restic -r /srv/restic --password-file /etc/mesh/secrets/restic backup --files-from /run/mesh-backup.list'
`,
      );
      await writeIn(
        m,
        "/etc/systemd/system/mesh-backup.timer",
        `[Unit]
Description=nightly backup

[Timer]
OnCalendar=*-*-* 02:30:00

[Install]
WantedBy=timers.target
`,
      );
      await sh(m, "systemctl daemon-reload && systemctl enable --now mesh-backup.timer");

      const check = async () => {
        const r = await meshCli(m, [
          "run",
          "--registry",
          REGISTRY,
          "--json",
          "--caddy-admin",
          "none",
        ]);
        const result = JSON.parse(r.stdout) as { findings: Finding[]; sources: SourceStatus[] };
        return {
          backup: result.findings.filter((f) => f.check === "backup"),
          timer: result.findings.filter((f) => f.check === "timer"),
          source: result.sources.find((s) => s.source === "backup"),
        };
      };
      const before = await check();
      assertEquals(before.source?.state, "observed");
      assertEquals(before.backup.map((f) => f.subject), ["/srv/notes/", "/srv/web"]);
      for (const f of before.backup) assertStringIncludes(f.detail, "missing:");
      assertEquals(before.timer, []);

      // What the timer starts at night, started now.
      await sh(m, "systemctl start mesh-backup.service");
      const after = await check();
      assertEquals([after.source?.state, after.source?.detail], ["observed", "1 snapshot"]);
      assertEquals(after.backup, []);
      assertEquals(after.timer, []);
    } finally {
      await m.destroy();
    }
  },
});
