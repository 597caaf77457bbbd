/**
 * One file is the whole install: a bare lab machine (systemd, no Deno, no checkout mounted)
 * gets the one-file debian host copied in and nothing else, and it reconciles its carried bundle.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { oneFileHost } from "../support/onefile.ts";
import { bootLab } from "../lab/mod.ts";

Deno.test("one file copied onto a bare Debian machine is the whole install", async () => {
  const file = await oneFileHost("debian");
  const m = await bootLab("systemd", { bare: true });
  try {
    // Bare: no Deno anywhere, no checkout.
    const deno = await m.exec(["sh", "-c", "command -v deno || ls /mesh"], { allowFailure: true });
    assert(deno.code !== 0, `the machine has Deno or a checkout: ${deno.stdout}`);
    await m.copyIn(file, "/usr/local/sbin/mesh-host");
    const first = await m.exec(["mesh-host", "reconcile", "--json"], { allowFailure: true });
    assertEquals(first.code, 0, first.stderr + first.stdout);
    const r1 = JSON.parse(first.stdout) as { outcome: string; changes: { change: string }[] };
    assertEquals(r1.outcome, "applied");
    assert(r1.changes.some((c) => c.change === "created"), first.stdout);
    const second = await m.exec(["mesh-host", "reconcile", "--json"]);
    const r2 = JSON.parse(second.stdout) as { outcome: string; changes: { change: string }[] };
    assertEquals(r2.changes.filter((c) => c.change !== "unchanged"), []);
    // Asked of the machine itself: the bundle's layout is there, and the host recorded itself.
    assertStringIncludes(
      (await m.exec(["cat", "/etc/mesh/README"])).stdout,
      "maintained by mesh-host",
    );
    assertStringIncludes((await m.exec(["cat", "/var/lib/mesh/host/known-good"])).stdout, ".");
    // It runs from the cache it unpacked, under /var/lib/mesh.
    const cached = await m.exec([
      "sh",
      "-c",
      "ls /var/lib/mesh/runtime/runtime /var/lib/mesh/runtime/program",
    ]);
    assert(/[0-9a-f]{64}/.test(cached.stdout), cached.stdout);
  } finally {
    await m.destroy();
  }
});
