/**
 * `mesh-control` refusing bad input, against the REAL PostgreSQL and RabbitMQ: each refusal exits
 * 2 with a message naming what was wrong (a password never shown), and nothing is half-written:
 * no row in the inventory, no broker account.
 *
 * @module
 */

import { SHIPPED } from "../../control/shipped.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import type { CliResult } from "../support/mod.ts";
import { addModule, assignModule, renderDeclarations } from "../../control/inventory.ts";
import {
  BROKER_API_URL,
  controlCli,
  freshInventory,
  type TestInventory,
  uniqueNode,
} from "./support.ts";

const API = new URL(BROKER_API_URL);
const API_AUTH = `Basic ${btoa(`${API.username}:${API.password}`)}`;

/** The HTTP status of the broker's user `name` (404: no such user). */
async function brokerUser(name: string): Promise<number> {
  const r = await fetch(`${API.origin}/api/users/${encodeURIComponent(name)}`, {
    headers: { authorization: API_AUTH },
  });
  await r.body?.cancel();
  return r.status;
}

/** Runs `mesh-control` with an environment holding nothing but `env` and what Deno needs. */
async function controlCliCleanEnv(
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  const keep: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) keep[name] = value;
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", `${ROOT}control/main.ts`, ...args],
    env: { ...keep, ...env },
    clearEnv: true,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

async function count(inv: TestInventory, table: "nodes" | "modules" | "declarations") {
  const [row] = await inv.sql.unsafe(`select count(*)::int as n from ${table}`);
  return row!.n as number;
}

/** A module with two resources. */
const MODULE = JSON.stringify({
  version: 1,
  resources: [
    { id: "etc-mesh", type: "directory", path: "/etc/mesh-test", mode: "0755" },
    {
      id: "motd",
      type: "file",
      path: "/etc/mesh-test/motd",
      content: "managed by mesh\n",
      mode: "0644",
    },
  ],
});

/** An enrolled node (by SQL, no broker account) running {@linkcode MODULE}. */
async function nodeWithModule(inv: TestInventory, node: string): Promise<void> {
  await inv.sql`insert into nodes (name, system) values (${node}, 'debian')`;
  await addModule(inv.sql, "base", MODULE);
  assert(await assignModule(inv.sql, node, "base"));
}

Deno.test("a database that does not answer: exit 2 naming it, the password never shown", async () => {
  const url = "postgres://postgres@127.0.0.1:1/inventory";
  for (const args of [["status"], ["board", "--json"], ["migrate"]]) {
    const r = await controlCli(args, { MESH_DATABASE_URL: url });
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
    assertEquals(r.stdout, "");
    assertStringIncludes(r.stderr, url);
    assertStringIncludes(r.stderr, "Cannot");
  }
  const status = await controlCli(["status"], { MESH_DATABASE_URL: url });
  assertStringIncludes(status.stderr, `Cannot connect to database "${url}"`);

  const secret = "s3cretPassw0rd";
  const withPassword = `postgres://postgres:${secret}@127.0.0.1:1/inventory`;
  for (const args of [["status"], ["board"], ["migrate"], ["node", "assign", "a", "b"]]) {
    // From the environment and from the option.
    for (
      const [how, run] of [
        ["env", () => controlCli(args, { MESH_DATABASE_URL: withPassword })],
        ["option", () => controlCli([...args, "--database", withPassword])],
      ] as const
    ) {
      const r = await run();
      assertEquals(r.code, 2, `${args.join(" ")} (${how}): ${r.stdout}${r.stderr}`);
      assertStringIncludes(r.stderr, "postgres://postgres:***@127.0.0.1:1/inventory");
      assert(!(r.stdout + r.stderr).includes(secret), `the password was shown: ${r.stderr}`);
    }
  }
});

Deno.test("a database URL that is not a postgres:// URL: refused, never shown, never used", async () => {
  const secret = "s3cretPassw0rd";
  for (
    const url of [
      // No scheme: the client would read it as something else and connect to its defaults.
      `postgres:${secret}@127.0.0.1:5432/postgres`,
      `postgres:${secret}@127.0.0.1/inventory`,
      `mysql://postgres:${secret}@127.0.0.1:5432/postgres`,
      `postgres://postgres:${secret}@127.0.0.1:99999/postgres`,
    ]
  ) {
    for (const args of [["status"], ["migrate"]]) {
      const r = await controlCli(args, { MESH_DATABASE_URL: url });
      assertEquals(r.code, 2, `${args.join(" ")} ${url}: ${r.stdout}${r.stderr}`);
      assertEquals(r.stdout, "");
      assertStringIncludes(r.stderr, "not a valid postgres:// or postgresql:// URL");
      assert(!(r.stdout + r.stderr).includes(secret), `the password was shown: ${r.stderr}`);
    }
  }
});

