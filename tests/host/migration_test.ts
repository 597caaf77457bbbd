/**
 * A footprint store written before sources existed (format 1, tests/host/fixtures/store_v1,
 * written by the host at the commit before the change) loads, and every record ends up in one
 * source without loss, decided as host/sources.ts `migrationFor` says.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { cli, ROOT } from "../support/mod.ts";
import { Store } from "../../host/store.ts";
import { migrationFor } from "../../host/sources.ts";
import { parseTrusted } from "../../lib/declaration.ts";
import { applyBytes } from "../../host/apply.ts";
import { debian } from "../../systems/debian/mod.ts";

const FIXTURE = `${ROOT}tests/host/fixtures/store_v1`;
const PREFIX = "/tmp/mesh-v1-fixture";

interface V1Entry {
  id: string;
  type: string;
  subject: string;
  created: boolean;
  applied: string;
}

/** A state directory holding the fixture's store, its paths re-rooted under `dir`. */
async function withOldStore(fn: (dir: string, old: V1Entry[]) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-migrate-" });
  try {
    const text = (await Deno.readTextFile(`${FIXTURE}/store.json`)).replaceAll(PREFIX, dir);
    await Deno.mkdir(`${dir}/state`, { mode: 0o700 });
    await Deno.writeTextFile(`${dir}/state/store.json`, text);
    await Deno.copyFile(`${FIXTURE}/known-good`, `${dir}/state/known-good`);
    await fn(dir, JSON.parse(text).resources);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const declaration = (resources: unknown[]) =>
  parseTrusted(JSON.stringify({ version: 1, resources }));

Deno.test("the fixture is a store of format 1, as the host wrote it before sources", async () => {
  const data = JSON.parse(await Deno.readTextFile(`${FIXTURE}/store.json`));
  assertEquals(data.version, 1);
  assertEquals(data.resources.length, 6);
  assert(data.resources.every((r: Record<string, unknown>) => !("source" in r)));
});

Deno.test("a format 1 store: claimed records go to their source, the rest to the bundle that fed it", async () => {
  await withOldStore(async (dir, old) => {
    const locals = [{
      name: "web",
      origin: "declarations" as const,
      digest: "sha256:x",
      declaration: declaration([
        {
          id: "conf",
          type: "file",
          path: `${dir}/root/srv/app/app.conf`,
          content: "",
          mode: "0644",
        },
      ]),
    }];
    const bundle = declaration([
      { id: "etc", type: "directory", path: `${dir}/root/etc`, mode: "0755" },
    ]);
    const migration = await migrationFor(`${dir}/state`, { bundle, locals });
    const store = await Store.load(`${dir}/state`, { migration });
    assertEquals(store.format, 1);
    const entries = store.entries();
    // Without loss: every record, in its order, with whether the host created it and when.
    assertEquals(
      entries.map(({ id, type, subject, created, applied }) => ({
        id,
        type,
        subject,
        created,
        applied,
      })),
      old,
    );
    assertEquals(entries.map((e) => [e.id, e.source]), [
      ["app", "bundle"],
      ["app-conf", "web"],
      ["motd", "bundle"],
      ["etc", "bundle"],
      ["db-data", "bundle"],
      ["stamp", "bundle"],
    ]);
    await store.save();
    store.release();
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/state/store.json`));
    assertEquals(saved.version, 2);
    assertEquals(Object.keys(saved.sources).sort(), ["bundle", "web"]);
    const again = await Store.load(`${dir}/state`);
    again.release();
    assertEquals(again.format, 2);
    assertEquals(again.entries(), entries);
  });
});

Deno.test("a format 1 store: the link fed it when it keeps a link declaration; else `local`", async () => {
  await withOldStore(async (dir) => {
    await Deno.mkdir(`${dir}/state/link`);
    await Deno.writeTextFile(`${dir}/state/link/declaration.json`, "{}");
    const linked = await Store.load(`${dir}/state`, {
      readOnly: true,
      migration: await migrationFor(`${dir}/state`, { locals: [] }),
    });
    linked.close();
    assert(linked.entries().every((e) => e.source === "link"));
    await Deno.remove(`${dir}/state/link`, { recursive: true });
    // No source claims anything, no link: what `apply FILE` fed, source `local`.
    const plain = await Store.load(`${dir}/state`, {
      readOnly: true,
      migration: await migrationFor(`${dir}/state`, {
        bundle: declaration([{ id: "x", type: "directory", path: "/elsewhere", mode: "0755" }]),
        locals: [],
      }),
    });
    plain.close();
    assert(plain.entries().every((e) => e.source === "local"));
  });
});

Deno.test("a migrated store keeps working: owned shows sources, and the old records' source keeps them", async () => {
  await withOldStore(async (dir, old) => {
    // The tree the fixture's declaration made, so that applying it again is a no-op.
    const text = (await Deno.readTextFile(`${FIXTURE}/declaration.json`)).replaceAll(PREFIX, dir);
    await Deno.mkdir(`${dir}/root/srv/app`, { recursive: true });
    await Deno.mkdir(`${dir}/root/var/lib/db`, { recursive: true, mode: 0o700 });
    await Deno.chmod(`${dir}/root/var/lib/db`, 0o700);
    await Deno.writeTextFile(`${dir}/root/srv/app/app.conf`, "port=8080\n");
    await Deno.mkdir(`${dir}/root/etc`, { mode: 0o755 });
    await Deno.chmod(`${dir}/root/etc`, 0o755);
    await Deno.writeTextFile(`${dir}/root/etc/motd`, "managed by mesh\n");
    const owned = await cli("systems/debian/main.ts", [
      "owned",
      "--state-dir",
      `${dir}/state`,
      "--declarations",
      `${dir}/none`,
    ]);
    assertEquals(owned.code, 0, owned.stderr);
    assertStringIncludes(owned.stdout, "local  directory app");
    // Another source applied on the migrated store removes none of the old records.
    const other = await applyBytes(
      new TextEncoder().encode(JSON.stringify({
        version: 1,
        resources: [{ id: "n", type: "directory", path: `${dir}/root/new`, mode: "0755" }],
      })),
      { system: debian, stateDir: `${dir}/state`, version: "test", trusted: true, source: "new" },
    );
    assertEquals(other.outcome, "applied");
    assertEquals(other.changes.map((c) => c.change), ["created"]);
    // The old records' source (`local`: nothing claimed them) applied again: all unchanged.
    const again = await applyBytes(new TextEncoder().encode(text), {
      system: debian,
      stateDir: `${dir}/state`,
      version: "test",
      trusted: true,
    });
    assertEquals(again.outcome, "applied", JSON.stringify(again.problems));
    assertEquals(again.changes.map((c) => c.change), old.map(() => "unchanged"));
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/state/store.json`));
    assertEquals(saved.resources.length, 7);
  });
});
