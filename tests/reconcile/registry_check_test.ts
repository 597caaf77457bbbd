/**
 * The read of a valid registry without zod (reconcile/registry_fast.ts `validRegistry`: the
 * validator generated from the schema, then the schema's transforms) held equal to the zod schema
 * (reconcile/registry_schema.ts `Registry`): it accepts exactly what the schema accepts and
 * returns the same values with the keys in the same order. Seeded mutations of valid registries
 * (every field broken each way a rule can be broken, keys reordered, added, removed, names and
 * claims repeated) cover the near misses. And reading a valid registry file loads no zod; an
 * invalid one does, and its problems keep their lines and columns.
 */

import { z } from "zod";
import { assert, assertEquals } from "../support/assert.ts";
import { isHttpUrl, urlAsRead } from "../../reconcile/registry_base.ts";
import { validRegistry } from "../../reconcile/registry_fast.ts";
import { Registry } from "../../reconcile/registry_schema.ts";
import { type Rng, rng } from "../support/rng.ts";
import { mutateFields, type Obj } from "../support/mutate.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

function entry(r: Rng, i: number): Obj {
  const extra = (o: Obj, key: string, value: () => unknown) => {
    if (r.chance(0.4)) o[key] = value();
    return o;
  };
  const shared = (o: Obj) => {
    extra(o, "port", () => r.chance(0.5) ? 1000 + i : [2000 + 2 * i, 2001 + 2 * i]);
    // A TLS port of the entry's, one endpoint or a list, one name or a list of them.
    const ports = o.port === undefined ? [] : [o.port].flat() as number[];
    if (ports.length > 0 && r.chance(0.4)) {
      const names = r.pick([`t${i}.example.org`, [`t${i}.example.org`, "10.0.0.1", "::1"]]);
      const tls: Obj = { port: ports[0], name: names };
      if (r.chance(0.3)) tls.starttls = "postgres";
      o.tls = r.chance(0.5) ? tls : [tls];
    }
    extra(o, "web", () => r.chance(0.5) ? `s${i}.example.org` : [`a${i}.example.org`, "*.w" + i]);
    extra(o, "telemetry", () => r.chance(0.5));
    extra(o, "secrets", () => r.pick([[], ["token"], ["a", "b"]]));
    extra(o, "state", () => r.pick([[], [`/srv/${i}`], ["/", "/a/b"]]));
    extra(o, "database", () => r.chance(0.5) ? `db${i}` : [`db${i}`, `x${i}`]);
    extra(o, "note", () => r.pick(["", "kept by hand\n", "é ✓"]));
    return o;
  };
  const user = () => r.pick(["root", "alice"]);
  switch (r.int(4)) {
    case 0:
      return shared({ kind: "service", user: user(), container: `c${i}` });
    case 1:
      return shared(extra({ kind: "site", web: `site${i}.example.org` }, "container", () => {
        return `site${i}`;
      }));
    case 2:
      return shared(
        extra({ kind: "batch", timer: r.pick([`t${i}.timer`, `t@${i}.timer`]) }, "user", user),
      );
    default:
      return shared(extra({ kind: "daemon" }, "unit", () => `d${i}.service`));
  }
}

/** Values that break a field each way a rule can be broken (and some that do not). */
const BAD_VALUES: unknown[] = [
  null,
  0,
  1,
  65535,
  65536,
  -1,
  1.5,
  Infinity,
  NaN,
  true,
  [],
  {},
  ["x"],
  [1],
  [0],
  [80, 80],
  ["a.org", "a.org"],
  [""],
  "",
  " ",
  "x",
  "Root",
  "a b",
  "-x",
  "_x$",
  "x$",
  "ä",
  "*",
  "*.a.org",
  "A.org",
  "a.org",
  "a..org",
  "/a/../b",
  "/a\u0000b",
  "/srv",
  "rel",
  "x.timer",
  "x@.timer",
  "x@y.timer",
  "x.service",
  "x@.service",
  "https://a.org/",
  " HTTP://a.org/x\ty ",
  "https:a.org",
  "ftp://a.org/",
  "1h30m",
  "0s",
  "fe80::1",
  "10.0.0.1",
  "postgres",
  { port: 80, name: "a.org" },
  { port: 80, name: ["a.org"], starttls: "postgres" },
  { port: 80, name: "*.a.org" },
  { port: 80, name: [] },
  [{ port: 80, name: "a.org", starttls: "x" }],
  { repository: "/r", passwordFile: "/p" },
  "service",
  "site",
  "batch",
  "daemon",
];

