/**
 * The one bounded reader (lib/regular_file.ts): only a regular file is read, anything else (a
 * FIFO, a socket, a device, a directory, or a symlink to one) is refused by name without an open
 * that can wait, and a file over the bound is refused from its size, never read whole
 * (docs/design.md, "Hostile inputs", rule 1).
 */
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../support/assert.ts";
import {
  concat,
  FileTooLargeError,
  NotRegularFileError,
  openWithin,
  readRegularFile,
  readRegularTextFile,
} from "../../lib/regular_file.ts";
import { within } from "../support/within.ts";
import { hostileFiles, mkfifo } from "../support/hostile_files.ts";

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
async function inTemp(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-regular-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("regular_file: a FIFO, a socket, a directory, a device or a symlink to one is refused by name, at once", async () => {
  await inTemp(async (dir) => {
    const { files, close } = await hostileFiles(dir);
    try {
      for (const { name, path, message } of files) {
        const error = await within(
          assertRejects(() => readRegularFile(path, { maxBytes: 1 << 20 }), NotRegularFileError),
          2000,
          `the refusal of ${name}`,
        );
        assertEquals(error.message, message, name);
      }
      const zero = await assertRejects(
        () => readRegularFile("/dev/zero", { maxBytes: 1 << 20 }),
        NotRegularFileError,
      );
      assertEquals(zero.message, "it is a character device, not a regular file");
    } finally {
      close();
    }
  });
});

Deno.test("regular_file: a file over the bound is refused from its size; at the bound it is read whole", async () => {
  await inTemp(async (dir) => {
    const path = `${dir}/big`;
    await Deno.writeTextFile(path, "x");
    await Deno.truncate(path, 64 * 1024 * 1024 + 1); // sparse: takes no disk
    // Every read of a file counted (readRegularFile reads with readSync; read too, should it
    // change): refused from its size, the file is never read.
    let reads = 0;
    const { read, readSync } = Deno.FsFile.prototype;
    Deno.FsFile.prototype.read = function (p) {
      reads++;
      return read.call(this, p);
    };
    Deno.FsFile.prototype.readSync = function (p) {
      reads++;
      return readSync.call(this, p);
    };
    let error: FileTooLargeError;
    try {
      error = await assertRejects(
        () => readRegularFile(path, { maxBytes: 64 * 1024 * 1024 }),
        FileTooLargeError,
      );
    } finally {
      Object.assign(Deno.FsFile.prototype, { read, readSync });
    }
    assertEquals(error.message, `it is larger than ${64 * 1024 * 1024} bytes`);
    assert(error instanceof RangeError, "a refusal for size is a RangeError, as it always was");
    assertEquals(reads, 0, "refused from its size, not read");
    await Deno.truncate(path, 10);
    assertEquals((await readRegularFile(path, { maxBytes: 10 })).length, 10);
    await assertRejects(() => readRegularFile(path, { maxBytes: 9 }), FileTooLargeError);
    await Deno.truncate(path, 0);
    assertEquals(await readRegularFile(path, { maxBytes: 0 }), new Uint8Array());
  });
});

Deno.test("regular_file: missing is NotFound, a dangling symlink too; a symlink to a regular file is read", async () => {
  await inTemp(async (dir) => {
    await assertRejects(
      () => readRegularFile(`${dir}/none`, { maxBytes: 9 }),
      Deno.errors.NotFound,
    );
    await Deno.symlink("none", `${dir}/dangling`);
    await assertRejects(
      () => readRegularFile(`${dir}/dangling`, { maxBytes: 9 }),
      Deno.errors.NotFound,
    );
    await Deno.writeTextFile(`${dir}/real`, "héllo\n");
    await Deno.symlink("real", `${dir}/link`);
    assertEquals(await readRegularTextFile(`${dir}/link`, { maxBytes: 99 }), "héllo\n");
    await Deno.writeFile(`${dir}/bad`, new Uint8Array([0xff, 0x41]));
    assertEquals(await readRegularTextFile(`${dir}/bad`, { maxBytes: 9 }), "\uFFFDA");
    await assertRejects(
      () => readRegularTextFile(`${dir}/bad`, { maxBytes: 9, fatal: true }),
      TypeError,
    );
  });
});

Deno.test("regular_file: concat joins chunks in order; a file of several chunks, or longer than its stat said, is read whole", async () => {
  assertEquals(concat([], 0), new Uint8Array());
  const one = new Uint8Array([1, 2, 3]);
  assertEquals(concat([one], 3), one);
  assertEquals(
    concat([new Uint8Array([1]), new Uint8Array(), new Uint8Array([2, 3]), new Uint8Array([4])], 4),
    new Uint8Array([1, 2, 3, 4]),
  );
  await inTemp(async (dir) => {
    // 200,003 bytes: more than three 64 KiB reads, a pattern that shows order.
    const bytes = Uint8Array.from({ length: 200_003 }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
    const path = `${dir}/big`;
    await Deno.writeFile(path, bytes);
    assertEquals(await readRegularFile(path, { maxBytes: bytes.length }), bytes);
    await assertRejects(
      () => readRegularFile(path, { maxBytes: bytes.length - 1 }),
      FileTooLargeError,
    );
    // A file longer than its stat said (as one that grows while read): read whole, bounded.
    const status = new TextDecoder().decode(
      await readRegularFile("/proc/self/status", { maxBytes: 1 << 20 }),
    );
    assert(status.startsWith("Name:") && status.includes("\nPid:"), status);
    await assertRejects(
      () => readRegularFile("/proc/self/status", { maxBytes: 100 }),
      FileTooLargeError,
    );
  });
});

Deno.test("regular_file: an open that waits (a FIFO swapped in after the stat) is given up after 1 s, released, and refused by name", async () => {
  await inTemp(async (dir) => {
    const fifo = `${dir}/swapped`;
    await mkfifo(fifo);
    const started = Date.now();
    // Given up after its second, never before; the upper bound only tells a second (late on a
    // loaded machine) from a wait for a writer that never comes.
    const error = await within(
      assertRejects(() => openWithin(fifo), NotRegularFileError),
      10_000,
      "the refusal of a FIFO that was opened",
    );
    assertEquals(error.message, "it is a FIFO (put there after its stat), not a regular file");
    const ms = Date.now() - started;
    assert(ms >= 900, `given up after ${ms} ms`);
    // The waiting open was released: a program that met it still ends by itself (without the
    // release it would wait for a writer forever).
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { openWithin } from "${new URL("../../lib/regular_file.ts", import.meta.url)}";
        await openWithin(${JSON.stringify(fifo)}).catch((e) => console.log(e.message));`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = child.output();
    // A program whose open still waited would never end: the bound is a loaded machine's room
    // for a deno start and the second it waits.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([
      output.then(() => true),
      new Promise<boolean>((r) => timer = setTimeout(() => r(false), 30_000)),
    ]);
    clearTimeout(timer);
    if (!ended) child.kill("SIGKILL");
    const out = await output;
    assert(ended, "a program whose open of a FIFO was given up did not end by itself");
    assertStringIncludes(new TextDecoder().decode(out.stdout), "(put there after its stat)");
    await Deno.writeTextFile(`${dir}/regular`, "x");
    using file = await openWithin(`${dir}/regular`);
    assert(file.statSync().isFile);
  });
});

/**
 * Holds a write lease (fcntl(2) F_SETLEASE, F_WRLCK) on `path` from another process, so that an
 * open of that regular file waits until the holder lets it go, `holdMs` after the break was asked:
 * a regular file whose open is slow, as every open is on a machine whose thread pool is busy.
 */
async function leased(path: string, holdMs: number): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.addSignalListener("SIGIO", () => {
        setTimeout(() => { libc.symbols.fcntl(fd, 1024, 2); Deno.exit(0); }, ${holdMs});
      });
      const libc = Deno.dlopen("libc.so.6", {
        open: { parameters: ["buffer", "i32"], result: "i32" },
        fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
      });
      const fd = libc.symbols.open(new TextEncoder().encode(${JSON.stringify(path)} + "\\0"), 0);
      console.log(libc.symbols.fcntl(fd, 1024, 1) === 0 ? "held" : "not held");
      setTimeout(() => {}, 30000);`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  assertEquals(value?.trim(), "held", "the lease holder could not take its lease");
  return child;
}

Deno.test("regular_file: a regular file whose open is slow (a lease being broken; a busy machine) is read, not refused as swapped", async () => {
  await inTemp(async (dir) => {
    const path = `${dir}/store.json`;
    await Deno.writeTextFile(path, '{"slow":true}');
    const holder = await leased(path, 1600);
    const started = Date.now();
    const bytes = await within(
      readRegularFile(path, { maxBytes: 100 }),
      10_000,
      "the read of a leased regular file",
    );
    const ms = Date.now() - started;
    await holder.status;
    await holder.stdout.cancel().catch(() => {});
    assertEquals(new TextDecoder().decode(bytes), '{"slow":true}');
    // The open did wait past the second after which a FIFO is given up.
    assert(ms >= 1400, `the open took ${ms} ms: the lease did not hold it`);
  });
});
