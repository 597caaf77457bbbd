/**
 * One shape for every check: the table that `run` walks covers every check once, each row says
 * what it observes and the findings it can make, a row making a finding it does not declare is a
 * defect, and the modules of reconcile/ import one another without a cycle.
 */
import { assert, assertEquals, assertThrows } from "../support/assert.ts";
import { CheckDefect, type CheckRow, CHECKS, walkChecks } from "../../reconcile/compare.ts";
import type { Check, Observation } from "../../reconcile/finding.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { ROOT } from "../support/mod.ts";
import { CHECKS as RESULT_FILE_CHECKS } from "../../lib/drift.ts";

/** Every check, named once: a new check that is not in the table fails to type check here. */
const EVERY: Record<Check, true> = {
  container: true,
  leftover: true,
  port: true,
  address: true,
  redirect: true,
  certificate: true,
  route: true,
  repo: true,
  timer: true,
  boot: true,
  backup: true,
};

Deno.test("the table has every check once, each saying what it observes and can find", () => {
  assertEquals(CHECKS.map((r) => r.check).sort(), Object.keys(EVERY).sort());
  // The result file the link carries (lib/drift.ts) accepts a finding of every check.
  assertEquals([...RESULT_FILE_CHECKS].sort(), Object.keys(EVERY).sort());
  for (const row of CHECKS) {
    assert(row.observes.length > 0, `${row.check} observes nothing`);
    const directions = Object.keys(row.findings);
    assert(directions.length > 0, `${row.check} can find nothing`);
    for (const d of directions) assert(d === "missing" || d === "rogue", `${row.check}: ${d}`);
  }
});

Deno.test("a row making a finding it does not declare is a defect, not drift", () => {
  const registry = parseRegistry("version: 1\naccounts: [root]\nservices: {}\n");
  const observation: Observation = {
    time: new Date(0).toISOString(),
    containers: [],
    listeners: [],
    addresses: [],
    probes: [],
    sources: [],
  };
  const row = (check: Check, direction: "missing" | "rogue"): CheckRow => ({
    check: "redirect",
    observes: ["caddy"],
    findings: { missing: "a redirect that does not redirect" },
    compare: () => [{ check, direction, subject: "x", detail: "x" }],
  });
  const options = { certWarnMs: 0, now: 0 };
  assertEquals(walkChecks([row("redirect", "missing")], registry, observation, options).length, 1);
  assertThrows(
    () => walkChecks([row("redirect", "rogue")], registry, observation, options),
    CheckDefect,
  );
  assertThrows(
    () => walkChecks([row("address", "missing")], registry, observation, options),
    CheckDefect,
  );
});

Deno.test("reconcile/ has no import cycle", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `${ROOT}reconcile/main.ts`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
    }[];
  };
  const ours = (s: string | undefined) => s !== undefined && s.startsWith(`file://${ROOT}`);
  const graph = new Map<string, string[]>();
  for (const m of info.modules) {
    if (!ours(m.specifier)) continue;
    graph.set(
      m.specifier,
      (m.dependencies ?? []).flatMap((d) => [d.code?.specifier, d.type?.specifier])
        .filter((s): s is string => ours(s)),
    );
  }
  assert(graph.size > 20, `only ${graph.size} modules read`);
  const state = new Map<string, "open" | "done">();
  const cycles: string[] = [];
  const visit = (m: string, path: string[]) => {
    state.set(m, "open");
    for (const next of graph.get(m) ?? []) {
      if (state.get(next) === "open") {
        cycles.push(
          [...path.slice(path.indexOf(next)), m, next].map((s) => s.slice(`file://${ROOT}`.length))
            .join(" -> "),
        );
      } else if (!state.has(next)) visit(next, [...path, m]);
    }
    state.set(m, "done");
  };
  for (const m of graph.keys()) if (!state.has(m)) visit(m, []);
  assertEquals(cycles, []);
});
