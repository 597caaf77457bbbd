/**
 * The reads of a valid declaration and a valid store without zod (lib/declaration_base.ts
 * `parseValid`, host/store.ts `validStoreFile`, each the validator generated from its schema)
 * held equal to their zod schemas: whatever the fast read accepts, the schema accepts too and
 * returns the same values (a declaration's with the keys in the same order; a store's in the
 * file's order, the schema's in a file the store wrote); and what it gives up on is left to the
 * schema: only what the schema refuses (a record's key named `__proto__` too: the schemas' records
 * check it as any other key, lib/zod_record.ts).
 * Seeded mutations of valid documents (every field broken each way a rule can be broken, keys
 * reordered, added, removed) cover the near misses. And `mesh-host apply` of a valid declaration
 * loads no zod, neither at start nor while it applies (its store, read the second time, included).
 */

import { assert, assertEquals } from "../support/assert.ts";
import { DeclarationError, validate } from "../../lib/declaration.ts";
import { parseValid, repeatedKeyProblems } from "../../lib/declaration_base.ts";
import { validStoreFile } from "../../host/store.ts";
import { StoreFile } from "../../host/store_schema.ts";
import { type Rng, rng } from "../support/rng.ts";
import { mutateFields, type Obj } from "../support/mutate.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DIGEST = "sha256:" + "a".repeat(64);

