import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { Store, StoreError } from "../../host/store.ts";

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const exists = async (i: { subject: string }) =>
  await Deno.lstat(i.subject).then(() => true, () => false);

Deno.test("a creation journaled by a resource that then failed is still recorded as the host's", async () => {
  await withDir(async (dir) => {
    const store = await Store.load(`${dir}/state`, { create: true, exists });
    await store.intend({ source: "local", id: "d", type: "directory", subject: `${dir}/made` });
    await Deno.mkdir(`${dir}/made`); // created, then the resource failed before being recorded
    await store.intend({ source: "local", id: "e", type: "directory", subject: `${dir}/never` }); // failed before
    await store.save();
    store.release();
    const again = await Store.load(`${dir}/state`, { exists });
    assertEquals(again.entries().map((e) => [e.id, e.created]), [["d", true]]);
    assertEquals(await Deno.stat(`${dir}/state/journal`).then(() => true, () => false), false);
  });
});

Deno.test("a killed host's journal is folded in at the next load: what exists was created", async () => {
  await withDir(async (dir) => {
    const store = await Store.load(`${dir}/state`, { create: true, exists });
    await store.intend({ source: "local", id: "d", type: "directory", subject: `${dir}/made` });
    await Deno.mkdir(`${dir}/made`);
    store.close(); // killed: no save
    const again = await Store.load(`${dir}/state`, { exists });
    assertEquals(again.entries().map((e) => [e.id, e.created]), [["d", true]]);
    assertEquals(await Deno.stat(`${dir}/state/journal`).then(() => true, () => false), false);
    assert(await Deno.stat(`${dir}/state/store.json`).then(() => true, () => false));
  });
});

Deno.test("a save with nothing changed writes nothing", async () => {
  await withDir(async (dir) => {
    const store = await Store.load(dir, { create: true });
    store.record({
      source: "local",
      id: "a",
      type: "file",
      subject: "/x",
      created: true,
      applied: "2026-01-01T00:00:00.000Z",
    });
    await store.save();
    store.release();
    const ino = (await Deno.stat(`${dir}/store.json`)).ino;
    const again = await Store.load(dir);
    again.record({
      source: "local",
      id: "a",
      type: "file",
      subject: "/x",
      created: true,
      applied: "2026-01-01T00:00:00.000Z",
    });
    await again.save();
    assertEquals((await Deno.stat(`${dir}/store.json`)).ino, ino);
    again.record({
      source: "local",
      id: "a",
      type: "file",
      subject: "/x",
      created: true,
      applied: "2026-01-02T00:00:00.000Z",
    });
    await again.save();
    assert((await Deno.stat(`${dir}/store.json`)).ino !== ino, "a change is saved, by rename");
    again.release();
  });
});

Deno.test("a store that exists and is not a store is an error, never an empty footprint", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/store.json`, JSON.stringify({ version: 2, resources: [] }));
    const e = await assertRejects(() => Store.load(dir), StoreError);
    assert(e.message.includes(`Cannot read store "${dir}/store.json"`), e.message);
    assert(e.message.includes(": sources: "), `the schema's message, with its path: ${e.message}`);
    await Deno.writeTextFile(`${dir}/store.json`, "");
    await assertRejects(() => Store.load(dir), StoreError);
    await assertRejects(() => Store.load(`${dir}/store.json`), StoreError); // not a directory
  });
});

Deno.test("a store with a source named __proto__ is an error naming it, whatever its value, never a source dropped", async () => {
  await withDir(async (dir) => {
    const info = `{"origin":"command","declaration":"sha256:d","applied":"t"}`;
    for (const value of [info, "5"]) {
      // Written as JSON, so JSON.parse makes an own key: not a source's name (the validator
      // refuses it), and the schema says so rather than skipping it unchecked.
      await Deno.writeTextFile(
        `${dir}/store.json`,
        `{"version":2,"sources":{"local":${info},"__proto__":${value}},"resources":[]}`,
      );
      const e = await assertRejects(() => Store.load(dir), StoreError);
      assert(e.message.includes(": sources.__proto__: "), e.message);
    }
  });
});

Deno.test("one host at a time: a second load of the same state directory waits for the first", async () => {
  await withDir(async (dir) => {
    const first = await Store.load(dir, { create: true });
    let second: Store | undefined;
    const waiting = Store.load(dir).then((s) => (second = s));
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(second, undefined, "the second load must wait for the lock");
    first.record({
      source: "local",
      id: "a",
      type: "file",
      subject: "/x",
      created: true,
      applied: "t",
    });
    await first.save();
    first.release();
    await waiting;
    assertEquals(second!.entries().map((e) => e.id), ["a"], "and then sees what the first saved");
    second!.release();
  });
});

