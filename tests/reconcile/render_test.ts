/**
 * Born covered: `render caddy` and `render backup` from a registry, the rendered Caddyfile
 * loaded by the real Caddy, and `run` comparing the routes Caddy serves with the rendered ones.
 */

import { run } from "../../lib/command.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { registryText, type Services } from "./render_support.ts";
import { reconcileCli } from "../support/mod.ts";
import { handlersFor } from "../../reconcile/observe/routes.ts";
import { observeProxy } from "../../reconcile/observe/proxy.ts";
import { compareRoutes, isLoopbackPort } from "../../reconcile/compare_route.ts";
import { parseRegistry } from "../../reconcile/registry.ts";

/** `caddy adapt` of a Caddyfile: Caddy's own reading of it, as JSON. */
async function adapt(dir: string, caddyfile: string): Promise<Record<string, unknown>> {
  await Deno.writeTextFile(`${dir}/Caddyfile`, caddyfile);
  const out = await run([
    "caddy",
    "adapt",
    "--config",
    `${dir}/Caddyfile`,
    "--adapter",
    "caddyfile",
  ]);
  return JSON.parse(out.stdout);
}

function serverRoutes(config: Record<string, unknown>): Map<string, unknown[]> {
  const servers = (config as {
    apps: { http: { servers: Record<string, { routes: unknown[] }> } };
  }).apps.http.servers;
  return new Map(Object.entries(servers).map(([k, v]) => [k, v.routes]));
}

const SAMPLE: Services = {
  web: {
    kind: "service",
    user: "root",
    container: "web",
    port: [8080, 9090],
    web: ["app.mesh.test", "www.mesh.test"],
    state: ["/srv/web"],
    database: ["app", "app_audit"],
  },
  "old-blog": {
    kind: "site",
    web: "old.mesh.test",
    redirect: "https://app.mesh.test/",
    note: "only redirects, and stays declared\n}\nevil.mesh.test {\n\trespond pwned",
  },
  docs: { kind: "site", web: "docs.mesh.test", state: ["/srv/docs site", "/srv/docs-old"] },
  api: { kind: "daemon", user: "root", port: 8081, web: ["*.api.mesh.test"] },
  catch: { kind: "daemon", port: 8082, web: "*" },
  sshd: { kind: "daemon", user: "root", port: 22 },
  db: { kind: "daemon", port: 5432, database: "app", state: ["/srv/web"] },
};

