/**
 * Rule 1 of "Hostile inputs" (docs/design.md) at the host's read sites: a FIFO, a socket, a
 * directory, a symlink to /dev/zero or to a FIFO, or a file over the bound, among the local
 * declarations, as the store, or as the link's kept declaration, is refused by name at once
 * (never opened to wait, never read to the bound); and the link ends at SIGTERM (within 2 s by
 * design; held here to STOP_BOUND_MS of tests/support/within.ts, a loaded machine's margin), even
 * in the middle of an apply. The field case: a FIFO among the local declarations hung
 * `mesh-host reconcile` and the link, which then ignored SIGTERM.
 */
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { hostileFiles, sparseFile } from "../support/hostile_files.ts";
import { MAX_DECLARATION_BYTES } from "../../lib/declaration_base.ts";
import { MAX_STORE_BYTES } from "../../host/store.ts";
import { TEST_KEYS } from "../support/signing.ts";
import { STOP_BOUND_MS } from "../support/within.ts";

/** A host that carries no bundle (tests/support/host_no_bundle.ts). */
const HOST = `${ROOT}tests/support/host_no_bundle.ts`;

/** What a run left, and how long it took (ms); `hung` when it had to be killed. */
interface Ran {
  code: number;
  out: string;
  ms: number;
  hung: boolean;
}

/**
 * Runs the host with `args`; when it has not ended after `limitMs`, kills it (SIGKILL) and says
 * it hung. With `until`, sends SIGTERM once `until` holds for its output (or its files) and
 * measures from then.
 */
