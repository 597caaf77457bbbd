/**
 * `mesh-reconcile run --result FILE --interval D` and the link's reading of that file
 * (host/drift_summary.ts), with a REAL run on this VM: its registry declares nothing, so the VM's
 * listeners (PostgreSQL, RabbitMQ, ...) are rogue ports and the run is drift, exit 1; the result
 * is written anyway, and the summary counts what the file holds.
 *
 * Bad input, each an `unreadable` summary naming the file and the reason, never an exception:
 * missing, empty, truncated, not UTF-8, not a result, a newer result version, larger than the
 * limit, a directory. `--result` without `--interval`, or with one that is not whole seconds, is
 * refused (exit 2) and writes nothing.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { reconcileCli } from "../support/mod.ts";
import { readDriftSummary } from "../../host/drift_summary.ts";
import { countFindings, DriftSummary, MAX_RESULT_BYTES, ResultFile } from "../../lib/drift.ts";

async function unreadable(path: string): Promise<string> {
  const s = await readDriftSummary(path);
  assert(s.status === "unreadable", `${path}: ${JSON.stringify(s)}`);
  assertEquals(s.path, path);
  return s.problem;
}

Deno.test("run --result writes the result after a drift run, and the link summarises it", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-drift-summary-" });
  try {
    const registry = `${dir}/registry.yaml`;
    await Deno.writeTextFile(registry, "version: 1\naccounts: [root]\nservices: {}\n");
    const result = `${dir}/result.json`;
    const base = ["run", "--registry", registry, "--caddy-admin", "none", "--boot", "none"];

    await t.step(
      "--result without --interval, or a bad one, is refused and writes nothing",
      async () => {
        const bare = await reconcileCli([...base, "--result", result]);
        assertEquals(bare.code, 2, bare.stderr);
        assertStringIncludes(bare.stderr, "--result needs --interval");
        for (const bad of ["0s", "1500ms", "soon"]) {
          const r = await reconcileCli([...base, "--result", result, "--interval", bad]);
          assertEquals(r.code, 2, `${bad}: ${r.stderr}`);
          assertStringIncludes(r.stderr, "--interval");
        }
        const alone = await reconcileCli([...base, "--interval", "15m"]);
        assertEquals(alone.code, 2, alone.stderr);
        assertStringIncludes(alone.stderr, "--interval is only used with --result");
        assert(!(await Deno.stat(result).then(() => true, () => false)), "a result was written");
      },
    );

    await t.step("a drift run writes its result; the summary counts it", async () => {
      const r = await reconcileCli([...base, "--result", result, "--interval", "15m"]);
      const file = ResultFile.parse(JSON.parse(await Deno.readTextFile(result)));
      assertEquals(r.code, file.exitCode, r.stderr);
      assertEquals(file.intervalSeconds, 900);
      assertEquals(file.registry, registry);
      assert(file.status !== "clean", "this VM listens on ports its registry does not declare");
      const s = await readDriftSummary(result);
      assert(s.status !== "unreadable", JSON.stringify(s));
      assertEquals(s.status, file.status);
      assertEquals(s.ranAt, file.time);
      assertEquals(s.registry, registry);
      assertEquals(s.findings, countFindings(file.findings));
      assertEquals(
        s.findings.reduce((n, f) => n + f.count, 0),
        file.findings.length,
      );
      assert(s.findings.some((f) => f.check === "port" && f.direction === "rogue"));
      // The findings themselves stay on the node: no subject or detail in the summary.
      assert(!JSON.stringify(s).includes("detail"));
    });

    await t.step("missing, empty, truncated, not UTF-8: unreadable with the reason", async () => {
      assertStringIncludes(await unreadable(`${dir}/none.json`), "no result there");
      await Deno.writeTextFile(`${dir}/empty.json`, "");
      assertEquals(await unreadable(`${dir}/empty.json`), "empty");
      const good = await Deno.readTextFile(result);
      await Deno.writeTextFile(`${dir}/cut.json`, good.slice(0, Math.floor(good.length / 2)));
      assertStringIncludes(await unreadable(`${dir}/cut.json`), "truncated");
      await Deno.writeFile(`${dir}/latin1.json`, new Uint8Array([0x7b, 0xe9, 0x7d]));
      assertStringIncludes(await unreadable(`${dir}/latin1.json`), "not UTF-8 JSON");
    });

    await t.step(
      "not a result, or a newer version of one: unreadable, naming the fields",
      async () => {
        await Deno.writeTextFile(`${dir}/other.json`, JSON.stringify({ clean: true }));
        const other = await unreadable(`${dir}/other.json`);
        assertStringIncludes(other, "not a mesh-reconcile result");
        assertStringIncludes(other, "version");
        const newer = { ...JSON.parse(await Deno.readTextFile(result)), version: 2 };
        await Deno.writeTextFile(`${dir}/v2.json`, JSON.stringify(newer));
        assertStringIncludes(await unreadable(`${dir}/v2.json`), "version");
        const extra = { ...JSON.parse(await Deno.readTextFile(result)), surprise: 1 };
        await Deno.writeTextFile(`${dir}/extra.json`, JSON.stringify(extra));
        assertStringIncludes(await unreadable(`${dir}/extra.json`), "surprise");
      },
    );

    await t.step(
      "a NUL, a lone surrogate or a pair at the cut: the summary is a report's text",
      async () => {
        const file = JSON.parse(await Deno.readTextFile(result));
        const odd = {
          ...file,
          status: "unobservable",
          // Written (the NUL as \0), 4,097 characters: the cut at 4,096 falls inside the pair.
          registry: `/etc/reg\u0000${"x".repeat(4085)}\u{1F600}`,
          sources: [
            { source: "docker\u0000", state: "failed", method: "m", detail: "d" },
            { source: "podman", account: "r\ud800", state: "failed", method: "m", detail: "d" },
          ],
        };
        await Deno.writeTextFile(`${dir}/odd.json`, JSON.stringify(odd));
        const s = await readDriftSummary(`${dir}/odd.json`);
        assert(DriftSummary.safeParse(s).success, JSON.stringify(s).slice(0, 300));
        assert(s.status === "unobservable", JSON.stringify(s).slice(0, 300));
        assertEquals(s.registry.length, 4096);
        assert(s.registry.startsWith("/etc/reg\\0xx") && s.registry.endsWith("x\uFFFD"));
        assertEquals(s.unobserved, ["docker\\0", "podman@r\uFFFD"]);
        // A key of the file quoted in the reason it is unreadable.
        await Deno.writeTextFile(
          `${dir}/key.json`,
          JSON.stringify({ ...file, "a\u0000\udc00": 1 }),
        );
        const key = await readDriftSummary(`${dir}/key.json`);
        assert(DriftSummary.safeParse(key).success, JSON.stringify(key));
      },
    );

    await t.step("larger than the limit, or a directory: unreadable", async () => {
      const big = `${dir}/big.json`;
      await Deno.writeTextFile(big, " ".repeat(MAX_RESULT_BYTES + 1));
      assertStringIncludes(await unreadable(big), `larger than the ${MAX_RESULT_BYTES} bytes`);
      // Exactly at the limit is read (and then is not a result).
      await Deno.writeTextFile(big, " ".repeat(MAX_RESULT_BYTES));
      assertStringIncludes(await unreadable(big), "not UTF-8 JSON");
      await Deno.mkdir(`${dir}/dir.json`);
      assertEquals(await unreadable(`${dir}/dir.json`), "it is a directory, not a regular file");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
