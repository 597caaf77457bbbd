/**
 * mesh-reconcile end to end, as an operator runs it: the CLI against this machine's real
 * podman, sockets and a real Caddy. The registry starts from `init` of the machine as it was
 * before the test (so the machine's own daemons are declared) and adds the test's fixtures.
 * Every run passes `--boot none`: this VM is not booted with systemd, so what a reboot would
 * produce cannot be read here (without it, every run exits 2; boot_test.ts covers both).
 *
 * @tier alone (a clean run here is the whole machine as the registry adopted it: a port or
 * container another test opens meanwhile is rogue, so test:fast runs it with nothing beside it)
 */

import { parse, stringify } from "yaml";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import {
  type CaddyFixture,
  caddyRoot,
  fakeProgram,
  freePort,
  makeCertificate,
  reconcileCli,
  reloadCaddy,
  removeContainer,
  startCaddy,
  startContainer,
  uniqueName,
} from "../support/mod.ts";
import type { Finding } from "../../reconcile/compare.ts";
import type { ReconcileJson as JsonResult } from "../../reconcile/report.ts";

/**
 * `mesh-reconcile run --boot none --registry REGISTRY ...`: this VM is not booted with systemd,
 * so the boot view (which would fail the run) is named off.
 */
function runOnThisVm([registry, ...args]: string[], env: Record<string, string> = {}) {
  return reconcileCli(["run", "--boot", "none", "--registry", registry!, ...args], env);
}

type Services = Record<string, Record<string, unknown>>;

async function baseline(dir: string): Promise<Services> {
  const r = await reconcileCli(["init", "--caddy-admin", "none"]);
  assertEquals(r.code, 0, r.stderr);
  const adopted = parse(r.stdout) as { services: Services };
  const path = `${dir}/baseline.yaml`;
  await Deno.writeTextFile(path, r.stdout);
  return adopted.services ?? {};
}

/** Writes a registry of `services`, naming `roots` (Caddy's internal CA) when given. */
async function writeRegistry(
  path: string,
  services: Services,
  roots?: string[],
): Promise<string> {
  await Deno.writeTextFile(
    path,
    stringify({ version: 1, accounts: ["root"], ...(roots ? { roots } : {}), services }),
  );
  return path;
}

function has(findings: Finding[], want: Partial<Finding> & { detail?: string }): boolean {
  return findings.some((f) =>
    (want.check === undefined || f.check === want.check) &&
    (want.direction === undefined || f.direction === want.direction) &&
    (want.service === undefined || f.service === want.service) &&
    (want.subject === undefined || f.subject === want.subject) &&
    (want.detail === undefined || f.detail.includes(want.detail))
  );
}

/** The good sites; given its entry's port, app.mesh.test proxies to it, as rendered. */
function goodSites(appPort?: number) {
  return `
app.mesh.test {
	${appPort === undefined ? 'respond "app"' : `reverse_proxy 127.0.0.1:${appPort}`}
}
old.mesh.test {
	redir https://app.mesh.test{uri} 301
}
`;
}

