/**
 * A served chain judged as a careful client judges it (docs/design.md, hostile inputs, rule 4):
 * certificates made here with openssl (`openssl ca`, dates set with `-startdate/-enddate`), once
 * for the file, served over real TLS on loopback (`Deno.listenTls`, one listener per case), read
 * by the `certificate` check's own probe and judged against the system's store plus the roots a
 * registry names (`roots`). Each case says which certificate is wrong and why; a certificate the
 * path does not need (an expired cross-sign above a trusted root) is not a finding.
 */
import { assert, assertEquals } from "../support/assert.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { compareCertificates } from "../../reconcile/compare_web.ts";
import { probeAddress, type ServedAddress } from "../../reconcile/observe/proxy.ts";
import { observeTrust } from "../../reconcile/observe/trust.ts";
import type { Finding } from "../../reconcile/finding.ts";

const DAY = 86_400_000;
const NOW = Date.now();
const dir = await Deno.makeTempDir({ prefix: "mesh-chain-" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

async function openssl(args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A P-256 key, made once per name. */
const keys = new Map<string, string>();
async function key(name: string): Promise<string> {
  const path = `${dir}/${name}.key`;
  if (!keys.has(name)) {
    await openssl([
      "genpkey",
      "-algorithm",
      "EC",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-out",
      path,
    ]);
    keys.set(name, path);
  }
  return path;
}

interface Made {
  file: string;
  pem: string;
  key: string;
}

let serial = 0x1000;
/**
 * A certificate for `cn` with `keyName`'s key, issued by `issuer` (self-signed when absent),
 * valid from `from` to `to` (ms), a CA or a leaf with `san` (e.g. `DNS:a.test,IP:127.0.0.1`).
 */
async function issue(
  file: string,
  cn: string,
  options: {
    keyName: string;
    issuer?: Made;
    from?: number;
    to?: number;
    ca?: boolean;
    san?: string;
  },
): Promise<Made> {
  const work = `${dir}/${file}-ca`;
  await Deno.mkdir(`${work}/new`, { recursive: true });
  await Deno.writeTextFile(`${work}/index.txt`, "");
  await Deno.writeTextFile(`${work}/serial`, `${(serial++).toString(16)}\n`);
  const ext = [
    options.ca ? "basicConstraints = critical, CA:TRUE" : "basicConstraints = CA:FALSE",
    options.ca ? "keyUsage = critical, keyCertSign, cRLSign" : "keyUsage = digitalSignature",
    "subjectKeyIdentifier = hash",
    "authorityKeyIdentifier = keyid",
    ...(options.san ? [`subjectAltName = ${options.san}`] : []),
  ].join("\n");
  await Deno.writeTextFile(
    `${work}/openssl.cnf`,
    `[ca]\ndefault_ca = own\n[own]\ndir = ${work}\ndatabase = $dir/index.txt\nserial = $dir/serial\nnew_certs_dir = $dir/new\ndefault_md = sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = ${cn}\n[ext]\n${ext}\n`,
  );
  const k = await key(options.keyName);
  const out = `${dir}/${file}.crt`;
  await openssl([
    "req",
    "-new",
    "-key",
    k,
    "-out",
    `${work}/req.csr`,
    "-config",
    `${work}/openssl.cnf`,
  ]);
  const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z";
  await openssl([
    "ca",
    "-batch",
    "-notext",
    "-config",
    `${work}/openssl.cnf`,
    ...(options.issuer
      ? ["-cert", options.issuer.file, "-keyfile", options.issuer.key]
      : ["-selfsign", "-keyfile", k]),
    "-in",
    `${work}/req.csr`,
    "-out",
    out,
    "-startdate",
    stamp(options.from ?? NOW - DAY),
    "-enddate",
    stamp(options.to ?? NOW + 90 * DAY),
    "-extfile",
    `${work}/openssl.cnf`,
    "-extensions",
    "ext",
  ]);
  return { file: out, pem: await Deno.readTextFile(out), key: k };
}

// The certificates, made once for the file.
const root = await issue("root", "Mesh Test Root", { keyName: "root", ca: true });
const oldRoot = await issue("old-root", "Mesh Test Old Root", { keyName: "old-root", ca: true });
// The same subject and key as `root`, signed by the old root, and expired: as public CAs serve.
const cross = await issue("cross", "Mesh Test Root", {
  keyName: "root",
  issuer: oldRoot,
  ca: true,
  from: NOW - 400 * DAY,
  to: NOW - 30 * DAY,
});
const int = await issue("int", "Mesh Test Intermediate", {
  keyName: "int",
  issuer: root,
  ca: true,
});
const expiredInt = await issue("expired-int", "Mesh Expired Intermediate", {
  keyName: "int-old",
  issuer: root,
  ca: true,
  from: NOW - 90 * DAY,
  to: NOW - DAY,
});
const futureInt = await issue("future-int", "Mesh Future Intermediate", {
  keyName: "int-future",
  issuer: root,
  ca: true,
  from: NOW + 2 * DAY,
  to: NOW + 90 * DAY,
});
const stranger = await issue("stranger", "Mesh Stranger Root", { keyName: "stranger", ca: true });
const leaf = (file: string, san: string, issuer: Made) =>
  issue(file, file, { keyName: "leaf", issuer, san });

const registryRoot = `${dir}/private-root.pem`;
await Deno.writeTextFile(registryRoot, root.pem);

/** A TLS listener on loopback presenting `chain` (leaf first) with the leaf key. */
function serve(chain: Made[]): { port: number; close: () => void } {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: chain.map((c) => c.pem).join(""),
    key: Deno.readTextFileSync(chain[0]!.key),
  });
  (async () => {
    for await (const conn of listener) {
      (async () => {
        try {
          await conn.read(new Uint8Array(4096));
          await conn.write(
            new TextEncoder().encode(
              "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
            ),
          );
        } catch { /* the client went away */ }
        try {
          conn.close();
        } catch { /* closed */ }
      })();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

/** The trusted roots with `roots` named, read once per list. */
const trusts = new Map<string, ReturnType<typeof observeTrust>>();
function trustOf(roots: string[]): ReturnType<typeof observeTrust> {
  const key = roots.join("\n");
  if (!trusts.has(key)) trusts.set(key, observeTrust(roots));
  return trusts.get(key)!;
}

/**
 * The `certificate` findings for `host` served `chain`: the probe `mesh-reconcile run` makes,
 * judged with the system's store plus `roots` (default: the private root named).
 */
async function judged(
  host: string,
  chain: Made[],
  roots: string[] = [registryRoot],
): Promise<string[]> {
  const server = serve(chain);
  try {
    const trust = await trustOf(roots);
    assertEquals(trust.sources.map((s) => s.state), ["observed"], JSON.stringify(trust.sources));
    const address: ServedAddress = {
      host,
      server: "srv0",
      listen: [`127.0.0.1:${server.port}`],
      tls: true,
    };
    const probe = await probeAddress(address, { timeoutMs: 5_000, trust: trust.store!, now: NOW });
    assertEquals(probe.error, undefined, JSON.stringify(probe));
    const registry = parseRegistry(`version: 1
accounts: [root]
${roots.length > 0 ? `roots: [${roots.join(", ")}]\n` : ""}services:
  site:
    kind: site
    web: ${host}
`);
    const findings: Finding[] = compareCertificates(registry, {
      time: new Date(NOW).toISOString(),
      containers: [],
      listeners: [],
      addresses: [address],
      probes: [probe],
      sources: [],
    }, { certWarnMs: 14 * DAY, now: NOW });
    assert(findings.every((f) => f.check === "certificate" && f.subject === host));
    return findings.map((f) => f.detail);
  } finally {
    server.close();
  }
}

const one = (details: string[], ...parts: string[]) => {
  assertEquals(details.length, 1, JSON.stringify(details, null, 1));
  for (const part of parts) assert(details[0]!.includes(part), `${part} not in ${details[0]}`);
};

Deno.test("a chain through a trusted intermediate to the registry's private root is clean", async () => {
  const l = await leaf("good.mesh.test", "DNS:good.mesh.test", int);
  assertEquals(await judged("good.mesh.test", [l, int]), []);
  // With no root named, nothing trusts the private root, served or not.
  one(
    await judged("good.mesh.test", [l, int, root], []),
    "ends at a root nothing here trusts",
    'root "CN=Mesh Test Root" (position 3 in the path, served 3rd) is in neither the system ' +
      "store (/etc/ssl/certs/ca-certificates.crt) nor the registry's roots (none named)",
  );
  one(
    await judged("good.mesh.test", [l, int], []),
    "is incomplete",
    'its issuer "CN=Mesh Test Root" is an intermediate the server does not send, or a root ' +
      "nothing here trusts",
  );
});

Deno.test("a chain that needs an expired intermediate is a finding naming it", async () => {
  const l = await leaf("old-int.mesh.test", "DNS:old-int.mesh.test", expiredInt);
  one(
    await judged("old-int.mesh.test", [l, expiredInt]),
    "needs an expired certificate",
    'intermediate "CN=Mesh Expired Intermediate" (position 2 in the path, served 2nd)',
    `expired at ${new Date(Math.floor((NOW - DAY) / 1000) * 1000).toISOString()}`,
  );
});

Deno.test("a chain that needs an intermediate not valid yet is a finding naming it", async () => {
  const l = await leaf("future-int.mesh.test", "DNS:future-int.mesh.test", futureInt);
  one(
    await judged("future-int.mesh.test", [l, futureInt]),
    "needs a certificate not valid yet",
    'intermediate "CN=Mesh Future Intermediate" (position 2 in the path, served 2nd)',
  );
});

Deno.test("a leaf from a CA nothing trusts is a finding, served root or not", async () => {
  const l = await leaf("stranger.mesh.test", "DNS:stranger.mesh.test", stranger);
  one(
    await judged("stranger.mesh.test", [l, stranger]),
    "ends at a root nothing here trusts",
    'root "CN=Mesh Stranger Root" (position 2 in the path, served 2nd)',
  );
  one(
    await judged("stranger.mesh.test", [l]),
    "is incomplete",
    'leaf "CN=stranger.mesh.test" (position 1 in the path, served 1st)',
    'its issuer "CN=Mesh Stranger Root"',
  );
});

Deno.test("a chain missing its intermediate is a finding naming what is missing", async () => {
  const l = await leaf("no-int.mesh.test", "DNS:no-int.mesh.test", int);
  one(
    await judged("no-int.mesh.test", [l]),
    "is incomplete: nothing served or trusted issued",
    'its issuer "CN=Mesh Test Intermediate" is an intermediate the server does not send',
  );
});

Deno.test("an expired cross-sign the path does not need is not a finding", async () => {
  const l = await leaf("cross.mesh.test", "DNS:cross.mesh.test", int);
  // Served first, the cross-sign is what a builder taking the first issuer found would follow.
  assertEquals(await judged("cross.mesh.test", [l, int, cross]), []);
  // Without the root named, the path to the old root is the best there is: both are said.
  const alone = await judged("cross.mesh.test", [l, int, cross], []);
  assert(alone.some((d) => d.includes("needs an expired certificate")), JSON.stringify(alone));
  assert(
    alone.some((d) => d.includes('its issuer "CN=Mesh Test Old Root"')),
    JSON.stringify(alone),
  );
});

Deno.test("DNS names are matched against DNS SANs only, one leftmost wildcard label", async () => {
  const wrong = await leaf("wrong.mesh.test", "DNS:other.mesh.test", int);
  one(
    await judged("wrong.mesh.test", [wrong, int]),
    "does not cover it (it names DNS:other.mesh.test)",
  );
  const wild = await leaf("wild.mesh.test", "DNS:*.wild.mesh.test", int);
  assertEquals(await judged("a.wild.mesh.test", [wild, int]), []);
  one(await judged("b.a.wild.mesh.test", [wild, int]), "does not cover it");
  one(await judged("wild.mesh.test", [wild, int]), "does not cover it");
  // The subject's CN is not a name a client reads.
  const cnOnly = await issue("cn-only", "cn.mesh.test", { keyName: "leaf", issuer: int });
  one(await judged("cn.mesh.test", [cnOnly, int]), "it names no subject alternative name");
});

Deno.test("an IP address is matched against IP SANs, never DNS SANs", async () => {
  const right = await leaf("ip-right", "IP:127.0.0.1", int);
  assertEquals(await judged("127.0.0.1", [right, int]), []);
  const asDns = await leaf("ip-as-dns", "DNS:127.0.0.1,IP:127.0.0.2", int);
  one(
    await judged("127.0.0.1", [asDns, int]),
    "does not cover it (it names DNS:127.0.0.1, IP:127.0.0.2)",
  );
});

Deno.test("a registry root that cannot be read fails the trust source, naming the file", async () => {
  const missing = `${dir}/nowhere.pem`;
  const notPem = `${dir}/not-pem.pem`;
  await Deno.writeTextFile(notPem, "just text\n");
  for (
    const [path, says] of [[missing, "No such file"], [notPem, "no PEM CERTIFICATE block"], [
      dir,
      "not a regular file",
    ]] as const
  ) {
    const trust = await observeTrust([path]);
    assertEquals(trust.store, undefined);
    assertEquals(trust.sources.map((s) => s.state), ["failed"]);
    assert(trust.sources[0]!.detail.includes(`Cannot read the registry's root "${path}"`));
    assert(trust.sources[0]!.detail.includes(says), trust.sources[0]!.detail);
  }
});

Deno.test("a registry's roots are absolute paths, at least one: else placed at their line", () => {
  for (
    const [line, says] of [
      ["roots: [ca.pem]", "r.yaml:3:9: roots[0]: Must be an absolute path without '..'"],
      ["roots: []", "r.yaml:3:8: roots: List at least one root file, or leave roots out"],
      ["roots: /etc/mesh/ca.pem", "r.yaml:3:8: roots: Invalid input: expected array"],
    ]
  ) {
    let message = "";
    try {
      parseRegistry(`version: 1\naccounts: [root]\n${line}\nservices: {}\n`, "r.yaml");
    } catch (error) {
      message = String(error);
    }
    assert(message.includes(says!), `${line}: ${message}`);
  }
  const ok = parseRegistry(
    "version: 1\naccounts: [root]\nroots: [/etc/mesh/ca.pem]\nservices: {}\n",
  );
  assertEquals(ok.roots, ["/etc/mesh/ca.pem"]);
});
