/**
 * launcher.sh end to end in the systemd lab machine, with the real host:
 *
 * 1. launcher.sh and packaging/mesh-host.service installed as the README says; MESH_LIB holds
 *    `mesh-host-0.1.0` (a wrapper running this checkout's debian host, carrying the layout part of
 *    the Debian bundle: tests/launcher/layout_host.ts) and `mesh-host`
 *    points at it; `systemctl start mesh-host`; the host completes a reconcile (known-good 0.1.0).
 * 2. `mesh-host-0.2.0` exits 1 at start; `mesh-host` is repointed to it and the unit restarted
 *    (the running host cannot stand aside by itself here: it watches its own main module,
 *    /mesh/tests/launcher/layout_host.ts, read-only in the lab, and a repointed symlink does not replace it).
 *    After three failures the launcher repoints to 0.1.0, which completes a reconcile:
 *    known-good 0.1.0, the counter removed.
 * 3. `mesh-host-0.3.0` exits 0 on its first three starts (a host standing aside three times),
 *    then runs the real host: no rollback.
 * 4. `systemctl stop mesh-host`: the host gets SIGTERM through the launcher, the unit ends
 *    inactive with result success, and no host process is left.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";

const LIB = "/usr/lib/mesh";
const STATE = "/var/lib/mesh/host";

async function sh(m: LabMachine, script: string): Promise<string> {
  const r = await m.exec(["sh", "-c", script], { allowFailure: true });
  if (r.code !== 0) throw new Error(`in the lab (exit ${r.code}): ${script}\n${r.stderr}`);
  return r.stdout;
}

async function read(m: LabMachine, path: string): Promise<string | undefined> {
  const r = await m.exec(["cat", path], { allowFailure: true });
  return r.code === 0 ? r.stdout : undefined;
}

async function journal(m: LabMachine): Promise<string> {
  return (await m.exec(["journalctl", "-u", "mesh-host", "--no-pager", "-o", "cat"], {
    allowFailure: true,
  })).stdout;
}

/** Polls `probe` until it returns true, or fails with what the launcher said. */
async function until(m: LabMachine, what: string, probe: () => Promise<boolean>, ms = 90_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not within ${ms} ms. Journal:\n${await journal(m)}`);
}

const WRAPPER = `#!/bin/sh
export HOME=/root DENO_DIR=/root/.cache/deno
exec deno run -A --quiet /mesh/tests/launcher/layout_host.ts "$@"
`;
const BROKEN = `#!/bin/sh
echo x >>/var/lib/mesh/starts-0.2.0
echo "mesh-host 0.2.0: cannot start" >&2
exit 1
`;
const UPGRADING = `#!/bin/sh
n=$(cat /var/lib/mesh/starts-0.3.0 2>/dev/null) || n=0
n=$((n + 1))
echo "$n" >/var/lib/mesh/starts-0.3.0
if [ "$n" -le 3 ]; then echo "mesh-host 0.3.0: standing aside ($n)" >&2; exit 0; fi
exec ${LIB}/mesh-host-0.1.0 "$@"
`;

function install(path: string, text: string): string {
  return `cat >${path} <<'MESH_EOF'\n${text}MESH_EOF\nchmod 0755 ${path}\n`;
}
const point = (version: string) =>
  `ln -sfn mesh-host-${version} ${LIB}/mesh-host.new && mv -T ${LIB}/mesh-host.new ${LIB}/mesh-host`;

Deno.test({
  name: "launcher e2e (systemd lab): rollback to known-good, clean self-upgrade, clean stop",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const m = await bootLab("systemd", {
      name: `mesh-lab-launcher-${crypto.randomUUID().slice(0, 8)}`,
    });
    try {
      // 1. The install step of the README, then the first version.
      await sh(
        m,
        `set -e
install -D -m 0755 /mesh/launcher.sh ${LIB}/launcher.sh
install -m 0644 /mesh/packaging/mesh-host.service /etc/systemd/system/mesh-host.service
printf '%s\\n' 'MESH_HOST_ARGS="reconcile --every 2s --state-dir ${STATE}"' >/etc/default/mesh-host
${install(`${LIB}/mesh-host-0.1.0`, WRAPPER)}
${point("0.1.0")}
systemctl daemon-reload
systemctl start mesh-host`,
      );
      await until(
        m,
        "known-good 0.1.0",
        async () => (await read(m, `${STATE}/known-good`)) === "0.1.0\n",
      );
      assertEquals(await read(m, `${STATE}/failures`), undefined);

      // 2. A broken version; the running host is made to stand aside by restarting the unit.
      await sh(
        m,
        `set -e\n${install(`${LIB}/mesh-host-0.2.0`, BROKEN)}${point("0.2.0")}
systemctl restart mesh-host`,
      );
      await until(
        m,
        "rolled back to 0.1.0",
        async () => (await sh(m, `readlink ${LIB}/mesh-host`)).trim() === "mesh-host-0.1.0",
      );
      assertEquals((await read(m, "/var/lib/mesh/starts-0.2.0"))?.split("\n").length, 4);
      // The rolled-back host completes a reconcile: it removes the counter (the launcher wrote
      // 0 when it rolled back) and keeps known-good at its version.
      await until(
        m,
        "the counter removed by a completed reconcile",
        async () => (await read(m, `${STATE}/failures`)) === undefined,
      );
      assertEquals(await read(m, `${STATE}/known-good`), "0.1.0\n");
      let said = await journal(m);
      assertStringIncludes(said, "failure 3 of 3");
      assertStringIncludes(said, "rolled back to mesh-host-0.1.0");
      assertEquals((await sh(m, "systemctl is-active mesh-host")).trim(), "active");

      // 3. A clean self-upgrade: three clean exits, then up. No rollback.
      const rollbacks = said.split("rolled back").length;
      await sh(
        m,
        `set -e\n${install(`${LIB}/mesh-host-0.3.0`, UPGRADING)}${point("0.3.0")}
systemctl restart mesh-host`,
      );
      await until(
        m,
        "0.3.0 started four times",
        async () => (await read(m, "/var/lib/mesh/starts-0.3.0")) === "4\n",
      );
      await until(
        m,
        "the upgraded host running",
        async () =>
          (await m.exec(["pgrep", "-f", "/mesh/tests/launcher/layout_host.ts"], {
            allowFailure: true,
          })).code ===
            0,
      );
      await new Promise((r) => setTimeout(r, 3_000));
      said = await journal(m);
      assertEquals(said.split("rolled back").length, rollbacks, said);
      assertEquals((await sh(m, `readlink ${LIB}/mesh-host`)).trim(), "mesh-host-0.3.0");
      assertEquals(await read(m, `${STATE}/failures`), undefined);
      assertStringIncludes(said, "exited cleanly (standing aside)");

      // 4. A clean stop through the launcher.
      const host = (await m.exec(["pgrep", "-f", "/mesh/tests/launcher/layout_host.ts"])).stdout
        .trim();
      assert(/^\d+$/.test(host), `one host process: ${host}`);
      await sh(m, "systemctl stop mesh-host");
      assertEquals(
        (await m.exec(["systemctl", "is-active", "mesh-host"], { allowFailure: true })).stdout
          .trim(),
        "inactive",
      );
      assertEquals((await sh(m, "systemctl show -p Result --value mesh-host")).trim(), "success");
      const left = await m.exec(
        ["pgrep", "-f", "/mesh/tests/launcher/layout_host.ts|launcher.sh"],
        {
          allowFailure: true,
        },
      );
      assertEquals(left.stdout.trim(), "", "no stray process");
      said = await journal(m);
      assertStringIncludes(said, `received SIGTERM; passing SIGTERM to pid ${host} and waiting`);
      assertStringIncludes(said, "the host exited with status 143 after SIGTERM");
    } finally {
      await m.destroy();
    }
  },
});
