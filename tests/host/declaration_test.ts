import { assert, assertEquals, assertStringIncludes, assertThrows } from "../support/assert.ts";
import {
  declarationDigest,
  DeclarationError,
  declarationJsonSchema,
  parse,
  parseTrusted,
  validate,
} from "../../lib/declaration.ts";
import { canonicalJson, runArgv } from "../../resources/container/applier.ts";

const DIGEST = "sha256:" + "a".repeat(64);
const VALID = {
  version: 1,
  resources: [
    { id: "etc", type: "directory", path: "/etc/app", mode: "0755", owner: "root", group: "0" },
    { id: "conf", type: "file", path: "/etc/app/app.conf", content: "x=1\n", mode: "0644" },
    { id: "svc", type: "service", unit: "app.service", state: "running", boot: "enabled" },
    { id: "pkg", type: "package", package: "curl" },
    {
      id: "web",
      type: "container",
      name: "web",
      image: `localhost:5000/web@${DIGEST}`,
      env: { MODE: "prod" },
      ports: ["127.0.0.1:8080:80", "8443:443/tcp"],
      volumes: ["/srv/web:/data"],
      args: ["--read-only"],
      command: ["httpd", "-f"],
    },
  ],
};
const ACTION = {
  id: "init-db",
  type: "action",
  command: ["sh", "-c", "true"],
  verify: ["true"],
  in: "web",
};

function problems(input: unknown, trusted = true) {
  const text = typeof input === "string" ? input : JSON.stringify(input);
  const error = assertThrows(() => (trusted ? parseTrusted(text) : parse(text)), DeclarationError);
  return error.problems;
}

function withResource(patch: Record<string, unknown>, index = 1) {
  const copy = structuredClone(VALID) as { version: unknown; resources: Record<string, unknown>[] };
  copy.resources[index] = { ...copy.resources[index], ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === undefined) delete copy.resources[index]![k];
  return copy;
}

Deno.test("a valid declaration parses, every type", () => {
  const d = parse(JSON.stringify(VALID));
  assertEquals(d.resources.map((r) => r.type), [
    "directory",
    "file",
    "service",
    "package",
    "container",
  ]);
});

Deno.test("parse refuses actions; parseTrusted must be asked for them by name", () => {
  const input = { ...VALID, resources: [...VALID.resources, ACTION] };
  const p = problems(input, false);
  assertEquals(p.map((x) => [x.path, x.id]), [["resources[5]", "init-db"]]);
  assert(p[0]!.message.includes("trusted"));
  assertEquals(parseTrusted(JSON.stringify(input)).resources.length, 6);
});

Deno.test("an unknown version, type or field refuses the whole, with JSON paths", () => {
  assertEquals(problems({ ...VALID, version: 2 }).map((x) => x.path), ["version"]);
  assertEquals(problems(withResource({ type: "symlink" })).map((x) => x.path), [
    "resources[1].type",
  ]);
  const unknown = problems(withResource({ image: "x" }));
  assertEquals(unknown.map((x) => [x.path, x.id, x.message]), [[
    "resources[1].image",
    "conf",
    'Unknown field "image"',
  ]]);
  assertEquals(problems({ ...VALID, extra: true }).map((x) => x.path), ["extra"]);
});

Deno.test("hostile paths are refused", () => {
  for (
    const [path, words] of [
      ["etc/app.conf", "absolute"],
      ["/etc/../shadow", "'..'"],
      ["/etc/app\0.conf", "NUL"],
      ["/etc//app.conf", "normalised"],
      ["/etc/app/", "normalised"],
      ["/etc/./app.conf", "normalised"],
      ["/", "root"],
    ] as const
  ) {
    const p = problems(withResource({ path }));
    assertEquals(p.map((x) => x.path), ["resources[1].path"], path);
    assert(p[0]!.message.includes(words), `${JSON.stringify(path)}: ${p[0]!.message}`);
  }
});

