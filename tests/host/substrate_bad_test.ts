/**
 * The Debian bundle against bad input, on a bare OpenRC lab machine (its own network address, no
 * Deno, no checkout; the one-file host copied in): an image the registry lacks refuses the whole
 * bundle before anything is applied, naming it; a store container that runs but does not answer fails the next step's
 * verify with the reason; then the carried bundle, reconciled on that same machine, resumes and
 * converges with OpenRC, and a second reconcile changes nothing.
 *
 * The host carries a lock produced on this machine by scripts/substrate.ts (`deno task hosts
 * --bundle`), not the committed bundles/substrate-debian.lock, whose digests only the machine that
 * committed it has. The broken variants are that lock with one resource changed, each carried by
 * a host of its own and reconciled as source `bundle`, so that the good host's reconcile resumes
 * the same source (a broken bundle is what an operator would ship).
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { bootLab, type LabMachine, registryForBridge } from "../lab/mod.ts";
import { freshSubstrateLock, substrateHost } from "../support/substrate.ts";

interface Result {
  outcome: string;
  applied: number;
  total: number;
  changes: { id: string; change: string }[];
  problems: { id?: string; message: string }[];
}

interface Resource {
  id: string;
  type: string;
  image?: string;
  args?: string[];
  command?: string[];
  [key: string]: unknown;
}

async function hostRun(
  m: LabMachine,
  args: string[],
  program = "mesh-host",
): Promise<Result & { code: number | null; raw: string }> {
  const r = await m.exec([program, ...args, "--json"], {
    allowFailure: true,
    timeoutMs: 900_000,
  });
  try {
    return { ...(JSON.parse(r.stdout) as Result), code: r.code, raw: r.stdout + r.stderr };
  } catch {
    throw new Error(
      `mesh-host ${args.join(" ")} printed no result (exit ${r.code}): ${r.stdout}\n${r.stderr}`,
    );
  }
}

async function applyVariant(
  m: LabMachine,
  variant: { lock: string; change: (resources: Resource[]) => void },
): Promise<Result & { code: number | null; raw: string }> {
  const { lock, change } = variant;
  const bundle = JSON.parse(lock) as {
    declaration: { version: 1; resources: Resource[] };
  };
  change(bundle.declaration.resources);
  const dir = await Deno.makeTempDir({ prefix: "mesh-variant-" });
  try {
    await Deno.writeTextFile(`${dir}/variant.lock`, JSON.stringify(bundle));
    // A broken bundle on purpose: `deno task hosts` would refuse one pinning a missing image.
    const host = await substrateHost(`${dir}/variant.lock`, { skipImageCheck: true });
    await m.copyIn(host.path, "/usr/local/sbin/mesh-host-variant");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  return await hostRun(m, ["reconcile"], "mesh-host-variant");
}

Deno.test({
  name:
    "the debian bundle on OpenRC: a missing image, a store that does not answer, then it resumes and converges",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const lock = await freshSubstrateLock();
    const file = (await substrateHost(lock.path)).path;
    const m = await bootLab("openrc", { bare: true, network: "bridge" });
    const stopForwarder = await registryForBridge(m);
    try {
      await m.copyIn(file, "/usr/local/sbin/mesh-host");
      const ids = (r: Result) => r.changes.map((c) => c.id);

      // 1. The store pins an image the registry lacks.
      const missing = `127.0.0.1:5000/mesh-postgres@sha256:${"0".repeat(64)}`;
      const bad = await applyVariant(m, {
        lock: lock.text,
        change: (rs) => {
          rs.find((r) => r.id === "store")!.image = missing;
        },
      });
      // Refused whole before anything (issue 26: it stopped at 8 of 14), naming the image.
      assertEquals([bad.code, bad.outcome, bad.applied], [2, "refused", 0], bad.raw);
      const problem = bad.problems.find((p) => p.id === "store");
      assert(problem, bad.raw);
      assertStringIncludes(problem.message, `Cannot have image ${missing}`);
      assertStringIncludes(problem.message, "its registry does not hold it");
      assertEquals(ids(bad), [], `something was applied: ${bad.raw}`);
      const running = await m.exec(["podman", "ps", "-a", "--format", "{{.Names}}"]);
      assertEquals(running.stdout.trim(), "", "no container was created");

      // 2. The store runs but does not answer: the next step's verify fails with the reason.
      const silent = await applyVariant(m, {
        lock: lock.text,
        change: (rs) => {
          const store = rs.find((r) => r.id === "store")!;
          store.args = [...(store.args ?? []), "--entrypoint", "sleep"];
          store.command = ["infinity"];
          // The next step waits 120 s for the store to answer before it fails: 10 s here, the
          // same step otherwise (its wait was most of this test's minutes).
          const tls = rs.find((r) => r.id === "store-tls")!;
          const waits = (tls.command as string[]).map((a) =>
            a.replaceAll("-ge 120 ]", "-ge 10 ]").replaceAll("within 120 s", "within 10 s")
          );
          assert(waits.join() !== (tls.command as string[]).join(), "the store's wait is 120 s");
          tls.command = waits;
        },
      });
      assertEquals([silent.code, silent.outcome], [1, "failed"], silent.raw);
      assertEquals(silent.changes.find((c) => c.id === "store")?.change, "created");
      // The next step: the store's TLS check, which first waits for it to answer.
      const why = silent.problems.find((p) => p.id === "store-tls");
      assert(why, silent.raw);
      assertStringIncludes(why.message, "did not answer within 10 s");
      assertStringIncludes(why.message, "/var/run/postgresql");

      // 3. The carried bundle resumes and converges, with OpenRC; then nothing changes.
      const good = await hostRun(m, ["reconcile"]);
      assertEquals([good.code, good.outcome], [0, "applied"], good.raw);
      assertEquals(good.changes.find((c) => c.id === "store")?.change, "updated");
      const again = await hostRun(m, ["reconcile"]);
      assertEquals(again.changes.filter((c) => c.change !== "unchanged"), [], again.raw);
      assertEquals(
        (await m.exec(["cat", "/run/openrc/softlevel"])).stdout.trim(),
        "default",
        "the machine runs OpenRC",
      );
    } finally {
      stopForwarder();
      await m.destroy();
    }
  },
});
