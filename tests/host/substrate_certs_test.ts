/**
 * The Debian bundle's check of the substrate's server certificates (the verify of its
 * `server-certificates` action, run by the host at every apply; when it fails, `ca renew`
 * reissues), run here as the bundle carries it with `/etc/mesh` moved to a temporary directory,
 * against certificates from a CA made by lib/mesh_ca.ts: it passes for certificates good for every
 * name for more than 30 days, and fails, naming the file and why, for a missing certificate, a
 * name it does not carry (a line added to `public-names`), one within 30 days of its end, one from
 * another CA, a key too open, and a key that is not the certificate's.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { debianBundle, SERVER_NAMES_SH } from "../../scripts/substrate.ts";
import { createCa, issueServerCert, type PemPair } from "../../lib/mesh_ca.ts";
import { run } from "../../lib/command.ts";

interface Resource {
  id: string;
  verify?: string[];
}

Deno.test("the bundle's certificate check passes good certificates and names what is wrong with bad ones", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-substrate-certs-" });
  try {
    const moved = (text: string) => text.replaceAll("/etc/mesh", dir);
    const bundle = debianBundle({ store: "s", broker: "b", control: "c" }) as {
      declaration: { resources: Resource[] };
    };
    const script = moved(
      bundle.declaration.resources.find((r) => r.id === "server-certificates")!.verify![2]!,
    );
    const check = () => run(["sh", "-c", script], { allowFailure: true });

    await Deno.mkdir(`${dir}/secrets/tls`, { recursive: true, mode: 0o700 });
    await Deno.mkdir(`${dir}/tls`, { recursive: true });
    await Deno.writeTextFile(`${dir}/public-names`, "mesh.example.test  # the nodes' name\n");
    const names = (await run([
      "sh",
      "-c",
      `${moved(SERVER_NAMES_SH)}; printf '%s\\n' $names`,
    ])).stdout.trim().split("\n");
    for (const n of ["localhost", "127.0.0.1", "mesh.example.test"]) {
      assert(names.includes(n), `the names lack ${n}: ${names}`);
    }
    assert(!names.some((n) => n.includes("#")), `a comment taken as a name: ${names}`);

    const ca = await createCa();
    await Deno.writeTextFile(`${dir}/ca.crt`, ca.certPem);
    await Deno.writeTextFile(`${dir}/secrets/ca.key`, ca.keyPem, { mode: 0o600 });
    const put = async (name: string, pair: PemPair, mode = 0o600) => {
      await Deno.writeTextFile(`${dir}/tls/${name}.crt`, pair.certPem);
      await Deno.remove(`${dir}/secrets/tls/${name}.key`).catch(() => {});
      await Deno.writeTextFile(`${dir}/secrets/tls/${name}.key`, pair.keyPem, { mode });
      await Deno.chmod(`${dir}/secrets/tls/${name}.key`, mode);
    };

    const none = await check();
    assertEquals(none.code, 1);
    assertStringIncludes(none.stderr, `${dir}/tls/store.crt is missing`);

    const good = await issueServerCert(ca, { names });
    await put("store", good);
    await put("broker", await issueServerCert(ca, { names }));
    const passed = await check();
    assertEquals([passed.code, passed.stderr], [0, ""]);

    const cases: [string, () => Promise<void>, string][] = [
      [
        "a name it does not carry",
        async () =>
          await put(
            "broker",
            await issueServerCert(ca, { names: names.filter((n) => n !== "mesh.example.test") }),
          ),
        `${dir}/tls/broker.crt is not good for mesh.example.test`,
      ],
      [
        "within 30 days of its end",
        async () => await put("broker", await issueServerCert(ca, { names, days: 20 })),
        `${dir}/tls/broker.crt is not good for`,
      ],
      [
        "from another CA",
        async () => await put("broker", await issueServerCert(await createCa(), { names })),
        `${dir}/tls/broker.crt is not good for`,
      ],
      [
        "a key too open",
        async () => await put("broker", await issueServerCert(ca, { names }), 0o644),
        `${dir}/secrets/tls/broker.key is 644:0, not 600:0`,
      ],
      [
        "another certificate's key",
        async () => {
          await put("broker", await issueServerCert(ca, { names }));
          await Deno.writeTextFile(`${dir}/secrets/tls/broker.key`, good.keyPem);
        },
        `${dir}/secrets/tls/broker.key is not the key of ${dir}/tls/broker.crt`,
      ],
    ];
    for (const [what, make, said] of cases) {
      await make();
      const r = await check();
      assertEquals(r.code, 1, `${what}: passed`);
      assertStringIncludes(r.stderr, said, what);
    }

    // A name added to public-names: the certificates on file no longer carry every name.
    await put("broker", await issueServerCert(ca, { names }));
    assertEquals((await check()).code, 0);
    await Deno.writeTextFile(`${dir}/public-names`, "added.example.test\n", { append: true });
    const added = await check();
    assertEquals(added.code, 1);
    assertStringIncludes(added.stderr, "is not good for added.example.test");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
