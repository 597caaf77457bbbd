import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../support/assert.ts";
import {
  createCa,
  describeCert,
  issueServerCert,
  readCaCert,
  readCertificate,
  readSecretKey,
  renewalDue,
  renewalReason,
  TrustFileError,
} from "../../lib/mesh_ca.ts";
import { TrustFileError as LeanTrustFileError } from "../../lib/trust_file.ts";
import { makeBadCerts, makeTestPki } from "../support/tls.ts";

const DAY = 24 * 3600 * 1000;

async function openssl(args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder();
  return { code: r.code, out: text.decode(r.stdout) + text.decode(r.stderr) };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-ca-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Serves TLS on 127.0.0.1 with `cert`/`key` and connects to it as `hostname`, trusting only
 * `caCert`: the client's error message, or `undefined` when the handshake succeeded and a byte
 * came through.
 */
async function handshake(
  files: { cert: string; key: string },
  caCert: string,
  hostname: string,
): Promise<string | undefined> {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(files.cert),
    key: await Deno.readTextFile(files.key),
  });
  const served = (async () => {
    try {
      const conn = await listener.accept();
      try {
        await conn.handshake();
        await conn.write(new Uint8Array([42]));
      } catch {
        /* the client refused */
      } finally {
        conn.close();
      }
    } catch { /* closed */ }
  })();
  try {
    const conn = await Deno.connectTls({
      hostname,
      port: listener.addr.port,
      caCerts: [await Deno.readTextFile(caCert)],
    });
    try {
      await conn.handshake();
      const buf = new Uint8Array(1);
      assertEquals(await conn.read(buf), 1);
      assertEquals(buf[0], 42);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      conn.close();
    }
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    listener.close();
    await served;
  }
}

Deno.test("a CA is ECDSA P-256, self-signed, CA:true pathlen 0, keyCertSign and cRLSign, ten years", async () => {
  const now = new Date("2026-01-01T00:00:00Z");
  const ca = await createCa({ name: "mesh CA test", now });
  const d = describeCert(ca.certPem);
  assertEquals(d.subject, "CN=mesh CA test");
  assertEquals(d.isCa, true);
  assertEquals(d.names, []);
  assertEquals(d.notAfter.toISOString(), new Date(now.getTime() + 3650 * DAY).toISOString());
  assertStringIncludes(ca.keyPem, "-----BEGIN PRIVATE KEY-----");
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/ca.crt`, ca.certPem);
    const text = (await openssl(["x509", "-in", `${dir}/ca.crt`, "-noout", "-text"])).out;
    assertMatch(text, /Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    assertMatch(text, /Key Usage: critical\s+Certificate Sign, CRL Sign/);
    assertMatch(text, /NIST CURVE: P-256/);
    assertMatch(text, /Signature Algorithm: ecdsa-with-SHA256/);
    const fp =
      (await openssl(["x509", "-in", `${dir}/ca.crt`, "-noout", "-fingerprint", "-sha256"]))
        .out;
    assertEquals(fp.trim().split("=")[1]!.replaceAll(":", "").toLowerCase(), d.fingerprint);
  });
  // Two CAs made without a name are named apart.
  const [a, b] = await Promise.all([createCa(), createCa()]);
  assert(describeCert(a.certPem).subject !== describeCert(b.certPem).subject);
});

Deno.test("a server certificate carries its DNS names and IPv4/IPv6 addresses as SANs, serverAuth, CA:false, 397 days, a random 16-byte serial", async () => {
  const ca = await createCa();
  const now = new Date();
  const names = ["broker.example", "127.0.0.1", "fd00::1", "localhost"];
  const one = await issueServerCert(ca, { names, now });
  const two = await issueServerCert(ca, { names, now });
  const d = describeCert(one.certPem);
  assertEquals(d.subject, "CN=broker.example");
  assertEquals(d.names, ["broker.example", "localhost", "127.0.0.1", "fd00::1"]);
  assertEquals(d.isCa, false);
  assertEquals(d.notAfter.getTime(), Math.floor((now.getTime() + 397 * DAY) / 1000) * 1000);
  assertEquals(d.serial.length, 32);
  assert(d.serial !== describeCert(two.certPem).serial, "serials are random");
  assert(one.keyPem !== two.keyPem, "each certificate has its own key");
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/ca.crt`, ca.certPem);
    await Deno.writeTextFile(`${dir}/server.crt`, one.certPem);
    const verified = await openssl([
      "verify",
      "-CAfile",
      `${dir}/ca.crt`,
      "-purpose",
      "sslserver",
      "-verify_hostname",
      "broker.example",
      `${dir}/server.crt`,
    ]);
    assertEquals(verified.code, 0, verified.out);
    assertStringIncludes(verified.out, "OK");
    const ip = await openssl([
      "verify",
      "-CAfile",
      `${dir}/ca.crt`,
      "-verify_ip",
      "fd00:0:0:0:0:0:0:1",
      `${dir}/server.crt`,
    ]);
    assertEquals(ip.code, 0, ip.out);
    const wrong = await openssl([
      "verify",
      "-CAfile",
      `${dir}/ca.crt`,
      "-verify_hostname",
      "other.example",
      `${dir}/server.crt`,
    ]);
    assert(wrong.code !== 0, "openssl refuses another name");
    const text = (await openssl(["x509", "-in", `${dir}/server.crt`, "-noout", "-text"])).out;
    assertMatch(text, /Basic Constraints: critical\s+CA:FALSE/);
    assertMatch(text, /Extended Key Usage:\s+TLS Web Server Authentication/);
    // A second CA does not verify it.
    await Deno.writeTextFile(`${dir}/other.crt`, (await createCa()).certPem);
    const other = await openssl(["verify", "-CAfile", `${dir}/other.crt`, `${dir}/server.crt`]);
    assert(other.code !== 0, "openssl refuses it against another CA");
  });
});