Deno.test("a blocking lock (a one-shot command's) waits for the first too, in another process", async () => {
  await withDir(async (dir) => {
    const first = await Store.load(dir, { create: true });
    const script = `
      import { Store } from "${new URL("../../host/store.ts", import.meta.url).href}";
      const store = await Store.load(Deno.args[0], { blockingLock: true });
      console.log(JSON.stringify(store.entries().map((e) => e.id)));
      store.release();
    `;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", "--config", new URL("../../deno.json", import.meta.url).pathname, script, dir],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const done = child.output();
    let exited = false;
    done.then(() => (exited = true), () => (exited = true));
    await new Promise((r) => setTimeout(r, 1500));
    assertEquals(exited, false, "the second load must wait for the lock");
    first.record({
      source: "local",
      id: "a",
      type: "file",
      subject: "/x",
      created: true,
      applied: "t",
    });
    await first.save();
    first.release();
    const out = await done;
    assert(out.success, new TextDecoder().decode(out.stderr));
    assertEquals(
      new TextDecoder().decode(out.stdout).trim(),
      '["a"]',
      "and then sees what the first saved",
    );
  });
});

Deno.test("a new state directory is root's alone, and its new parents can be passed through", async () => {
  await withDir(async (dir) => {
    // As /var/lib/mesh/host on a fresh machine: mesh-reconcile's stamp server (a dynamic user)
    // reads /var/lib/mesh/reconcile, so the parent the host makes must not be 0700.
    const store = await Store.load(`${dir}/var/lib/mesh/host`, { create: true, exists });
    store.release();
    const mode = async (p: string) => (await Deno.stat(p)).mode! & 0o777;
    assertEquals(await mode(`${dir}/var/lib/mesh/host`), 0o700);
    assertEquals(await mode(`${dir}/var/lib/mesh`), 0o755);
    assertEquals(await mode(`${dir}/var/lib`), 0o755);
  });
});

Deno.test("a journal line torn by a full disk does not swallow the next intent", async () => {
  await withDir(async (dir) => {
    const state = `${dir}/state`;
    await Deno.mkdir(state);
    const mount = await new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", state],
      stderr: "piped",
    }).output();
    assert(mount.success, `mount a tmpfs: ${new TextDecoder().decode(mount.stderr)}`);
    const opened: Store[] = [];
    try {
      // Everything but one page is taken: the journal's lines fill it and one is cut short.
      await Deno.writeFile(`${state}/filler`, new Uint8Array(60 * 1024));
      const store = await Store.load(state, { create: true, exists });
      opened.push(store);
      const long = `${dir}/${"p".repeat(300)}`;
      let failed = false;
      for (let i = 0; i < 100 && !failed; i++) {
        try {
          store.journal({
            source: "local",
            id: `f${i}`,
            type: "directory",
            subject: `${long}${i}`,
          });
        } catch (error) {
          assert(error instanceof StoreError, String(error));
          failed = true;
        }
      }
      assert(failed, "the journal filled the tmpfs");
      const written = await Deno.readTextFile(`${state}/journal`);
      assert(!written.endsWith("\n"), "the last line was cut short (the case under test)");
      // Space comes back (the failed resource's temporaries removed); the next creation is
      // journaled, made durable and done, then the host is killed before saving.
      await Deno.remove(`${state}/filler`);
      await store.intend({
        source: "local",
        id: "after",
        type: "directory",
        subject: `${dir}/after`,
      });
      await Deno.mkdir(`${dir}/after`);
      store.close();
      const again = await Store.load(state, { exists });
      opened.push(again);
      assertEquals(again.entries().map((e) => [e.id, e.created]), [["after", true]]);
    } finally {
      for (const store of opened) {
        try {
          store.close();
        } catch { /* already closed */ }
      }
      await new Deno.Command("umount", { args: [state] }).output();
    }
  });
});

Deno.test("a record moved onto one the same resource already has becomes one: created if either was, the first original kept", async () => {
  await withDir(async (dir) => {
    const store = await Store.load(`${dir}/state`, { create: true });
    const original = { kind: "directory" as const, mode: 0o755, uid: 0, gid: 0 };
    const applied = "2026-01-01T00:00:00.000Z";
    // One directory held twice (through a symlinked parent, by a store written before paths were
    // compared by their real location): the one source took it over, the other created it.
    store.record({
      source: "b",
      id: "d",
      type: "directory",
      subject: `${dir}/y/d`,
      created: false,
      applied,
      original,
    });
    store.record({
      source: "a",
      id: "x",
      type: "directory",
      subject: `${dir}/x/d`,
      created: true,
      applied,
    });
    store.rekey(store.entries()[1]!, { source: "b", id: "d", subject: `${dir}/y/d` });
    assertEquals(store.entries().map((e) => [e.source, e.id, e.subject, e.created, e.original]), [
      ["b", "d", `${dir}/y/d`, true, original],
    ]);
    store.close();
  });
});
