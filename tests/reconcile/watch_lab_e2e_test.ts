/**
 * The units of the reconciler and the remote watcher, installed as the README says, in the lab
 * machines with a real init:
 *
 * - systemd: the timers enabled and scheduled, their services static; `mesh-reconcile.service`
 *   runs `run` with the settings of /etc/default/mesh-reconcile and, finding drift, writes no
 *   stamp; `mesh-reconcile-stamp.service` (DynamicUser, started before any run) serves it;
 *   `mesh-reconcile-watch.service` (DynamicUser) says new, up, down, then unreachable when the
 *   server is stopped, each with its exit code as the unit's status and one webhook POST per
 *   transition.
 * - OpenRC: a run without `--boot none` cannot be clean (only systemd's boot view is read), so
 *   the reconciler is configured with it; the same three under supervise-daemon, the two
 *   schedules through `mesh-every`; the watcher's loop, on its own, says new, up, and down once
 *   the stamp is no longer refreshed; `rc-service ... stop` leaves no loop and no run behind.
 *
 * The lab shares the VM's network, so its socket table is the VM's, full of processes it cannot
 * see: no registry is clean there while other tests run, so `run` is given one that declares
 * nothing (always drift) and the test writes the stamp a clean run would. `/usr/lib/mesh/
 * mesh-reconcile` is a wrapper running this checkout's reconcile/main.ts with a world-readable
 * copy of the Deno cache (a compiled binary needs neither) and noting its argv in /run where it
 * may. The webhook receiver in this process is reachable from inside.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { freePort } from "../support/mod.ts";
import { bootLab, type LabMachine } from "../lab/mod.ts";
import { ServedStamp } from "../../reconcile/stamp.ts";
import { WatchStateFile, type WebhookBody } from "../../reconcile/watch.ts";

const LIB = "/usr/lib/mesh";
const STAMP = "/var/lib/mesh/reconcile/stamp";
const RESULT = "/var/lib/mesh/reconcile/result.json";
const WATCH_STATE = "/var/lib/mesh/reconcile-watch/state.json";

async function sh(m: LabMachine, script: string): Promise<string> {
  const r = await m.exec(["sh", "-c", script], { allowFailure: true });
  if (r.code !== 0) {
    throw new Error(`in the lab (exit ${r.code}): ${script}\n${r.stdout}${r.stderr}`);
  }
  return r.stdout;
}

async function read(m: LabMachine, path: string): Promise<string | undefined> {
  const r = await m.exec(["cat", path], { allowFailure: true });
  return r.code === 0 ? r.stdout : undefined;
}

async function until(
  what: string,
  probe: () => Promise<boolean>,
  ms = 90_000,
  said: () => Promise<string> = () => Promise.resolve(""),
) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not within ${ms} ms. ${await said()}`);
}

/** The wrapper and mesh-every, installed; the Deno cache copied where any account can read it. */
function installCommon(): string {
  return `set -e
mkdir -p ${LIB}
rm -rf /var/cache/mesh-deno && cp -a /root/.cache/deno /var/cache/mesh-deno
chmod -R a+rX /var/cache/mesh-deno
cat >${LIB}/mesh-reconcile <<'MESH_EOF'
#!/bin/sh
export DENO_DIR=/var/cache/mesh-deno HOME=/tmp
{ printf '%s\\n' "$*" >>/run/mesh-reconcile.argv; } 2>/dev/null || :
exec deno run -A --quiet --cached-only --config /mesh/deno.json /mesh/reconcile/main.ts "$@"
MESH_EOF
chmod 0755 ${LIB}/mesh-reconcile
install -m 0755 /mesh/packaging/mesh-every.sh ${LIB}/mesh-every
mkdir -p /var/lib/mesh/reconcile
`;
}

function webhook() {
  const accepted: WebhookBody[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    accepted.push(await req.json());
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    accepted,
    close: () => server.shutdown(),
  };
}

function oldStampLine(hours: number): string {
  return `${new Date(Date.now() - hours * 3_600_000).toISOString()} clean: written by the test`;
}

async function served(port: number): Promise<ServedStamp> {
  const r = await fetch(`http://127.0.0.1:${port}/`);
  return ServedStamp.parse(await r.json());
}

