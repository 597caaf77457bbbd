/**
 * The stamp over the network (issue 27, item 5): `mesh-reconcile stamp serve` over HTTPS with a
 * certificate issued by the mesh's CA (lib/mesh_ca.ts, through tests/support/tls.ts), and
 * `mesh-reconcile watch` verifying it against that CA; a certificate from another CA, expired, or
 * for another name named in the verdict; plain HTTP refused off loopback unless allowed; a bad key,
 * certificate or CA file refused with exit 2 naming it. Both programs run as subprocesses, as an
 * operator or a unit runs them.
 */

import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { freePort, reconcileCli, ROOT } from "../support/mod.ts";
import { type CertFiles, makeBadCerts, makeTestPki, type TestPki } from "../support/tls.ts";
import { type StampServe, startStampServe } from "../support/stamp_serve.ts";

/** A stamp line as `run` writes it, dated `agoMs` before now. */
function stampLine(agoMs: number): string {
  return `${
    new Date(Date.now() - agoMs).toISOString()
  } clean: 3 entries agree with 1 containers, 2 ports, 0 addresses\n`;
}

interface WatchJson {
  source: string;
  state: string;
  problem?: string;
  exitCode: number;
  detail: string;
  ageFrom?: string;
}

/** `watch SOURCE ... --json`, with `env`; the exit code must be the one the JSON states. */
async function watchJson(
  source: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<WatchJson> {
  const r = await reconcileCli(["watch", source, "--max-age", "1h", ...args, "--json"], {
    MESH_CA_FILE: "",
    ...env,
  });
  let j: WatchJson;
  try {
    j = JSON.parse(r.stdout);
  } catch {
    throw new Error(`watch printed no JSON (exit ${r.code}): ${r.stdout}${r.stderr}`);
  }
  assertEquals(j.exitCode, r.code, r.stdout + r.stderr);
  return j;
}

/**
 * `mesh-reconcile ARGS` with `env` (and no `$MESH_CA_FILE` unless given), killed and failing the
 * test when it runs past `deadlineMs`: a refusal that is not made would otherwise serve forever.
 */
async function refusal(
  args: string[],
  env: Record<string, string> = {},
  deadlineMs = 30_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}reconcile/main.ts`, ...args],
    env: { MESH_CA_FILE: "", MESH_ALLOW_PLAIN: "", ...env },
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(deadlineMs),
  }).output();
  assert(
    out.signal === null,
    `mesh-reconcile ${args.join(" ")} was still running after ${deadlineMs}ms`,
  );
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** `stamp serve --listen 127.0.0.1:PORT --stamp STAMP ARGS`, once it accepts connections. */
function startServe(stamp: string, args: string[]): Promise<StampServe> {
  return startStampServe(stamp, { args });
}

/** A temporary directory with a stamp in it and the mesh's test PKI. */
async function setUp(): Promise<{ dir: string; stamp: string; pki: TestPki }> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-stamp-tls-" });
  const stamp = `${dir}/stamp`;
  await Deno.writeTextFile(stamp, stampLine(60_000));
  return { dir, stamp, pki: await makeTestPki(dir) };
}

const servers = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "stamp serve over HTTPS with the mesh CA's certificate; watch verifies it and says up",
  ...servers,
  async fn() {
    const { dir, stamp, pki } = await setUp();
    const serve = await startServe(stamp, ["--cert", pki.cert, "--key", pki.key]);
    try {
      const url = `https://127.0.0.1:${serve.port}/`;
      // The CA named by --ca, by $MESH_CA_FILE, and the certificate's other name.
      for (
        const [source, args, env] of [
          [url, ["--ca", pki.caCert], {}],
          [url, [], { MESH_CA_FILE: pki.caCert }],
          [`https://localhost:${serve.port}/stamp`, ["--ca", pki.caCert], {}],
        ] as [string, string[], Record<string, string>][]
      ) {
        const j = await watchJson(source, args, env);
        assertEquals([j.state, j.exitCode, j.ageFrom], ["up", 0, "server"], j.detail);
      }
      // Plain HTTP to an HTTPS server is no answer.
      const plain = await watchJson(`http://127.0.0.1:${serve.port}/`, []);
      assertEquals([plain.state, plain.problem], ["unreachable", "cannot-read"], plain.detail);
    } finally {
      const end = await serve.stop();
      assertEquals(end.code, 0, end.stderr);
      assertStringIncludes(end.stderr, `on https://127.0.0.1:${serve.port}/`);
      assertStringIncludes(end.stderr, `certificate "${pki.cert}"`);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "watch names a certificate from another CA, an expired one and one for another name",
  ...servers,
  async fn() {
    const { dir, stamp, pki } = await setUp();
    const bad = await makeBadCerts(dir, pki);
    const cases: [string, CertFiles, RegExp][] = [
      [
        "another CA",
        bad.otherCa,
        /the server's certificate is not signed by the mesh CA in "[^"]+\/ca\.crt"/,
      ],
      [
        "expired",
        bad.expired,
        /the server's certificate has expired: it was valid until \d{4}-\d\d-\d\dT[\d:.]+Z/,
      ],
      [
        "another name",
        bad.otherName,
        /the server's certificate is not issued for "127\.0\.0\.1" \(it is for elsewhere\.invalid, 192\.0\.2\.1\)/,
      ],
    ];
    try {
      for (const [what, files, words] of cases) {
        const serve = await startServe(stamp, ["--cert", files.cert, "--key", files.key]);
        let ended: { code: number; stderr: string } | undefined;
        try {
          const url = `https://127.0.0.1:${serve.port}/`;
          const state = `${dir}/state-${what.replaceAll(" ", "-")}.json`;
          const j = await watchJson(url, ["--ca", pki.caCert, "--state", state]);
          assertEquals([j.state, j.problem, j.exitCode], ["unreachable", "untrusted", 6], what);
          assertMatch(j.detail, words, what);
          assertStringIncludes(j.detail, `Cannot trust "${url}": `, what);
          const kept = JSON.parse(await Deno.readTextFile(state));
          assertEquals([kept.state, kept.problem], ["unreachable", "untrusted"], what);
          // In words, too.
          const text = await reconcileCli(
            ["watch", url, "--max-age", "1h", "--ca", pki.caCert],
            { MESH_CA_FILE: "" },
          );
          assertEquals(text.code, 6, text.stdout + text.stderr);
          assertMatch(text.stdout, /: unreachable \(untrusted\): Cannot trust /, what);
          ended = await serve.stop();
          // stamp serve says so itself when its certificate is due.
          if (what === "expired") {
            assertMatch(ended.stderr, /is due for renewal: it expired at /, ended.stderr);
          }
        } finally {
          if (ended === undefined) await serve.stop();
        }
      }
      // The right certificate, checked against the other CA: the same refusal, the other way.
      const serve = await startServe(stamp, ["--cert", pki.cert, "--key", pki.key]);
      try {
        const j = await watchJson(`https://127.0.0.1:${serve.port}/`, [], {
          MESH_CA_FILE: bad.other.caCert,
        });
        assertEquals([j.state, j.problem], ["unreachable", "untrusted"]);
        assertStringIncludes(j.detail, `not signed by the mesh CA in "${bad.other.caCert}"`);
      } finally {
        await serve.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "plain HTTP off loopback is refused by stamp serve and watch (exit 2) unless allowed",
  ...servers,
  async fn() {
    const { dir, stamp } = await setUp();
    try {
      const port = freePort();
      for (const listen of [`0.0.0.0:${port}`, `[::]:${port}`, `192.0.2.1:${port}`]) {
        const r = await refusal(["stamp", "serve", "--listen", listen, "--stamp", stamp]);
        assertEquals(r.code, 2, r.stderr);
        assertStringIncludes(r.stderr, `Cannot listen on "${listen}" over plain HTTP:`);
        assertStringIncludes(r.stderr, "--cert and --key");
      }
      for (
        const url of [
          "http://192.0.2.1:9470/",
          "http://stamp.example.org/",
          "http://[2001:db8::1]/",
        ]
      ) {
        const r = await refusal(["watch", url, "--max-age", "1h"]);
        assertEquals(r.code, 2, r.stdout + r.stderr);
        assertStringIncludes(r.stderr, "over plain HTTP:");
        assertStringIncludes(r.stderr, "is not a loopback address");
        // Allowed: it is looked at (and here, nothing answers in time).
        const allowed = await watchJson(url, ["--allow-plain-http", "--timeout", "1s"]);
        assertEquals([allowed.state, allowed.problem], ["unreachable", "cannot-read"]);
        // The mesh's one switch for clear text (docs/design.md, the wire) says the same.
        const env = await watchJson(url, ["--timeout", "1s"], { MESH_ALLOW_PLAIN: "1" });
        assertEquals([env.state, env.problem], ["unreachable", "cannot-read"]);
      }
      // Allowed, stamp serve listens on every address in plain HTTP.
      const allowed: [string[], Record<string, string>][] = [
        [["--allow-plain-http"], {}],
        [[], { MESH_ALLOW_PLAIN: "1" }],
      ];
      for (const [args, env] of allowed) {
        const serve = await startStampServe(stamp, { listen: `0.0.0.0:${port}`, args, env });
        try {
          const j = await watchJson(`http://127.0.0.1:${port}/`, []);
          assertEquals(j.state, "up", j.detail);
        } finally {
          await serve.stop();
        }
      }
      // Loopback stays plain HTTP without asking, as before.
      const local = await startServe(stamp, []);
      try {
        const j = await watchJson(`http://localhost:${local.port}/`, []);
        assertEquals(j.state, "up", j.detail);
      } finally {
        await local.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a bad key, certificate or CA file is refused with exit 2 naming its path, nothing served", async () => {
  const { dir, stamp, pki } = await setUp();
  try {
    const open = `${dir}/open.key`;
    await Deno.writeTextFile(open, await Deno.readTextFile(pki.key));
    await Deno.chmod(open, 0o644);
    const notKey = `${dir}/not.key`;
    await Deno.writeTextFile(notKey, await Deno.readTextFile(pki.cert), { mode: 0o600 });
    await Deno.chmod(notKey, 0o600);
    const notCert = `${dir}/not.crt`;
    await Deno.writeTextFile(notCert, "hello\n");
    const missing = `${dir}/missing.pem`;
    const other = await makeTestPki(dir, { stem: "other-" });
    // A CA file anyone may write (who then chooses what watch trusts), and one holding a key.
    const openCa = `${dir}/open-ca.crt`;
    await Deno.copyFile(pki.caCert, openCa);
    await Deno.chmod(openCa, 0o666);
    const withKey = `${dir}/with-key.crt`;
    await Deno.writeTextFile(
      withKey,
      (await Deno.readTextFile(pki.caCert)) + (await Deno.readTextFile(pki.caKey)),
      { mode: 0o644 },
    );
    const serve = (cert: string, key: string) =>
      ["stamp", "serve", "--listen", `127.0.0.1:${freePort()}`, "--stamp", stamp]
        .concat(["--cert", cert, "--key", key]);
    const cases: [string[], string][] = [
      [serve(pki.cert, open), `"${open}"`],
      [serve(pki.cert, notKey), `"${notKey}"`],
      [serve(pki.cert, missing), `"${missing}"`],
      [serve(notCert, pki.key), `"${notCert}"`],
      [serve(missing, pki.key), `"${missing}"`],
      [serve(pki.cert, dir), `"${dir}"`],
      // A key that is not the certificate's: Deno's TLS refuses the pair when it starts.
      [serve(pki.cert, other.key), `key "${other.key}"`],
      [
        ["stamp", "serve", "--listen", "127.0.0.1:0", "--stamp", stamp, "--cert", pki.cert],
        "--key",
      ],
      [["stamp", "serve", "--listen", "127.0.0.1:0", "--stamp", stamp, "--key", pki.key], "--cert"],
      [
        ["watch", "https://127.0.0.1:1/", "--max-age", "1h", "--ca", notCert],
        `"${notCert}"`,
      ],
      [["watch", "https://127.0.0.1:1/", "--max-age", "1h", "--ca", missing], `"${missing}"`],
      [
        ["watch", "https://127.0.0.1:1/", "--max-age", "1h", "--ca", openCa],
        `"${openCa}": its mode is 0666; it is writable by anyone`,
      ],
      [
        ["watch", "https://127.0.0.1:1/", "--max-age", "1h", "--ca", withKey],
        `"${withKey}": it holds a private key`,
      ],
      // A server's certificate is not a CA.
      [["watch", "https://127.0.0.1:1/", "--max-age", "1h", "--ca", pki.cert], "not a CA"],
      [["watch", "http://127.0.0.1:1/", "--max-age", "1h", "--ca", pki.caCert], "--ca"],
      [["watch", stamp, "--max-age", "1h", "--ca", pki.caCert], "--ca"],
    ];
    for (const [args, words] of cases) {
      const r = await refusal(args);
      assertEquals(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assertStringIncludes(r.stderr, words, args.join(" "));
      assertEquals(r.stdout, "", args.join(" "));
    }
    // The key's mode is said.
    const r = await refusal(serve(pki.cert, open));
    assertStringIncludes(r.stderr, "0644");
    // $MESH_CA_FILE naming nothing is refused too, not taken for "no CA".
    const env = await refusal(["watch", "https://127.0.0.1:1/", "--max-age", "1h"], {
      MESH_CA_FILE: missing,
    });
    assertEquals(env.code, 2, env.stdout + env.stderr);
    assertStringIncludes(env.stderr, `"${missing}"`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