const FIELDS = [
  "kind",
  "container",
  "user",
  "port",
  "web",
  "telemetry",
  "secrets",
  "state",
  "database",
  "note",
  "timer",
  "unit",
  "redirect",
  "tls",
  "name",
  "starttls",
  "maxAge",
  "x",
  "__proto__",
];

const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
/** The objects of {@linkcode BAD_VALUES}, which a mutation sets as values but never changes. */
const SHARED = new Set<unknown>(BAD_VALUES.flat().filter(isObj));

/** The objects of `d` a mutation may change: entries, TLS endpoints, the backup and its restic. */
function objectsOf(d: Obj): Obj[] {
  const services = isObj(d.services) ? Object.values(d.services).filter(isObj) : [];
  const tls = services.flatMap((e) => [e.tls].flat().filter(isObj));
  const backup = [d.backup, isObj(d.backup) ? d.backup.restic : undefined].filter(isObj);
  return [...services, ...tls, ...backup].filter((o) => !SHARED.has(o));
}

function mutate(r: Rng, d: Obj): void {
  const services = (typeof d.services === "object" && d.services !== null ? d.services : {}) as Obj;
  const entries = Object.values(services).filter((x): x is Obj =>
    typeof x === "object" && x !== null && !Array.isArray(x)
  );
  const objects = objectsOf(d);
  const target = objects.length > 0 && r.chance(0.85) ? r.pick(objects) : d;
  const which = r.int(8);
  switch (which) {
    case 0: // a field's value broken
    case 1: // a field removed
    case 2: // a field added: known to another kind, unknown, or an own "__proto__"
    case 3: // keys in another order: still valid, the output in the schema's order
      mutateFields(r, target, {
        which,
        bad: BAD_VALUES,
        fields: FIELDS,
        added: [...BAD_VALUES, "root", "x.example.org", "c1", 7000, ["s"], "t1.timer"],
      });
      break;
    case 4: // the kind changed
      if ("kind" in target) target.kind = r.pick(["service", "site", "batch", "daemon", "x"]);
      break;
    case 5: // a claim repeated across entries
      if (entries.length > 1) {
        const [a, b] = [r.pick(entries), r.pick(entries)];
        const k = r.pick(["port", "web", "container", "user"]);
        if (k in a!) b![k] = a![k];
      }
      break;
    case 6: // an entry name that breaks the rule, or one that does not
      services[r.pick(["-x", "a b", "__x", "10", "2", "a.b_c-d", ""])] = entries.length > 0
        ? { ...r.pick(entries) }
        : { kind: "daemon" };
      break;
    default: // the document's own fields
      d[r.pick(["version", "accounts", "services", "x"])] = r.pick([
        1,
        1.0,
        2,
        "1",
        [],
        ["root"],
        ["root", "root"],
        ["Root"],
        ["alice", "root"],
        {},
        null,
      ]);
  }
}

