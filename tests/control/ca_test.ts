import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../support/assert.ts";
import { cli } from "../support/mod.ts";
import { caFiles, ensureServerCert, initCa, showCa } from "../../control/ca_files.ts";
import { describeCert, TrustFileError } from "../../lib/mesh_ca.ts";
import { readGroups } from "../../lib/accounts.ts";
import { issueTestCert, makeTestPki } from "../support/tls.ts";

const DAY = 24 * 3600 * 1000;
const mode = async (path: string) => ((await Deno.stat(path)).mode ?? 0) & 0o777;

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-ca-cmd-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Whether a TLS client trusting only `caCert` accepts `cert`/`key` served as `hostname`. */
async function accepts(
  files: { cert: string; key: string },
  caCert: string,
  hostname: string,
): Promise<boolean> {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(files.cert),
    key: await Deno.readTextFile(files.key),
  });
  const served = listener.accept().then(async (c) => {
    await c.handshake().catch(() => {});
    c.close();
  }, () => {});
  try {
    const conn = await Deno.connectTls({
      hostname,
      port: listener.addr.port,
      caCerts: [await Deno.readTextFile(caCert)],
    });
    try {
      await conn.handshake();
      return true;
    } catch {
      return false;
    } finally {
      conn.close();
    }
  } finally {
    listener.close();
    await served;
  }
}

Deno.test("ca init makes the CA once (key 0600 in secrets/ 0700, certificate 0644), then leaves it and says so", async () => {
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    const first = await cli("control/main.ts", ["ca", "init", "--dir", mesh]);
    assertEquals(first.code, 0, first.stderr);
    assertStringIncludes(first.stdout, "made the mesh's CA: CN=mesh CA ");
    assertEquals(await mode(`${mesh}/secrets`), 0o700);
    assertEquals(await mode(`${mesh}/secrets/ca.key`), 0o600);
    assertEquals(await mode(`${mesh}/ca.crt`), 0o644);
    const fingerprint = describeCert(await Deno.readTextFile(`${mesh}/ca.crt`)).fingerprint;
    assertStringIncludes(first.stdout, fingerprint);
    const again = await cli("control/main.ts", ["ca", "init", "--dir", mesh]);
    assertEquals(again.code, 0, again.stderr);
    assertStringIncludes(again.stdout, "the mesh's CA is already made, left as it is");
    assertEquals(describeCert(await Deno.readTextFile(`${mesh}/ca.crt`)).fingerprint, fingerprint);
    assertEquals([...Deno.readDirSync(`${mesh}/secrets`)].map((e) => e.name), ["ca.key"]);
  });
});

Deno.test("ca init refuses a half-made CA naming both files, and a CA or key that is wrong (exit 2 naming the path)", async () => {
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    await initCa(mesh);
    const { cert, key } = caFiles(mesh);
    const certPem = await Deno.readTextFile(cert);
    await Deno.remove(cert);
    const half = await cli("control/main.ts", ["ca", "init", "--dir", mesh]);
    assertEquals(half.code, 2);
    assertStringIncludes(half.stderr, `"${key}" is there but "${cert}" is not (half made)`);
    assert(!(await Deno.stat(cert).then(() => true, () => false)), "nothing made");
    await Deno.writeTextFile(cert, certPem);
    const keyPem = await Deno.readTextFile(key);
    await Deno.remove(key);
    const other = await cli("control/main.ts", ["ca", "init", "--dir", mesh]);
    assertEquals(other.code, 2);
    assertStringIncludes(other.stderr, `"${cert}" is there but "${key}" is not (half made)`);
    assertEquals(await Deno.readTextFile(cert), certPem, "the certificate is left");
    await Deno.writeTextFile(key, keyPem, { mode: 0o600 });
    await Deno.chmod(key, 0o640);
    const open = await cli("control/main.ts", ["ca", "init", "--dir", mesh]);
    assertEquals(open.code, 2);
    assertStringIncludes(
      open.stderr,
      `mesh-control: Cannot use key "${key}": its mode is 0640; a key must be readable by its owner only (0600)`,
    );
    await Deno.chmod(key, 0o600);
    await Deno.writeTextFile(cert, "not a certificate\n");
    const junk = await cli("control/main.ts", [
      "ca",
      "issue",
      "broker",
      "--dir",
      mesh,
      "--name",
      "x.example",
    ]);
    assertEquals(junk.code, 2);
    assertStringIncludes(
      junk.stderr,
      `Cannot use CA certificate "${cert}": it holds no PEM CERTIFICATE block`,
    );
  });
});

