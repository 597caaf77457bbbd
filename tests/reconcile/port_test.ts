/**
 * `mesh-reconcile port next`: the lowest port of a range that no entry claims and nothing
 * listens on, against this machine's real socket tables and real listeners (IPv4 and IPv6).
 */

import { stringify } from "yaml";
import { readAccounts } from "../../lib/accounts.ts";
import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { lowestFree, parsePortRange } from "../../reconcile/ports.ts";
import { observeSockets } from "../../reconcile/observe/sockets.ts";

/** A run of `n` consecutive ports nothing listens on now (below the ephemeral range). */
async function quietBlock(n: number): Promise<number> {
  const { listeners } = await observeSockets({ passwd: await readAccounts() });
  const busy = new Set(listeners.map((l) => l.port));
  for (let tries = 0; tries < 1000; tries++) {
    const base = 20_000 + Math.floor(Math.random() * 10_000);
    if (Array.from({ length: n }, (_, i) => base + i).every((p) => !busy.has(p))) return base;
  }
  throw new Error("no quiet block of ports found");
}

async function writeRegistry(dir: string, ports: number[]): Promise<string> {
  const file = `${dir}/registry.yaml`;
  await Deno.writeTextFile(
    file,
    stringify({
      version: 1,
      accounts: ["root"],
      services: { claimed: { kind: "daemon", port: ports } },
    }),
  );
  return file;
}

Deno.test({
  name: "port next skips what an entry claims and what listens on IPv4 or IPv6",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-port-" });
    const held: Deno.Listener[] = [];
    try {
      const base = await quietBlock(4);
      // The lowest candidate listens on IPv4; the next is claimed; the third listens on IPv6.
      held.push(Deno.listen({ hostname: "127.0.0.1", port: base }));
      held.push(Deno.listen({ hostname: "::1", port: base + 2 }));
      const registry = await writeRegistry(dir, [base + 1]);
      const r = await reconcileCli([
        "port",
        "next",
        "--registry",
        registry,
        "--range",
        `${base}-${base + 3}`,
      ]);
      assertEquals([r.code, r.stdout, r.stderr], [0, `${base + 3}\n`, ""]);

      // Nothing free: a clear refusal, exit 2.
      const none = await reconcileCli([
        "port",
        "next",
        "--registry",
        registry,
        "--range",
        `${base}-${base + 2}`,
      ]);
      assertEquals([none.code, none.stdout], [2, ""]);
      assertStringIncludes(
        none.stderr,
        `No free port in ${base}-${base + 2}: 1 claimed by entries, 2 in use`,
      );

      // The listener goes: its port is the lowest again.
      held.shift()!.close();
      const again = await reconcileCli([
        "port",
        "next",
        "--registry",
        registry,
        "--range",
        `${base}-${base + 3}`,
      ]);
      assertEquals([again.code, again.stdout], [0, `${base}\n`]);
    } finally {
      for (const l of held) l.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("port next: a bad range or registry is exit 2 with the reason; the default range is 8000-8999", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-port-" });
  try {
    const registry = await writeRegistry(dir, [8000]);
    for (
      const [range, words] of [
        ["9000-8000", "9000 is above 8000"],
        ["0-10", "ports are 1 to 65535"],
        ["65535-70000", "ports are 1 to 65535"],
        ["8000", "expected A-B"],
        ["a-b", "expected A-B"],
        ["8000-", "expected A-B"],
      ] as const
    ) {
      const r = await reconcileCli(["port", "next", "--registry", registry, "--range", range]);
      assertEquals([r.code, r.stdout], [2, ""], range);
      assertStringIncludes(r.stderr, `Cannot read port range "${range}": ${words}`);
    }
    const missing = await reconcileCli(["port", "next", "--registry", `${dir}/nope.yaml`]);
    assertEquals(missing.code, 2);
    assertStringIncludes(missing.stderr, "no such file");
    // Without --range: 8000-8999 (8000 is claimed, so the answer is above it).
    const r = await reconcileCli(["port", "next", "--registry", registry]);
    assertEquals(r.code, 0, r.stderr);
    const port = Number(r.stdout.trim());
    assertEquals(port > 8000 && port <= 8999, true, r.stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("P: lowestFree and parsePortRange", () => {
  assertEquals(parsePortRange(" 10-12 "), { first: 10, last: 12 });
  assertEquals(parsePortRange("1-65535"), { first: 1, last: 65535 });
  const range = { first: 10, last: 13 };
  assertEquals(lowestFree(range, { claimed: new Set([10]), used: new Set([11]) }), 12);
  assertEquals(
    lowestFree(range, { claimed: new Set([10, 12]), used: new Set([11, 13]) }),
    undefined,
  );
});