Deno.test("no database given at all: exit 2 saying how to give one", async () => {
  for (const args of [["status"], ["board", "--json"], ["migrate"], ["node", "assign", "a", "b"]]) {
    const cleared = await controlCliCleanEnv(args);
    assertEquals(cleared.code, 2, `${args.join(" ")}: ${cleared.stdout}${cleared.stderr}`);
    assertEquals(cleared.stdout, "");
    assertStringIncludes(cleared.stderr, "pass --database URL or set MESH_DATABASE_URL");
    // Set but empty is not given either.
    const empty = await controlCliCleanEnv(args, { MESH_DATABASE_URL: "" });
    assertEquals(empty.code, 2, `${args.join(" ")}: ${empty.stdout}${empty.stderr}`);
    assertStringIncludes(empty.stderr, "pass --database URL or set MESH_DATABASE_URL");
  }
});

Deno.test("push to a broker that refuses the credential: exit 2, redacted, nothing recorded", async () => {
  const inv = await freshInventory();
  try {
    // A unique name: a fault that let this publish through must not reach another test's queue.
    const node = uniqueNode("web");
    await nodeWithModule(inv, node);
    const secret = "wr0ngPassw0rd";
    for (
      const [broker, says] of [
        [`amqp://guest:${secret}@127.0.0.1:5672/%2F`, "amqp://guest:***@127.0.0.1:5672/%2F"],
        // One that does not answer at all.
        [`amqp://guest:${secret}@127.0.0.1:1/%2F`, "amqp://guest:***@127.0.0.1:1/%2F"],
      ] as const
    ) {
      const r = await controlCli(["push", node], { ...inv.env, MESH_BROKER_URL: broker });
      assertEquals(r.code, 2, `${r.stdout}${r.stderr}`);
      assertEquals(r.stdout, "");
      assertStringIncludes(r.stderr, `Cannot connect to broker "${says}"`);
      assert(!(r.stdout + r.stderr).includes(secret), `the password was shown: ${r.stderr}`);
      assertEquals(await count(inv, "declarations"), 0, "a declaration was recorded");
    }
  } finally {
    await inv.drop();
  }
});

