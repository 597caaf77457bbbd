/**
 * What a registry path may be: a regular file of bounded size (a FIFO, a device or a huge file
 * is refused at once, exit 2, never read), kept outside any code checkout.
 */
import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { loadRegistry, MAX_REGISTRY_BYTES, RegistryError } from "../../reconcile/registry.ts";

const REGISTRY = "version: 1\naccounts: [root]\nservices: {}\n";

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
async function inTemp(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "mesh-input-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function mkfifo(path: string) {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
}

Deno.test("a FIFO as the registry is refused before it is opened (nothing blocks), exit 2", async () => {
  await inTemp(async (dir) => {
    const fifo = `${dir}/registry.yaml`;
    await mkfifo(fifo);
    const error = await assertRejects(() => loadRegistry(fifo), RegistryError);
    assert(error.message.includes("it is a FIFO, not a regular file"), error.message);
    for (const args of [["check-registry", fifo], ["run", "--registry", fifo, "--boot", "none"]]) {
      const r = await reconcileCli(args);
      assertEquals(r.code, 2, r.stderr);
      assert(r.stderr.includes(`"${fifo}"`) && r.stderr.includes("a FIFO"), r.stderr);
    }
  });
});

Deno.test("a device as the registry is refused, not read: /dev/zero never ends", async () => {
  const error = await assertRejects(() => loadRegistry("/dev/zero"), RegistryError);
  assert(error.message.includes("it is a character device, not a regular file"), error.message);
  const r = await reconcileCli(["check-registry", "/dev/zero"]);
  assertEquals(r.code, 2, r.stderr);
  assert(r.stderr.includes("a character device"), r.stderr);
});

Deno.test("a registry larger than the limit is refused after the limit, never read whole", async () => {
  await inTemp(async (dir) => {
    const big = `${dir}/registry.yaml`;
    await Deno.writeTextFile(big, REGISTRY);
    await Deno.truncate(big, MAX_REGISTRY_BYTES + 1); // sparse: takes no disk
    const error = await assertRejects(() => loadRegistry(big), RegistryError);
    assert(error.message.includes(`larger than ${MAX_REGISTRY_BYTES} bytes`), error.message);
    await Deno.truncate(big, REGISTRY.length);
    assertEquals((await loadRegistry(big)).accounts, ["root"]);
  });
});