Deno.test("render caddy: every declared address, redirects included, and Caddy reads it as rendered", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-render-" });
  try {
    await Deno.writeTextFile(`${dir}/registry.yaml`, registryText(SAMPLE));
    const r = await reconcileCli(["render", "caddy", "--registry", `${dir}/registry.yaml`]);
    assertEquals(r.code, 0, r.stderr);
    const text = r.stdout;
    assertStringIncludes(text, "app.mesh.test, www.mesh.test {\n\treverse_proxy 127.0.0.1:8080\n}");
    assertStringIncludes(text, "old.mesh.test {\n\tredir https://app.mesh.test/\n}");
    assertStringIncludes(text, "docs.mesh.test {\n\troot * `/srv/docs site`\n\tfile_server\n}");
    assertStringIncludes(text, "*.api.mesh.test {\n\treverse_proxy 127.0.0.1:8081\n}");
    assertStringIncludes(text, "http:// {\n\treverse_proxy 127.0.0.1:8082\n}");
    // The note is comments only: a note cannot add a site.
    assertStringIncludes(text, "# }\n# evil.mesh.test {\n# \trespond pwned\n");
    assert(!/^evil/m.test(text), text);

    // Caddy itself reads each address with the route the registry renders.
    const config = await adapt(dir, text);
    const routes = serverRoutes(config);
    const all = [...routes.values()];
    const find = (host: string) => all.map((r) => handlersFor(r, host)).find((h) => h.length > 0);
    assertEquals(find("app.mesh.test"), [{ kind: "reverse_proxy", upstreams: ["127.0.0.1:8080"] }]);
    assertEquals(find("www.mesh.test"), [{ kind: "reverse_proxy", upstreams: ["127.0.0.1:8080"] }]);
    assertEquals(find("old.mesh.test"), [{
      kind: "redirect",
      to: "https://app.mesh.test/",
      status: 302,
    }]);
    assertEquals(find("docs.mesh.test"), [{ kind: "file_server", root: "/srv/docs site" }]);
    assertEquals(find("*.api.mesh.test"), [{
      kind: "reverse_proxy",
      upstreams: ["127.0.0.1:8081"],
    }]);
    assertEquals(find("*"), [{ kind: "reverse_proxy", upstreams: ["127.0.0.1:8082"] }]);
    assert(!JSON.stringify(config).includes("evil"), "a note became config");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("render caddy refuses an address nothing says how to serve, naming every entry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-render-" });
  try {
    await Deno.writeTextFile(
      `${dir}/registry.yaml`,
      registryText({
        ...SAMPLE,
        bare: { kind: "site", web: "bare.mesh.test" },
        noport: { kind: "service", user: "root", container: "np", web: "np.mesh.test" },
      }),
    );
    const r = await reconcileCli(["render", "caddy", "--registry", `${dir}/registry.yaml`]);
    assertEquals(r.code, 2, r.stdout);
    assertEquals(r.stdout, "");
    assertStringIncludes(r.stderr, "(2 entries)");
    assertStringIncludes(r.stderr, "services.bare: declares web addresses but nothing that says");
    assertStringIncludes(r.stderr, "services.noport: declares web addresses but nothing that says");
    const bad = await reconcileCli(["render", "caddy", "--registry", `${dir}/nope.yaml`]);
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "no such file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("render backup: state directories and databases, text and --json from the same list", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-render-" });
  try {
    const file = `${dir}/registry.yaml`;
    await Deno.writeTextFile(file, registryText(SAMPLE));
    const [text, json] = await Promise.all([
      reconcileCli(["render", "backup", "--registry", file]),
      reconcileCli(["render", "backup", "--registry", file, "--json"]),
    ]);
    assertEquals([text.code, json.code], [0, 0], text.stderr + json.stderr);
    const plan = JSON.parse(json.stdout);
    assertEquals(plan, {
      registry: file,
      state: [
        { path: "/srv/docs site", services: ["docs"] },
        { path: "/srv/docs-old", services: ["docs"] },
        { path: "/srv/web", services: ["web", "db"] },
      ],
      databases: [
        { name: "app", services: ["web", "db"] },
        { name: "app_audit", services: ["web"] },
      ],
      without: ["old-blog", "api", "catch", "sshd"],
    });
    assertStringIncludes(text.stdout, "3 state directories, 2 databases");
    assertStringIncludes(text.stdout, "  /srv/docs site  docs\n");
    assertStringIncludes(text.stdout, "  /srv/web        web, db\n");
    assertStringIncludes(text.stdout, "  app_audit  web\n");
    assertStringIncludes(
      text.stdout,
      "nothing of theirs is backed up: old-blog, api, catch, sshd",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("route comparison: middleware is not a route, a loopback name is loopback, a second handler is drift", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-render-" });
  const served = `{
	admin off
}
app.mesh.test {
	encode gzip
	header X-Mesh yes
	reverse_proxy localhost:8080
}
split.mesh.test {
	handle /api/* {
		reverse_proxy 127.0.0.1:9999
	}
	handle {
		reverse_proxy 127.0.0.1:8083
	}
}
fcgi.mesh.test {
	php_fastcgi 127.0.0.1:8084
}
first.mesh.test {
	route {
		reverse_proxy /app/* 127.0.0.1:8085
		file_server
	}
}
old.mesh.test {
	redir https://app.mesh.test{uri} permanent
}
`;
  const config = await adapt(dir, served);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => Response.json(config),
  );
  try {
    const proxy = await observeProxy(`127.0.0.1:${server.addr.port}`);
    const registry = parseRegistry(registryText({
      app: { kind: "daemon", port: 8080, web: "app.mesh.test" },
      split: { kind: "daemon", port: 8083, web: "split.mesh.test" },
      fcgi: { kind: "daemon", port: 8084, web: "fcgi.mesh.test" },
      first: { kind: "daemon", port: 8085, web: "first.mesh.test" },
      old: { kind: "site", web: "old.mesh.test", redirect: "https://app.mesh.test/" },
    }));
    const findings = compareRoutes(registry, {
      time: new Date().toISOString(),
      containers: [],
      listeners: [],
      addresses: proxy.addresses,
      probes: [],
      sources: proxy.sources,
    });
    assertEquals(findings.map((f) => [f.check, f.direction, f.service]).sort(), [
      ["route", "missing", "fcgi"],
      ["route", "missing", "first"],
      ["route", "missing", "split"],
    ], JSON.stringify(findings, null, 1));
    assertStringIncludes(
      findings.find((f) => f.service === "split")!.detail,
      "split.mesh.test is served by reverse_proxy to 127.0.0.1:9999 and reverse_proxy to 127.0.0.1:8083",
    );
    assertStringIncludes(findings.find((f) => f.service === "fcgi")!.detail, "over fastcgi");
    assertStringIncludes(
      findings.find((f) => f.service === "first")!.detail,
      "reverse_proxy to 127.0.0.1:8085 and file_server from the working directory",
    );
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a dial address is loopback by the one rule (lib/wire_trust.ts), on the port asked", () => {
  for (
    const dial of [
      "127.0.0.1:8080",
      "tcp/127.0.0.2:8080",
      "localhost:8080",
      "app.localhost:8080",
      "[::1]:8080",
      "tcp6/[::1]:8080",
      "[::ffff:127.0.0.1]:8080",
    ]
  ) {
    assert(isLoopbackPort(dial, 8080), dial);
  }
  for (
    const dial of [
      "127.0.0.1:8081",
      "10.0.0.1:8080",
      "127.0.0.1.example.org:8080",
      "0.0.0.0:8080",
      "/run/app.sock:8080",
      "unix//run/app.sock",
    ]
  ) {
    assert(!isLoopbackPort(dial, 8080), dial);
  }
});
