import process from "node:process";
import { LineCounter, parseDocument } from "yaml";
import { assert, assertEquals, assertRejects, assertThrows } from "../support/assert.ts";
import { parseRegistry, RegistryError, registryJsonSchema } from "../../reconcile/registry.ts";
import { loadRegistry } from "../../reconcile/registry_load.ts";
import { Registry } from "../../mod.ts";
import { formatPath } from "../../lib/json_path.ts";

const VALID = `# the estate
version: 1
accounts: [root, alice]
services:
  web:
    kind: service
    user: root
    container: web
    port: [8080, 8443]
    web: [app.example.org]
    state: [/srv/web]
    secrets: [db-password]
  old:  # only redirects; stays declared
    kind: site
    web: old.example.org
    redirect: https://app.example.org/
  publish:
    kind: batch
    timer: publish.timer
    container: publisher
    user: alice
  sshd:
    kind: daemon
    user: root
    port: 22
`;

function problemsOf(text: string) {
  const error = assertThrows(() => parseRegistry(text, "r.yaml"), RegistryError);
  return error.problems;
}

Deno.test("a valid registry parses, one-or-many fields normalised to lists", () => {
  const r = parseRegistry(VALID);
  assertEquals(r.accounts, ["root", "alice"]);
  assertEquals(r.services.web?.port, [8080, 8443]);
  assertEquals(r.services.old?.web, ["old.example.org"]);
  assertEquals(r.services.sshd?.port, [22]);
  assertEquals(r.services.publish?.kind, "batch");
});

Deno.test("an unknown key is an error at its line and column", () => {
  const p = problemsOf(VALID.replace("    kind: daemon\n", "    kind: daemon\n    colour: blue\n"));
  assertEquals(p.length, 1);
  assertEquals(p[0]!.path, "services.sshd.colour");
  assertEquals([p[0]!.line, p[0]!.column], [24, 5]);
  assert(p[0]!.message.includes('Unknown field "colour"'));
});

