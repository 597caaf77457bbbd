/**
 * A `daemon` entry's `user` is compared with the owner of the process holding its port: a root
 * listener on a port declared as postgres's is a finding. The real PostgreSQL of this VM (on
 * 5432, as postgres) and a listener of this test (as root).
 */
import { assert, assertEquals } from "../support/assert.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { reconcile } from "../../reconcile/run.ts";

function runWith(yaml: string) {
  return reconcile(parseRegistry(`version: 1\naccounts: [root]\nservices:\n${yaml}`), {
    registryPath: "r.yaml",
    caddyAdmin: "none",
    bootView: "none",
    runtimes: [],
  });
}

Deno.test("a daemon's port held by a process of another account is a finding naming both", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  try {
    const result = await runWith(`  pg:
    kind: daemon
    user: postgres
    port: ${port}
  db:
    kind: daemon
    user: postgres
    port: 5432
`);
    const pg = result.findings.filter((f) => f.service === "pg");
    assertEquals(pg.map((f) => [f.check, f.direction, f.subject]), [[
      "port",
      "missing",
      `${port}`,
    ]]);
    assert(pg[0]!.detail.includes(`deno[${Deno.pid}] as root`), pg[0]!.detail);
    assert(pg[0]!.detail.includes("not as postgres"), pg[0]!.detail);
    assertEquals(result.findings.filter((f) => f.service === "db"), [], "the real postgres");
  } finally {
    listener.close();
  }
});

Deno.test("the real postgres declared as root is a finding; a daemon without user is not compared", async () => {
  const result = await runWith(`  db:
    kind: daemon
    user: root
    port: 5432
`);
  const db = result.findings.filter((f) => f.service === "db");
  assertEquals(db.length, 1, JSON.stringify(db));
  assert(db[0]!.detail.includes("as postgres, not as root"), db[0]!.detail);
  const none = await runWith(`  db:\n    kind: daemon\n    port: 5432\n`);
  assertEquals(none.findings.filter((f) => f.service === "db"), []);
});