function resource(r: Rng, i: number): Obj {
  const id = `r${i}`;
  const path = `/srv/t/${i}`;
  const account = () => r.pick(["root", "0", "www-data", "_svc$", "1000"]);
  const extra = (o: Obj, key: string, value: () => unknown) => {
    if (r.chance(0.5)) o[key] = value();
    return o;
  };
  switch (r.int(6)) {
    case 0:
      return extra(
        extra(
          { id, type: "directory", path, mode: r.pick(["0755", "755", "2775"]) },
          "owner",
          account,
        ),
        "group",
        account,
      );
    case 1:
      return extra(
        extra(
          {
            id,
            type: "file",
            path,
            content: r.pick(["", "x=1\n", "é ✓ 😀\n", "a\u0000b"]),
            mode: "0644",
          },
          "owner",
          account,
        ),
        "group",
        account,
      );
    case 2:
      return extra(
        { id, type: "service", unit: `u${i}.service`, state: r.pick(["running", "stopped"]) },
        "boot",
        () => r.pick(["enabled", "disabled"]),
      );
    case 3:
      return { id, type: "package", package: `p${i}+x` };
    case 4:
      return extra(
        { id, type: "action", command: ["sh", "-c", "true"], verify: [r.pick(["true", "é"])] },
        "in",
        () => "web",
      );
    default: {
      const c: Obj = { id, type: "container", name: `c${i}`, image: `img@${DIGEST}` };
      extra(c, "env", () => {
        const env: Obj = { A: "1", _b: r.pick(["", "é", "x=y"]) };
        // A variable named `__proto__` (podman passes it on), an own key as JSON.parse makes it.
        if (r.chance(0.3)) {
          Object.defineProperty(env, "__proto__", {
            value: r.pick(["x", ""]),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return env;
      });
      extra(c, "ports", () => [r.pick(["80:80", "127.0.0.1:8080:80/tcp", "[::1]:53:53/udp"])]);
      extra(c, "volumes", () => ["/srv:/srv:ro"]);
      extra(c, "args", () => r.pick([[], ["--flag", "é"]]));
      return extra(c, "command", () => ["sh", "-c", "true"]);
    }
  }
}

/** Values that break a field each way a rule can be broken. */
const BAD_VALUES: unknown[] = [
  null,
  0,
  1,
  644,
  true,
  [],
  {},
  ["x"],
  "",
  " ",
  "x",
  "0644 ",
  "8888",
  "00644",
  "relative/path",
  "/",
  "/a/../b",
  "/a/./b",
  "/a//b",
  "/a/",
  "/a\u0000b",
  "/a\ud800b",
  "a\ud800",
  "/" + "x".repeat(4096),
  "/" + "x".repeat(4095),
  "Root",
  "a b",
  "x".repeat(201),
  "running ",
  "enabled",
  "stopped",
  "directory",
  "file",
  "action",
  "container",
  "80",
  "80:80:80",
  "img@sha256:" + "A".repeat(64),
  ["a\u0000"],
  ["\ud800"],
  [""],
  { A: 1 },
  { "1A": "x" },
  { A: "\u0000" },
];

/** One mutation of a valid declaration (it may still be valid). */
function mutate(r: Rng, d: { version: unknown; resources: Obj[] } & Obj): void {
  const resources = (Array.isArray(d.resources) ? d.resources : []).filter((x) =>
    typeof x === "object" && x !== null && !Array.isArray(x)
  );
  const envs = resources.map((x) => x.env).filter((e): e is Obj => typeof e === "object" && !!e);
  const target = resources.length > 0 && r.chance(0.9)
    ? (envs.length > 0 && r.chance(0.2) ? r.pick(envs) : r.pick(resources))
    : d as Obj;
  const which = r.int(7);
  switch (which) {
    case 0: // a field's value broken
    case 1: // a field removed
    case 2: // a field added, known to another type or unknown (an own "__proto__" too)
    case 3: // keys in another order: still valid, the output in the schema's order
      mutateFields(r, target, {
        which,
        bad: BAD_VALUES,
        fields: [
          "owner",
          "group",
          "boot",
          "in",
          "content",
          "unit",
          "env",
          "ports",
          "x",
          "__proto__",
        ],
        added: ["root", "enabled", "web", "x", 1, ["80:80"], { A: "1" }],
      });
      break;
    case 4: // the type changed
      if ("type" in target) target.type = r.pick(["directory", "file", "service", "x"]);
      break;
    case 5: // an id or a subject repeated
      if (resources.length > 1) {
        const [a, b] = [r.pick(resources), r.pick(resources)];
        const k = r.pick(["id", "path", "unit", "package", "name"]);
        if (k in a! && k in b!) b![k] = a![k];
      }
      break;
    default: // an argv broken
      if (Array.isArray(target.command)) {
        target.command = r.pick([[], [1], ["a\u0000"], ["\udc00"], "sh"]);
      }
  }
}

/** What the schema says of `text`: the declaration, or undefined when it refuses it. */
function bySchema(text: string, trusted: boolean): unknown {
  const data = JSON.parse(text);
  if (repeatedKeyProblems(text, data).length > 0) return undefined;
  try {
    return validate(data, { trusted });
  } catch (error) {
    if (error instanceof DeclarationError) return undefined;
    throw error;
  }
}

/** That the fast read of `text` is the schema's answer: both refuse, or both the same value. */
function assertSame(text: string, trusted: boolean, where = text): "fast" | "refused" | "slow" {
  const got = parseValid(text, { trusted });
  const want = bySchema(text, trusted);
  if (got === undefined) {
    assert(want === undefined, `refused without zod, accepted by the schema: ${where}`);
    return want === undefined ? "refused" : "slow";
  }
  assert(want !== undefined, `accepted without zod, refused by the schema: ${where}`);
  assertEquals(JSON.stringify(got), JSON.stringify(want), where);
  return "fast";
}

Deno.test("a declaration read without zod is the schema's own: same answer, values, key order", () => {
  const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16);
  const r = rng(seed);
  const seen = { fast: 0, refused: 0, slow: 0 };
  for (let n = 0; n < 3000; n++) {
    const d = { version: 1, resources: Array.from({ length: r.int(5) }, (_, i) => resource(r, i)) };
    const mutations = n % 4 === 0 ? 0 : 1 + r.int(2);
    for (let m = 0; m < mutations; m++) mutate(r, d as never);
    let text = JSON.stringify(d);
    if (n % 50 === 1) text = text.replace('"version":1', '"version":1,"version":1');
    for (const trusted of [true, false]) {
      seen[assertSame(text, trusted, `seed ${seed}, input ${n}, trusted ${trusted}: ${text}`)]++;
    }
  }
  // Both answers are common: the mutations make near misses as well as valid declarations.
  assert(seen.fast > 2000 && seen.refused > 2000, JSON.stringify(seen));
});

Deno.test("every field of every type, set to each value that breaks a rule: the schema's answer", () => {
  const valid: Obj[] = [
    { id: "etc", type: "directory", path: "/etc/app", mode: "0755", owner: "root", group: "0" },
    { id: "conf", type: "file", path: "/etc/app/c", content: "x", mode: "0644", owner: "1" },
    { id: "svc", type: "service", unit: "app.service", state: "running", boot: "enabled" },
    { id: "pkg", type: "package", package: "curl" },
    { id: "init", type: "action", command: ["sh"], verify: ["true"], in: "web" },
    {
      id: "web",
      type: "container",
      name: "web",
      image: `web@${DIGEST}`,
      env: { A: "1" },
      ports: ["80:80"],
      volumes: ["/a:/a"],
      args: ["x"],
      command: ["sh"],
    },
  ];
  let checked = 0;
  for (const base of valid) {
    for (const key of [...Object.keys(base), "x"]) {
      for (const value of BAD_VALUES) {
        const text = JSON.stringify({ version: 1, resources: [{ ...base, [key]: value }] });
        for (const trusted of [true, false]) {
          assertSame(text, trusted);
          checked++;
        }
      }
    }
  }
  assert(checked > 1000);
});

Deno.test("a valid declaration of every type is read without zod; an action only when trusted", () => {
  const d = {
    version: 1,
    resources: [
      { mode: "0755", path: "/etc/app", type: "directory", id: "etc", group: "0", owner: "root" },
      { id: "conf", type: "file", path: "/etc/app/app.conf", content: "x=1\n", mode: "0644" },
      { id: "svc", type: "service", unit: "app.service", state: "running", boot: "enabled" },
      { id: "pkg", type: "package", package: "curl" },
      { id: "init", type: "action", command: ["sh", "-c", "true"], verify: ["true"], in: "web" },
      {
        command: ["x"],
        env: { B: "2", A: "1" },
        image: `web@${DIGEST}`,
        name: "web",
        type: "container",
        id: "web",
      },
    ],
  };
  const text = JSON.stringify(d);
  const got = parseValid(text, { trusted: true });
  assertEquals(JSON.stringify(got), JSON.stringify(bySchema(text, true)));
  assertEquals(Object.keys(got!.resources[0]!), ["id", "type", "path", "mode", "owner", "group"]);
  assertEquals(Object.keys(got!.resources[5]!), ["id", "type", "name", "image", "env", "command"]);
  assertEquals(parseValid(text, { trusted: false }), undefined); // an action: the schema says why
  const untrusted = { ...d, resources: d.resources.filter((r) => r.type !== "action") };
  assert(parseValid(JSON.stringify(untrusted), { trusted: false }) !== undefined);
});

function storeEntry(r: Rng, i: number): Obj {
  const e: Obj = {
    source: r.pick(["local", "bundle", "web.1"]),
    id: `r${i}`,
    type: r.pick(["directory", "file", "service", "package", "container", "action"]),
    subject: `/srv/${i}`,
    created: r.chance(0.5),
    applied: "2026-12-01T00:00:00.000Z",
  };
  if (r.chance(0.3)) {
    e.original = r.chance(0.5)
      ? { kind: "file", mode: 420, uid: 0, gid: 0, copy: `originals/${i}` }
      : { kind: "directory", mode: 493, uid: 1000, gid: 1000 };
  }
  return e;
}

Deno.test("a store is read without zod exactly when the schema accepts it, as the schema's value", () => {
  const r = rng(Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16));
  const bad: unknown[] = [...BAD_VALUES, -1, 1.5, 2 ** 60, "sha256:x", "link"];
  let fast = 0;
  let reordered = 0;
  for (let n = 0; n < 3000; n++) {
    const sources: Obj = {};
    for (const name of ["local", "bundle", "web.1"]) {
      if (r.chance(0.6)) {
        sources[name] = { // the keys in the schema's order, as the store writes them
          origin: r.pick(["bundle", "link", "declarations", "command"]),
          ...(r.chance(0.5) ? { file: `/etc/mesh/declarations/${name}.json` } : {}),
          declaration: DIGEST,
          applied: "2026-12-01T00:00:00.000Z",
        };
      }
    }
    const data: Obj = {
      version: 2,
      sources,
      resources: Array.from({ length: r.int(4) }, (_, i) => storeEntry(r, i)),
    };
    let inOrder = true;
    if (n % 3 !== 0) {
      const objects: Obj[] = [data, ...Object.values(sources) as Obj[], ...data.resources as Obj[]];
      for (const e of data.resources as Obj[]) if (e.original) objects.push(e.original as Obj);
      const target = r.pick(objects);
      const keys = Object.keys(target);
      const what = r.int(5);
      if (what === 0 && keys.length > 0) target[r.pick(keys)] = r.pick(bad);
      else if (what === 1 && keys.length > 0) delete target[r.pick(keys)];
      else if (what === 2) { // added last: out of the schema's order if the schema has it
        target[r.pick(["x", "file", "original", "copy", "Bad name"])] = "x";
        inOrder = false;
      } else if (what === 3) {
        inOrder = false;
        const entries = Object.entries(target).reverse();
        for (const k of keys) delete target[k];
        for (const [k, v] of entries) target[k] = v;
      } else sources[r.pick(["", "-x", "a".repeat(65), "ok"])] = r.pick([sources.local, {}]);
    }
    const text = JSON.stringify(data);
    const got = validStoreFile(JSON.parse(text));
    const want = StoreFile.safeParse(JSON.parse(text));
    const where = `input ${n}: ${text}`;
    assertEquals(got !== undefined, want.success, `the fast read and the schema differ: ${where}`);
    if (got === undefined) continue;
    fast++;
    // The same values and key order; for an input whose keys were reordered, the same values (the
    // fast read keeps the file's order). -0 and prototypes: the fixed cases below.
    if (inOrder) assertEquals(JSON.stringify(got), JSON.stringify(want.data), where);
    else {
      assertEquals(got, want.data, where);
      reordered++;
    }
  }
  assert(fast > 1000 && reordered > 50, `fast ${fast}, reordered ${reordered}`);
});

Deno.test("mesh-host apply of a valid declaration loads no zod; an invalid one does", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `
      import { applyBytes } from "${ROOT}host/apply.ts";
      import { debian } from "${ROOT}systems/debian/mod.ts";
      const [text, stateDir] = Deno.args;
      const result = await applyBytes(new TextEncoder().encode(text), {
        system: debian, stateDir, version: "test", trusted: true,
      });
      console.log(JSON.stringify({ outcome: result.outcome, zod: "__zod_globalConfig" in globalThis }));
    `;
    await Deno.writeTextFile(`${dir}/run.ts`, script);
    const run = async (declaration: unknown) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--config",
          `${ROOT}deno.json`,
          `${dir}/run.ts`,
          JSON.stringify(declaration),
          `${dir}/state`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert(out.success, new TextDecoder().decode(out.stderr));
      return JSON.parse(new TextDecoder().decode(out.stdout));
    };
    const valid = {
      version: 1,
      resources: [
        { id: "d", type: "directory", path: `${dir}/tree`, mode: "0755" },
        { id: "f", type: "file", path: `${dir}/tree/f`, content: "x\n", mode: "0644" },
      ],
    };
    assertEquals(await run(valid), { outcome: "applied", zod: false }); // creates, and the store
    assertEquals(await run(valid), { outcome: "applied", zod: false }); // reads the store: a no-op
    const invalid = { version: 1, resources: [{ ...valid.resources[0], mode: 644 }] };
    assertEquals(await run(invalid), { outcome: "refused", zod: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** What zod makes of a declaration's text: its value as JSON, or the refusal. */
function zodDeclaration(text: string): string {
  try {
    return JSON.stringify(validate(JSON.parse(text), { trusted: true }));
  } catch (error) {
    return `refused: ${error instanceof Error ? error.message : String(error)}`;
  }
}

Deno.test("fixed edge cases: the fast read gives up or returns zod's value (prototype names, numbers, nulls, order)", () => {
  const d = (resources: string) => `{"version":1,"resources":[${resources}]}`;
  const declarations = [
    d(`{"id":"a","type":"directory","path":"/a","mode":"0755","owner":"_svc$"}`),
    d(`{"type":"directory","id":"a","path":"/a","mode":"0755"}`),
    d(`{"id":"a","type":"action","command":[""],"verify":["x"],"in":"c"}`),
    d(`{"id":"a","type":"file","path":"/a","mode":"0644","content":"\\ud800"}`),
    `{"resources":[],"version":1}`,
    `{"version":1.0,"resources":[]}`,
    d(`{"id":"a","type":"service","unit":"x","state":"running","boot":null}`),
    d(`{"id":"__proto__","type":"package","package":"x"}`),
    d(`{"id":"constructor","type":"package","package":"toString"}`),
    d(`{"id":"a","type":"file","path":"/a/\\u0000","mode":"0644","content":""}`),
  ];
  for (const text of declarations) {
    const fast = parseValid(text, { trusted: true });
    if (fast !== undefined) assertEquals(JSON.stringify(fast), zodDeclaration(text), text);
  }
  // An environment variable named `__proto__` (podman passes it on; JSON.parse makes an own key):
  // kept by both reads, in its place, as data; a value that is not a string refused by both.
  const env = (value: string) =>
    d(`{"id":"a","type":"container","name":"a","image":"a@${DIGEST}","env":{"__proto__":${value},"A":"1"}}`);
  const fast = parseValid(env('"x"'), { trusted: true });
  assertEquals(JSON.stringify(fast), zodDeclaration(env('"x"')));
  const container = fast?.resources[0];
  assertEquals(container?.type === "container" && Object.keys(container.env ?? {}), [
    "__proto__",
    "A",
  ]);
  assertEquals(parseValid(env("5"), { trusted: true }), undefined);
  assert(zodDeclaration(env("5")).startsWith("refused"), zodDeclaration(env("5")));
  const original = (o: string) =>
    `{"version":2,"sources":{"local":{"origin":"command","declaration":"d","applied":"t"}},` +
    `"resources":[{"source":"local","id":"a","type":"file","subject":"/a","created":false,` +
    `"applied":"t","original":${o}}]}`;
  const stores = [
    original(`{"kind":"directory","mode":9007199254740992,"uid":0,"gid":0}`),
    original(`{"kind":"directory","mode":9007199254740991,"uid":-0,"gid":0}`),
    original(`{"kind":"directory","mode":1e400,"uid":0,"gid":0}`),
    original(`{"gid":0,"kind":"file","mode":1,"uid":0,"copy":""}`),
    `{"version":2,"sources":{"constructor":{"origin":"command","declaration":"d","applied":"t"},` +
    `"toString":{"applied":"t","origin":"link","declaration":"d","file":"f"}},"resources":[]}`,
    `{"version":2,"sources":{"10":{"origin":"command","declaration":"d","applied":"t"},` +
    `"2":{"origin":"link","declaration":"d","applied":"t"}},"resources":[]}`,
    `{"version":2,"sources":{"a":{"origin":"command","declaration":"d","applied":"t","file":null}},"resources":[]}`,
    `{"version":2,"sources":[],"resources":[]}`,
  ];
  for (const text of stores) {
    const fast = validStoreFile(JSON.parse(text));
    const zod = StoreFile.safeParse(JSON.parse(text));
    assertEquals(fast !== undefined, zod.success, text);
    // Deep and strict: -0 kept alike, the prototypes of `sources` alike.
    if (fast !== undefined) assertEquals(fast, zod.data, text);
  }
  // A source named `__proto__` (an own key, as JSON.parse makes it) is not a source's name: both
  // refuse it, whatever its value, the schema at its key (zod's own record skipped it unchecked).
  const info = `{"origin":"command","declaration":"d","applied":"t"}`;
  for (const value of ["5", info]) {
    const proto = `{"version":2,"sources":{"a":${info},"__proto__":${value}},"resources":[]}`;
    assertEquals(validStoreFile(JSON.parse(proto)), undefined, proto);
    const zod = StoreFile.safeParse(JSON.parse(proto));
    assert(!zod.success, proto);
    assertEquals(zod.error.issues.map((i) => [i.code, i.path]), [
      ["invalid_key", ["sources", "__proto__"]],
    ]);
  }
});
