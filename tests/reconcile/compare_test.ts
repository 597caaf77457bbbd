/**
 * The anti-join on hand-built observations: the rules that do not need a machine to state
 * (batch containers, failed sources, redirect normalisation), and the renderers.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { compare, type Observation } from "../../reconcile/compare.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import {
  lastCleanFrom,
  stampLine,
  summaryLine,
  toText,
  toTextfile,
} from "../../reconcile/report.ts";
import type { ReconcileResult } from "../../reconcile/run.ts";

const NOW = Date.parse("2026-11-30T12:00:00Z");
const OPTIONS = { certWarnMs: 14 * 86_400_000, now: NOW };

function observation(partial: Partial<Observation>): Observation {
  return {
    time: new Date(NOW).toISOString(),
    containers: [],
    listeners: [],
    addresses: [],
    probes: [],
    sources: [
      { source: "podman", account: "root", state: "observed", method: "m", detail: "" },
      { source: "sockets", state: "observed", method: "m", detail: "" },
      { source: "caddy", state: "observed", method: "m", detail: "" },
    ],
    ...partial,
  };
}

const container = (name: string, account = "root") => ({
  account,
  runtime: "podman" as const,
  name,
  id: name,
  image: "localhost/x",
  labels: {},
  ports: [],
});

Deno.test("a batch job's container is its own while it runs, and is not required to run", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  publish: {kind: batch, timer: publish.timer, container: publisher, user: root}
`);
  assertEquals(
    compare(registry, observation({ containers: [container("publisher")] }), OPTIONS),
    [],
  );
  assertEquals(compare(registry, observation({}), OPTIONS), []);
  // The same container undeclared is rogue: the rule is the registry, not the name.
  const other = parseRegistry("version: 1\naccounts: [root]\nservices: {}\n");
  assertEquals(
    compare(other, observation({ containers: [container("publisher")] }), OPTIONS).map((
      f,
    ) => [f.check, f.direction]),
    [["container", "rogue"]],
  );
});

Deno.test("a container of the same name in another account is not the declared one", () => {
  const registry = parseRegistry(`version: 1
accounts: [root, alice]
services:
  web: {kind: service, container: web, user: alice}
`);
  const f = compare(registry, observation({ containers: [container("web", "root")] }), OPTIONS);
  assertEquals(f.map((x) => [x.check, x.direction, x.subject]), [
    ["container", "missing", "alice/web"],
    ["container", "rogue", "root/web"],
  ]);
});

Deno.test("a check whose source failed is not compared: no absence is taken as evidence", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  web: {kind: service, container: web, user: root, port: 8080, web: app.example.org}
`);
  const failed = observation({
    sources: [
      { source: "podman", account: "root", state: "failed", method: "m", detail: "down" },
      { source: "sockets", state: "failed", method: "m", detail: "down" },
      { source: "caddy", state: "failed", method: "m", detail: "down" },
    ],
  });
  assertEquals(compare(registry, failed, OPTIONS), []);
});

Deno.test("an absent proxy serves nothing: declared addresses are missing", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  site: {kind: site, web: app.example.org}
`);
  const absent = observation({
    sources: [{ source: "caddy", state: "absent", method: "--caddy-admin none", detail: "" }],
  });
  assertEquals(compare(registry, absent, OPTIONS).map((f) => [f.check, f.direction]), [[
    "address",
    "missing",
  ]]);
});

Deno.test("a redirect's Location is compared as a URL, relative or not", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  old: {kind: site, web: old.example.org, redirect: "https://new.example.org"}
  rel: {kind: site, web: rel.example.org, redirect: "http://rel.example.org/new/"}
`);
  const served = (host: string) => ({ host, server: "s", listen: [":443"], tls: false });
  const probe = (host: string, location: string) => ({
    host,
    target: "127.0.0.1:80",
    status: 301,
    location,
  });
  const f = compare(
    registry,
    observation({
      addresses: [served("old.example.org"), served("rel.example.org")],
      probes: [
        probe("old.example.org", "https://new.example.org/"),
        probe("rel.example.org", "/new/"),
      ],
    }),
    OPTIONS,
  );
  assertEquals(f, []);
});

Deno.test("certificates: expired, wrong name, within the warning, and fine", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  s: {kind: site, web: [a.example.org, b.example.org, c.example.org, d.example.org]}
`);
  const day = 86_400_000;
  const cert = (notAfter: number, coversName = true) => ({
    notAfter: new Date(notAfter).toISOString(),
    notBefore: new Date(NOW - day).toISOString(),
    subject: "",
    subjectAltName: "DNS:x",
    coversName,
  });
  const hosts = ["a", "b", "c", "d"].map((h) => `${h}.example.org`);
  const f = compare(
    registry,
    observation({
      addresses: hosts.map((host) => ({ host, server: "s", listen: [":443"], tls: true })),
      probes: [
        { host: hosts[0]!, target: "t", status: 200, certificate: cert(NOW - 1) },
        { host: hosts[1]!, target: "t", status: 200, certificate: cert(NOW + 90 * day, false) },
        { host: hosts[2]!, target: "t", status: 200, certificate: cert(NOW + 3 * day) },
        { host: hosts[3]!, target: "t", status: 200, certificate: cert(NOW + 90 * day) },
      ],
    }),
    OPTIONS,
  );
  assertEquals(f.map((x) => [x.subject, x.detail.split(" ").slice(-3).join(" ")]), [
    ["a.example.org", "expired at 2026-11-30T11:59:59.999Z"],
    ["b.example.org", "(it names DNS:x)"],
    ["c.example.org", "the 14d warning"],
  ]);
});

function result(partial: Partial<ReconcileResult>): ReconcileResult {
  return {
    clean: true,
    status: "clean",
    exitCode: 0,
    time: "2026-11-30T12:00:00.000Z",
    registry: "/etc/mesh/registry.yaml",
    entries: 3,
    findings: [],
    sources: [],
    observed: { containers: 1, listeners: 2, ports: 2, addresses: 1 },
    subprocesses: 1,
    ...partial,
  };
}

Deno.test("the textfile carries the last clean time, and has none until a run was clean", () => {
  const drift = result({
    clean: false,
    status: "drift",
    exitCode: 1,
    findings: [{ check: "port", direction: "rogue", subject: "9", detail: "d" }],
  });
  const never = toTextfile(drift, undefined);
  assert(!never.includes("mesh_reconcile_last_clean_timestamp_seconds"), never);
  assert(never.includes('mesh_reconcile_findings{check="port",direction="rogue"} 1'));
  assert(never.includes("mesh_reconcile_clean 0"));
  const clean = toTextfile(result({}), undefined);
  assertEquals(lastCleanFrom(clean), Date.parse("2026-11-30T12:00:00Z") / 1000);
  const later = toTextfile({ ...drift, time: "2026-11-30T13:00:00.000Z" }, lastCleanFrom(clean));
  assertEquals(lastCleanFrom(later), Date.parse("2026-11-30T12:00:00Z") / 1000);
  assertEquals(lastCleanFrom("garbage"), undefined);
});

Deno.test("the stamp is one line: the time and the summary", () => {
  assertEquals(
    stampLine(result({})),
    "2026-11-30T12:00:00.000Z clean: 3 entries agree with 1 containers, 2 ports, 1 addresses\n",
  );
});

Deno.test("the text names what could not be observed", () => {
  const r = result({
    clean: false,
    status: "unobservable",
    exitCode: 2,
    sources: [{ source: "caddy", state: "failed", method: "GET x", detail: "connection refused" }],
  });
  assertEquals(summaryLine(r), "not clean: could not observe caddy");
  assert(toText(r).includes("caddy: connection refused"));
});

Deno.test("P: an address that does not answer is a finding: certificate over TLS, else address", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  s: {kind: site, web: [tls.example.org, plain.example.org]}
`);
  const f = compare(
    registry,
    observation({
      addresses: [
        { host: "tls.example.org", server: "s", listen: [":443"], tls: true },
        { host: "plain.example.org", server: "p", listen: [":80"], tls: false },
      ],
      probes: [
        { host: "tls.example.org", target: "127.0.0.1:443", error: "ECONNREFUSED" },
        { host: "plain.example.org", target: "127.0.0.1:80", error: "ECONNREFUSED" },
      ],
    }),
    OPTIONS,
  );
  assertEquals(f.map((x) => [x.check, x.direction, x.subject]), [
    ["certificate", "missing", "tls.example.org"],
    ["address", "missing", "plain.example.org"],
  ]);
});

Deno.test("P: a wildcard address is not judged by its probe", () => {
  const registry = parseRegistry(`version: 1
accounts: [root]
services:
  s: {kind: site, web: "*.example.org"}
`);
  const f = compare(
    registry,
    observation({
      addresses: ["*.example.org"].map((host) => ({
        host,
        server: "s",
        listen: [":443"],
        tls: true,
      })),
      probes: [{ host: "*.example.org", target: "t", error: "handshake" }],
    }),
    OPTIONS,
  );
  assertEquals(f, []);
});

Deno.test("P: a failed runtime of one account does not hide another account's missing container", () => {
  const registry = parseRegistry(`version: 1
accounts: [root, alice]
services:
  web: {kind: service, container: web, user: root}
`);
  const o = observation({});
  o.sources.push({ source: "podman", account: "alice", state: "failed", method: "m", detail: "" });
  assertEquals(compare(registry, o, OPTIONS).map((x) => [x.check, x.subject]), [[
    "container",
    "root/web",
  ]]);
});

Deno.test("P: a port is the declared container's only in its own account, and only over TCP", () => {
  const registry = parseRegistry(`version: 1
accounts: [root, alice]
services:
  web: {kind: service, container: web, user: alice, port: 8080}
`);
  const published = (account: string, protocol: string, hostPort: number) => ({
    ...container("web", account),
    ports: [{ hostIp: "127.0.0.1", hostPort, containerPort: 80, protocol }],
  });
  const f = compare(
    registry,
    observation({
      containers: [published("root", "tcp", 8080), published("alice", "udp", 5353)],
    }),
    OPTIONS,
  );
  assertEquals(f.map((x) => [x.check, x.direction, x.subject]), [
    ["container", "rogue", "root/web"],
    ["port", "missing", "8080"],
  ]);
});

Deno.test("P: adoption refuses a machine it could not fully observe", async () => {
  const { adoptRegistry } = await import("../../reconcile/adopt.ts");
  const o = observation({});
  o.sources[0] = {
    source: "podman",
    account: "root",
    state: "failed",
    method: "m",
    detail: "locked",
  };
  let error: unknown;
  try {
    adoptRegistry(o, { accounts: ["root"] });
  } catch (e) {
    error = e;
  }
  assert(error instanceof Error && error.message.includes("podman@root (locked)"), String(error));
});

Deno.test("a catch-all route can be declared as * and adopted; undeclared it is rogue", async () => {
  const { adoptRegistry } = await import("../../reconcile/adopt.ts");
  const catchAll = { host: "*", server: "s", listen: [":8080"], tls: false };
  const o = observation({ addresses: [catchAll] });
  const adopted = parseRegistry(adoptRegistry(o, { accounts: ["root"] }));
  assertEquals(Object.values(adopted.services).map((e) => e.web), [["*"]]);
  assertEquals(compare(adopted, o, OPTIONS), []);
  const none = parseRegistry("version: 1\naccounts: [root]\nservices: {}\n");
  assertEquals(compare(none, o, OPTIONS).map((f) => [f.check, f.direction, f.subject]), [[
    "address",
    "rogue",
    "*",
  ]]);
});

Deno.test("text from the machine cannot forge lines or colours in the report", () => {
  const r = result({
    clean: false,
    status: "drift",
    exitCode: 1,
    findings: [{
      check: "port",
      direction: "rogue",
      subject: "9",
      detail: "ev\x1b[31mil\nFAKE line\u202e",
    }],
  });
  const text = toText(r);
  assert(text.includes("ev<U+001B>[31mil<U+000A>FAKE line<U+202E>"), text);
  assert(!text.includes("\x1b"));
});

Deno.test("adoption never writes a user that names no account: its next run is clean", async () => {
  const { adoptRegistry } = await import("../../reconcile/adopt.ts");
  // A socket whose uid has no name in /etc/passwd (seen in the lab: uid 105, no process found).
  const o = observation({
    listeners: [{ family: 4, address: "127.0.0.1", port: 1883, uid: 105, inode: 1, processes: [] }],
  });
  const text = adoptRegistry(o, { accounts: ["root"] });
  assert(!text.includes("uid-105"), text);
  assertEquals(compare(parseRegistry(text), o, OPTIONS), []);
});

Deno.test("adoption writes containers in one order whatever the locale (compareNames, not localeCompare)", async () => {
  const { adoptRegistry } = await import("../../reconcile/adopt.ts");
  // localeCompare under any English locale gives a, B, c; compareNames puts names outside plain
  // lowercase after those, by code unit: a, c, B, the same under every LANG.
  const o = observation({ containers: ["c", "B", "a"].map((n) => container(n)) });
  const adopted = parseRegistry(adoptRegistry(o, { accounts: ["root"] }));
  assertEquals(
    Object.values(adopted.services).map((e) => "container" in e ? e.container : e.kind),
    [
      "a",
      "c",
      "B",
    ],
  );
});
