/**
 * Certificates judged as a client would, against a real Caddy presenting certificates made
 * with openssl (`openssl ca -startdate/-enddate`): both ends of the validity window and the
 * name, each its own finding saying which. The certificates are self-signed, so the registry
 * names them as its private roots (`roots`): without, each is also a root nothing trusts
 * (tests/reconcile/cert_chain_test.ts).
 */
import { assert, assertEquals } from "../support/assert.ts";
import { makeCertificate, startCaddy } from "../support/mod.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { reconcile } from "../../reconcile/run.ts";

const DAY = 86_400_000;

Deno.test("a certificate not valid yet, or for another name and not valid yet, is a finding each", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-cert-" });
  const now = Date.now();
  const future = await makeCertificate(dir, "future", {
    name: "future.mesh.test",
    notBefore: new Date(now + 2 * DAY),
    notAfter: new Date(now + 90 * DAY),
  });
  const both = await makeCertificate(dir, "both", {
    name: "other.mesh.test",
    notBefore: new Date(now + 3 * DAY),
    notAfter: new Date(now + 90 * DAY),
  });
  const good = await makeCertificate(dir, "good", {
    name: "good.mesh.test",
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 90 * DAY),
  });
  const caddy = await startCaddy(() => `
future.mesh.test {
	tls ${future.cert} ${future.key}
	respond "future"
}
both.mesh.test {
	tls ${both.cert} ${both.key}
	respond "both"
}
good.mesh.test {
	tls ${good.cert} ${good.key}
	respond "good"
}
`);
  try {
    const registry = parseRegistry(`version: 1
accounts: [root]
roots: [${future.cert}, ${both.cert}, ${good.cert}]
services:
  sites:
    kind: site
    web: [future.mesh.test, both.mesh.test, good.mesh.test]
`);
    const result = await reconcile(registry, {
      registryPath: "r.yaml",
      caddyAdmin: caddy.admin,
      bootView: "none",
      runtimes: [],
    });
    const certs = result.findings.filter((f) => f.check === "certificate");
    const about = (host: string) => certs.filter((f) => f.subject === host).map((f) => f.detail);
    assertEquals(about("good.mesh.test"), []);
    const notYet = about("future.mesh.test");
    assertEquals(notYet.length, 1, JSON.stringify(certs));
    assert(notYet[0]!.includes("is not valid yet"), notYet[0]);
    assert(notYet[0]!.includes(new Date(Math.floor((now + 2 * DAY) / 1000) * 1000).toISOString()));
    const two = about("both.mesh.test");
    assertEquals(two.length, 2, JSON.stringify(certs));
    assert(two.some((d) => d.includes("does not cover it")), JSON.stringify(two));
    assert(two.some((d) => d.includes("is not valid yet")), JSON.stringify(two));
    assertEquals(result.exitCode === 0, false);

    // A root the registry names that cannot be read: the run cannot be clean (exit 2), naming it.
    const unread = await reconcile(
      parseRegistry(`version: 1
accounts: [root]
roots: [${dir}/nowhere.pem]
services:
  sites:
    kind: site
    web: [good.mesh.test]
`),
      { registryPath: "r.yaml", caddyAdmin: caddy.admin, bootView: "none", runtimes: [] },
    );
    assertEquals(unread.exitCode, 2);
    const trust = unread.sources.find((s) => s.source === "trust");
    assertEquals(trust?.state, "failed", JSON.stringify(unread.sources));
    assert(trust!.detail.includes(`Cannot read the registry's root "${dir}/nowhere.pem"`));
  } finally {
    await caddy.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
