/**
 * Takeovers: a path that existed before the host first applied it has its original saved in the
 * state directory, and put back when the resource leaves (`restored`). A takeover whose original
 * cannot be saved (a full disk: the state directory on a tmpfs filled up) fails the resource and
 * overwrites nothing. Also: a repeated JSON key in a bundle or a link message refuses it.
 */

import { assert, assertEquals, assertStringIncludes, assertThrows } from "../support/assert.ts";
import { applyResources } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import { BundleError, loadBundle } from "../../host/bundle.ts";
import { DeclarationMessage, decodeMessage, MessageError } from "../../lib/broker.ts";
import { duplicateKeys } from "../../lib/json_keys.ts";

async function run(argv: string[]): Promise<void> {
  const out = await new Deno.Command(argv[0]!, { args: argv.slice(1), stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${argv.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

Deno.test("a takeover whose original cannot be saved fails the resource and overwrites nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-takeover-" });
  const state = `${dir}/state`;
  await Deno.mkdir(state);
  await run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", state]);
  try {
    const target = `${dir}/big.conf`;
    const original = "x".repeat(200 * 1024);
    await Deno.writeTextFile(target, original);
    await Deno.chmod(target, 0o640);
    // The state directory is nearly full: the store fits, a copy of 200 KiB does not.
    await Deno.writeFile(`${state}/filler`, new Uint8Array(200 * 1024));
    const r = await applyResources(debian, state, [
      { id: "small", type: "directory", path: `${dir}/small`, mode: "0755" },
      { id: "big", type: "file", path: target, content: "managed\n", mode: "0644" },
    ]);
    assertEquals([r.outcome, r.applied, r.total], ["failed", 1, 2]);
    assertEquals(r.problems[0]!.id, "big");
    assertStringIncludes(r.problems[0]!.message, `Cannot take over "${target}"`);
    assertStringIncludes(r.problems[0]!.message, "nothing was changed");
    assertEquals(await Deno.readTextFile(target), original, "nothing overwritten");
    assertEquals(((await Deno.stat(target)).mode ?? 0) & 0o777, 0o640);
    const store = JSON.parse(await Deno.readTextFile(`${state}/store.json`));
    assertEquals(store.resources.map((e: { id: string }) => e.id), ["small"]);
    // No partial copy is left in the state directory.
    const left = [...Deno.readDirSync(`${state}/originals`)].map((e) => e.name);
    assertEquals(left, []);

    // Room again: the takeover is saved, applied, and undone when the resource leaves.
    await Deno.remove(`${state}/filler`);
    const again = await applyResources(debian, state, [
      { id: "big", type: "file", path: target, content: "managed\n", mode: "0644" },
    ]);
    assertEquals(again.outcome, "applied", JSON.stringify(again.problems));
    assertEquals(await Deno.readTextFile(target), "managed\n");
    const gone = await applyResources(debian, state, []);
    assertEquals(gone.changes.map((c) => [c.id, c.change]), [["big", "restored"]]);
    assertEquals(await Deno.readTextFile(target), original);
    assertEquals(((await Deno.stat(target)).mode ?? 0) & 0o777, 0o640);
  } finally {
    await run(["umount", state]).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a takeover is saved once: a later change of the declaration keeps the first original", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-takeover-" });
  try {
    const target = `${dir}/motd`;
    await Deno.writeTextFile(target, "theirs\n");
    const declare = (content: string) => [
      { id: "motd", type: "file", path: target, content, mode: "0644" },
    ];
    assertEquals(
      (await applyResources(debian, `${dir}/state`, declare("one\n"))).outcome,
      "applied",
    );
    assertEquals(
      (await applyResources(debian, `${dir}/state`, declare("two\n"))).outcome,
      "applied",
    );
    const dry = await applyResources(debian, `${dir}/state`, [], { dryRun: true });
    assertEquals(dry.changes.map((c) => c.change), ["restored"]);
    assertEquals(await Deno.readTextFile(target), "two\n", "a dry run changes nothing");
    const r = await applyResources(debian, `${dir}/state`, []);
    assertEquals(r.changes.map((c) => c.change), ["restored"]);
    assertEquals(await Deno.readTextFile(target), "theirs\n");
    // What is put back is no longer the host's: applying nothing again changes nothing.
    assertEquals((await applyResources(debian, `${dir}/state`, [])).changes, []);
    assert(await Deno.stat(target).then(() => true));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a repeated key anywhere refuses a bundle and a link message, with its path", async () => {
  const bundle = `{"bundle":1,"system":"debian","says":"x","declaration":{"version":1,` +
    `"resources":[{"id":"a","type":"directory","path":"/a","mode":"0755","mode":"0700"}],` +
    `"resources":[]}}`;
  const error = await loadBundle(bundle, "debian").then(() => undefined, (e) => e);
  assert(error instanceof BundleError, String(error));
  assertStringIncludes(error.message, "declaration.resources: Duplicate key");
  assertStringIncludes(error.message, "declaration.resources[0].mode: Duplicate key");

  const message = new TextEncoder().encode(
    `{"kind":"declaration","node":"n1","node":"n2","generation":1,"digest":"sha256:${
      "0".repeat(64)
    }","declaration":"{}","pushedAt":"2026-01-01T00:00:00.000Z"}`,
  );
  const e = assertThrows(
    () => decodeMessage(DeclarationMessage, message, "the declaration message"),
    MessageError,
  );
  assertStringIncludes(e.message, 'node: Duplicate key "node"');

  // Escapes are decoded: "\u0061" and "a" are one key; equal keys in different objects are not.
  assertEquals(duplicateKeys('{"a":1,"\\u0061":2}').map((d) => d.at), ["a"]);
  assertEquals(duplicateKeys('[{"a":1},{"a":2}]'), []);
  assertEquals(duplicateKeys('{"s":"{\\"a\\":1,\\"a\\":2}","t":[1,{"x":{"y":1,"y":2}}]}'), [
    { path: ["t", 1, "x", "y"], at: "t[1].x.y", key: "y", count: 2 },
  ]);
});