Deno.test({
  name:
    "units e2e (systemd lab): timers scheduled; run, stamp serve and watch as units, per transition",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const hook = webhook();
    const port = freePort();
    const m = await bootLab("systemd", {
      name: `mesh-lab-watch-${crypto.randomUUID().slice(0, 8)}`,
    });
    const show = async (unit: string, props: string) =>
      Object.fromEntries(
        (await sh(m, `systemctl show -p ${props} ${unit}`)).trim().split("\n").map((l) => {
          const i = l.indexOf("=");
          return [l.slice(0, i), l.slice(i + 1)];
        }),
      );
    const journal = (unit: string) =>
      m.exec(["journalctl", "-u", unit, "--no-pager", "-o", "cat"], { allowFailure: true })
        .then((r) => r.stdout);
    try {
      await sh(
        m,
        `${installCommon()}
for u in mesh-reconcile.service mesh-reconcile.timer mesh-reconcile-stamp.service \\
  mesh-reconcile-watch.service mesh-reconcile-watch.timer; do
  install -m 0644 /mesh/packaging/$u /etc/systemd/system/$u
done
# No --caddy-admin: the lab has no Caddy installed, and nothing answers at the default address.
: >/etc/default/mesh-reconcile
echo 'MESH_STAMP_LISTEN=127.0.0.1:${port}' >/etc/default/mesh-reconcile-stamp
cat >/etc/default/mesh-reconcile-watch <<'MESH_EOF'
MESH_WATCH_SOURCE=http://127.0.0.1:${port}/
MESH_WATCH_MAX_AGE=10m
MESH_WATCH_GRACE=1h
MESH_WATCH_ARGS=--notify ${hook.url}
MESH_EOF
rm -rf /var/lib/mesh/reconcile
systemctl daemon-reload
systemctl enable --now mesh-reconcile-stamp.service mesh-reconcile.timer mesh-reconcile-watch.timer`,
      );
      // The timers are enabled and scheduled; the services they start are static.
      for (
        const [timer, service] of [["mesh-reconcile.timer", "mesh-reconcile.service"], [
          "mesh-reconcile-watch.timer",
          "mesh-reconcile-watch.service",
        ]]
      ) {
        const t = await show(timer!, "ActiveState,UnitFileState,NextElapseUSecRealtime,Triggers");
        assertEquals([t.ActiveState, t.UnitFileState, t.Triggers], ["active", "enabled", service]);
        assert(t.NextElapseUSecRealtime !== "" && t.NextElapseUSecRealtime !== "0", timer);
        assertEquals((await show(service!, "UnitFileState")).UnitFileState, "static");
      }
      // Scheduled, so stopped now (still enabled): every run below must be the test's own. The
      // watch timer fires on every fifth minute of the clock and, when the lab took more than a
      // minute to get here, at once (OnBootSec already past); `systemctl start` of a oneshot
      // service the timer has just started joins that run (seen in this lab: one
      // Starting/Finished in the journal for both, the start returning its result), whose
      // verdict is of the stamp as it was before the test changed it (CI, stop 24: "up", exit 0,
      // where the stamp written 5 h old said down). So: the timers stopped, then their services
      // (a run in flight ended, a queued start cancelled), and what such a run left undone: its
      // state, its stamp, its failed state and its notification.
      await sh(
        m,
        `systemctl stop mesh-reconcile.timer mesh-reconcile-watch.timer
systemctl stop mesh-reconcile.service mesh-reconcile-watch.service
systemctl reset-failed mesh-reconcile.service mesh-reconcile-watch.service 2>/dev/null || :
rm -f ${WATCH_STATE} /var/lib/mesh/reconcile-watch/stamp ${RESULT} ${STAMP}`,
      );
      hook.accepted.length = 0;
      // Before the first run: the server runs (it made the stamp's directory) and says never.
      await until("stamp serve answering", () => served(port).then(() => true, () => false));
      assertEquals((await served(port)).state, "never");

      // The lab shares the VM's network, so its socket table is the VM's, with processes this
      // machine cannot see: no registry can be kept clean here while other tests run. A registry
      // that declares nothing is deterministic: the timer's service runs `run`, finds drift
      // (exit 1, the unit failed), and the stamp is not written.
      await sh(
        m,
        "printf 'version: 1\\naccounts: [root]\\nservices: {}\\n' " +
          ">/var/lib/mesh/reconcile/registry.yaml",
      );
      await m.exec(["systemctl", "start", "mesh-reconcile.service"], { allowFailure: true });
      const result = await show("mesh-reconcile.service", "Result,ExecMainStatus");
      const said = await journal("mesh-reconcile.service");
      assertEquals([result.Result, result.ExecMainStatus], ["exit-code", "1"], said);
      // The unit's command line, with the variables of /etc/default/mesh-reconcile expanded.
      assertEquals(
        (await read(m, "/run/mesh-reconcile.argv"))?.trim().split("\n").at(-1),
        `run --registry /var/lib/mesh/reconcile/registry.yaml --stamp ${STAMP} --result ${RESULT} --interval 15m`,
      );
      // The result is written after every run, drift included, for the node's link.
      assertEquals(JSON.parse((await read(m, RESULT)) ?? "{}").status, "drift");
      assertStringIncludes(said, "drift: ");
      // The shipped unit as it is, on a machine without Caddy: the proxy is absent, not failed.
      assertStringIncludes(said, "Caddy is not installed (no caddy on PATH) and nothing answers");
      assertEquals(await read(m, STAMP), undefined, "no stamp after a run that found drift");
      assertEquals((await served(port)).state, "never");

      const runWatch = async () => {
        await m.exec(["systemctl", "start", "mesh-reconcile-watch.service"], {
          allowFailure: true,
        });
        return await show("mesh-reconcile-watch.service", "Result,ExecMainStatus");
      };
      const kept = async () => WatchStateFile.parse(JSON.parse((await read(m, WATCH_STATE))!));

      // Never stamped: new, exit 3, the first run notified.
      let w = await runWatch();
      assertEquals(
        [w.Result, w.ExecMainStatus],
        ["exit-code", "3"],
        await journal("mesh-reconcile-watch.service"),
      );
      assertEquals((await kept()).state, "new");
      assertEquals(hook.accepted.map((b) => b.state), ["new"]);

      // A stamp as a clean run writes it: up, exit 0, one notification, and the watcher's own
      // stamp written by its DynamicUser service.
      await sh(m, `echo '${oldStampLine(0)}' >${STAMP}`);
      const fresh = await served(port);
      assert(fresh.state === "stamped" && fresh.ageSeconds < 60, JSON.stringify(fresh));
      w = await runWatch();
      assertEquals(
        [w.Result, w.ExecMainStatus],
        ["success", "0"],
        await journal("mesh-reconcile-watch.service"),
      );
      assertEquals((await kept()).state, "up");
      assertEquals(hook.accepted.map((b) => b.state), ["new", "up"]);
      assertStringIncludes((await read(m, "/var/lib/mesh/reconcile-watch/stamp"))!, " watched: ");

      // The stamp put back old (as a sync job might): down, exit 5, the unit failed; one POST.
      await sh(m, `echo '${oldStampLine(5)}' >${STAMP}`);
      w = await runWatch();
      assertEquals([w.Result, w.ExecMainStatus], ["exit-code", "5"]);
      w = await runWatch();
      assertEquals(w.ExecMainStatus, "5");
      assertEquals(hook.accepted.map((b) => [b.previous, b.state]), [
        [undefined, "new"],
        ["new", "up"],
        ["up", "down"],
      ]);

      // The server stopped: SIGTERM ends it cleanly; the watcher says unreachable, exit 6.
      await sh(m, "systemctl stop mesh-reconcile-stamp.service");
      const s = await show("mesh-reconcile-stamp.service", "Result,ExecMainStatus,ActiveState");
      assertEquals([s.ActiveState, s.Result, s.ExecMainStatus], ["inactive", "success", "0"]);
      w = await runWatch();
      assertEquals(w.ExecMainStatus, "6");
      const last = await kept();
      assertEquals([last.state, last.problem], ["unreachable", "cannot-read"]);
      assertEquals(hook.accepted.length, 4);
      assertEquals(hook.accepted[3]!.state, "unreachable");
    } finally {
      await m.destroy();
      await hook.close();
    }
  },
});