Deno.test("ca issue writes a certificate (0644) and key (0600) a TLS client trusting the CA accepts by its names; renew keeps it until due and says why it renews", async () => {
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    const none = await cli("control/main.ts", [
      "ca",
      "renew",
      "broker",
      "--dir",
      mesh,
      "--name",
      "localhost",
    ]);
    assertEquals(none.code, 2);
    assertStringIncludes(none.stderr, "make it with mesh-control ca init");
    await initCa(mesh);
    const names = ["localhost", "127.0.0.1"];
    const issued = await cli("control/main.ts", [
      "ca",
      "issue",
      "broker",
      "--dir",
      mesh,
      "--name",
      "localhost",
      "--name",
      "127.0.0.1",
    ]);
    assertEquals(issued.code, 0, issued.stderr);
    assertStringIncludes(
      issued.stdout,
      `broker: issued (there is no certificate at "${mesh}/tls/broker.crt")`,
    );
    const files = { cert: `${mesh}/tls/broker.crt`, key: `${mesh}/secrets/tls/broker.key` };
    assertEquals(await mode(files.cert), 0o644);
    assertEquals(await mode(files.key), 0o600);
    assertEquals(await mode(`${mesh}/secrets/tls`), 0o700);
    assert(await accepts(files, `${mesh}/ca.crt`, "localhost"));
    assert(await accepts(files, `${mesh}/ca.crt`, "127.0.0.1"));
    const fp = () => Deno.readTextFile(files.cert).then((p) => describeCert(p).fingerprint);
    const first = await fp();

    const kept = await cli("control/main.ts", [
      "ca",
      "renew",
      "broker",
      "--dir",
      mesh,
      "--name",
      "127.0.0.1,localhost",
    ]);
    assertEquals(kept.code, 0, kept.stderr);
    assertStringIncludes(kept.stdout, "broker: kept, not due");
    assertEquals(await fp(), first);

    const check = await cli("control/main.ts", [
      "ca",
      "renew",
      "broker",
      "--dir",
      mesh,
      "--name",
      "localhost",
      "--check",
    ]);
    assertEquals(check.code, 1, check.stderr);
    assertStringIncludes(
      check.stdout,
      "broker: due (its names are localhost, 127.0.0.1; wanted localhost); nothing written (--check)",
    );
    assertEquals(await fp(), first);

    const later = new Date(Date.now() + 370 * DAY);
    const soon = await ensureServerCert(mesh, "broker", { names, now: later });
    assertEquals(soon.outcome, "renewed");
    assertMatch(soon.reason!, /^it expires at .* \(2\d days left, fewer than 30\)$/);
    const second = await fp();
    assert(second !== first);
    assertEquals((await ensureServerCert(mesh, "broker", { names, now: later })).outcome, "kept");

    const renamed = await cli("control/main.ts", [
      "ca",
      "renew",
      "broker",
      "--dir",
      mesh,
      "--name",
      "localhost",
      "--name",
      "broker.example",
    ]);
    assertEquals(renamed.code, 0, renamed.stderr);
    assertStringIncludes(
      renamed.stdout,
      "broker: renewed (its names are localhost, 127.0.0.1; wanted localhost, broker.example)",
    );
    assertEquals(describeCert(await Deno.readTextFile(files.cert)).names, [
      "localhost",
      "broker.example",
    ]);

    const forced = await cli("control/main.ts", [
      "ca",
      "issue",
      "broker",
      "--dir",
      mesh,
      "--name",
      "localhost,broker.example",
    ]);
    assertEquals(forced.code, 0, forced.stderr);
    assertStringIncludes(forced.stdout, "broker: issued:");
  });
});