Deno.test("a server certificate never outlives its CA, and bad names, days or CA are refused", async () => {
  const now = new Date();
  const ca = await createCa({ days: 10, now });
  const d = describeCert((await issueServerCert(ca, { names: ["a.example"], now })).certPem);
  assertEquals(d.notAfter.getTime(), describeCert(ca.certPem).notAfter.getTime());
  for (const bad of ["a b", "", "-x.example", "x..example", "1.2.3.256.", "a/b"]) {
    const e = await assertRejects(() => issueServerCert(ca, { names: [bad] }), Error);
    assertStringIncludes(e.message, "is neither a DNS name nor an IP address");
  }
  await assertRejects(() => issueServerCert(ca, { names: [] }), Error);
  await assertRejects(() => issueServerCert(ca, { names: ["a.example"], days: 0 }), RangeError);
  const other = await createCa();
  const mixed = await assertRejects(
    () => issueServerCert({ certPem: ca.certPem, keyPem: other.keyPem }, { names: ["a.example"] }),
    Error,
  );
  assertStringIncludes(mixed.message, "the CA key is not the CA certificate's key");
  const leaf = await issueServerCert(ca, { names: ["a.example"] });
  const notCa = await assertRejects(
    () => issueServerCert(leaf, { names: ["b.example"] }),
    Error,
  );
  assertStringIncludes(notCa.message, "is not a CA");
});

Deno.test("renewal is due with fewer than 30 days left, or when the names differ (DNS by case, addresses by value)", async () => {
  const ca = await createCa();
  const now = new Date();
  const cert = (await issueServerCert(ca, {
    names: ["Broker.Example", "127.0.0.1", "::1"],
    days: 60,
    now,
  })).certPem;
  assertEquals(renewalDue(cert, { now }), false);
  assertEquals(
    renewalDue(cert, { now, names: ["0:0:0:0:0:0:0:1", "broker.example", "127.0.0.1"] }),
    false,
  );
  assertEquals(renewalDue(cert, { now: new Date(now.getTime() + 29 * DAY) }), false);
  assertStringIncludes(
    renewalReason(cert, { now: new Date(now.getTime() + 31 * DAY) })!,
    "days left, fewer than 30",
  );
  assertEquals(renewalDue(cert, { now: new Date(now.getTime() + 20 * DAY), beforeDays: 45 }), true);
  assertStringIncludes(
    renewalReason(cert, { now: new Date(now.getTime() + 61 * DAY) })!,
    "it expired at",
  );
  assertEquals(
    renewalReason(cert, { now, names: ["broker.example", "127.0.0.1"] }),
    "its names are broker.example, 127.0.0.1, ::1; wanted broker.example, 127.0.0.1",
  );
  assertEquals(
    renewalDue(cert, { now, names: ["broker.example", "127.0.0.1", "::1", "x.example"] }),
    true,
  );
});

Deno.test("a TLS client trusting only the CA accepts its server certificate by name and by address, and refuses one expired, from another CA or for another name", async () => {
  await withDir(async (dir) => {
    const pki = await makeTestPki(dir);
    assertEquals(await handshake(pki, pki.caCert, "127.0.0.1"), undefined);
    assertEquals(await handshake(pki, pki.caCert, "localhost"), undefined);
    const bad = await makeBadCerts(dir, pki);
    const expired = await handshake(bad.expired, pki.caCert, "127.0.0.1");
    assertMatch(expired ?? "accepted", /expired/i);
    const otherCa = await handshake(bad.otherCa, pki.caCert, "127.0.0.1");
    assertMatch(otherCa ?? "accepted", /UnknownIssuer|unknown issuer/i);
    const otherName = await handshake(bad.otherName, pki.caCert, "127.0.0.1");
    assertMatch(otherName ?? "accepted", /NotValidForName|not valid for/i);
    // The other CA accepts its own.
    assertEquals(await handshake(bad.otherCa, bad.other.caCert, "localhost"), undefined);
    assertEquals((await Deno.stat(pki.key)).mode! & 0o777, 0o600);
    assertEquals((await Deno.stat(pki.caKey)).mode! & 0o777, 0o600);
  });
});