Deno.test("a registry read without zod is the schema's own: same answer, values, key order", () => {
  const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16);
  const r = rng(seed);
  let accepted = 0;
  for (let n = 0; n < 3000; n++) {
    const services: Obj = {};
    const count = r.int(6);
    for (let i = 0; i < count; i++) services[`e${i}`] = entry(r, i);
    const d: Obj = { version: 1, accounts: r.pick([["root"], ["root", "alice"]]), services };
    if (r.chance(0.2)) d.accounts = ["root", "alice"];
    // The registry's private roots, on every fifth input (outside the seeded draws): valid, or
    // each shape the rule refuses.
    if (n % 5 === 1) {
      d.roots = [["/etc/mesh/ca.pem"], ["/a.pem", "/b.pem"], [], ["ca.pem"], "/ca.pem", [
        "/x/../ca.pem",
      ], [1]][(n / 5 | 0) % 7];
    }
    // The registry's backup, on every fifth input besides: valid, or each shape the rule refuses.
    if (n % 5 === 2) {
      const restic = { repository: "/srv/restic", passwordFile: "/etc/restic.pw" };
      d.backup = [
        { restic, maxAge: "26h" },
        { maxAge: "1h30m", restic: { passwordFile: "/p", repository: "sftp:h:/r" } },
        { restic, maxAge: "26" },
        { restic, maxAge: "0s" },
        { restic, maxAge: 26 },
        { restic: { ...restic, passwordFile: "p" }, maxAge: "1d" },
        { restic: { ...restic, repository: "" }, maxAge: "1d" },
        { restic: { ...restic, extra: 1 }, maxAge: "1d" },
        { restic, maxAge: "1d", extra: 1 },
        { restic },
        "/srv/restic",
      ][(n / 5 | 0) % 11];
    }
    const mutations = n % 4 === 0 ? 0 : 1 + r.int(3);
    for (let m = 0; m < mutations; m++) mutate(r, d);
    // Through JSON, as plain data: an own "__proto__" key survives it (JSON.parse defines it).
    const text = JSON.stringify(d);
    const got = validRegistry(JSON.parse(text));
    const want = Registry.safeParse(JSON.parse(text));
    const where = `seed ${seed}, input ${n}: ${text}`;
    if ((got !== undefined) !== want.success) assertEquals(got !== undefined, want.success, where);
    if (!want.success) continue;
    accepted++;
    assertEquals(JSON.stringify(got), JSON.stringify(want.data), where);
  }
  // Both answers are drawn often.
  assert(accepted > 300 && accepted < 2700, `${accepted} of 3000 accepted`);
});

Deno.test("every field of every kind, set to each value that breaks a rule: the schema's answer", () => {
  const valid: Obj[] = [
    { kind: "service", container: "web", user: "root", port: [80, 443], web: "a.example.org" },
    { kind: "site", container: "site", user: "root", web: ["b.example.org"], note: "x" },
    { kind: "batch", timer: "publish.timer", container: "pub", user: "alice", state: ["/srv"] },
    { kind: "daemon", unit: "ssh.service", port: 22, secrets: ["k"], database: "d" },
    { kind: "daemon", telemetry: true },
  ];
  let checked = 0;
  for (const base of valid) {
    for (const key of [...FIELDS, "accounts", "roots"]) {
      for (const value of BAD_VALUES) {
        const d = { version: 1, accounts: ["root", "alice"], services: { e: { ...base } } };
        if (key === "accounts" || key === "roots") (d as Obj)[key] = value;
        else (d.services.e as Obj)[key] = value;
        const text = JSON.stringify(d);
        const got = validRegistry(JSON.parse(text));
        const want = Registry.safeParse(JSON.parse(text));
        if ((got !== undefined) !== want.success) {
          assertEquals(got !== undefined, want.success, text);
        }
        if (want.success) assertEquals(JSON.stringify(got), JSON.stringify(want.data), text);
        checked++;
      }
    }
  }
  assert(checked > 1000);
});

/** Each object's fields of `o`, at every depth, in reverse order. */
const reversed = (o: unknown): unknown =>
  Array.isArray(o)
    ? o.map(reversed)
    : typeof o === "object" && o !== null
    ? Object.fromEntries(Object.entries(o).reverse().map(([k, v]) => [k, reversed(v)]))
    : o;

