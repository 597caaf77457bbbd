import { assert, assertEquals } from "../support/assert.ts";
import { listenPort, observeProxy, probeAddress } from "../../reconcile/observe/proxy.ts";
import { freePort, makeCertificate, startCaddy } from "../support/mod.ts";

Deno.test("Caddy's served addresses, TLS or not, through subroutes, and what each presents", async () => {
  const dir = await Deno.makeTempDir();
  const wrong = await makeCertificate(dir, "wrong", {
    name: "other.mesh.test",
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 30 * 86_400_000),
  });
  const plainPort = freePort();
  const anyPort = freePort();
  const caddy = await startCaddy(() => `
app.mesh.test {
	respond "app"
}
old.mesh.test {
	redir https://app.mesh.test{uri} 301
}
wrong.mesh.test {
	tls ${wrong.cert} ${wrong.key}
	respond "wrong"
}
http://plain.mesh.test:${plainPort} {
	respond "plain"
}
http://:${anyPort} {
	@api host api.mesh.test
	handle @api {
		respond "api"
	}
	handle {
		respond "fallback"
	}
}
`);
  try {
    const seen = await observeProxy(caddy.admin);
    assertEquals(seen.sources.map((s) => s.state), ["observed"]);
    const byHost = new Map(seen.addresses.map((a) => [a.host, a]));
    assertEquals([...byHost.keys()].sort(), [
      "*",
      "api.mesh.test",
      "app.mesh.test",
      "old.mesh.test",
      "plain.mesh.test",
      "wrong.mesh.test",
    ]);
    assertEquals(byHost.get("app.mesh.test")!.tls, true);
    assertEquals(byHost.get("plain.mesh.test")!.tls, false);
    assertEquals(byHost.get("api.mesh.test")!.tls, false);
    assertEquals(byHost.get("app.mesh.test")!.listen.map(listenPort), [caddy.httpsPort]);

    const app = await probeAddress(byHost.get("app.mesh.test")!);
    assertEquals(app.status, 200);
    assert(app.certificate?.coversName, JSON.stringify(app));
    assert(Date.parse(app.certificate!.notAfter) > Date.now());

    const old = await probeAddress(byHost.get("old.mesh.test")!);
    assertEquals([old.status, old.location], [301, "https://app.mesh.test/"]);

    const w = await probeAddress(byHost.get("wrong.mesh.test")!);
    assertEquals(w.certificate?.coversName, false);
    assertEquals(w.certificate?.subjectAltName, "DNS:other.mesh.test");

    const plain = await probeAddress(byHost.get("plain.mesh.test")!);
    assertEquals([plain.status, plain.certificate], [200, undefined]);
  } finally {
    await caddy.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an admin API that does not answer is a failed source, never an empty list", async () => {
  const port = freePort();
  const seen = await observeProxy(`localhost:${port}`);
  assertEquals(seen.sources.map((s) => s.state), ["failed"]);
  assertEquals(seen.addresses, []);
  assert(seen.sources[0]!.method.includes(`localhost:${port}/config/`));
  assert(seen.sources[0]!.detail.includes("Cannot read the proxy config"));
});

Deno.test("an admin address answering something that is not Caddy's config fails", async () => {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => Response.json({ apps: { http: { servers: { a: { listen: 443 } } } } }),
  );
  try {
    const seen = await observeProxy(`127.0.0.1:${server.addr.port}`);
    assertEquals(seen.sources.map((s) => s.state), ["failed"]);
    assert(seen.sources[0]!.detail.includes("not Caddy's config shape"), seen.sources[0]!.detail);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a Caddy server named __proto__ is read as any other, its addresses observed", async () => {
  // Caddy names its servers freely; JSON.parse makes the name an own key, which zod's record
  // skipped unchecked (its addresses then unseen, as if not served).
  const body = `{"apps":{"http":{"servers":{"__proto__":{"listen":[":8080"],` +
    `"routes":[{"match":[{"host":["a.example"]}],"handle":[{"handler":"static_response"}]}]}}}}}`;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response(body, { headers: { "content-type": "application/json" } }),
  );
  try {
    const seen = await observeProxy(`127.0.0.1:${server.addr.port}`);
    assertEquals(seen.sources.map((s) => s.state), ["observed"], seen.sources[0]?.detail);
    assertEquals(seen.addresses.map((a) => [a.host, a.server]), [["a.example", "__proto__"]]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a config nested past the bound (subroutes 5,000 deep) is a failed source naming it, not a crash", async () => {
  // Rule 3 of docs/design.md ("Hostile inputs"): the config's schema recurses through routes.
  let routes = "[]";
  for (let i = 0; i < 5_000; i++) {
    routes = `[{"handle":[{"handler":"subroute","routes":${routes}}]}]`;
  }
  const body = `{"apps":{"http":{"servers":{"a":{"listen":[":443"],"routes":${routes}}}}}}`;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response(body, { headers: { "content-type": "application/json" } }),
  );
  try {
    const seen = await observeProxy(`127.0.0.1:${server.addr.port}`);
    assertEquals(seen.sources.map((s) => s.state), ["failed"]);
    assert(seen.sources[0]!.detail.includes("more than 128 levels deep"), seen.sources[0]!.detail);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a configured address whose listener is gone is a probe error, not a response", async () => {
  const port = freePort();
  const probe = await probeAddress({
    host: "x.mesh.test",
    server: "s",
    listen: [`:${port}`],
    tls: true,
  });
  assert(
    probe.error?.includes("ECONNREFUSED") || probe.error?.toLowerCase().includes("refused"),
    probe.error,
  );
});

Deno.test("P: TLS follows Caddy's automatic HTTPS: skip and disable turn it off", async () => {
  const route = (host: string) => ({
    match: [{ host: [host] }],
    handle: [{ handler: "static_response" }],
  });
  const config = {
    apps: {
      http: {
        http_port: 80,
        servers: {
          auto: { listen: [":8443"], routes: [route("auto.mesh.test")] },
          skipped: {
            listen: [":8444"],
            routes: [route("skipped.mesh.test")],
            automatic_https: { skip: ["skipped.mesh.test"] },
          },
          off: {
            listen: [":8445"],
            routes: [route("off.mesh.test")],
            automatic_https: { disable: true },
          },
        },
      },
    },
  };
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => Response.json(config),
  );
  try {
    const seen = await observeProxy(`127.0.0.1:${server.addr.port}`);
    assertEquals(seen.addresses.map((a) => [a.host, a.tls]), [
      ["auto.mesh.test", true],
      ["skipped.mesh.test", false],
      ["off.mesh.test", false],
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("P: an unspecified listen address is probed on loopback, IPv4 or IPv6", async () => {
  const { connectTarget } = await import("../../reconcile/observe/proxy.ts");
  assertEquals(connectTarget(":443"), { host: "127.0.0.1", port: 443 });
  assertEquals(connectTarget("tcp/[::]:8443"), { host: "::1", port: 8443 });
});