Deno.test("renew replaces a certificate from another CA, one whose key is not its own or missing, and a key opened since", async () => {
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    await initCa(mesh);
    const names = ["localhost"];
    await ensureServerCert(mesh, "store", { names });
    const files = { cert: `${mesh}/tls/store.crt`, key: `${mesh}/secrets/tls/store.key` };
    const other = await makeTestPki(dir, { names });
    await Deno.copyFile(other.cert, files.cert);
    await Deno.copyFile(other.key, files.key);
    const foreign = await ensureServerCert(mesh, "store", { names });
    assertEquals(foreign.outcome, "renewed");
    assertMatch(foreign.reason!, /^it was issued by "CN=test CA .*", not the mesh's CA$/);
    assert(await accepts(files, `${mesh}/ca.crt`, "localhost"));

    const stray = await issueTestCert(dir, "stray", other.ca, { names });
    await Deno.copyFile(stray.key, files.key);
    const mismatch = await ensureServerCert(mesh, "store", { names });
    assertEquals(mismatch.reason, `"${files.key}" is not its certificate's key`);

    await Deno.remove(files.key);
    assertEquals(
      (await ensureServerCert(mesh, "store", { names })).reason,
      `its key "${files.key}" is missing`,
    );
    await Deno.chmod(files.key, 0o644);
    assertEquals(
      (await ensureServerCert(mesh, "store", { names })).reason,
      "its key's mode is 0644 (group 0); wanted 0600",
    );
    assertEquals(await mode(files.key), 0o600);
    assertEquals((await ensureServerCert(mesh, "store", { names })).outcome, "kept");
  });
});

Deno.test("--key-group writes the key 0640 root:GROUP beside its certificate (outside secrets/), as PostgreSQL accepts", async () => {
  const groups = await readGroups();
  const group = ["postgres", "rabbitmq", "daemon"].find((g) => groups.has(g))!;
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    await initCa(mesh);
    const r = await cli("control/main.ts", [
      "ca",
      "renew",
      "store",
      "--dir",
      mesh,
      "--name",
      "127.0.0.1",
      "--key-group",
      group,
    ]);
    assertEquals(r.code, 0, r.stderr);
    const key = `${mesh}/tls/store.key`;
    assertEquals(await mode(key), 0o640);
    assertEquals((await Deno.stat(key)).gid, groups.get(group));
    assertEquals((await Deno.stat(key)).uid, 0);
    assert(await accepts({ cert: `${mesh}/tls/store.crt`, key }, `${mesh}/ca.crt`, "127.0.0.1"));
    // Without the group, the key is judged wrong (its group and mode) and made root's again.
    const back = await ensureServerCert(mesh, "store", { names: ["127.0.0.1"], key });
    assertEquals(back.outcome, "renewed");
    assertEquals(await mode(key), 0o600);
    const unknown = await cli("control/main.ts", [
      "ca",
      "renew",
      "store",
      "--dir",
      mesh,
      "--name",
      "x.example",
      "--key-group",
      "no-such-group-x",
    ]);
    assertEquals(unknown.code, 2);
    assertStringIncludes(unknown.stderr, `Cannot give the key to group "no-such-group-x"`);
  });
});

Deno.test("ca show lists the CA and its certificates with fingerprint, expiry and which are due; bad names and certificate names are refused (exit 2)", async () => {
  await withDir(async (dir) => {
    const mesh = `${dir}/mesh`;
    const made = await initCa(mesh);
    await ensureServerCert(mesh, "broker", { names: ["localhost"] });
    await ensureServerCert(mesh, "stamp", {
      names: ["127.0.0.1"],
      now: new Date(Date.now() - 380 * DAY),
    });
    const shown = await showCa(mesh);
    assertEquals(shown.certs.map((c) => [c.name, c.fromCa, c.due !== undefined]), [
      ["broker", true, false],
      ["stamp", true, true],
    ]);
    const r = await cli("control/main.ts", ["ca", "show", "--dir", mesh]);
    assertEquals(r.code, 0, r.stderr);
    assertStringIncludes(
      r.stdout,
      `CA ${mesh}/ca.crt: ${made.ca.subject}, sha256 ${made.ca.fingerprint}`,
    );
    assertStringIncludes(r.stdout, `broker ${mesh}/tls/broker.crt: CN=localhost, sha256 `);
    assertMatch(r.stdout, /stamp .*; names 127\.0\.0\.1; due: it expires at .*fewer than 30\)/);
    for (
      const [args, said] of [
        [
          ["ca", "issue", "Broker!", "--name", "x.example"],
          'Cannot issue a certificate named "Broker!"',
        ],
        [
          ["ca", "issue", "broker", "--name", "a b"],
          '"a b" is neither a DNS name nor an IP address',
        ],
        [["ca", "issue", "broker", "--name", "300.1.1.1"], '"300.1.1.1" is neither'],
      ] as const
    ) {
      const bad = await cli("control/main.ts", [...args, "--dir", mesh]);
      assertEquals(bad.code, 2, bad.stderr);
      assertStringIncludes(bad.stderr, said);
    }
    await assertRejects(() => showCa(`${dir}/none`), TrustFileError);
  });
});
