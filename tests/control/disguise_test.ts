/**
 * Rule 5 (docs/design.md, "Hostile inputs") for mesh-control: text from nodes (a report's problem
 * ids, paths and messages; its drift summary's registry path, problem and unobserved sources)
 * and names given on the command line (a node, a module, a module's fragment) carrying
 * bidirectional controls, zero-width characters, a byte order mark or C1 controls is shown as
 * `<U+XXXX>` in `board` and `status` (text), `board --html`, and every refusal; `--json` keeps the
 * very strings, written as `\uXXXX` escapes. The seeded reports go in as ingest records them (SQL,
 * as tests/control/drift_estate.ts does), the drift summaries through `recordDrift`, the function
 * ingest calls.
 *
 * @module
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { assertJsonEscaped, assertShown, disguised } from "../support/disguise.ts";
import { controlCli, freshInventory } from "./support.ts";
import { recordDrift } from "../../control/drift.ts";
import type { ReportMessage } from "../../lib/broker.ts";

const NODE = "dg-node";
const DIGEST = `sha256:${"a".repeat(64)}`;
const PROBLEM = { id: disguised("pkg"), path: disguised("path"), message: disguised("apt said") };
const REGISTRY = `/srv/${disguised("reg")}/registry.yaml`;

async function seed(inv: Awaited<ReturnType<typeof freshInventory>>): Promise<void> {
  const sql = inv.sql;
  await sql`insert into nodes (name, system) values (${NODE}, 'debian')`;
  await sql`insert into declarations (node, generation, digest, body, total)
    values (${NODE}, 1, ${DIGEST}, '{}', 8)`;
  await sql`
    insert into reports (node, generation, digest, outcome, applied, total, trigger, problems,
      changes, host_version, reported_at)
    values (${NODE}, 1, ${DIGEST}, 'failed', 3, 8, 'interval', ${
    JSON.stringify([PROBLEM])
  }::text::jsonb, '[]'::jsonb, '0.1.0-test', now() - interval '1 minute')`;
  const report: ReportMessage = {
    kind: "report",
    node: NODE,
    generation: 1,
    trigger: "interval",
    at: new Date().toISOString(),
    hostVersion: "0.1.0-test",
    outcome: "failed",
    applied: 3,
    total: 8,
    declaration: DIGEST,
    changes: [],
    problems: [],
    drift: {
      status: "unobservable",
      ranAt: new Date(Date.now() - 60_000).toISOString(),
      intervalSeconds: 900,
      registry: REGISTRY,
      entries: 4,
      findings: [],
      unobserved: [disguised("podman@root")],
    },
  };
  await sql.begin((tx) => recordDrift(tx, [report]));
}

Deno.test("mesh-control shows every disguising character as <U+XXXX>, and --json as \\u escapes", async (t) => {
  const inv = await freshInventory();
  const dir = await Deno.makeTempDir({ prefix: "mesh-disguise-" });
  try {
    await seed(inv);

    await t.step("board and status as text: a report's problem and drift", async () => {
      for (const args of [["board"], ["status"]]) {
        const out = await controlCli(args, inv.env);
        assertEquals(out.code, args[0] === "status" ? 1 : 0, out.stderr);
        assertShown(out.stdout, `${args[0]}: the problem`);
        assertStringIncludes(out.stdout, `${NODE} `);
      }
      // The board shows the drift summary's registry path too.
      const board = await controlCli(["board"], inv.env);
      assertShown(board.stdout.slice(board.stdout.indexOf("/srv/")), "board: the registry");
    });

    await t.step("board and status --json: the very strings, as \\u escapes", async () => {
      for (const args of [["board", "--json"], ["status", "--json"]]) {
        const out = await controlCli(args, inv.env);
        assertJsonEscaped(out.stdout, args.join(" "));
        const json = JSON.parse(out.stdout) as {
          machines: {
            name: string;
            problems: typeof PROBLEM[];
            drift: { registry?: string; unobserved?: string[] };
          }[];
        };
        const m = json.machines.find((m) => m.name === NODE)!;
        assertEquals(m.problems[0], PROBLEM);
        assertEquals(m.drift.registry, REGISTRY);
        assertEquals(m.drift.unobserved, [disguised("podman@root")]);
      }
    });

    await t.step("board --html: each shown as <U+XXXX> in the page", async () => {
      const page = `${dir}/board.html`;
      const out = await controlCli(["board", "--html", page], inv.env);
      assertEquals(out.code, 0, out.stderr);
      const html = await Deno.readTextFile(page);
      // In the page, < and > of the escape are entities; the browser shows `<U+202E>`.
      const shown = html.replaceAll("&#60;", "<").replaceAll("&#62;", ">");
      for (const where of ["pkg", "apt said", "reg", "podman@root"]) {
        const at = shown.indexOf(`${where} a<U+`);
        assert(at >= 0, `the page does not show ${where} escaped`);
      }
      assertShown(shown, "board --html");
    });

    await t.step("a refusal naming a disguised node, module or fragment", async () => {
      const node = disguised("node");
      const enroll = await controlCli(["node", "enroll", node, "--system", "debian"], inv.env);
      assertEquals(enroll.code, 2, enroll.stderr);
      assertShown(enroll.stderr, "node enroll");
      const assign = await controlCli(["node", "assign", NODE, disguised("web")], inv.env);
      assertEquals(assign.code, 2, assign.stderr);
      assertShown(assign.stderr, "node assign");
      const fragment = `${dir}/fragment.json`;
      await Deno.writeTextFile(
        fragment,
        JSON.stringify({
          version: 1,
          resources: [{ id: "f", type: "file", path: "/etc/x", content: "", mode: "0644" }],
          [disguised("key")]: true,
        }),
      );
      const add = await controlCli(["module", "add", fragment], inv.env);
      assertEquals(add.code, 2, add.stderr);
      assertShown(add.stderr, "module add");
    });
  } finally {
    await inv.drop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
