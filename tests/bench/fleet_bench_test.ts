/**
 * The fleet bench's simulated node (bench/fleet_rooted.ts) applies under its own root and nowhere
 * else, with the store keeping the declared paths; and the bench itself runs end to end with a few
 * nodes against the real broker and database, and leaves nothing behind. Its figures are the
 * bench's business, never this test's.
 *
 * @module
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
import { applySources, readSource } from "../../host/apply.ts";
import { debian } from "../../systems/debian/mod.ts";
import { FLEET_PREFIX, rootedSystem } from "../../bench/fleet_rooted.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

const declaration = (paths: string[]) =>
  new TextEncoder().encode(JSON.stringify({
    version: 1,
    resources: [
      { id: "top", type: "directory", path: FLEET_PREFIX, mode: "0755" },
      ...paths.map((path, i) => ({
        id: `f${i}`,
        type: "file",
        path,
        content: `${i}\n`,
        mode: "0644",
      })),
    ],
  }));

Deno.test("fleet bench: a simulated node applies under its root, its store keeps the declared paths, and a path outside /mesh-fleet is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-fleet-test-" });
  try {
    const root = `${dir}/root`;
    await Deno.mkdir(root);
    const system = rootedSystem(debian, root);
    const stateDir = `${dir}/state`;
    const apply = async (paths: string[]) =>
      (await applySources(
        [await readSource(declaration(paths), { name: "link", origin: "link", trusted: false })],
        { system, stateDir },
      ))[0]!;

    const first = await apply([`${FLEET_PREFIX}/a.conf`, `${FLEET_PREFIX}/b.conf`]);
    assertEquals(first.outcome, "applied", JSON.stringify(first.problems));
    assertEquals(await Deno.readTextFile(`${root}${FLEET_PREFIX}/a.conf`), "0\n");
    const store = await Deno.readTextFile(`${stateDir}/store.json`);
    assert(store.includes(`"${FLEET_PREFIX}/a.conf"`), "the store does not hold the declared path");
    assert(!store.includes(root), "the store holds the path under the root");
    // The removal of b goes under the root too.
    const second = await apply([`${FLEET_PREFIX}/a.conf`]);
    assertEquals(second.outcome, "applied");
    assertEquals(second.changes.find((c) => c.id === "f1")?.change, "removed");
    assertEquals(await Deno.stat(`${root}${FLEET_PREFIX}/b.conf`).catch(() => "gone"), "gone");

    const outside = await apply([`${FLEET_PREFIX}/a.conf`, `${dir}/escaped.conf`]);
    assertEquals(outside.outcome, "failed");
    assertMatch(JSON.stringify(outside.problems), /only paths under \/mesh-fleet are applied/);
    assertEquals(await Deno.stat(`${dir}/escaped.conf`).catch(() => "absent"), "absent");
    assertEquals(await Deno.stat(`${root}${dir}/escaped.conf`).catch(() => "absent"), "absent");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("fleet bench: three nodes, two rounds, end to end; it reports the last line and removes what it made", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}bench/fleet_bench.ts`,
      "--nodes",
      "3",
      "--runs",
      "2",
      "--files",
      "2",
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 0, stderr);
  assertMatch(
    stdout.trimEnd().split("\n").pop()!,
    /^fleet: 3 nodes, push to all reported \d+\.\d\d s$/,
  );
  assertMatch(stdout, /\| 2 \| 3 \| /);
  // What it made is gone: the vhost, the accounts, the database.
  const id = /meshbench-fleet-([0-9a-f]{8}) deleted/.exec(stderr)?.[1];
  assert(id !== undefined, stderr);
  for (
    const line of [
      "3 links stopped",
      "3 broker accounts deleted",
      `database meshbench_${id}_fleet dropped`,
    ]
  ) {
    assert(stderr.includes(`cleanup: ${line}`), `no "${line}" in:\n${stderr}`);
  }
  assert(!stderr.includes("cleanup: FAILED"), stderr);
  const users = await fetch("http://127.0.0.1:15672/api/users", {
    headers: { authorization: `Basic ${btoa("guest:guest")}` },
  }).then((r) => r.json()) as { name: string }[];
  assertEquals(users.filter((u) => u.name.startsWith(`fleet${id}-`)), []);
});
