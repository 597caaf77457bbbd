/**
 * The check of a valid registry without zod (reconcile/registry_base.ts `validRegistry`) held
 * equal to the zod schema (reconcile/registry_schema.ts `Registry`): whatever the plain check
 * accepts, the schema accepts too and returns the same values with the keys in the same order;
 * what it gives up on is left to the schema. Seeded mutations of valid registries (every field
 * broken each way a rule can be broken, keys reordered, added, removed, names and claims
 * repeated) cover the near misses. And reading a valid registry file loads no zod; an invalid
 * one does, and its problems keep their lines and columns.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { validRegistry } from "../../reconcile/registry_base.ts";
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
  "ftp://a.org/",
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
  "x",
  "__proto__",
];

function mutate(r: Rng, d: Obj): void {
  const services = (typeof d.services === "object" && d.services !== null ? d.services : {}) as Obj;
  const entries = Object.values(services).filter((x): x is Obj =>
    typeof x === "object" && x !== null && !Array.isArray(x)
  );
  const target = entries.length > 0 && r.chance(0.85) ? r.pick(entries) : d;
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

Deno.test("a registry checked without zod is the schema's own: same values, same key order", () => {
  const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16);
  const r = rng(seed);
  let fast = 0;
  let accepted = 0;
  for (let n = 0; n < 4000; n++) {
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
    if (want.success) accepted++;
    if (got === undefined) continue;
    fast++;
    const where = `seed ${seed}, input ${n}: ${text}`;
    assert(want.success, `accepted without zod, refused by the schema: ${where}`);
    assertEquals(JSON.stringify(got), JSON.stringify(want.data), where);
  }
  // The plain check is used: most valid registries (all but those with a redirect) take it.
  assert(fast > accepted / 2 && fast > 500, `fast ${fast} of ${accepted} accepted`);
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
        if (got !== undefined) {
          assert(want.success, `accepted without zod, refused by the schema: ${text}`);
          assertEquals(JSON.stringify(got), JSON.stringify(want.data), text);
        }
        checked++;
      }
    }
  }
  assert(checked > 1000);
});

Deno.test("a valid registry of every kind is checked without zod; a redirect is left to zod", () => {
  const d = {
    services: {
      web: { port: 8080, user: "root", container: "web", kind: "service", web: "a.example.org" },
      docs: { kind: "site", web: ["docs.example.org"] },
      publish: { kind: "batch", timer: "publish.timer" },
      ssh: { unit: "ssh.service", kind: "daemon", port: [22], database: "x" },
    },
    accounts: ["root"],
    version: 1,
  };
  const got = validRegistry(d) as Registry | undefined;
  assertEquals(JSON.stringify(got), JSON.stringify(Registry.parse(d)));
  assertEquals(Object.keys(got!), ["version", "accounts", "services"]);
  const rooted = validRegistry({ ...d, roots: ["/etc/mesh/ca.pem"] }) as Registry | undefined;
  assertEquals(Object.keys(rooted!), ["version", "accounts", "roots", "services"]);
  assertEquals(
    JSON.stringify(rooted),
    JSON.stringify(Registry.parse({ ...d, roots: ["/etc/mesh/ca.pem"] })),
  );
  const backup = { maxAge: "26h", restic: { passwordFile: "/p", repository: "/srv/restic" } };
  const backed = validRegistry({ ...d, backup }) as Registry | undefined;
  assertEquals(Object.keys(backed!), ["version", "accounts", "backup", "services"]);
  assertEquals(JSON.stringify(backed), JSON.stringify(Registry.parse({ ...d, backup })));
  assertEquals(Object.keys(got!.services.web!), ["kind", "container", "user", "port", "web"]);
  assertEquals(got!.services.web!.port, [8080]);
  const redirect = {
    version: 1,
    accounts: ["root"],
    services: { old: { kind: "site", web: "old.example.org", redirect: "https://example.org/" } },
  };
  assertEquals(validRegistry(redirect), undefined);
  assert(Registry.safeParse(redirect).success);
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
    // A redirect (which the plain check leaves to zod) is still valid, read with zod.
    const redirect = `${valid}  old:\n    kind: site\n    web: old.example.org\n` +
      "    redirect: https://example.org/\n";
    assertEquals(await read(redirect), { outcome: ["web", "ssh", "old"], zod: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