Deno.test({
  name: "mesh-reconcile run against the live machine: clean, then every drift both ways",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "mesh-run-" });
    const containers: string[] = [];
    const listeners: Deno.Listener[] = [];
    let caddy: CaddyFixture | undefined;
    try {
      const machine = await baseline(dir);
      const svc = uniqueName("svc");
      const svcPort = freePort();
      containers.push(svc);
      await startContainer(svc, { publish: [{ host: svcPort, container: 8080 }] });
      const daemon = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      listeners.push(daemon);
      const daemonPort = (daemon.addr as Deno.NetAddr).port;
      caddy = await startCaddy(() => goodSites(svcPort));
      const adminPort = Number(caddy.admin.split(":")[1]);
      const clean: Services = {
        ...machine,
        "t-web": {
          kind: "service",
          user: "root",
          container: svc,
          port: svcPort,
          web: ["app.mesh.test"],
        },
        "t-old": {
          kind: "site",
          web: ["old.mesh.test"],
          redirect: "https://app.mesh.test/",
          note: "only redirects; stays declared or it is rogue",
        },
        "t-listener": { kind: "daemon", user: "root", port: daemonPort },
        "t-caddy": {
          kind: "daemon",
          user: "root",
          port: [adminPort, caddy.httpsPort, caddy.httpPort],
        },
      };
      // Caddy's internal CA is a private one: the registry names its root.
      const roots = [await caddyRoot(caddy)];
      const registry = await writeRegistry(`${dir}/clean.yaml`, clean, roots);
      const stamp = `${dir}/stamp`;
      const textfile = `${dir}/mesh.prom`;
      const common = ["--caddy-admin", caddy.admin, "--stamp", stamp, "--textfile", textfile];

      await t.step("a clean run exits 0 and refreshes the stamp and the textfile", async () => {
        // Caddy's internal CA issues 12-hour certificates: warn only within the last hour.
        const r = await runOnThisVm([registry, ...common, "--cert-warn", "1h"]);
        assertEquals(r.code, 0, r.stdout + r.stderr);
        assertStringIncludes(r.stdout, "clean:");
        const line = await Deno.readTextFile(stamp);
        assert(/^\d{4}-\d\d-\d\dT[\d:.]+Z clean: \d+ entries agree with /.test(line), line);
        assertEquals(line.split("\n").length, 2);
        const prom = await Deno.readTextFile(textfile);
        assertStringIncludes(prom, "mesh_reconcile_clean 1");
        assertStringIncludes(prom, "mesh_reconcile_last_clean_timestamp_seconds ");
        assertStringIncludes(prom, 'mesh_reconcile_findings{check="port",direction="rogue"} 0');
      });

      await t.step("the same run refreshes the stamp again", async () => {
        const before = await Deno.readTextFile(stamp);
        await new Promise((r) => setTimeout(r, 20));
        const r = await runOnThisVm([registry, ...common, "--cert-warn", "1h"]);
        assertEquals(r.code, 0, r.stdout);
        assert((await Deno.readTextFile(stamp)) !== before);
      });

      await t.step("certificates within the warning are findings (default 14 days)", async () => {
        const before = await Deno.readTextFile(stamp);
        const r = await runOnThisVm([registry, ...common, "--json"]);
        assertEquals(r.code, 1, r.stdout);
        const result = JSON.parse(r.stdout) as JsonResult;
        assert(
          has(result.findings, {
            check: "certificate",
            direction: "missing",
            service: "t-web",
            subject: "app.mesh.test",
            detail: "within the 14d warning",
          }),
          r.stdout,
        );
        assertEquals(
          await Deno.readTextFile(stamp),
          before,
          "a drifted run must not refresh the stamp",
        );
      });

      // Now drift, both ways and in every check.
      const certs = await Deno.makeTempDir({ dir });
      const day = 86_400_000;
      const expired = await makeCertificate(certs, "expired", {
        name: "expired.mesh.test",
        notBefore: new Date(Date.now() - 60 * day),
        notAfter: new Date(Date.now() - day),
      });
      const wrong = await makeCertificate(certs, "wrong", {
        name: "other.mesh.test",
        notBefore: new Date(Date.now() - day),
        notAfter: new Date(Date.now() + 60 * day),
      });
      const soon = await makeCertificate(certs, "soon", {
        name: "soon.mesh.test",
        notBefore: new Date(Date.now() - day),
        notAfter: new Date(Date.now() + 3 * day),
      });
      await reloadCaddy(caddy, () =>
        `${goodSites(svcPort)}
elsewhere.mesh.test {
	redir https://app.mesh.test/ 302
}
notredirect.mesh.test {
	respond "content, not a redirect"
}
rogue.mesh.test {
	respond "nobody declared me"
}
expired.mesh.test {
	tls ${expired.cert} ${expired.key}
	respond "expired"
}
wrong.mesh.test {
	tls ${wrong.cert} ${wrong.key}
	respond "wrong"
}
soon.mesh.test {
	tls ${soon.cert} ${soon.key}
	respond "soon"
}
`);
      const rogueContainer = uniqueName("rogue");
      containers.push(rogueContainer);
      const roguePublished = freePort();
      await startContainer(rogueContainer, {
        publish: [{ host: roguePublished, container: 8081 }],
      });
      const rogueListener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      listeners.push(rogueListener);
      const roguePort = (rogueListener.addr as Deno.NetAddr).port;
      const quietPort = freePort();
      const thief = uniqueName("thief");
      containers.push(thief);
      const stolenPort = freePort();
      await startContainer(thief, { publish: [{ host: stolenPort, container: 8082 }] });
      const drift: Services = {
        ...clean,
        "t-gone": {
          kind: "service",
          user: "root",
          container: uniqueName("gone"),
          note: "never started",
        },
        "t-quiet": { kind: "daemon", port: quietPort },
        "t-stolen": {
          kind: "service",
          user: "root",
          container: uniqueName("owner"),
          port: stolenPort,
        },
        "t-thief": {
          kind: "service",
          user: "root",
          container: thief,
          note: "runs, but publishes stolen's port",
        },
        "t-moved": {
          kind: "site",
          web: ["elsewhere.mesh.test"],
          redirect: "https://new.mesh.test/",
        },
        "t-notredirect": {
          kind: "site",
          web: ["notredirect.mesh.test"],
          redirect: "https://app.mesh.test/",
        },
        "t-unserved": { kind: "site", web: ["missing.mesh.test"] },
        "t-certs": {
          kind: "site",
          web: ["expired.mesh.test", "wrong.mesh.test", "soon.mesh.test"],
        },
      };
      const driftRegistry = await writeRegistry(`${dir}/drift.yaml`, drift, roots);

      await t.step("drift: every check, both directions, exit 1, stamp untouched", async () => {
        const before = await Deno.readTextFile(stamp);
        const r = await runOnThisVm([driftRegistry, ...common, "--json", "--cert-warn", "14d"]);
        assertEquals(r.code, 1, r.stdout + r.stderr);
        const result = JSON.parse(r.stdout) as JsonResult;
        assertEquals([result.clean, result.status], [false, "drift"]);
        const f = result.findings;
        const expect: [Partial<Finding>, string][] = [
          [{ check: "container", direction: "missing", service: "t-gone" }, "missing container"],
          [
            { check: "container", direction: "rogue", subject: `root/${rogueContainer}` },
            "rogue container",
          ],
          [
            { check: "port", direction: "missing", service: "t-quiet", subject: String(quietPort) },
            "missing port",
          ],
          [{
            check: "port",
            direction: "rogue",
            subject: String(roguePort),
            detail: `deno[${Deno.pid}]`,
          }, "rogue port with its process"],
          [{
            check: "port",
            direction: "rogue",
            subject: String(roguePublished),
            detail: `container "${rogueContainer}"`,
          }, "rogue published port matched to its container"],
          [{
            check: "port",
            direction: "missing",
            service: "t-stolen",
            subject: String(stolenPort),
            detail: `container "${thief}"`,
          }, "port published by another container"],
          [{
            check: "address",
            direction: "missing",
            service: "t-unserved",
            subject: "missing.mesh.test",
          }, "missing address"],
          [{ check: "address", direction: "rogue", subject: "rogue.mesh.test" }, "rogue address"],
          [{
            check: "redirect",
            direction: "missing",
            service: "t-moved",
            detail: "redirects to https://app.mesh.test/, not to https://new.mesh.test/",
          }, "redirect to the wrong target"],
          [{
            check: "redirect",
            direction: "missing",
            service: "t-notredirect",
            detail: "answers 200",
          }, "address that does not redirect"],
          [{
            check: "certificate",
            direction: "missing",
            subject: "expired.mesh.test",
            detail: "expired at",
          }, "expired certificate"],
          [{
            check: "certificate",
            direction: "missing",
            subject: "wrong.mesh.test",
            detail: "does not cover it",
          }, "certificate for the wrong name"],
          [{
            check: "certificate",
            direction: "missing",
            subject: "soon.mesh.test",
            detail: "within the 14d warning",
          }, "certificate expiring soon"],
        ];
        for (const [want, what] of expect) {
          assert(has(f, want), `no ${what} finding in:\n${JSON.stringify(f, null, 1)}`);
        }
        // What is fine is not reported: the declared container, daemon and good redirect.
        assert(!has(f, { service: "t-listener" }), JSON.stringify(f));
        assert(!has(f, { check: "container", service: "t-web" }), JSON.stringify(f));
        assert(!has(f, { check: "redirect", service: "t-old" }), JSON.stringify(f));
        assertEquals(await Deno.readTextFile(stamp), before);
        const prom = await Deno.readTextFile(textfile);
        assertStringIncludes(prom, "mesh_reconcile_clean 0");
        assertStringIncludes(
          prom,
          'mesh_reconcile_findings{check="container",direction="rogue"} 1',
        );
        assertStringIncludes(
          prom,
          'mesh_reconcile_findings{check="redirect",direction="missing"} 2',
        );
        assertStringIncludes(
          prom,
          "mesh_reconcile_last_clean_timestamp_seconds ",
          "the last clean time is carried over",
        );
      });

      await t.step("text and --json say the same findings", async () => {
        const [text, json] = await Promise.all([
          runOnThisVm([driftRegistry, "--caddy-admin", caddy!.admin]),
          runOnThisVm([driftRegistry, "--caddy-admin", caddy!.admin, "--json"]),
        ]);
        assertEquals([text.code, json.code], [1, 1]);
        const result = JSON.parse(json.stdout) as JsonResult;
        for (const f of result.findings) assertStringIncludes(text.stdout, f.detail);
        assertStringIncludes(text.stdout, `drift: ${result.findings.length} findings`);
      });

      await t.step("the number of subprocesses does not grow with entries", async () => {
        const many: Services = { ...clean };
        for (let i = 0; i < 150; i++) {
          many[`extra-${i}`] = { kind: "site", web: [`extra${i}.mesh.test`] };
        }
        const big = await writeRegistry(`${dir}/big.yaml`, many, roots);
        const [small, large] = await Promise.all([
          runOnThisVm([registry, "--caddy-admin", caddy!.admin, "--json"]),
          runOnThisVm([big, "--caddy-admin", caddy!.admin, "--json"]),
        ]);
        const a = JSON.parse(small.stdout) as JsonResult;
        const b = JSON.parse(large.stdout) as JsonResult;
        assertEquals(b.entries - a.entries, 150);
        assert(a.subprocesses >= 1, "podman is asked");
        assertEquals(b.subprocesses, a.subprocesses);
      });

      await t.step(
        "a runtime that does not answer: exit 2, stamp untouched, the cause named",
        async () => {
          const fake = await fakeProgram("podman", 125, "Error: database is locked");
          try {
            const before = await Deno.readTextFile(stamp);
            const r = await runOnThisVm([registry, ...common, "--cert-warn", "1h"], {
              PATH: `${fake}:${Deno.env.get("PATH")}`,
            });
            assertEquals(r.code, 2, r.stdout);
            assertStringIncludes(r.stdout, "could not observe");
            assertStringIncludes(r.stdout, "database is locked");
            assertEquals(await Deno.readTextFile(stamp), before);
            assertStringIncludes(await Deno.readTextFile(textfile), "mesh_reconcile_observable 0");
          } finally {
            await Deno.remove(fake, { recursive: true });
          }
        },
      );

      await t.step(
        "Caddy's admin API down: exit 2, stamp untouched, no address called missing",
        async () => {
          await caddy!.stop();
          caddy = undefined;
          const before = await Deno.readTextFile(stamp);
          const r = await runOnThisVm([registry, ...common, "--json"]);
          assertEquals(r.code, 2, r.stdout + r.stderr);
          const result = JSON.parse(r.stdout) as JsonResult;
          assertEquals(result.status, "unobservable");
          assert(result.sources.some((s) => s.source === "caddy" && s.state === "failed"));
          assert(
            !has(result.findings, { check: "address" }),
            "an unobserved proxy is not evidence",
          );
          assertEquals(await Deno.readTextFile(stamp), before);
        },
      );
    } finally {
      await caddy?.stop();
      for (const l of listeners) l.close();
      for (const c of containers) await removeContainer(c);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "init adopts the live machine: a run against what it wrote is clean",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-init-" });
    const name = uniqueName("adopted");
    let caddy: CaddyFixture | undefined;
    try {
      caddy = await startCaddy(() => goodSites());
      await startContainer(name, { publish: [{ host: freePort(), container: 8080 }] });
      const out = `${dir}/registry.yaml`;
      const r = await reconcileCli(["init", "--output", out, "--caddy-admin", caddy.admin]);
      assertEquals(r.code, 0, r.stderr);
      const text = await Deno.readTextFile(out);
      assertStringIncludes(text, "note: adopted");
      const adopted = parse(text) as { services: Services };
      assertEquals(adopted.services[name]?.container, name);
      assertEquals(adopted.services["old.mesh.test"]?.redirect, "https://app.mesh.test/");
      const again = await reconcileCli(["init", "--output", out, "--caddy-admin", caddy.admin]);
      assertEquals(again.code, 2);
      assertStringIncludes(again.stderr, "it exists");
      const forced = await reconcileCli([
        "init",
        "--output",
        out,
        "--force",
        "--caddy-admin",
        caddy.admin,
      ]);
      assertEquals(forced.code, 0, forced.stderr);
      // Caddy's internal CA is a private one: the operator names its root in what init wrote.
      await Deno.writeTextFile(
        out,
        (await Deno.readTextFile(out)).replace(
          /^services:/m,
          `roots: [${await caddyRoot(caddy)}]\nservices:`,
        ),
      );
      const run = await runOnThisVm([out, "--caddy-admin", caddy.admin, "--cert-warn", "1h"]);
      assertEquals(run.code, 0, run.stdout);
    } finally {
      await caddy?.stop();
      await removeContainer(name);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("bad input: exit 2, a message naming file, line and field, nothing written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-bad-" });
  try {
    const stamp = `${dir}/stamp`;
    const textfile = `${dir}/mesh.prom`;
    const cases: [string, string | null, string[]][] = [
      ["malformed.yaml", "version: 1\naccounts: [root\n", ["malformed.yaml:"]],
      [
        "unknown.yaml",
        "version: 1\naccounts: [root]\nservices:\n  a:\n    kind: daemon\n    colour: blue\n",
        ["unknown.yaml:6:5", "services.a.colour"],
      ],
      [
        "dup.yaml",
        "version: 1\naccounts: [root]\nservices:\n  a: {kind: daemon, port: 22}\n  b: {kind: daemon, port: 22}\n",
        ["dup.yaml:5:", "services.b.port", "already claimed"],
      ],
      ["missing.yaml", null, ["missing.yaml", "no such file"]],
    ];
    for (const [file, content, expected] of cases) {
      if (content !== null) await Deno.writeTextFile(`${dir}/${file}`, content);
      const r = await reconcileCli([
        "run",
        "--boot",
        "none",
        "--registry",
        `${dir}/${file}`,
        "--stamp",
        stamp,
        "--textfile",
        textfile,
        "--caddy-admin",
        "none",
      ]);
      assertEquals(r.code, 2, `${file}: ${r.stderr}`);
      for (const e of expected) assertStringIncludes(r.stderr, e);
    }
    const asDir = await runOnThisVm([dir, "--caddy-admin", "none"]);
    assertEquals(asDir.code, 2);
    assertStringIncludes(asDir.stderr, "is a directory");
    // A stamp in a directory that does not exist is refused before anything runs.
    await Deno.writeTextFile(`${dir}/ok.yaml`, "version: 1\naccounts: [root]\nservices: {}\n");
    const r = await reconcileCli([
      "run",
      "--boot",
      "none",
      "--registry",
      `${dir}/ok.yaml`,
      "--stamp",
      `${dir}/nope/stamp`,
      "--textfile",
      textfile,
      "--caddy-admin",
      "none",
    ]);
    assertEquals(r.code, 2, r.stderr);
    assertStringIncludes(r.stderr, `"${dir}/nope/stamp"`);
    assertStringIncludes(r.stderr, "does not exist");
    const same = await reconcileCli([
      "run",
      "--boot",
      "none",
      "--registry",
      `${dir}/ok.yaml`,
      "--stamp",
      `${dir}/ok.yaml`,
      "--caddy-admin",
      "none",
    ]);
    assertEquals(same.code, 2, same.stderr);
    assertStringIncludes(same.stderr, "is the same file as --registry");
    assertEquals(
      await Deno.readTextFile(`${dir}/ok.yaml`),
      "version: 1\naccounts: [root]\nservices: {}\n",
    );
    for (const t of ["0", "0s", "99999999999d"]) {
      const r = await reconcileCli([
        "run",
        "--boot",
        "none",
        "--registry",
        `${dir}/ok.yaml`,
        "--timeout",
        t,
        "--caddy-admin",
        "none",
      ]);
      assertEquals(r.code, 2, `--timeout ${t}: ${r.stderr}`);
      assertStringIncludes(r.stderr, "--timeout");
    }
    const bad = await reconcileCli([
      "run",
      "--boot",
      "none",
      "--registry",
      `${dir}/ok.yaml`,
      "--cert-warn",
      "soon",
    ]);
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "--cert-warn");
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assertEquals(
      left.sort(),
      ["dup.yaml", "malformed.yaml", "ok.yaml", "unknown.yaml"],
      "nothing written",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("check-registry and schema", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/r.yaml`,
      "version: 1\naccounts: [root]\nservices:\n  sshd: {kind: daemon, port: 22}\n",
    );
    const ok = await reconcileCli(["check-registry", `${dir}/r.yaml`]);
    assertEquals(ok.code, 0, ok.stderr);
    assertStringIncludes(ok.stdout, "valid, 1 entries");
    await Deno.writeTextFile(
      `${dir}/r.yaml`,
      "version: 1\naccounts: [root]\nservices:\n  sshd: {kind: daemon, port: x}\n",
    );
    const bad = await reconcileCli(["check-registry", `${dir}/r.yaml`]);
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "r.yaml:4:");
    const schema = await reconcileCli(["schema"]);
    assertEquals(schema.code, 0);
    assertEquals((JSON.parse(schema.stdout) as { type: string }).type, "object");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("P: --timeout bounds each command: a hanging runtime is failed, not waited for", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-timeout-" });
  try {
    await Deno.writeTextFile(`${dir}/podman`, "#!/bin/sh\nexec sleep 120\n");
    await Deno.chmod(`${dir}/podman`, 0o755);
    await Deno.writeTextFile(`${dir}/r.yaml`, "version: 1\naccounts: [root]\nservices: {}\n");
    const started = Date.now();
    const r = await reconcileCli(
      [
        "run",
        "--boot",
        "none",
        "--registry",
        `${dir}/r.yaml`,
        "--caddy-admin",
        "none",
        "--timeout",
        "1s",
      ],
      { PATH: `${dir}:${Deno.env.get("PATH")}` },
    );
    assertEquals(r.code, 2, r.stdout);
    assertStringIncludes(r.stdout, "did not finish within its time limit of 1000 ms");
    // Not waited for: the runtime hangs 120 s; the bound leaves a loaded machine room past 1 s.
    assert(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