Deno.test("a module file that does not parse: exit 2, every problem with its path, no row", async (t) => {
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-module-" });
  try {
    const cases: { name: string; body: string; says: string[] }[] = [
      { name: "not-json", body: '{"version": 1, "resources": [', says: ["JSON"] },
      {
        name: "bad-fields",
        body: JSON.stringify({
          version: 1,
          resources: [
            { id: "d", type: "directory", path: "/srv/x", mode: "rwxr-xr-x" },
            { id: "f", type: "file", path: "relative/motd", content: "x", mode: "0644" },
          ],
        }),
        says: ["resources[0].mode", "resources[1].path", "2 problems"],
      },
      {
        name: "has-action",
        body: JSON.stringify({
          version: 1,
          resources: [
            { id: "ok", type: "directory", path: "/srv/y", mode: "0755" },
            { id: "run", type: "action", command: ["true"], verify: ["true"] },
          ],
        }),
        says: ["resources[1]", "action"],
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        const file = `${dir}/${c.name}.json`;
        await Deno.writeTextFile(file, c.body);
        const r = await controlCli(["module", "add", file], inv.env);
        assertEquals(r.code, 2, `${r.stdout}${r.stderr}`);
        assertEquals(r.stdout, "");
        assertStringIncludes(r.stderr, `Cannot add module "${c.name}" from "${file}"`);
        for (const s of c.says) assertStringIncludes(r.stderr, s);
        assertEquals(await count(inv, "modules"), SHIPPED.length, "a module was recorded");
      });
    }
    await t.step(
      "the same file, corrected, is added (the refusals were about the file)",
      async () => {
        const file = `${dir}/fine.json`;
        await Deno.writeTextFile(file, MODULE);
        const r = await controlCli(["module", "add", file], inv.env);
        assertEquals(r.code, 0, r.stderr);
        assertStringIncludes(r.stdout, "created module fine version 1 (2 resources");
        assertEquals(await count(inv, "modules"), SHIPPED.length + 1);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
    await inv.drop();
  }
});

Deno.test("enrolling a bad node name: exit 2 naming it, no row, no broker account", async () => {
  const inv = await freshInventory();
  try {
    for (const name of ["bad.name", "Web", "a*b", "report.#", "trail-"]) {
      const r = await controlCli(["node", "enroll", name, "--system", "debian"], inv.env);
      assertEquals(r.code, 2, `${name}: ${r.stdout}${r.stderr}`);
      assertEquals(r.stdout, "");
      assertStringIncludes(r.stderr, JSON.stringify(name));
      assertStringIncludes(r.stderr, "Cannot enroll node");
      assertEquals(await count(inv, "nodes"), 0, `${name} was recorded`);
      assertEquals(await brokerUser(name), 404, `a broker user ${name} exists`);
    }
  } finally {
    await inv.drop();
  }
});

Deno.test("push NODE --behind is refused as two requests; push with neither is refused", async () => {
  const inv = await freshInventory();
  try {
    const node = uniqueNode("web");
    await nodeWithModule(inv, node);
    const both = await controlCli(["push", node, "--behind"], inv.env);
    assertEquals(both.code, 2, `${both.stdout}${both.stderr}`);
    assertEquals(both.stdout, "");
    assertStringIncludes(both.stderr, "different requests");
    assertStringIncludes(both.stderr, `"${node}"`);
    assertStringIncludes(both.stderr, "--behind");
    const reversed = await controlCli(["push", "--behind", node], inv.env);
    assertEquals(reversed.code, 2, `${reversed.stdout}${reversed.stderr}`);
    assertStringIncludes(reversed.stderr, "different requests");

    const neither = await controlCli(["push"], inv.env);
    assertEquals(neither.code, 2, `${neither.stdout}${neither.stderr}`);
    assertEquals(neither.stdout, "");
    assertStringIncludes(neither.stderr, "name a node, or ask for --behind");
    assertEquals(await count(inv, "declarations"), 0, "a declaration was recorded");
  } finally {
    await inv.drop();
  }
});

Deno.test("push --behind with nothing behind says so and pushes nothing", async () => {
  const inv = await freshInventory();
  try {
    const setup = await controlCli(["broker", "setup"], inv.env);
    assertEquals(setup.code, 0, `broker setup: ${setup.stdout}${setup.stderr}`);

    const node = uniqueNode("web");
    await nodeWithModule(inv, node);
    const [rendered] = await renderDeclarations(inv.sql, [node]);
    assert(rendered !== undefined);
    assertEquals(rendered.total, 2);
    await inv.sql`insert into declarations (node, generation, digest, body, total)
        values (${node}, 1, ${rendered.digest}, ${rendered.text}, ${rendered.total})`;
    await inv.sql`
        insert into reports (node, generation, digest, outcome, applied, total, trigger,
          problems, changes, host_version, reported_at)
        values (${node}, 1, ${rendered.digest}, 'applied', 2, 2, 'push', '[]', '[]',
          '0.1.0-test', now())`;

    const status = await controlCli(["status"], inv.env);
    assertEquals(status.code, 0, `the node is not ok: ${status.stdout}${status.stderr}`);

    const r = await controlCli(["push", "--behind"], inv.env);
    assertEquals(r.code, 0, `${r.stdout}${r.stderr}`);
    assertStringIncludes(
      r.stdout,
      "nothing behind: 1 of 1 nodes report a clean apply of their current declaration",
    );
    assert(!r.stdout.includes("pushed"), r.stdout);
    assertEquals(await count(inv, "declarations"), 1, "a declaration was pushed");
  } finally {
    await inv.drop();
  }
});

Deno.test("broker check asks the broker itself: an authenticated AMQP connection, the management API, and with --topology what setup declares", async () => {
  const vhost = `mesh-check-${crypto.randomUUID().slice(0, 8)}`;
  const api = (path: string, method: string, body?: unknown) =>
    fetch(`http://127.0.0.1:15672${path}`, {
      method,
      headers: {
        authorization: `Basic ${btoa("guest:guest")}`,
        "content-type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => {
      await r.body?.cancel();
      assert(r.ok, `${method} ${path}: ${r.status}`);
    });
  await api(`/api/vhosts/${vhost}`, "PUT");
  try {
    await api(`/api/permissions/${vhost}/guest`, "PUT", {
      configure: ".*",
      write: ".*",
      read: ".*",
    });
    const env = {
      MESH_BROKER_URL: `amqp://guest:guest@127.0.0.1:5672/${vhost}`,
      MESH_BROKER_API_URL: "http://guest:guest@127.0.0.1:15672",
    };
    const plain = await controlCli(["broker", "check"], env);
    assertEquals(plain.code, 0, plain.stderr);
    assertStringIncludes(plain.stdout, 'AMQP: authenticated as "guest"');
    assertStringIncludes(plain.stdout, "management API answering");
    // Nothing is declared by a check: the topology is missing until setup.
    const before = await controlCli(["broker", "check", "--topology"], env);
    assertEquals(before.code, 2, before.stdout);
    assertStringIncludes(before.stderr, 'could not find exchange "mesh"');
    assertEquals((await controlCli(["broker", "setup"], env)).code, 0);
    const after = await controlCli(["broker", "check", "--topology"], env);
    assertEquals(after.code, 0, after.stderr);
    assertStringIncludes(after.stdout, "queue mesh.reports exists");
    // A refused credential on either side is named, the password never shown.
    const badAmqp = await controlCli(["broker", "check"], {
      ...env,
      MESH_BROKER_URL: `amqp://guest:wrong-secret@127.0.0.1:5672/${vhost}`,
    });
    assertEquals(badAmqp.code, 2);
    assertStringIncludes(badAmqp.stderr, 'refused the credential of "guest"');
    const badApi = await controlCli(["broker", "check"], {
      ...env,
      MESH_BROKER_API_URL: "http://guest:wrong-secret@127.0.0.1:15672",
    });
    assertEquals(badApi.code, 2);
    assertStringIncludes(badApi.stderr, "/api/overview");
    for (const r of [badAmqp, badApi]) assert(!r.stderr.includes("wrong-secret"));
  } finally {
    await api(`/api/vhosts/${vhost}`, "DELETE");
  }
});