const fullShared = (i: number) => ({
  user: "root",
  port: 8000 + i,
  web: `e${i}.example.org`,
  tls: { port: 8000 + i, name: `e${i}.example.org`, starttls: "postgres" },
  telemetry: true,
  secrets: ["token"],
  state: ["/srv"],
  database: "db",
  note: "kept",
});

/**
 * A valid registry with every field the schema knows, of every kind of entry, at every depth (a
 * test below holds it to the schema's fields, so a field the schema gains is added here and the
 * fast read held to it).
 */
const FULL = {
  version: 1,
  accounts: ["root"],
  roots: ["/etc/mesh/ca.pem"],
  backup: { restic: { repository: "/srv/restic", passwordFile: "/p" }, maxAge: "26h" },
  services: {
    web: { kind: "service", container: "web", ...fullShared(0) },
    docs: { kind: "site", container: "docs", redirect: " https://a.org/\n", ...fullShared(1) },
    publish: { kind: "batch", timer: "publish.timer", container: "pub", ...fullShared(2) },
    ssh: { kind: "daemon", unit: "ssh.service", ...fullShared(3) },
  },
};

/** A zod node's definition, as far as {@linkcode schemaFields} reads it. */
interface Def {
  type: string;
  innerType?: { _zod: { def: Def } };
  in?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
  valueType?: { _zod: { def: Def } };
  options?: { _zod: { def: Def } }[];
  discriminator?: string;
  shape?: Record<string, { _zod: { def: Def } }>;
  values?: unknown[];
}

/**
 * The fields of the zod schema `def` (as `backup.restic.repository`; a record's values as `*`, a
 * tagged union's branch as `<tag>`, a list's items at the list's place) into `known`, and those
 * that one of `values` (read at the same place) holds into `held`.
 */
function schemaFields(
  def: Def,
  values: unknown[],
  path: string,
  known: Set<string>,
  held: Set<string>,
): void {
  const isObject = (v: unknown): v is Obj =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  switch (def.type) {
    case "optional":
      return schemaFields(def.innerType!._zod.def, values, path, known, held);
    case "pipe":
      return schemaFields(def.in!._zod.def, values, path, known, held);
    case "array":
      return schemaFields(
        def.element!._zod.def,
        values.flatMap((v) => Array.isArray(v) ? v : []),
        path,
        known,
        held,
      );
    case "record":
      return schemaFields(
        def.valueType!._zod.def,
        values.flatMap((v) => isObject(v) ? Object.values(v) : []),
        `${path}.*`,
        known,
        held,
      );
    case "union":
      for (const option of def.options!) {
        const tag = def.discriminator;
        if (tag === undefined) {
          schemaFields(option._zod.def, values, path, known, held);
          continue;
        }
        const tags = option._zod.def.shape![tag]!._zod.def.values!;
        const tagged = values.filter((v) => isObject(v) && tags.includes(v[tag]));
        schemaFields(option._zod.def, tagged, `${path}<${tags.join("|")}>`, known, held);
      }
      return;
    case "object": {
      const objects = values.filter(isObject);
      for (const [key, field] of Object.entries(def.shape!)) {
        const place = path === "" ? key : `${path}.${key}`;
        known.add(place);
        const there = objects.map((o) => o[key]).filter((v) => v !== undefined);
        if (there.length > 0) held.add(place);
        schemaFields(field._zod.def, there, place, known, held);
      }
      return;
    }
  }
}

