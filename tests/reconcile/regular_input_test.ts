/**
 * Rule 1 of "Hostile inputs" (docs/design.md) at the reconciler's read sites and the host's
 * result file: a FIFO, a socket, a directory, a symlink to /dev/zero or to a FIFO, or a file over
 * the bound, as the registry, the stamp, the watch state or the reconcile result, is refused by
 * name at once, never opened to wait nor read to the bound; and `stamp serve` with a FIFO as its
 * stamp answers, and ends at SIGTERM with a request in flight (within 2 s by design; held here to
 * STOP_BOUND_MS of tests/support/within.ts, a loaded machine's margin).
 */
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import { freePort, reconcileCli, ROOT } from "../support/mod.ts";
import { hostileFiles, mkfifo, sparseFile } from "../support/hostile_files.ts";
import { STOP_BOUND_MS, within } from "../support/within.ts";
import { MAX_REGISTRY_BYTES, RegistryError } from "../../reconcile/registry.ts";
import { loadRegistry } from "../../reconcile/registry_load.ts";
import { readStamp, STAMP_LIMIT_BYTES } from "../../reconcile/stamp.ts";
import { loadWatchState, STATE_LIMIT_BYTES } from "../../reconcile/watch/state.ts";
import { readDriftSummary } from "../../host/drift_summary.ts";
import { MAX_RESULT_BYTES } from "../../lib/drift.ts";

/** Runs `fn` with a fresh temporary directory, and hostile files in it, removed afterwards. */
async function withHostile(
  fn: (dir: string, files: Awaited<ReturnType<typeof hostileFiles>>["files"]) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-reconcile-regular-" });
  const { files, close } = await hostileFiles(dir);
  try {
    await fn(dir, files);
  } finally {
    close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("registry: a FIFO, socket, directory, symlink to /dev/zero or to a FIFO is refused by name at once, exit 2", async () => {
  await withHostile(async (dir, files) => {
    for (const { name, path, message } of files) {
      const error = await within(
        assertRejects(() => loadRegistry(path), RegistryError),
        2000,
        `the refusal of ${name} as the registry`,
      );
      assertStringIncludes(error.message, `Cannot read registry "${path}": ${message}`, name);
    }
    const zero = files.find((f) => f.name === "a symlink to /dev/zero")!;
    const r = await reconcileCli(["check-registry", zero.path]);
    assertEquals(r.code, 2, r.stderr);
    assertStringIncludes(r.stderr, zero.message);
    const big = `${dir}/big.yaml`;
    await sparseFile(big, MAX_REGISTRY_BYTES + 1);
    const tooBig = await assertRejects(() => loadRegistry(big), RegistryError);
    assertStringIncludes(tooBig.message, `larger than ${MAX_REGISTRY_BYTES} bytes`);
  });
});

Deno.test("stamp: a FIFO, socket, directory, symlink to /dev/zero or to a FIFO is cannot-read, named; an oversized one is garbage", async () => {
  await withHostile(async (dir, files) => {
    for (const { name, path, message } of files) {
      const reading = await within(readStamp(path), 10_000, `the reading of ${name} as the stamp`);
      assertEquals(reading, { state: "error", problem: "cannot-read", reason: message }, name);
    }
    const big = `${dir}/big`;
    await sparseFile(big, STAMP_LIMIT_BYTES + 1);
    const reading = await readStamp(big);
    assert(reading.state === "error" && reading.problem === "garbage", JSON.stringify(reading));
  });
});

Deno.test("watch state: a FIFO, socket, directory, symlink to /dev/zero or to a FIFO is refused by name at once (never a first run)", async () => {
  await withHostile(async (dir, files) => {
    for (const { name, path, message } of files) {
      const error = await within(
        assertRejects(() => loadWatchState(path), Error),
        2000,
        `the refusal of ${name} as the watch state`,
      );
      assertEquals(error.message, `Cannot read watch state "${path}": ${message}`, name);
    }
    const big = `${dir}/big`;
    await sparseFile(big, STATE_LIMIT_BYTES + 1);
    const error = await assertRejects(() => loadWatchState(big), Error);
    assertStringIncludes(error.message, `larger than ${STATE_LIMIT_BYTES} bytes`);
  });
});

Deno.test("reconcile result (the host's drift summary): a FIFO, socket, directory, symlink to /dev/zero or to a FIFO is unreadable, named", async () => {
  await withHostile(async (dir, files) => {
    for (const { name, path, message } of files) {
      const s = await within(
        readDriftSummary(path),
        10_000,
        `the reading of ${name} as the result`,
      );
      assert(s.status === "unreadable", JSON.stringify(s));
      assertEquals(s.problem, message, name);
    }
    const big = `${dir}/big`;
    await sparseFile(big, MAX_RESULT_BYTES + 1);
    const s = await readDriftSummary(big);
    assert(s.status === "unreadable", JSON.stringify(s));
    assertStringIncludes(s.problem, `larger than the ${MAX_RESULT_BYTES} bytes`);
  });
});

Deno.test("stamp serve: a FIFO as the stamp is answered as cannot-read at once, and SIGTERM ends the server with a request in flight", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-stamp-fifo-" });
  const stamp = `${dir}/stamp`;
  await mkfifo(stamp);
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      `${ROOT}reconcile/main.ts`,
      "stamp",
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--stamp",
      stamp,
    ],
    cwd: ROOT,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  try {
    for (let i = 0;; i++) {
      try {
        (await Deno.connect({ hostname: "127.0.0.1", port })).close();
        break;
      } catch (error) {
        if (i > 300) throw error;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const answered = await fetch(`http://127.0.0.1:${port}/`, {
      signal: AbortSignal.timeout(3000),
    }).then(async (r) => await r.text(), (error) => `no answer: ${error}`);
    assertStringIncludes(answered, "it is a FIFO, not a regular file");
    // A request still in flight when the signal comes (the connection left open, idle).
    const idle = await Deno.connect({ hostname: "127.0.0.1", port });
    await idle.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n"));
    // The idle request never completes: a server that waited for it never ends by itself.
    child.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([
      output.then(() => true),
      new Promise<boolean>((r) => timer = setTimeout(() => r(false), STOP_BOUND_MS)),
    ]);
    clearTimeout(timer);
    idle.close();
    assert(ended, `stamp serve did not end within ${STOP_BOUND_MS} ms of SIGTERM`);
    const end = await output;
    assertEquals(end.code, 0);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* ended */ }
    await output;
    await Deno.remove(dir, { recursive: true });
  }
});
