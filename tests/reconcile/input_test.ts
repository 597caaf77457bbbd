/**
 * What a registry path may be: a regular file of bounded size (a FIFO, a device or a huge file
 * is refused at once, exit 2, never read), kept outside any code checkout.
 */
import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { MAX_REGISTRY_BYTES, RegistryError } from "../../reconcile/registry.ts";
import { loadRegistry } from "../../reconcile/registry_load.ts";

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

async function git(cwd: string, args: string[]) {
  const out = await new Deno.Command("git", { args, cwd }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
}

/** The refusal's words: where the registry is, which checkout, and the flag that accepts it. */
function refusedInCheckout(r: { code: number; stderr: string }, top: string) {
  assertEquals(r.code, 2, r.stderr);
  assert(r.stderr.includes(`inside the git work tree "${top}"`), r.stderr);
  assert(r.stderr.includes("--registry-in-checkout"), r.stderr);
}

Deno.test("a registry inside a git work tree is refused by run, batch and init unless named so", async () => {
  await inTemp(async (dir) => {
    const top = `${dir}/deploy`;
    await git(dir, ["init", "-q", "-b", "main", top]);
    await Deno.mkdir(`${top}/etc`);
    const registry = `${top}/etc/registry.yaml`;
    await Deno.writeTextFile(registry, REGISTRY);
    const run = ["run", "--registry", registry, "--caddy-admin", "none", "--boot", "none"];
    refusedInCheckout(await reconcileCli(run), top);
    // batch enable is refused before anything runs (no systemctl on this VM would answer)
    refusedInCheckout(
      await reconcileCli([
        "batch",
        "enable",
        "job",
        "--timer",
        "job.timer",
        "--registry",
        registry,
      ]),
      top,
    );
    refusedInCheckout(await reconcileCli(["batch", "disable", "job", "--registry", registry]), top);
    refusedInCheckout(
      await reconcileCli(["init", "--output", `${top}/new.yaml`, "--caddy-admin", "none"]),
      top,
    );
    assertEquals(await Deno.stat(`${top}/new.yaml`).then(() => true, () => false), false);
    // named on purpose: it runs (this VM's own sockets make it drift, not refused)
    const named = await reconcileCli([...run, "--registry-in-checkout"]);
    assert(named.code === 0 || named.code === 1, named.stderr);
    assert(!named.stderr.includes("work tree"), named.stderr);
    // reading it is not where the incident happens: check-registry validates a checkout's copy
    assertEquals((await reconcileCli(["check-registry", registry])).code, 0);
  });
});

Deno.test("a registry in a linked worktree (.git is a file) or reached through a symlink is refused", async () => {
  await inTemp(async (dir) => {
    const top = `${dir}/deploy`;
    await git(dir, ["init", "-q", "-b", "main", top]);
    await git(top, [
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@t",
      "commit",
      "-q",
      "--allow-empty",
      "-m",
      "x",
    ]);
    const linked = `${dir}/linked`;
    await git(top, ["worktree", "add", "-q", linked]);
    await Deno.writeTextFile(`${linked}/registry.yaml`, REGISTRY);
    const run = ["run", "--caddy-admin", "none", "--boot", "none", "--registry"];
    refusedInCheckout(await reconcileCli([...run, `${linked}/registry.yaml`]), linked);
    await Deno.mkdir(`${dir}/state`);
    await Deno.symlink(`${linked}/registry.yaml`, `${dir}/state/registry.yaml`);
    refusedInCheckout(await reconcileCli([...run, `${dir}/state/registry.yaml`]), linked);
  });
});

Deno.test("a registry inside --repo is refused naming --repo", async () => {
  await inTemp(async (dir) => {
    const top = `${dir}/deploy`;
    await git(dir, ["init", "-q", "-b", "main", top]);
    await Deno.writeTextFile(`${top}/registry.yaml`, REGISTRY);
    const r = await reconcileCli([
      "run",
      "--registry",
      `${top}/registry.yaml`,
      "--repo",
      top,
      "--caddy-admin",
      "none",
      "--boot",
      "none",
    ]);
    assertEquals(r.code, 2, r.stderr);
    assert(r.stderr.includes(`inside --repo "${top}"`), r.stderr);
  });
});
