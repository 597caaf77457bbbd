/**
 * The registry's TLS ports (`tls`: a port that speaks TLS from its first byte, such as the
 * broker's AMQPS 5671) checked as the proxy's addresses are, against real TLS listeners serving
 * certificates of the mesh's own CA (lib/mesh_ca.ts): the CA named in `roots` makes a good one
 * clean; expired, from another CA, for another name, and not answering are each a `certificate`
 * finding saying which.
 */
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { makeBadCerts, makeTestPki } from "../support/tls.ts";
import { describeCert, issueServerCert } from "../../lib/mesh_ca.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { reconcile } from "../../reconcile/run.ts";
import { NO_PROXY } from "../../reconcile/options.ts";
import { tlsTarget } from "../../reconcile/observe/tls_port.ts";
import { freePort } from "../support/mod.ts";
import { run } from "../../lib/command.ts";
import { ensureServerCert, initCa } from "../../control/ca_files.ts";

/** A TLS listener on 127.0.0.1 serving `files`, shaking hands with whoever connects. */
async function serveTls(files: { cert: string; key: string }) {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(files.cert),
    key: await Deno.readTextFile(files.key),
  });
  const serving = (async () => {
    for await (const conn of listener) {
      conn.handshake().catch(() => {}).finally(() => setTimeout(() => conn.close(), 50));
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    close: async () => {
      listener.close();
      await serving;
    },
  };
}

const certificateFindings = (result: Awaited<ReturnType<typeof reconcile>>) =>
  result.findings.filter((f) => f.check === "certificate");

Deno.test("a TLS port's certificate from the mesh CA named in roots is clean; expired, another CA's, another name's and a port not answering are findings naming which", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-tls-port-" });
  const servers: { port: number; close: () => Promise<void> }[] = [];
  try {
    const pki = await makeTestPki(dir);
    const bad = await makeBadCerts(dir, pki);
    const soon = await issueServerCert(pki.ca, { names: ["localhost", "127.0.0.1"], days: 3 });
    await Deno.writeTextFile(`${dir}/soon.crt`, soon.certPem);
    await Deno.writeTextFile(`${dir}/soon.key`, soon.keyPem);
    const [good, expired, otherCa, otherName, expiring] = await Promise.all([
      serveTls(pki),
      serveTls(bad.expired),
      serveTls(bad.otherCa),
      serveTls(bad.otherName),
      serveTls({ cert: `${dir}/soon.crt`, key: `${dir}/soon.key` }),
    ]);
    servers.push(good, expired, otherCa, otherName, expiring);
    const silent = freePort();
    const entry = (name: string, port: number) => `
  ${name}:
    kind: daemon
    user: root
    port: ${port}
    tls:
      port: ${port}
      name: [localhost, 127.0.0.1]`;
    const registry = (roots: boolean) =>
      parseRegistry(`version: 1
accounts: [root]
${roots ? `roots: [${pki.caCert}]\n` : ""}services:${entry("good", good.port)}${
        entry("expired", expired.port)
      }${entry("other-ca", otherCa.port)}${entry("other-name", otherName.port)}${
        entry("expiring", expiring.port)
      }${entry("silent", silent)}
`);
    const result = await reconcile(registry(true), {
      registryPath: "r.yaml",
      caddyAdmin: NO_PROXY,
      bootView: "none",
      runtimes: [],
    });
    const found = certificateFindings(result);
    const about = (service: string) =>
      found.filter((f) => f.service === service).map((f) => `${f.subject}: ${f.detail}`);
    assertEquals(about("good"), [], JSON.stringify(found, null, 2));
    const p = (s: { port: number }) => `localhost:${s.port}`;
    const e = about("expired");
    assertEquals(e.length, 1, JSON.stringify(e));
    assertMatch(
      e[0]!,
      new RegExp(`^${p(expired)}: the certificate on port ${expired.port} expired at `),
    );
    const o = about("other-ca");
    assertEquals(o.length, 1, JSON.stringify(o));
    assertStringIncludes(
      o[0]!,
      `${
        p(otherCa)
      }: the certificate chain on port ${otherCa.port} is incomplete: nothing served or trusted issued leaf "CN=localhost" (position 1 in the path, served 1st); its issuer "CN=test CA other-`,
    );
    assertEquals(about("other-name"), [
      `${
        p(otherName)
      }: the certificate presented on port ${otherName.port} does not cover localhost (it names DNS:elsewhere.invalid, IP:192.0.2.1)`,
      `${
        p(otherName)
      }: the certificate presented on port ${otherName.port} does not cover 127.0.0.1 (it names DNS:elsewhere.invalid, IP:192.0.2.1)`,
    ]);
    const x = about("expiring");
    assertEquals(x.length, 1, JSON.stringify(x));
    assertMatch(x[0]!, /the certificate on port \d+ expires in .*within the 14d warning/);
    const s = about("silent");
    assertEquals(s.length, 1, JSON.stringify(s));
    assertStringIncludes(
      s[0]!,
      `localhost:${silent}: TLS port ${silent} (localhost, 127.0.0.1) does not answer at 127.0.0.1:${silent}: `,
    );
    assert(result.exitCode !== 0);

    // Without the CA in roots, the good one is refused the same way.
    const untrusted = await reconcile(registry(false), {
      registryPath: "r.yaml",
      caddyAdmin: NO_PROXY,
      bootView: "none",
      runtimes: [],
    });
    const g = certificateFindings(untrusted).filter((f) => f.service === "good");
    assertEquals(g.length, 1, JSON.stringify(g));
    assertStringIncludes(
      g[0]!.detail,
      `its issuer "${
        describeCert(pki.ca.certPem).subject
      }" is an intermediate the server does not send, or a root nothing here trusts`,
    );
  } finally {
    for (const s of servers) await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a TLS port is reached where it listens: a wildcard at loopback, one address at that address", () => {
  const l = (family: 4 | 6, address: string, port: number) => ({
    family,
    address,
    port,
    uid: 0,
    inode: 1,
    processes: [],
  });
  assertEquals(tlsTarget(5671, [l(6, "::", 5671), l(4, "0.0.0.0", 5671)]), "127.0.0.1");
  assertEquals(tlsTarget(5671, [l(6, "::", 5671)]), "::1");
  assertEquals(tlsTarget(5671, [l(4, "10.0.0.5", 5671)]), "10.0.0.5");
  assertEquals(tlsTarget(5671, [l(4, "10.0.0.5", 5672)]), "127.0.0.1");
});

Deno.test("a TLS port must be one of its entry's ports, once, and its names host names or addresses", () => {
  let said = "";
  try {
    parseRegistry(`version: 1
accounts: [root]
services:
  broker:
    kind: daemon
    port: [5672]
    tls: [{port: 5671, name: broker.example}, {port: 5672, name: "*.example"}]
`);
  } catch (error) {
    said = (error as Error).message;
  }
  assertStringIncludes(
    said,
    "services.broker.tls[0].port: TLS port 5671 is not one of this entry's ports",
  );
  assertStringIncludes(said, "services.broker.tls[1].name");
  assertStringIncludes(
    said,
    "Must be a lowercase host name (no wildcard), an IPv4 address or an IPv6 address",
  );
  const r = parseRegistry(`version: 1
accounts: [root]
services:
  broker:
    kind: daemon
    port: [5671, 15671]
    tls:
      - {port: 5671, name: [broker.example, 10.0.0.5, "fd00::5"]}
      - {port: 15671, name: broker.example}
`);
  assertEquals(r.services.broker!.tls, [
    { port: 5671, name: ["broker.example", "10.0.0.5", "fd00::5"] },
    { port: 15671, name: ["broker.example"] },
  ]);
});

Deno.test("a real PostgreSQL with ssl = on and a key from ca renew --key-group postgres (0640 root:postgres) is checked after its SSLRequest (starttls: postgres); without starttls it does not answer", async () => {
  const BIN = "/usr/lib/postgresql/15/bin";
  const dir = await Deno.makeTempDir({ prefix: "mesh-tls-pg-" });
  await Deno.chmod(dir, 0o755); // postgres reaches its key and data below
  const data = `${dir}/pg`;
  const as = (argv: string[]) => run(["runuser", "-u", "postgres", "--", ...argv]);
  let started = false;
  try {
    const mesh = `${dir}/mesh`;
    await initCa(mesh);
    const store = await ensureServerCert(mesh, "store", {
      names: ["localhost", "127.0.0.1"],
      keyGroup: "postgres",
    });
    await Deno.mkdir(data, { mode: 0o700 });
    await run(["chown", "postgres:postgres", data]);
    await as([`${BIN}/initdb`, "-D", data, "-A", "trust", "-U", "postgres"]);
    const port = freePort();
    await as([
      `${BIN}/pg_ctl`,
      "-D",
      data,
      "-l",
      `${data}/log`,
      "-o",
      `-p ${port} -k ${data} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=${store.cert} -c ssl_key_file=${store.key}`,
      "-w",
      "start",
    ]);
    started = true;
    const registry = (starttls: boolean) =>
      parseRegistry(`version: 1
accounts: [root]
roots: [${mesh}/ca.crt]
services:
  store:
    kind: daemon
    user: postgres
    port: ${port}
    tls: {port: ${port}, name: [localhost, 127.0.0.1]${starttls ? ", starttls: postgres" : ""}}
`);
    const options = {
      registryPath: "r.yaml",
      caddyAdmin: NO_PROXY,
      bootView: "none" as const,
      runtimes: [],
    };
    const clean = certificateFindings(await reconcile(registry(true), options));
    assertEquals(clean, []);
    const plain = certificateFindings(
      await reconcile(registry(false), { ...options, timeoutMs: 3000 }),
    );
    assertEquals(plain.length, 1, JSON.stringify(plain));
    assertStringIncludes(
      plain[0]!.detail,
      `TLS port ${port} (localhost, 127.0.0.1) does not answer at 127.0.0.1:${port}`,
    );
  } finally {
    if (started) {
      await as([`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
    }
    await Deno.remove(dir, { recursive: true });
  }
});