Deno.test({
  name: "units e2e (OpenRC lab): the loops under supervise-daemon; silence goes down, once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const hook = webhook();
    const port = freePort();
    const m = await bootLab("openrc", {
      name: `mesh-lab-watch-${crypto.randomUUID().slice(0, 8)}`,
    });
    const logs = async () =>
      (await m.exec(["sh", "-c", "tail -n 40 /var/log/mesh-reconcile*.log"], {
        allowFailure: true,
      })).stdout;
    const states = () => hook.accepted.map((b) => b.state);
    try {
      await sh(
        m,
        `${installCommon()}
printf 'version: 1\\naccounts: [root]\\nservices: {}\\n' >/var/lib/mesh/reconcile/registry.yaml
for s in mesh-reconcile mesh-reconcile-stamp mesh-reconcile-watch; do
  install -m 0755 /mesh/packaging/$s.openrc /etc/init.d/$s
done
mkdir -p /etc/conf.d
cat >/etc/conf.d/mesh-reconcile <<'MESH_EOF'
MESH_RECONCILE_ARGS="--caddy-admin none --boot none"
MESH_RECONCILE_INTERVAL=2s
MESH_EOF
echo 'MESH_STAMP_LISTEN=127.0.0.1:${port}' >/etc/conf.d/mesh-reconcile-stamp
cat >/etc/conf.d/mesh-reconcile-watch <<'MESH_EOF'
MESH_WATCH_SOURCE=http://127.0.0.1:${port}/
MESH_WATCH_MAX_AGE=8s
MESH_WATCH_GRACE=0s
MESH_WATCH_ARGS="--notify ${hook.url}"
MESH_WATCH_INTERVAL=2s
MESH_EOF
rc-service mesh-reconcile-stamp start
rc-service mesh-reconcile start
rc-service mesh-reconcile-watch start`,
      );
      // Under OpenRC what a reboot would produce cannot be read (only systemd is): a run without
      // --boot none cannot be clean (exit 2), says why, and calls nothing missing at boot.
      const once = await m.exec([
        `${LIB}/mesh-reconcile`,
        "run",
        "--registry",
        "/var/lib/mesh/reconcile/registry.yaml",
        "--caddy-admin",
        "none",
        "--json",
      ], { allowFailure: true });
      assertEquals(once.code, 2, once.stdout + once.stderr);
      const json = JSON.parse(once.stdout) as {
        findings: { check: string }[];
        sources: { source: string; state: string; detail: string }[];
      };
      const units = json.sources.find((s) => s.source === "boot-units");
      assertEquals(units?.state, "failed", once.stdout);
      assertStringIncludes(units!.detail, "pass --boot none");
      // The result names OpenRC: its runlevels are not read (issue 32, item 5).
      assertStringIncludes(units!.detail, "boot view: not checked (OpenRC)");
      assertEquals(json.findings.filter((f) => f.check === "boot"), []);
      for (const s of ["mesh-reconcile", "mesh-reconcile-stamp", "mesh-reconcile-watch"]) {
        const st = await m.exec(["rc-service", s, "status"], { allowFailure: true });
        assertEquals(st.code, 0, `${s}: ${st.stdout}${st.stderr}`);
        assertStringIncludes(st.stdout, "started");
      }
      // The reconciler's loop runs `run --boot none` again and again. The lab shares the VM's
      // sockets (processes it cannot see), so a registry that declares nothing is the
      // deterministic choice: each run finds drift (exit 1), the loop goes on, and no stamp is
      // written.
      await until(
        "two runs of the loop",
        async () =>
          ((await read(m, "/var/log/mesh-reconcile.log")) ?? "").split(
            "mesh-every: /usr/lib/mesh/mesh-reconcile exit 1; next run in 2s",
          ).length > 2,
        120_000,
        logs,
      );
      assertEquals(
        (await read(m, "/run/mesh-reconcile.argv"))?.trim().split("\n").at(-1),
        `run --registry /var/lib/mesh/reconcile/registry.yaml --stamp ${STAMP} --result ${RESULT} --interval 2s --caddy-admin none --boot none`,
      );
      assertEquals(JSON.parse((await read(m, RESULT)) ?? "{}").intervalSeconds, 2);
      assertEquals(await read(m, STAMP), undefined);
      // The watcher's loop, as nobody, on its own: never stamped is new.
      await until("new notified", () => Promise.resolve(states().includes("new")), 60_000, logs);

      // A stamp as a clean run writes it, refreshed by this test for a while: up, once.
      for (let i = 0; i < 6; i++) {
        await sh(m, `echo '${oldStampLine(0)}' >${STAMP}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
      await until("up notified", () => Promise.resolve(states().includes("up")), 60_000, logs);
      assertEquals(
        WatchStateFile.parse(JSON.parse((await read(m, WATCH_STATE))!)).state,
        "up",
      );

      // Then silence: nothing refreshes the stamp, and past 8s the watcher says down, once.
      await until("down notified", () => Promise.resolve(states().includes("down")), 60_000, logs);
      await new Promise((r) => setTimeout(r, 5_000));
      assertEquals(states(), ["new", "up", "down"], "once per transition, not per run");
      assertStringIncludes(
        (await read(m, "/var/log/mesh-reconcile-watch.log")) ?? "",
        "mesh-every: /usr/lib/mesh/mesh-reconcile exit 5; next run in 2s",
      );

      // Stopping a service ends its loop and a run in progress.
      await sh(m, "rc-service mesh-reconcile stop && rc-service mesh-reconcile-watch stop");
      const left = await m.exec(["pgrep", "-f", "mesh-every|/mesh/reconcile/main.ts (run|watch)"], {
        allowFailure: true,
      });
      assertEquals(left.stdout.trim(), "", "no loop or run left");
      assertStringIncludes(
        (await read(m, "/var/log/mesh-reconcile.log")) ?? "",
        "mesh-every: stopped",
      );
    } finally {
      await m.destroy();
      await hook.close();
    }
  },
});
