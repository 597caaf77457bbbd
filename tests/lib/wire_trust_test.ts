/**
 * The rule for the wire (lib/wire_trust.ts) against the machine's REAL TLS listeners
 * (tests/support/wire.ts): RabbitMQ's AMQPS (5671), its management API over HTTPS (15671) and
 * PostgreSQL with `ssl = on`. Each connection verifies against the mesh's CA and is refused, with
 * a sentence naming what was wrong, when the certificate is from another CA, expired, or issued
 * for another name; clear text to another machine is refused unless allowed; a CA file that is
 * too open or not a certificate is named.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { AmqpError, openBroker } from "../../lib/amqp.ts";
import {
  caFileFor,
  DEFAULT_CA_FILE,
  isLoopback,
  plainAllowed,
  PlainRefusedError,
  tlsRefusal,
  TrustFileError,
} from "../../lib/wire_trust.ts";
import { checkBroker } from "../../control/broker_admin.ts";
import { connectDatabase, DatabaseError } from "../../control/db.ts";
import { makeBadCerts, makeTestPki, type TestPki } from "../support/tls.ts";
import { cli, ROOT } from "../support/mod.ts";
import {
  AMQPS_BASE,
  API_HTTPS_BASE,
  forwarder,
  PG_TLS_BASE,
  pgTlsFront,
  terminator,
  TEST_CA_FILE,
} from "../support/wire.ts";

const OPTIONS = { sanitizeResources: false, sanitizeOps: false };

/** A test PKI (another CA, and certificates of its own CA that are expired or for other names). */
async function pkis(): Promise<
  { dir: string; pki: TestPki; bad: Awaited<ReturnType<typeof makeBadCerts>> }
> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-wire-" });
  const pki = await makeTestPki(dir);
  return { dir, pki, bad: await makeBadCerts(dir, pki) };
}

async function failure(op: Promise<unknown>): Promise<Error> {
  const error = await op.then(() => undefined, (e) => e);
  assert(error instanceof Error, `expected a refusal, the operation succeeded (${error})`);
  return error;
}

const amqps = (ca: string, host = "127.0.0.1", port = 5671) =>
  `amqps://guest:guest@${host}:${port}/?cacertfile=${encodeURIComponent(ca)}`;
const api = (ca: string, host = "127.0.0.1", port = 15671) =>
  `https://guest:guest@${host}:${port}?cacertfile=${encodeURIComponent(ca)}`;
const pg = (ca: string, host = "127.0.0.1", port = 5432) =>
  `postgres://postgres@${host}:${port}/postgres?sslmode=verify-full&sslrootcert=${
    encodeURIComponent(ca)
  }`;

