/**
 * `run` against the real Caddy loaded with what `render caddy` made of a registry: clean, then a
 * route that differs is a route finding (the rendering and the route comparison are
 * tests/reconcile/render_test.ts's).
 *
 * @tier alone (a clean run here is the whole machine as the registry adopted it: a port or
 * container another test opens meanwhile is rogue, so test:fast runs it with nothing beside it;
 * seen so in a three-process run, a port of another process's test rogue in three attempts)
 */

import { parse } from "yaml";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { registryText, type Services } from "./render_support.ts";
import {
  type CaddyFixture,
  caddyRoot,
  reconcileCli,
  reloadCaddy,
  startCaddy,
} from "../support/mod.ts";
import type { ReconcileJson as JsonResult } from "../../reconcile/report.ts";

/** Runs `run --json` and returns the result. */
async function runJson(
  registry: string,
  caddy: CaddyFixture,
): Promise<JsonResult & { code: number; raw: string }> {
  const r = await reconcileCli([
    "run",
    "--registry",
    registry,
    "--caddy-admin",
    caddy.admin,
    "--cert-warn",
    "1h", // Caddy's internal CA issues 12-hour certificates
    "--boot",
    "none", // this VM is not booted with systemd: what a reboot would produce cannot be read
    "--json",
  ]);
  return { ...(JSON.parse(r.stdout) as JsonResult), code: r.code, raw: r.stdout + r.stderr };
}

Deno.test({
  name:
    "run against Caddy loaded from render caddy is clean; a route that differs is a route finding",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "mesh-render-run-" });
    const upstream = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      () => new Response("app"),
    );
    const other = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      () => new Response("other"),
    );
    let caddy: CaddyFixture | undefined;
    try {
      const root = `${dir}/site root`;
      await Deno.mkdir(root);
      await Deno.writeTextFile(`${root}/index.html`, "static\n");
      const fixtures: Services = {
        "t-app": { kind: "daemon", user: "root", port: upstream.addr.port, web: "app.mesh.test" },
        "t-other": { kind: "daemon", user: "root", port: other.addr.port },
        "t-static": { kind: "site", web: "static.mesh.test", state: [root] },
        "t-old": {
          kind: "site",
          web: "old.mesh.test",
          redirect: "https://app.mesh.test/",
          note: "only redirects; stays declared or it is rogue",
        },
      };
      const registry = `${dir}/registry.yaml`;
      await Deno.writeTextFile(registry, registryText(fixtures));
      const rendered = await reconcileCli(["render", "caddy", "--registry", registry]);
      assertEquals(rendered.code, 0, rendered.stderr);
      caddy = await startCaddy(() => rendered.stdout);
      const adminPort = Number(caddy.admin.split(":")[1]);
      fixtures["t-caddy"] = {
        kind: "daemon",
        user: "root",
        port: [adminPort, caddy.httpsPort, caddy.httpPort],
      };

      /** The machine as it is now, adopted, plus the fixtures. */
      const writeWithMachine = async () => {
        const init = await reconcileCli(["init", "--caddy-admin", "none"]);
        assertEquals(init.code, 0, init.stderr);
        const machine = (parse(init.stdout) as { services?: Services }).services ?? {};
        for (const [name, entry] of Object.entries(machine)) {
          const ports = [entry.port ?? []].flat() as number[];
          const ours = Object.values(fixtures).flatMap((f) => [f.port ?? []].flat());
          if (ports.some((p) => ours.includes(p))) delete machine[name];
        }
        // Caddy's internal CA is a private one: the registry names its root.
        await Deno.writeTextFile(
          registry,
          registryText({ ...machine, ...fixtures }, [await caddyRoot(caddy!)]),
        );
      };

      await t.step("Caddy running the rendered config: the run is clean", async () => {
        // The rest of the machine may change under a concurrent test (a container, a port):
        // adopt it again then, but never retry over a route, address or certificate finding.
        let result;
        for (let attempt = 0; attempt < 3; attempt++) {
          await writeWithMachine();
          result = await runJson(registry, caddy!);
          const proxy = result.findings.filter((f) => !["port", "container"].includes(f.check));
          assertEquals(proxy, [], result.raw);
          if (result.findings.length === 0) break;
        }
        assertEquals(result!.findings, [], result!.raw);
        assertEquals(result!.sources.find((s) => s.source === "caddy")?.state, "observed");
        assertEquals([result!.code, result!.status], [0, "clean"], result!.raw);
      });

      await t.step("middleware and a loopback name do not change the route", async () => {
        await reloadCaddy(caddy!, () =>
          rendered.stdout.replace(
            `reverse_proxy 127.0.0.1:${upstream.addr.port}`,
            `encode gzip\n\treverse_proxy localhost:${upstream.addr.port}`,
          ));
        const result = await runJson(registry, caddy!);
        assertEquals(result.findings.filter((f) => f.check === "route"), [], result.raw);
      });

      await t.step("each served route unlike the rendered one is its own finding", async () => {
        const drifted = rendered.stdout
          .replace(
            `reverse_proxy 127.0.0.1:${upstream.addr.port}`,
            `reverse_proxy 127.0.0.1:${other.addr.port}`,
          )
          .replace(/root \* .*\n/, "root * /tmp\n")
          .replace("redir https://app.mesh.test/", 'respond "moved, but not a redirect" 200');
        assert(drifted !== rendered.stdout);
        await reloadCaddy(caddy!, () => drifted);
        const result = await runJson(registry, caddy!);
        assertEquals(result.code, 1, result.raw);
        const routes = result.findings.filter((f) => f.check === "route");
        assertEquals(
          routes.map((f) => [f.direction, f.service, f.subject]).sort(),
          [
            ["missing", "t-app", "app.mesh.test"],
            ["missing", "t-old", "old.mesh.test"],
            ["missing", "t-static", "static.mesh.test"],
          ],
          JSON.stringify(routes, null, 1),
        );
        const detail = (s: string) => routes.find((f) => f.service === s)!.detail;
        assertStringIncludes(
          detail("t-app"),
          `served by reverse_proxy to 127.0.0.1:${other.addr.port}`,
        );
        assertStringIncludes(
          detail("t-app"),
          `not by reverse_proxy to 127.0.0.1:${upstream.addr.port} as the registry renders it`,
        );
        assertStringIncludes(detail("t-static"), 'served by file_server from "/tmp"');
        assertStringIncludes(detail("t-static"), `not by file_server from ${JSON.stringify(root)}`);
        assertStringIncludes(detail("t-old"), "served by a fixed response (200)");
        assertStringIncludes(detail("t-old"), "not by a redirect to https://app.mesh.test/");
      });

      await t.step(
        "an address served that the registry does not render stays an address finding",
        async () => {
          await reloadCaddy(
            caddy!,
            () => `${rendered.stdout}\nextra.mesh.test {\n\trespond "x"\n}\n`,
          );
          const result = await runJson(registry, caddy!);
          assert(
            result.findings.some((f) =>
              f.check === "address" && f.direction === "rogue" && f.subject === "extra.mesh.test"
            ),
            result.raw,
          );
          assertEquals(
            result.findings.filter((f) => f.check === "route"),
            [],
            result.raw,
          );
        },
      );
    } finally {
      await caddy?.stop();
      await upstream.shutdown();
      await other.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