Deno.test("readSecretKey refuses a key open to group or others, missing, not a regular file, or not PKCS#8, naming the path", async () => {
  await withDir(async (dir) => {
    const pki = await makeTestPki(dir);
    assertStringIncludes(await readSecretKey(pki.caKey), "BEGIN PRIVATE KEY");
    await Deno.chmod(pki.caKey, 0o400);
    assertStringIncludes(await readSecretKey(pki.caKey), "BEGIN PRIVATE KEY");
    for (const mode of [0o640, 0o604, 0o644, 0o610]) {
      await Deno.chmod(pki.caKey, mode);
      const e = await assertRejects(() => readSecretKey(pki.caKey), TrustFileError);
      assertEquals(
        e.message,
        `Cannot use key "${pki.caKey}": its mode is ${
          mode.toString(8).padStart(4, "0")
        }; a key must be readable by its owner only (0600)`,
      );
      assert(e instanceof LeanTrustFileError, "one class, from either module");
    }
    const missing = await assertRejects(() => readSecretKey(`${dir}/none.key`), TrustFileError);
    assertEquals(missing.message, `Cannot read key "${dir}/none.key": it does not exist`);
    await Deno.mkdir(`${dir}/d.key`, { mode: 0o700 });
    const directory = await assertRejects(() => readSecretKey(`${dir}/d.key`), TrustFileError);
    assertStringIncludes(
      directory.message,
      `"${dir}/d.key": it is a directory, not a regular file`,
    );
    const writeKey = async (name: string, text: string) => {
      await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o600 });
      return `${dir}/${name}`;
    };
    const cert = await writeKey("cert.key", await Deno.readTextFile(pki.cert));
    assertStringIncludes(
      (await assertRejects(() => readSecretKey(cert), TrustFileError)).message,
      `Cannot use key "${cert}": it holds no PKCS#8 private key`,
    );
    const sec1 = await writeKey(
      "sec1.key",
      "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIA==\n-----END EC PRIVATE KEY-----\n",
    );
    assertStringIncludes(
      (await assertRejects(() => readSecretKey(sec1), TrustFileError)).message,
      `it holds a "EC PRIVATE KEY", which is not PKCS#8 unencrypted`,
    );
    const garbage = await writeKey(
      "garbage.key",
      "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n",
    );
    assertStringIncludes(
      (await assertRejects(() => readSecretKey(garbage), TrustFileError)).message,
      `Cannot use key "${garbage}": its "PRIVATE KEY" block is not a PKCS#8`,
    );
    // An Ed25519 key (control's signing key) is a key too.
    const ed = await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
      "sign",
      "verify",
    ]) as CryptoKeyPair;
    const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", ed.privateKey));
    const ed25519 = await writeKey(
      "signing.key",
      `-----BEGIN PRIVATE KEY-----\n${
        btoa(String.fromCharCode(...der))
      }\n-----END PRIVATE KEY-----\n`,
    );
    assertStringIncludes(await readSecretKey(ed25519), "BEGIN PRIVATE KEY");
  });
});

Deno.test("readCaCert reads a CA certificate and refuses a missing file, a server certificate or no certificate, naming the path", async () => {
  await withDir(async (dir) => {
    const pki = await makeTestPki(dir);
    assertEquals(await readCaCert(pki.caCert), await Deno.readTextFile(pki.caCert));
    const leaf = await assertRejects(() => readCaCert(pki.cert), TrustFileError);
    assertStringIncludes(leaf.message, `Cannot use CA certificate "${pki.cert}": "CN=localhost"`);
    assertStringIncludes(leaf.message, "is not a CA certificate");
    const key = await assertRejects(() => readCaCert(pki.caKey), TrustFileError);
    assertEquals(
      key.message,
      `Cannot use CA certificate "${pki.caKey}": it holds no PEM CERTIFICATE block`,
    );
    const missing = await assertRejects(() => readCaCert(`${dir}/none.crt`), TrustFileError);
    assertEquals(
      missing.message,
      `Cannot read CA certificate "${dir}/none.crt": it does not exist`,
    );
    await Deno.writeTextFile(
      `${dir}/broken.crt`,
      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    const broken = await assertRejects(() => readCertificate(`${dir}/broken.crt`), TrustFileError);
    assertStringIncludes(
      broken.message,
      `Cannot use certificate "${dir}/broken.crt": its certificate 1 cannot be read`,
    );
    await Deno.writeTextFile(`${dir}/big.crt`, "x".repeat(70_000));
    const big = await assertRejects(() => readCaCert(`${dir}/big.crt`), TrustFileError);
    assertStringIncludes(
      big.message,
      `Cannot read CA certificate "${dir}/big.crt": it is larger than`,
    );
  });
});