Deno.test("amqps:// verifies the broker against the mesh CA", OPTIONS, async (t) => {
  const { dir, pki, bad } = await pkis();
  try {
    await t.step("the CA's certificate for the name connected to: connected", async () => {
      const s = await openBroker(amqps(TEST_CA_FILE));
      try {
        await s.channel.checkExchange("amq.direct");
      } finally {
        await s.close();
      }
      const byName = await openBroker(amqps(TEST_CA_FILE, "localhost"));
      await byName.close();
    });
    await t.step("MESH_CA_FILE is the CA when the URL names none", async () => {
      Deno.env.set("MESH_CA_FILE", pki.caCert);
      try {
        const e = await failure(openBroker(`${AMQPS_BASE}/`));
        assertStringIncludes(e.message, `not signed by the mesh CA in "${pki.caCert}"`);
        Deno.env.set("MESH_CA_FILE", TEST_CA_FILE);
        await (await openBroker(`${AMQPS_BASE}/`)).close();
      } finally {
        Deno.env.delete("MESH_CA_FILE");
      }
    });
    await t.step("another CA: refused, naming it", async () => {
      const e = await failure(openBroker(amqps(pki.caCert)));
      assert(e instanceof AmqpError, String(e));
      assertStringIncludes(
        e.message,
        `the server's certificate is not signed by the mesh CA in "${pki.caCert}"`,
      );
      assert(!e.message.includes("guest:guest"), e.message);
    });
    await t.step("another name: refused, naming the name", async () => {
      const front = forwarder(5671);
      try {
        const e = await failure(openBroker(amqps(TEST_CA_FILE, front.hostname, front.port)));
        assertStringIncludes(e.message, `the server's certificate is not issued for "127.0.0.2"`);
      } finally {
        front.close();
      }
    });
    await t.step("expired: refused, saying so", async () => {
      const front = terminator(bad.expired, 5672);
      try {
        const e = await failure(openBroker(amqps(pki.caCert, "127.0.0.1", front.port)));
        assertStringIncludes(e.message, "the server's certificate has expired");
        // The same front with a certificate that is valid connects: the refusal is the date's.
        const good = terminator({ cert: pki.cert, key: pki.key }, 5672);
        try {
          await (await openBroker(amqps(pki.caCert, "127.0.0.1", good.port))).close();
        } finally {
          good.close();
        }
      } finally {
        front.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the management API over https:// verifies against the mesh CA", OPTIONS, async (t) => {
  const { dir, pki, bad } = await pkis();
  const amqp = amqps(TEST_CA_FILE);
  try {
    await t.step("verified: answers", async () => {
      const said = await checkBroker({ amqp, api: api(TEST_CA_FILE) });
      assert(said.some((l) => l.startsWith("management API answering")), said.join("\n"));
    });
    await t.step("another CA: refused, naming it", async () => {
      const e = await failure(checkBroker({ amqp, api: api(pki.caCert) }));
      assertStringIncludes(
        e.message,
        `the server's certificate is not signed by the mesh CA in "${pki.caCert}"`,
      );
      assert(!e.message.includes("guest:guest"), e.message);
    });
    await t.step("another name: refused, naming the name", async () => {
      const front = forwarder(15671);
      try {
        const e = await failure(
          checkBroker({ amqp, api: api(TEST_CA_FILE, front.hostname, front.port) }),
        );
        assertStringIncludes(e.message, `the server's certificate is not issued for "127.0.0.2"`);
      } finally {
        front.close();
      }
    });
    await t.step("expired: refused, saying so", async () => {
      const front = terminator(bad.expired, 15672);
      try {
        const e = await failure(
          checkBroker({ amqp, api: api(pki.caCert, "127.0.0.1", front.port) }),
        );
        assertStringIncludes(e.message, "the server's certificate has expired");
      } finally {
        front.close();
      }
    });
    await t.step("the AMQP side of the same check verifies too", async () => {
      const e = await failure(checkBroker({ amqp: amqps(pki.caCert), api: api(TEST_CA_FILE) }));
      assertStringIncludes(e.message, `not signed by the mesh CA in "${pki.caCert}"`);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PostgreSQL sslmode=verify-full verifies against the mesh CA", OPTIONS, async (t) => {
  const { dir, pki, bad } = await pkis();
  try {
    await t.step("verified: connected over TLS", async () => {
      for (const host of ["127.0.0.1", "localhost"]) {
        const sql = await connectDatabase(pg(TEST_CA_FILE, host), { requireMigrated: false });
        try {
          const [row] = await sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
          assertEquals(row?.ssl, true, `${host}: not TLS`);
        } finally {
          await sql.end();
        }
      }
    });
    await t.step("another CA: refused, naming it", async () => {
      const e = await failure(connectDatabase(pg(pki.caCert), { requireMigrated: false }));
      assert(e instanceof DatabaseError, String(e));
      assertStringIncludes(
        e.message,
        `the server's certificate is not signed by the mesh CA in "${pki.caCert}"`,
      );
    });
    await t.step("another name (an address): refused, naming it", async () => {
      // Deno's node:tls checked an address as "localhost" unless told the host (control/db.ts).
      const front = forwarder(5432);
      try {
        const e = await failure(
          connectDatabase(pg(TEST_CA_FILE, front.hostname, front.port), {
            requireMigrated: false,
          }),
        );
        assertStringIncludes(e.message, `the server's certificate is not issued for "127.0.0.2"`);
      } finally {
        front.close();
      }
    });
    await t.step("expired: refused, saying so", async () => {
      const front = await pgTlsFront(bad.expired);
      try {
        const e = await failure(
          connectDatabase(pg(pki.caCert, "127.0.0.1", front.port), {
            requireMigrated: false,
            connectTimeout: 3,
          }),
        );
        assertStringIncludes(e.message, "the server's certificate has expired");
      } finally {
        front.close();
      }
    });
    await t.step("the URL's sslrootcert is not passed on to the server", async () => {
      const sql = await connectDatabase(
        `${PG_TLS_BASE}/postgres?sslmode=verify-full&sslrootcert=${
          encodeURIComponent(TEST_CA_FILE)
        }`,
        { requireMigrated: false },
      );
      await sql.end();
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("clear text to another machine is refused unless allowed", OPTIONS, async (t) => {
  await t.step("amqp://", async () => {
    // Every dial counted (lib/amqp.ts dials with Deno.connect): the refusal comes before any.
    const connect = Deno.connect;
    const dialed: string[] = [];
    Deno.connect = ((options: Deno.ConnectOptions) => {
      dialed.push(`${options.hostname}:${options.port}`);
      return connect(options);
    }) as typeof Deno.connect;
    let e: Error;
    try {
      e = await failure(openBroker("amqp://guest:guest@192.0.2.1:5672/"));
    } finally {
      Deno.connect = connect;
    }
    assert(e instanceof PlainRefusedError, String(e));
    assertStringIncludes(e.message, "in clear text: 192.0.2.1 is not this machine");
    assertStringIncludes(e.message, "MESH_ALLOW_PLAIN=1");
    assert(!e.message.includes("guest:guest"), e.message);
    assertEquals(dialed, [], "the refusal came after a connection attempt");
  });
  await t.step("http:// to the management API", async () => {
    const e = await failure(
      checkBroker({ amqp: amqps(TEST_CA_FILE), api: "http://guest:guest@192.0.2.1:15672" }),
    );
    assertStringIncludes(e.message, "in clear text: 192.0.2.1 is not this machine");
  });
  await t.step("postgres:// without sslmode=verify-full", async () => {
    for (
      const url of ["postgres://postgres@192.0.2.1/db", "postgres://x@192.0.2.1/db?sslmode=require"]
    ) {
      const e = await failure(connectDatabase(url, { requireMigrated: false }));
      assert(e instanceof DatabaseError, String(e));
      assertStringIncludes(e.message, "in clear text: 192.0.2.1 is not this machine");
    }
  });
  await t.step("loopback stays allowed", async () => {
    await (await openBroker("amqp://guest:guest@127.0.0.1:5672/")).close();
  });
  await t.step("MESH_ALLOW_PLAIN=1 allows it (the connection is then tried)", async () => {
    Deno.env.set("MESH_ALLOW_PLAIN", "1");
    try {
      const e = await failure(
        openBroker("amqp://guest:guest@192.0.2.1:5672/", { timeoutSeconds: 1 }),
      );
      assert(!(e instanceof PlainRefusedError), e.message);
    } finally {
      Deno.env.delete("MESH_ALLOW_PLAIN");
    }
  });
});

Deno.test(
  "a CA file that is too open or not a certificate: exit 2 naming the path",
  OPTIONS,
  async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "mesh-wire-ca-" });
    try {
      const open = `${dir}/open.crt`;
      await Deno.copyFile(TEST_CA_FILE, open);
      await Deno.chmod(open, 0o666);
      const notCert = `${dir}/not-a-cert.crt`;
      await Deno.writeTextFile(notCert, "hello\n");
      const cases: [string, string, string][] = [
        [open, "writable by anyone", "its mode is 0666"],
        [notCert, "holds no PEM CERTIFICATE block", notCert],
        [`${dir}/missing.crt`, "does not exist", "missing.crt"],
      ];
      for (const [path, why, also] of cases) {
        await t.step(`broker check: ${why}`, async () => {
          const out = await cli("control/main.ts", ["broker", "check"], {
            MESH_BROKER_URL: amqps(path),
            MESH_BROKER_API_URL: api(TEST_CA_FILE),
          });
          assertEquals(out.code, 2, out.stderr);
          assertStringIncludes(out.stderr, `"${path}"`);
          assertStringIncludes(out.stderr, why);
          assertStringIncludes(out.stderr, also);
        });
        await t.step(`status (PostgreSQL): ${why}`, async () => {
          const out = await cli("control/main.ts", ["status"], { MESH_DATABASE_URL: pg(path) });
          assertEquals(out.code, 2, out.stderr);
          assertStringIncludes(out.stderr, `"${path}"`);
          assertStringIncludes(out.stderr, why);
        });
      }
      await t.step("MESH_CA_FILE too open, for the management API", async () => {
        const out = await cli("control/main.ts", ["broker", "check"], {
          MESH_BROKER_URL: "amqp://guest:guest@127.0.0.1:5672/",
          MESH_BROKER_API_URL: API_HTTPS_BASE,
          MESH_CA_FILE: open,
        });
        assertEquals(out.code, 2, out.stderr);
        assertStringIncludes(out.stderr, `"${open}"`);
        assertStringIncludes(out.stderr, "writable by anyone");
      });
      await t.step("a key where the CA certificate should be", async () => {
        const pki = await makeTestPki(dir, { stem: "k-" });
        const both = `${dir}/both.crt`;
        await Deno.writeTextFile(
          both,
          (await Deno.readTextFile(pki.caCert)) + (await Deno.readTextFile(pki.caKey)),
          { mode: 0o644 },
        );
        const e = await failure(openBroker(amqps(both)));
        assert(e instanceof TrustFileError, String(e));
        assertStringIncludes(e.message, `"${both}"`);
        assertStringIncludes(e.message, "holds a private key");
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("loopback is this machine only, never a wildcard", () => {
  for (
    const h of [
      "localhost",
      "LOCALHOST.",
      "db.localhost",
      "127.0.0.1",
      "127.9.9.9",
      "::1",
      "[::1]",
      "::ffff:7f00:1",
      "[::ffff:7f00:1]",
      "::ffff:127.0.0.1",
      "0:0:0:0:0:0:0:1",
      "/run/postgresql",
    ]
  ) {
    assert(isLoopback(h), h);
  }
  for (
    const h of [
      "10.0.0.1",
      "192.0.2.1",
      "128.0.0.1",
      "localhost.example.com",
      "127.0.0.1.example.com",
      "::2",
      "::ffff:a00:1",
      "::ffff:10.0.0.1",
      "2001:db8::1",
      "example.com",
      "",
      // A wildcard listen address listens on every address: never loopback.
      "0.0.0.0",
      "::",
      "[::]",
    ]
  ) {
    assert(!isLoopback(h), h);
  }
});

Deno.test("refused certificates read as sentences, from rustls's and node:tls's words", () => {
  const at = { host: "db.example", caFile: "/etc/mesh/ca.crt" };
  const node = (code: string, message: string) => Object.assign(new Error(message), { code });
  const cases: [unknown, string][] = [
    [
      new Error("invalid peer certificate: UnknownIssuer"),
      `is not signed by the mesh CA in "/etc/mesh/ca.crt"`,
    ],
    [new Error("invalid peer certificate: Expired"), "has expired"],
    [new Error("invalid peer certificate: NotValidYet"), "is not valid yet"],
    [new Error("invalid peer certificate: NotValidForName"), `is not issued for "db.example"`],
    [node("CERT_HAS_EXPIRED", "certificate has expired"), "has expired"],
    [node("CERT_NOT_YET_VALID", "certificate is not yet valid"), "is not valid yet"],
    [
      node("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames"),
      `is not issued for "db.example"`,
    ],
    [
      new TypeError("fetch failed", {
        cause: new Error("client error (Connect): invalid peer certificate: UnknownIssuer"),
      }),
      "is not signed by",
    ],
  ];
  for (const [error, want] of cases) {
    const said = tlsRefusal(error, at);
    assert(said !== undefined, String(error));
    assertStringIncludes(said, `the server's certificate ${want}`);
  }
  assertStringIncludes(
    tlsRefusal(new Error("invalid peer certificate: UnknownIssuer"), { host: "h" })!,
    "any CA this system trusts",
  );
  // rustls's longer words (Deno 2.9.6, through fetch): when, and which names, said.
  const pre = "error sending request for url (https://h/): client error (Connect): " +
    "invalid peer certificate: ";
  assertStringIncludes(
    tlsRefusal(
      new Error(
        `${pre}certificate expired: verification time 1796524127 (UNIX), but certificate is ` +
          "not valid after 1796437727 (86400 seconds ago)",
      ),
      at,
    )!,
    "the server's certificate has expired: it was valid until 2026-12-05T02:28:47.000Z (",
  );
  assertStringIncludes(
    tlsRefusal(
      new Error(
        `${pre}certificate not valid yet: verification time 1796524191 (UNIX), but certificate ` +
          "is not valid before 1796610590 (86399 seconds in future)",
      ),
      at,
    )!,
    "the server's certificate is not valid yet: it is valid from 2026-12-07T02:29:50.000Z; " +
      "check this machine's clock (",
  );
  assertStringIncludes(
    tlsRefusal(
      new Error(
        `${pre}certificate not valid for name "127.0.0.1"; certificate is only valid for ` +
          'IpAddress(10.1.2.3) or DnsName("a.example")',
      ),
      { host: "127.0.0.1" },
    )!,
    `the server's certificate is not issued for "127.0.0.1" (it is for 10.1.2.3, a.example) (`,
  );
  // As fetch throws it (the reason in a cause): each name once.
  assertStringIncludes(
    tlsRefusal(
      new TypeError("fetch failed", {
        cause: new Error(
          `${pre}certificate not valid for name "h"; certificate is only valid for ` +
            'DnsName("a.example")',
        ),
      }),
      { host: "h" },
    )!,
    `is not issued for "h" (it is for a.example) (`,
  );
  // A name the server put in its certificate is shown, never acted on by a terminal.
  assertStringIncludes(
    tlsRefusal(
      new Error(
        `${pre}certificate not valid for name "h"; certificate is only valid for ` +
          'DnsName("a\u001b[2Jb")',
      ),
      { host: "h" },
    )!,
    "(it is for a<U+001B>[2Jb)",
  );
  assertStringIncludes(
    tlsRefusal(new Error(`${pre}BadSignature`), at)!,
    "is not signed by",
  );
  assertEquals(tlsRefusal(new Error("client error (Connect): tcp connect error"), at), undefined);
  assertEquals(tlsRefusal(new Error("connect ECONNREFUSED 127.0.0.1:1"), at), undefined);
});

Deno.test("the CA file: the option, else MESH_CA_FILE, else the default file when it exists", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-wire-ca-file-" });
  const before = Deno.env.get("MESH_CA_FILE");
  try {
    const present = `${dir}/ca.crt`;
    await Deno.writeTextFile(present, "x");
    const absent = `${dir}/none.crt`;
    assertEquals(DEFAULT_CA_FILE, "/etc/mesh/ca.crt");
    Deno.env.set("MESH_CA_FILE", "/b");
    assertEquals(caFileFor("/a", { defaultFile: present }), "/a");
    assertEquals(caFileFor(undefined, { defaultFile: present }), "/b");
    assertEquals(caFileFor("", { defaultFile: present }), "/b");
    Deno.env.set("MESH_CA_FILE", "");
    assertEquals(caFileFor(undefined, { defaultFile: present }), present);
    Deno.env.delete("MESH_CA_FILE");
    assertEquals(caFileFor(undefined, { defaultFile: present }), present);
    assertEquals(caFileFor(undefined, { defaultFile: absent }), undefined);
  } finally {
    if (before === undefined) Deno.env.delete("MESH_CA_FILE");
    else Deno.env.set("MESH_CA_FILE", before);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("clear text is allowed by a program's own switch or MESH_ALLOW_PLAIN=1", () => {
  const before = Deno.env.get("MESH_ALLOW_PLAIN");
  try {
    Deno.env.delete("MESH_ALLOW_PLAIN");
    assertEquals([plainAllowed(), plainAllowed(false), plainAllowed(true)], [false, false, true]);
    Deno.env.set("MESH_ALLOW_PLAIN", "yes");
    assertEquals(plainAllowed(), false);
    Deno.env.set("MESH_ALLOW_PLAIN", "1");
    assertEquals([plainAllowed(), plainAllowed(false)], [true, true]);
  } finally {
    if (before === undefined) Deno.env.delete("MESH_ALLOW_PLAIN");
    else Deno.env.set("MESH_ALLOW_PLAIN", before);
  }
});

Deno.test("the CA file is read without @peculiar/x509: every TLS connection reads it first, and that library costs ~150 ms a start", async () => {
  // Dynamic imports included: lib/wire_trust.ts loads the certificate reader when a CA is used.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "lib/wire_trust.ts"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  assert(out.success);
  const modules = (JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  }).modules.map((m) => m.specifier);
  assert(modules.some((m) => m.endsWith("/lib/cert_file.ts")), modules.join("\n"));
  const heavy = modules.filter((m) => m.includes("@peculiar"));
  assertEquals(heavy, [], "lib/wire_trust.ts reaches @peculiar/*");
});