Deno.test("an entry or a field named __proto__ is an error at its key, never dropped unread", async () => {
  const entry = VALID.replace(
    "  sshd:\n",
    "  __proto__:\n    kind: bogus\n    port: 99999\n  sshd:\n",
  );
  const p = problemsOf(entry);
  assertEquals(p.map((x) => x.path), ["services.__proto__"]);
  assert(p[0]!.message.includes('may not be "__proto__"'), p[0]!.message);
  const field = problemsOf(
    VALID.replace("    kind: daemon\n", "    kind: daemon\n    __proto__: 1\n"),
  );
  // Once: a strict object's zod issue names it an unknown field too, which is not said again.
  assertEquals(field.map((x) => [x.path, x.line, x.column]), [["services.sshd.__proto__", 24, 5]]);
  assert(field[0]!.message.includes('may not be "__proto__"'), field[0]!.message);
  const endpoint = problemsOf(
    VALID.replace(
      "    port: 22\n",
      "    port: 22\n    tls: {port: 22, name: a.example, __proto__: 1}\n",
    ),
  );
  assertEquals(endpoint.map((x) => x.path), ["services.sshd.tls.__proto__"]);
  // The file reader (fast read first) says the same.
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/r.yaml`, entry);
    const error = await assertRejects(() => loadRegistry(`${dir}/r.yaml`), RegistryError);
    assertEquals(error.problems.map((x) => x.path), ["services.__proto__"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the schema read directly refuses an entry named __proto__, whatever its value, at its key", () => {
  // As JSON.parse (or a YAML loader) makes it: an own key, which zod's record skipped unchecked.
  const registry = (entry: string) =>
    JSON.parse(
      `{"version":1,"accounts":["root"],"services":{"sshd":` +
        `{"kind":"daemon","user":"root","port":22,"unit":"ssh.service"},"__proto__":${entry}}}`,
    );
  for (
    const entry of [
      `{"kind":"daemon","user":"root","port":23,"unit":"other.service"}`,
      `{"kind":"bogus","port":99999}`,
      "5",
    ]
  ) {
    const checked = Registry.safeParse(registry(entry));
    assert(!checked.success, `accepted ${entry}`);
    const paths = checked.error.issues.map((i) => formatPath(i.path as (string | number)[]));
    assert(paths.length > 0 && paths.every((p) => p.startsWith("services.__proto__")), entry);
  }
  // A valid entry's value: refused by its name, as parseRegistry's name rule says.
  const named = Registry.safeParse(
    registry(`{"kind":"daemon","user":"root","port":23,"unit":"other.service"}`),
  );
  assert(!named.success);
  assertEquals(named.error.issues.map((i) => i.path), [["services", "__proto__"]]);
  assert(named.error.issues[0]!.message.includes('Entry name "__proto__"'));
});

Deno.test("a field another kind uses is an error for this kind (strict per kind)", () => {
  const p = problemsOf(VALID.replace("    kind: daemon\n", "    kind: daemon\n    container: x\n"));
  assertEquals(p.map((x) => x.path), ["services.sshd.container"]);
});

Deno.test("a wrong type is an error naming the field", () => {
  const p = problemsOf(VALID.replace("port: 22", 'port: "twenty-two"'));
  assertEquals(p.length, 1);
  assertEquals(p[0]!.path, "services.sshd.port");
  assertEquals(p[0]!.line, 25);
});

Deno.test("a port claimed by two entries is an error", () => {
  const p = problemsOf(VALID.replace("port: 22", "port: 8443"));
  assertEquals(p.map((x) => [x.path, x.message]), [[
    "services.sshd.port",
    'Port 8443 is already claimed by "web"',
  ]]);
});

Deno.test("a container claimed twice in one account is an error", () => {
  const p = problemsOf(
    VALID.replace("container: publisher\n    user: alice", "container: web\n    user: root"),
  );
  assertEquals(p.map((x) => x.path), ["services.publish.container"]);
  assert(p[0]!.message.includes('already claimed by "web"'));
});

Deno.test("the same container name in two accounts is two containers", () => {
  parseRegistry(VALID.replace("container: publisher", "container: web"));
});

Deno.test("an address declared twice is an error", () => {
  const p = problemsOf(VALID.replace("web: old.example.org", "web: app.example.org"));
  assertEquals(p.map((x) => x.path), ["services.old.web"]);
  assertEquals(p[0]!.line, 15);
});

Deno.test("every problem is reported at once, schema and cross-entry together, in line order", () => {
  const text = VALID
    .replace("port: 22", "port: 8080") // duplicate port
    .replace("    kind: daemon\n", "    kind: daemon\n    colour: blue\n") // unknown key
    .replace("timer: publish.timer", "timer: publish.service") // not a timer
    .replace("redirect: https://app.example.org/", "redirect: ftp://x") // wrong scheme
    .replace("version: 1", "version: 2");
  const p = problemsOf(text);
  assertEquals(p.map((x) => x.path), [
    "version",
    "services.old.redirect",
    "services.publish.timer",
    "services.sshd.colour",
    "services.sshd.port",
  ]);
  for (let i = 1; i < p.length; i++) assert(p[i - 1]!.line <= p[i]!.line);
});

Deno.test("an unknown kind names the kinds there are", () => {
  const p = problemsOf(VALID.replace("kind: daemon", "kind: cron"));
  assertEquals(p.map((x) => x.path), ["services.sshd.kind"]);
  assert(p[0]!.message.includes("service, site, batch, daemon"));
});

Deno.test("a missing required field is named", () => {
  const p = problemsOf(VALID.replace("    timer: publish.timer\n", ""));
  assertEquals(p.map((x) => [x.path, x.message]), [[
    "services.publish.timer",
    'Missing required field "timer"',
  ]]);
});

Deno.test("a missing version is said missing, a wrong one unsupported", () => {
  const missing = problemsOf(VALID.replace("version: 1\n", ""));
  assertEquals(missing.map((x) => [x.path, x.message]), [[
    "version",
    'Missing required field "version"',
  ]]);
  const wrong = problemsOf(VALID.replace("version: 1\n", "version: 2\n"));
  assertEquals(wrong.map((x) => x.path), ["version"]);
  assert(wrong[0]!.message.startsWith("Unsupported registry version"), wrong[0]!.message);
});

Deno.test("a container without an account, or in an account not asked about, is an error", () => {
  assertEquals(
    problemsOf(VALID.replace("    user: alice\n", "")).map((x) => x.path),
    ["services.publish.user"],
  );
  const p = problemsOf(VALID.replace("user: alice", "user: bob"));
  assert(p[0]!.message.includes("not in accounts"));
});

Deno.test("malformed YAML and duplicate keys are errors with their position", () => {
  const p = problemsOf("version: 1\naccounts: [root\nservices: {}\n");
  assert(p.length >= 1);
  assert(p[0]!.line >= 2);
  const d = problemsOf(
    "version: 1\naccounts: [root]\nservices:\n  a: {kind: daemon}\n  a: {kind: daemon}\n",
  );
  assertEquals([d[0]!.line, d[0]!.column], [5, 3]);
  assert(d[0]!.message.includes("unique"));
});

Deno.test("the message names file, line and field", () => {
  const error = assertThrows(
    () => parseRegistry(VALID.replace("port: 22", "port: 70000"), "/etc/mesh/registry.yaml"),
    RegistryError,
  );
  assert(
    error.message.includes("/etc/mesh/registry.yaml:25:11: services.sshd.port:"),
    error.message,
  );
});

Deno.test("a registry path that is missing or a directory is a clear error", async () => {
  const missing = await assertRejects(
    () => loadRegistry("/nonexistent/registry.yaml"),
    RegistryError,
  );
  assert(missing.message.includes('"/nonexistent/registry.yaml"'));
  assert(missing.message.includes("no such file"));
  const dir = await assertRejects(() => loadRegistry("/tmp"), RegistryError);
  assert(dir.message.includes("it is a directory"));
});

Deno.test("the JSON Schema describes the kinds for editors", () => {
  const schema = JSON.stringify(registryJsonSchema());
  for (const kind of ["service", "site", "batch", "daemon"]) assert(schema.includes(`"${kind}"`));
  assert(schema.includes('"additionalProperties":false'));
});

Deno.test("P: every kind, and the top level, refuse a field they do not have", () => {
  const cases: [string, string][] = [
    ["    container: web\n", "services.web.colour"], // service
    ["    redirect: https://app.example.org/\n", "services.old.colour"], // site
    ["    timer: publish.timer\n", "services.publish.colour"], // batch
  ];
  for (const [after, path] of cases) {
    assertEquals(
      problemsOf(VALID.replace(after, `${after}    colour: blue\n`)).map((p) => p.path),
      [
        path,
      ],
    );
  }
  assertEquals(
    problemsOf(VALID.replace("version: 1\n", "version: 1\ncolour: blue\n")).map((p) => p.path),
    ["colour"],
  );
});

Deno.test("P: an account listed twice, and a redirect without addresses, are errors", () => {
  assertEquals(
    problemsOf(VALID.replace("accounts: [root, alice]", "accounts: [root, alice, root]"))
      .map((p) => [p.path, p.message]),
    [["accounts[2]", 'Account "root" is listed twice']],
  );
  assertEquals(
    problemsOf(VALID.replace("    web: old.example.org\n", "")).map((p) => [p.path, p.message]),
    [["services.old.redirect", "A redirect needs the web addresses that redirect"]],
  );
});

Deno.test("a bad entry name is named, and does not hide the problems of its entry", () => {
  const p = problemsOf(
    VALID.replace("  sshd:\n", '  "bad name":\n').replace("port: 22", "port: 70000"),
  );
  assertEquals(p.map((x) => x.path).sort(), ['services["bad name"]', 'services["bad name"].port']);
  assert(
    p.some((x) => x.message.includes('Entry name "bad name" must be letters')),
    JSON.stringify(p),
  );
  const twice = problemsOf(VALID.replace("port: 22", "port: [22, 22]"));
  assertEquals(twice.map((x) => x.message), ["Port 22 is listed twice in this entry"]);
});

Deno.test("an invalid kind does not hide the entry's other problems", () => {
  const p = problemsOf(`version: 1
accounts: [root]
services:
  a:
    kind: cron
    user: "Bad User"
    port: "eighty"
    web: UPPER.example.org
    state: [relative]
`);
  assertEquals(p.map((x) => x.path), [
    "services.a.kind",
    "services.a.user",
    "services.a.port",
    "services.a.web",
    "services.a.state[0]",
  ]);
  assert(p[0]!.message.includes("service, site, batch, daemon"), p[0]!.message);
  // kind missing altogether: the same
  const missing = problemsOf("version: 1\naccounts: [root]\nservices:\n  a: {port: 0}\n");
  assertEquals(missing.map((x) => x.path), ["services.a.kind", "services.a.port"]);
});

Deno.test("a port that is not a number says what a port is, one or in a list", () => {
  const one = problemsOf(VALID.replace("port: 22", 'port: "eighty"'));
  assertEquals(one.map((x) => [x.path, x.message]), [[
    "services.sshd.port",
    'Must be a port number, 1 to 65535, or a list of them (not "eighty")',
  ]]);
  const list = problemsOf(VALID.replace("port: 22", 'port: [22, "x", 70000]'));
  assertEquals(list.map((x) => x.path), ["services.sshd.port[1]", "services.sshd.port[2]"]);
  assert(list[0]!.message.includes('not "x"'), list[0]!.message);
  assert(list[1]!.message.includes("65535"), list[1]!.message);
  const web = problemsOf(VALID.replace("web: old.example.org", "web: 5"));
  assertEquals(web.map((x) => x.path), ["services.old.web"]);
  assert(web[0]!.message !== "Invalid input", web[0]!.message);
});

Deno.test("a registry of two YAML documents says so plainly", () => {
  const p = problemsOf(VALID + "---\nversion: 1\n");
  assertEquals(p.length, 1);
  assertEquals([p[0]!.line, p[0]!.column], [26, 1]);
  assert(
    p[0]!.message.startsWith("The registry must be one YAML document"),
    p[0]!.message,
  );
  assert(!p[0]!.message.includes("parseAllDocuments"), p[0]!.message);
});

Deno.test("a large registry places every problem at its line and column", () => {
  // 20,000 entries of 3 lines each after a 4-line head; every 1,000th entry has a port that is
  // not a number (its 3rd line) and an unknown field (a 4th line), and the last one repeats the
  // name of the first.
  const lines = ["version: 1", "accounts: [root]", "services:"];
  const expected: { line: number; column: number; path: string }[] = [];
  for (let i = 0; i < 20_000; i++) {
    const name = i === 19_999 ? "entry-0" : `entry-${i}`;
    const bad = i % 1000 === 999 && i !== 19_999;
    lines.push(`  ${name}:`, "    kind: daemon");
    if (bad) {
      expected.push({ line: lines.length + 1, column: 11, path: `services.${name}.port` });
      lines.push("    port: eighty");
      expected.push({ line: lines.length + 1, column: 5, path: `services.${name}.colour` });
      lines.push("    colour: blue");
    } else lines.push(`    port: ${1024 + i}`);
  }
  const text = lines.join("\n") + "\n";
  // The repeated key is a YAML problem: reported alone, where the second one starts.
  const dup = problemsOf(text);
  assertEquals(dup.map((p) => [p.line, p.column, p.message]), [
    [lines.length - 2, 3, "Map keys must be unique"],
  ]);
  const p = problemsOf(text.replace(/^ {2}entry-0:$(?![\s\S]*^ {2}entry-0:$)/m, "  entry-last:"));
  assertEquals(p.map(({ line, column, path }) => ({ line, column, path })), expected);
  assert(p[0]!.message.startsWith("Must be a port number"), p[0]!.message);
  assertEquals(p[1]!.message, 'Unknown field "colour" for kind daemon');
});

Deno.test("duplicate keys at any depth are found where and in the order the yaml package says", () => {
  const cases = [
    "a: 1\na: 2\n",
    "a: 1\n&x a: 2\n",
    "a: 1\n!!str a: 2\n",
    "? a\n: 1\n? a\n: 2\n",
    ": 1\n: 2\n",
    "{a: 1, a: 2}\n",
    "s:\n  x: {p: 1, p: 2}\n  x: 3\n",
    "1: a\n'1': b\n1: c\n",
    'a: 1\n"a": 2\n',
    "? |\n  a\n: 1\n? |\n  a\n: 2\n",
    "{: 1, : 2}\n",
    "x: &m {a: 1}\ny: *m\n*m : 1\n",
    ".nan: 1\n.nan: 2\n",
    "- a: 1\n  a: 2\n- b: 1\n  b: 2\n",
    "a: [b: 1, b: 2]\n",
    "services:\n  a: {kind: daemon}\n  b: {kind: daemon, port: 1, port: 2}\n  a: {kind: site}\n",
  ];
  for (const text of cases) {
    const lineCounter = new LineCounter();
    const errors =
      parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false }).errors;
    const expected = errors.map((e) => {
      const { line, col } = lineCounter.linePos(e.pos[0]);
      return [line, col, e.message.split("\n")[0]!];
    });
    let got: unknown[] = [];
    try {
      parseRegistry(text);
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      if (expected.length > 0) got = error.problems.map((p) => [p.line, p.column, p.message]);
    }
    assertEquals(got, expected, JSON.stringify(text));
  }
  // A duplicate key and a syntax error together: both, in the package's order.
  const both = problemsOf("version: 1\nversion: 1\naccounts: [root\n");
  assert(both.length >= 2, JSON.stringify(both));
  assert(
    both.some((p) => p.message === "Map keys must be unique" && p.line === 2),
    JSON.stringify(both),
  );
});

Deno.test("parsing leaves process.env as it was, also when the registry is refused", () => {
  const env = process.env;
  parseRegistry(VALID);
  assert(process.env === env, "process.env is the same object after a parse");
  assertThrows(() => parseRegistry("version: 1\nversion: 2\n"), RegistryError);
  assert(process.env === env, "process.env is the same object after a refused parse");
});