Deno.test("duplicate ids and two resources on one path, unit, package or container are refused", () => {
  const dupId = problems(withResource({ id: "etc" }));
  assert(
    dupId.some((x) => x.path === "resources[1].id" && x.message.includes("resources[0]")),
    JSON.stringify(dupId),
  );
  const samePath = problems(withResource({ path: "/etc/app" }));
  assertEquals(samePath.map((x) => x.path), ["resources[1].path"]);
  const twice = {
    ...VALID,
    resources: [...VALID.resources, { id: "pkg2", type: "package", package: "curl" }],
  };
  assertEquals(problems(twice).map((x) => x.path), ["resources[5].package"]);
});

Deno.test("a container image not pinned by digest is refused", () => {
  for (
    const image of [
      "nginx:latest",
      "nginx",
      `nginx@sha256:${"a".repeat(63)}`,
      `nginx@sha512:${"a".repeat(64)}`,
    ]
  ) {
    assertEquals(
      problems(withResource({ image }, 4)).map((x) => x.path),
      ["resources[4].image"],
      image,
    );
  }
});

Deno.test("a container's environment variable named __proto__ is data to both reads, its value checked", () => {
  // podman passes it to the container (`podman run --env __proto__=x`, seen on this machine), and
  // JSON.parse makes it an own key: both reads keep it in its place, never as a prototype.
  const text = (value: string) =>
    `{"version":1,"resources":[{"id":"web","type":"container","name":"web",` +
    `"image":"web@${DIGEST}","env":{"A":"1","__proto__":${value},"B":"2"}}]}`;
  const zod = validate(JSON.parse(text('"x"')), { trusted: false });
  for (const [how, d] of [["fast read", parse(text('"x"'))], ["schema", zod]] as const) {
    const c = d.resources[0]!;
    assert(c.type === "container", how);
    assertEquals(Object.keys(c.env ?? {}), ["A", "__proto__", "B"], how);
    assertEquals(Object.getPrototypeOf(c.env), Object.prototype, how);
    assertEquals(Object.getOwnPropertyDescriptor(c.env, "__proto__")?.value, "x", how);
    // The container gets it, and it counts in the container's digest.
    const argv = runArgv({ program: "podman", version: "4", why: "" }, c, "sha256:d");
    assertEquals(argv.slice(argv.indexOf("-e"), argv.indexOf("-e") + 6), [
      "-e",
      "A=1",
      "-e",
      "B=2",
      "-e",
      "__proto__=x",
    ], how);
    assertStringIncludes(canonicalJson(c), '"__proto__":"x"', how);
  }
  // A value that is not a string: refused by both reads, at its key.
  for (const value of ["5", "null", "{}"]) {
    assertEquals(
      problems(text(value)).map((x) => x.path),
      ["resources[0].env.__proto__"],
      value,
    );
    assertThrows(() => validate(JSON.parse(text(value)), { trusted: false }), DeclarationError);
  }
});

Deno.test("every problem is reported at once", () => {
  const input = withResource({ mode: "rwx", path: "relative", colour: "blue" });
  input.resources[0]!.mode = 755;
  input.version = 3;
  const p = problems(input);
  assertEquals(p.map((x) => x.path).sort(), [
    "resources[0].mode",
    "resources[1].colour",
    "resources[1].mode",
    "resources[1].path",
    "version",
  ]);
});

Deno.test("a mode written as a JSON number is refused with the string to write instead", () => {
  const input = withResource({});
  input.resources[0]!.mode = 644;
  input.resources[1]!.mode = 493;
  const p = problems(input);
  assertEquals(p.map((x) => x.message), [
    'Must be an octal mode as a string, not the number 644 (a JSON number is decimal; write "0644")',
    "Must be an octal mode as a string, not the number 493 (a JSON number is decimal; " +
    'write the mode in octal digits such as "0644")',
  ]);
});