async function host(
  args: string[],
  options: { limitMs?: number; until?: (out: string) => boolean | Promise<boolean> } = {},
): Promise<Ran> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", HOST, ...args],
    cwd: ROOT,
    env: {},
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) out += chunk;
  };
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => (exited = true, s));
  let started = Date.now();
  if (options.until) {
    const deadline = Date.now() + 20_000;
    while (!exited && !(await options.until(out)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert(!exited, `the host ended before it was signalled: ${out}`);
    started = Date.now();
    child.kill("SIGTERM");
  }
  const limit = options.limitMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = await Promise.race([
    status.then(() => false),
    new Promise<boolean>((r) => timer = setTimeout(() => r(true), limit)),
  ]);
  clearTimeout(timer);
  const ms = Date.now() - started;
  if (hung) child.kill("SIGKILL");
  const { code } = await status;
  await reading;
  return { code, out, ms, hung };
}

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
async function inTemp(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-host-regular-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A declaration of one file resource at `path`. */
function fileDeclaration(path: string): string {
  return JSON.stringify({
    version: 1,
    resources: [{ id: "f", type: "file", path, content: "kept\n", mode: "0644" }],
  });
}

Deno.test("host: a FIFO, socket, directory, symlink to /dev/zero or to a FIFO, or an oversized file among the local declarations is refused by name at once; the others are applied", async () => {
  await inTemp(async (dir) => {
    const decl = `${dir}/declarations`;
    await Deno.mkdir(decl);
    const { files, close } = await hostileFiles(decl, ".json");
    try {
      await sparseFile(`${decl}/big.json`, MAX_DECLARATION_BYTES + 1);
      await Deno.writeTextFile(`${decl}/good.json`, fileDeclaration(`${dir}/good`));
      const r = await host([
        "reconcile",
        "--no-bundle",
        "--declarations",
        decl,
        "--state-dir",
        `${dir}/state`,
      ]);
      assert(!r.hung, `mesh-host reconcile hung on the declarations: ${r.out}`);
      for (const { name, path, message } of files) {
        assertStringIncludes(r.out, `Cannot read local declaration "${path}": ${message}`, name);
      }
      assertStringIncludes(
        r.out,
        `Cannot read local declaration "${decl}/big.json": it is larger than ${MAX_DECLARATION_BYTES} bytes`,
      );
      assertEquals(await Deno.readTextFile(`${dir}/good`), "kept\n", "the good source applied");
      // At once: each message is the refusal from the stat. An open that waited would have been
      // given up after a second and said "(put there after its stat)" instead; no wall clock is
      // read, which a loaded machine would fail.
      assert(!r.out.includes("(put there after its stat)"), r.out);
    } finally {
      close();
    }
  });
});

Deno.test("host: a store that is a FIFO, socket, directory, symlink to /dev/zero or to a FIFO, or oversized is refused by name, never waited on or read whole", async () => {
  await inTemp(async (dir) => {
    const place = `${dir}/hostile`;
    await Deno.mkdir(place);
    const { files, close } = await hostileFiles(place);
    try {
      const big = `${place}/big`;
      await sparseFile(big, MAX_STORE_BYTES + 1);
      const cases = [
        ...files,
        { name: "an oversized store", path: big, message: `it is larger than ${MAX_STORE_BYTES}` },
      ];
      const decl = `${dir}/declarations`;
      await Deno.mkdir(decl);
      await Deno.writeTextFile(`${decl}/good.json`, fileDeclaration(`${dir}/good`));
      for (const { name, path, message } of cases) {
        const state = `${dir}/state-${name.replaceAll(/\W/g, "-")}`;
        await Deno.mkdir(state);
        await Deno.symlink(path, `${state}/store.json`);
        const r = await host([
          "reconcile",
          "--no-bundle",
          "--declarations",
          decl,
          "--state-dir",
          state,
        ]);
        assert(!r.hung, `mesh-host reconcile hung on ${name} as its store: ${r.out}`);
        assertEquals(r.code, 3, r.out);
        // Reached through the store's own symlink: named as what it leads to.
        assertStringIncludes(r.out, `Cannot read store "${state}/store.json": it is`, name);
        assertStringIncludes(r.out, message.replace(/^it is (a symbolic link to )?/, ""), name);
        assert(!(await Deno.stat(`${dir}/good`).then(() => true, () => false)), "nothing applied");
      }
    } finally {
      close();
    }
  });
});

Deno.test("link: a FIFO among the local declarations and as the kept declaration is refused by name, and SIGTERM ends the link", async () => {
  await inTemp(async (dir) => {
    const decl = `${dir}/declarations`;
    await Deno.mkdir(decl);
    const { files, close } = await hostileFiles(decl, ".json");
    try {
      await Deno.writeTextFile(`${decl}/good.json`, fileDeclaration(`${dir}/good`));
      const link = [
        "link",
        "--control-key",
        TEST_KEYS.controlKey,
        "--broker",
        "amqp://nobody:wrong@127.0.0.1:1/%2F", // no broker: the local sources are applied still
        "--declarations",
        decl,
        "--state-dir",
        `${dir}/state`,
        "--every",
        "1h",
      ];
      const r = await host(link, {
        limitMs: STOP_BOUND_MS,
        until: (out) => files.every((f) => out.includes(f.path)) && out.includes("good"),
      });
      assert(!r.hung, `the link did not end within ${STOP_BOUND_MS} ms of SIGTERM: ${r.out}`);
      assertEquals(r.code, 0, r.out);
      for (const { name, path, message } of files) {
        assertStringIncludes(r.out, `Cannot read local declaration "${path}": ${message}`, name);
      }
      assertEquals(await Deno.readTextFile(`${dir}/good`), "kept\n");
      // The kept declaration replaced by a FIFO: the link stops, naming it (exit 3), at once.
      await Deno.remove(`${dir}/state/link/declaration.json`).catch(() => {});
      await Deno.mkdir(`${dir}/state/link`, { recursive: true });
      await Deno.symlink(`${decl}/fifo.json`, `${dir}/state/link/declaration.json`);
      const kept = await host(link);
      assert(!kept.hung, `the link hung on a FIFO as its kept declaration: ${kept.out}`);
      assertEquals(kept.code, 3, kept.out);
      assertStringIncludes(
        kept.out,
        `Cannot read the kept declaration "${dir}/state/link/declaration.json": it is a symbolic link to a FIFO`,
      );
    } finally {
      close();
    }
  });
});

Deno.test("link: SIGTERM in the middle of an apply (an action that takes a minute) ends the link without waiting for it, exit 0", async () => {
  await inTemp(async (dir) => {
    const decl = `${dir}/declarations`;
    await Deno.mkdir(decl);
    const started = `${dir}/started`;
    await Deno.writeTextFile(
      `${decl}/slow.json`,
      JSON.stringify({
        version: 1,
        resources: [{
          id: "slow",
          type: "action",
          command: ["sh", "-c", `touch '${started}'; sleep 60`],
          verify: ["test", "-e", `${dir}/never`],
        }],
      }),
    );
    const r = await host([
      "link",
      "--control-key",
      TEST_KEYS.controlKey,
      "--broker",
      "amqp://nobody:wrong@127.0.0.1:1/%2F",
      "--declarations",
      decl,
      "--state-dir",
      `${dir}/state`,
      "--every",
      "1h",
    ], {
      limitMs: STOP_BOUND_MS,
      until: () => Deno.stat(started).then(() => true, () => false),
    });
    assert(!r.hung, `the link did not end within ${STOP_BOUND_MS} ms of SIGTERM: ${r.out}`);
    assertEquals(r.code, 0, r.out);
    assertStringIncludes(r.out, "stopped without waiting");
  });
});
