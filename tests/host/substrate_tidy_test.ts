/**
 * A failed `deno task substrate` run leaves no temporary directory behind (scripts/substrate.ts):
 * its work directory is removed on failure, not only on success (an exit in the error path used
 * to leave before the cleanup), and the tar it makes of the base root beside the lab cache goes
 * too. The failure is forced on the real podman: the registry named is a port of this VM where
 * nothing listens, so the first push fails (the images are built before, or reused: the substrate
 * lab test builds the same ones). Nothing leaves this VM.
 */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { LAB_CACHE } from "../lab/mod.ts";

const tars = () => {
  try {
    return [...Deno.readDirSync(LAB_CACHE)].map((e) => e.name).filter((n) => n.endsWith(".tar"));
  } catch {
    return [];
  }
};

Deno.test("a failed substrate run leaves no temporary directory and writes no lock", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-substrate-tidy-" });
  try {
    const tmp = `${dir}/tmp`;
    await Deno.mkdir(tmp);
    const tarsBefore = tars();
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/substrate.ts`,
        "--registry",
        "127.0.0.1:9",
        "--lock",
        `${dir}/substrate.lock`,
      ],
      env: { TMPDIR: tmp },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 1, stderr);
    assertStringIncludes(stderr, "deno task substrate: ");
    assertStringIncludes(stderr, "127.0.0.1:9");
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name), [], "left in TMPDIR");
    assertEquals(tars(), tarsBefore, `left in ${LAB_CACHE}`);
    assertEquals(
      await Deno.stat(`${dir}/substrate.lock`).then(() => true, () => false),
      false,
      "a lock was written",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a substrate run stopped by SIGTERM removes its work directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-substrate-tidy-" });
  try {
    const tmp = `${dir}/tmp`;
    await Deno.mkdir(tmp);
    // In a process group of its own, signalled whole, as systemd stops a unit and Ctrl-C stops a
    // terminal's foreground job: the run and the tool it is running get the signal.
    const child = new Deno.Command("setsid", {
      args: [
        Deno.execPath(),
        "run",
        "-A",
        "--quiet",
        `${ROOT}scripts/substrate.ts`,
        "--registry",
        "127.0.0.1:9",
        "--lock",
        `${dir}/substrate.lock`,
      ],
      env: { TMPDIR: tmp },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    // Signalled once its work directory exists and it is at work in it.
    const started = Date.now();
    while ([...Deno.readDirSync(tmp)].length === 0 && Date.now() - started < 60_000) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const work = [...Deno.readDirSync(tmp)].map((e) => e.name);
    assertEquals(work.length, 1, `no work directory appeared: ${work}`);
    await new Promise((r) => setTimeout(r, 500));
    Deno.kill(-child.pid, "SIGTERM");
    const status = await child.status;
    const stderr = new TextDecoder().decode(
      await new Response(child.stderr).arrayBuffer(),
    );
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name), [], "left in TMPDIR");
    assertEquals(status.code, 143, stderr);
    assertStringIncludes(stderr, `SIGTERM: removing ${tmp}/${work[0]}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