Deno.test("not JSON, truncated JSON, invalid UTF-8, a lone surrogate: refused, said why", () => {
  assert(problems('{"version": 1, "resources": [')[0]!.message.includes("not JSON"));
  const bytes = new TextEncoder().encode(JSON.stringify(VALID));
  const broken = new Uint8Array([...bytes.slice(0, 20), 0xff, 0xfe, ...bytes.slice(20)]);
  const utf8 = assertThrows(() => parseTrusted(broken), DeclarationError);
  assertEquals(utf8.problems[0]!.message, "Declaration is not valid UTF-8");
  const surrogate = problems(withResource({ content: "a\ud800b" }));
  assertEquals(surrogate.map((x) => x.path), ["resources[1].content"]);
  assertEquals(problems("[]")[0]!.path, "");
});

Deno.test("content over 16 MiB is refused", () => {
  const p = problems(withResource({ content: "x".repeat(16 * 1024 * 1024 + 1) }));
  assertEquals(p.map((x) => x.path), ["resources[1].content"]);
});

Deno.test("a missing field is named", () => {
  assertEquals(
    problems(withResource({ content: undefined })).map((x) => x.message),
    ['Missing required field "content"'],
  );
});

Deno.test("a missing field is named even where a wrong value has a message of its own", () => {
  // Fields whose schema words a wrong value itself (a mode, the version, an enum, the type):
  // left out, each is said missing, not wrong; given a wrong value, each keeps its own words.
  const missing = (input: unknown) => problems(input).map((x) => `${x.path}: ${x.message}`);
  assertEquals(missing(withResource({ mode: undefined }, 0)), [
    'resources[0].mode: Missing required field "mode"',
  ]);
  assertEquals(missing(withResource({ state: undefined }, 2)), [
    'resources[2].state: Missing required field "state"',
  ]);
  assertEquals(missing(withResource({ type: undefined }, 3)), [
    'resources[3].type: Missing required field "type"',
  ]);
  assertEquals(missing({ resources: [] }), ['version: Missing required field "version"']);
  assertEquals(missing(withResource({ mode: "rw" }, 0)), [
    'resources[0].mode: Must be an octal mode such as "0644"',
  ]);
  assertEquals(missing({ version: 2, resources: [] }), [
    "version: Unsupported declaration version; this host reads version 1",
  ]);
  assertEquals(
    missing(withResource({ state: "paused" }, 2))[0]!.startsWith("resources[2].state: "),
    true,
  );
});

Deno.test("the digest is the sha256 of the bytes; the schema is a JSON Schema", async () => {
  assertEquals(
    await declarationDigest("abc"),
    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  const schema = JSON.stringify(declarationJsonSchema());
  for (const t of ["directory", "file", "service", "package", "container", "action"]) {
    assert(schema.includes(`"${t}"`));
  }
});

Deno.test("a repeated key at any depth refuses the whole, each with its path, with every other problem", () => {
  // JSON.parse would read `resources: []`: an empty declaration that removes everything.
  const text = `{"version":1,"resources":[{"id":"a","type":"directory","path":"/a","mode":"0755",` +
    `"mode":"0700"},{"id":"b","type":"container","name":"b","image":"x","env":{"K":"1","K":"2"}}],` +
    `"resources":[]}`;
  const error = assertThrows(() => parseTrusted(text), DeclarationError);
  assertEquals(error.problems.map((p) => [p.path, p.message.split(" (")[0]]), [
    ["resources[0].mode", 'Duplicate key "mode"'],
    ["resources[1].env.K", 'Duplicate key "K"'],
    ["resources", 'Duplicate key "resources"'],
  ]);
  // Reported with the schema's own problems, and the resource's id when it has one.
  const both = assertThrows(
    () =>
      parse(
        `{"version":1,"resources":[{"id":"a","type":"directory","path":"rel","mode":"0755","mode":"0700"}]}`,
      ),
    DeclarationError,
  );
  assertEquals(both.problems.map((p) => [p.path, p.id]), [
    ["resources[0].mode", "a"],
    ["resources[0].path", "a"],
  ]);
  // Equal keys in different objects are no repetition.
  parse(JSON.stringify({ version: 1, resources: [VALID.resources[0], VALID.resources[1]] }));
});
