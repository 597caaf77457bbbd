/**
 * A machine without Caddy: the proxy source is `absent` with the reason (as docker is), so the
 * shipped units (which pass no `--caddy-admin`) and `init` without options work there. Caddy
 * installed and not answering stays a failure, naming `--caddy-admin none`. "Not installed" is
 * made real with a PATH whose directories hold every program of this VM except caddy.
 */
import { assert, assertEquals } from "../support/assert.ts";
import { freePort, reconcileCli } from "../support/mod.ts";
import { observeProxy } from "../../reconcile/observe/proxy.ts";
import type { ReconcileJson } from "../../reconcile/report.ts";

/** A PATH like this VM's, its /usr/bin and /bin (the same, merged) replaced by a copy of links without caddy. */
async function pathWithoutCaddy(dir: string): Promise<string> {
  const bin = `${dir}/bin`;
  await Deno.mkdir(bin);
  for await (const e of Deno.readDir("/usr/bin")) {
    if (e.name !== "caddy") await Deno.symlink(`/usr/bin/${e.name}`, `${bin}/${e.name}`);
  }
  return (Deno.env.get("PATH") ?? "").split(":")
    .map((d) => (d === "/usr/bin" || d === "/bin" ? bin : d))
    .filter((d) => d === bin || !findsCaddy(d)).join(":");
}

function findsCaddy(dir: string): boolean {
  try {
    return Deno.statSync(`${dir}/caddy`).isFile;
  } catch {
    return false;
  }
}

Deno.test("no Caddy installed and nothing at the admin address: absent with the reason; init and run work", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-nocaddy-" });
  const saved = Deno.env.get("PATH")!;
  try {
    const path = await pathWithoutCaddy(dir);
    const admin = `localhost:${freePort()}`;
    Deno.env.set("PATH", path);
    const seen = await observeProxy(admin);
    Deno.env.set("PATH", saved);
    assertEquals(seen.sources.map((s) => [s.source, s.state]), [["caddy", "absent"]]);
    assert(seen.sources[0]!.detail.includes("Caddy is not installed"), seen.sources[0]!.detail);
    assert(seen.sources[0]!.detail.includes("nothing answers"), seen.sources[0]!.detail);

    // init without options (its default admin address has nothing behind it on this VM)
    const env = { PATH: path };
    const init = await reconcileCli(["init", "--output", `${dir}/registry.yaml`], env);
    assertEquals(init.code, 0, init.stderr);
    // the shipped unit's command line (no --caddy-admin), with --boot none as this VM needs
    const run = await reconcileCli(
      ["run", "--registry", `${dir}/registry.yaml`, "--boot", "none", "--json"],
      env,
    );
    assert(run.code === 0 || run.code === 1, run.stderr + run.stdout); // not unobservable
    const result = JSON.parse(run.stdout) as ReconcileJson;
    const caddy = result.sources.filter((s) => s.source === "caddy");
    assertEquals(caddy.map((s) => s.state), ["absent"]);
    assertEquals(result.findings.filter((f) => f.check === "address"), []);
  } finally {
    Deno.env.set("PATH", saved);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Caddy installed and not answering is a failure that names --caddy-admin none", async () => {
  const admin = `localhost:${freePort()}`;
  const seen = await observeProxy(admin);
  assertEquals(seen.sources.map((s) => s.state), ["failed"]);
  assert(seen.sources[0]!.detail.includes("--caddy-admin none"), seen.sources[0]!.detail);
  assert(seen.sources[0]!.detail.includes("/usr/bin/caddy"), seen.sources[0]!.detail);
});