Deno.test("the full registry holds every field of the schema, at every depth, of every kind", () => {
  const known = new Set<string>();
  const held = new Set<string>();
  schemaFields((Registry as unknown as { _zod: { def: Def } })._zod.def, [FULL], "", known, held);
  // The walk reaches every object of the schema: an entry's of each kind, a TLS endpoint's.
  for (const place of ["backup.restic.passwordFile", "services.*<site>.redirect"]) {
    assert(known.has(place), `${place} not among ${[...known].join(", ")}`);
  }
  assert(known.has("services.*<daemon>.tls.starttls"), [...known].join(", "));
  const missing = [...known].filter((place) => !held.has(place));
  assertEquals(
    missing,
    [],
    "the schema has fields the full registry (FULL, above) leaves out: add them, so that the " +
      "fast read is held to the schema on them (its values and key order)",
  );
});

Deno.test("every field of every kind, written in reverse: the schema's values in its key order", () => {
  const got = validRegistry(reversed(FULL));
  assertEquals(JSON.stringify(got), JSON.stringify(Registry.parse(reversed(FULL))));
  // And as written, in the schema's order.
  assertEquals(JSON.stringify(validRegistry(FULL)), JSON.stringify(Registry.parse(FULL)));
  assertEquals(got!.services.docs as unknown, {
    ...FULL.services.docs,
    redirect: "https://a.org/",
    port: [8001],
    web: ["e1.example.org"],
    tls: [{ port: 8001, name: ["e1.example.org"], starttls: "postgres" }],
    database: ["db"],
  });
});

Deno.test("a redirect is what zod's URL rule accepts, read as it returns it", () => {
  const url = z.url({ protocol: /^https?$/ });
  for (
    const u of [
      "https://a.org/",
      "http://a.org",
      " HTTPS://A.ORG/x ",
      "https://a.org/\tx\n",
      "\u00a0https://a.org/",
      "https:a.org",
      "https:/a.org",
      "https://",
      "http://a b.org/",
      "http://[::1]:8080/",
      "http://[::1/",
      "ftp://a.org/",
      "javascript:alert(1)",
      "a.org",
      "",
    ]
  ) {
    const want = url.safeParse(u);
    assertEquals(isHttpUrl(u), want.success, JSON.stringify(u));
    if (want.success) assertEquals(urlAsRead(u), want.data, JSON.stringify(u));
  }
});

Deno.test("reading a valid registry file loads no zod; an invalid one does, its problems placed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `
      import { loadRegistry } from "${ROOT}reconcile/registry_load.ts";
      import { RegistryError } from "${ROOT}reconcile/registry_base.ts";
      let outcome;
      try {
        const registry = await loadRegistry(Deno.args[0]);
        outcome = Object.keys(registry.services);
      } catch (error) {
        if (!(error instanceof RegistryError)) throw error;
        outcome = error.problems.map((p) => [p.path, p.line, p.column]);
      }
      console.log(JSON.stringify({ outcome, zod: "__zod_globalConfig" in globalThis }));
    `;
    await Deno.writeTextFile(`${dir}/read.ts`, script);
    const read = async (text: string) => {
      await Deno.writeTextFile(`${dir}/registry.yaml`, text);
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--config",
          `${ROOT}deno.json`,
          `${dir}/read.ts`,
          `${dir}/registry.yaml`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert(out.success, new TextDecoder().decode(out.stderr));
      return JSON.parse(new TextDecoder().decode(out.stdout));
    };
    const valid = "version: 1\naccounts: [root]\nservices:\n" +
      "  web:\n    kind: service\n    user: root\n    container: web\n    port: 8080\n" +
      "  ssh:\n    kind: daemon\n    port: 22\n";
    assertEquals(await read(valid), { outcome: ["web", "ssh"], zod: false });
    assertEquals(await read(valid.replace("port: 22", "port: 'x'")), {
      outcome: [["services.ssh.port", 11, 11]],
      zod: true,
    });
    // A redirect (which the hand-written check this replaced left to zod) is read without zod.
    const redirect = `${valid}  old:\n    kind: site\n    web: old.example.org\n` +
      "    redirect: https://example.org/\n";
    assertEquals(await read(redirect), { outcome: ["web", "ssh", "old"], zod: false });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
