/**
 * Rule 3 of docs/design.md ("Hostile inputs"): no input crashes a reader. The registry and the
 * deploy map (YAML) are bounded in line length (lib/text_bounds.ts `MAX_YAML_LINE`) and nesting
 * (`MAX_YAML_DEPTH`): any shape is refused with a placed sentence naming the bound, never a
 * RangeError (a stack overflow: exit 70). The field case: a registry of one 10 MB line ended in
 * exit 70, a stack overflow in the fast read's regular expression.
 *
 * Seeded: MESH_FUZZ_SEED replays a run (a failure names the seed and the input's shape).
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { rng } from "../support/rng.ts";
import { parseRegistryText } from "../../reconcile/registry_load.ts";
import { parsePlaced, parseRegistry, RegistryError } from "../../reconcile/registry.ts";
import { quickLoad } from "../../reconcile/registry_fast.ts";
import { DeployMapError, parseDeployMap } from "../../reconcile/deploy_map.ts";
import { MAX_YAML_DEPTH, MAX_YAML_LINE } from "../../lib/text_bounds.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const HEAD = "version: 1\naccounts: [root]\nservices:\n  web:\n    kind: daemon\n";

/** A long line in one of the places a registry line can hold text. */
function longLine(r: ReturnType<typeof rng>, length: number): string {
  const body = r.pick(["a", "é", "😀", "a b ", "[", "- ", ":"]).repeat(length);
  return r.pick([
    () => body,
    () => `    note: ${body}`,
    () => `    note: "${body}"`,
    () => `    note: '${body}'`,
    () => `    ${"k".repeat(length)}: 1`,
    () => `# ${body}`,
    () => `    note: [${"a, ".repeat(length / 3)}a]`,
    () => `    note: |\n      ${body}`,
  ])();
}

/**
 * Nesting `depth` levels deep, in one of the ways YAML nests (by indentation at most 3,000 levels:
 * deeper, the text alone would be gigabytes).
 */
function deep(r: ReturnType<typeof rng>, depth: number): string {
  const indented = Math.min(depth, 3_000);
  return r.pick([
    () => `    note: ${"[".repeat(depth)}${"]".repeat(depth)}`,
    () => `    note: ${"{a: ".repeat(depth)}1${"}".repeat(depth)}`,
    () =>
      `    note:\n${
        Array.from({ length: indented }, (_, i) => `${" ".repeat(6 + i)}k:`).join("\n")
      }`,
    () => `    note:\n      ${"- ".repeat(depth)}a`,
    () =>
      `    note:\n${
        Array.from({ length: indented }, (_, i) => `${" ".repeat(6 + 2 * i)}- k:`).join("\n")
      }`,
  ])();
}

/** Reads `text` every way a registry is read; each must refuse it with a RegistryError. */
function refusedEveryWay(text: string, where: string, fastDeclines = true): RegistryError[] {
  const errors: RegistryError[] = [];
  if (fastDeclines) {
    assertEquals(quickLoad(text), undefined, `the fast read must decline (${where})`);
  }
  for (const read of [parseRegistry, parsePlaced]) {
    try {
      read(text, "reg.yaml");
      throw new Error(`accepted (${where})`);
    } catch (error) {
      assert(
        error instanceof RegistryError,
        `${read.name}: ${(error as Error)?.name}: ${(error as Error)?.message} (${where})`,
      );
      errors.push(error);
    }
  }
  return errors;
}

Deno.test("registry bounds: the field case, one line of 10 MB, exits 2 with a sentence, not 70", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mesh-bounds-" });
  try {
    const file = `${dir}/registry.yaml`;
    await Deno.writeTextFile(file, "a".repeat(10_000_000) + "\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}reconcile/main.ts`, "check-registry", file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 2, stderr);
    assertStringIncludes(stderr, `${file}:1:1: This line is 10000000 characters long`);
    assertStringIncludes(stderr, `more than the ${MAX_YAML_LINE} a line may have`);
    assert(!stderr.includes("RangeError") && !stderr.includes("defect"), stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("registry bounds: seeded long lines and deep nesting are refused, placed, naming the bound", async () => {
  const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 28);
  const r = rng(seed);
  for (let n = 0; n < 40; n++) {
    const long = r.chance(0.5);
    const size = long
      ? MAX_YAML_LINE + 1 + r.int(r.chance(0.2) ? 10_000_000 : 200_000)
      : MAX_YAML_DEPTH + 1 + r.int(r.chance(0.2) ? 100_000 : 500);
    const part = long ? longLine(r, size) : deep(r, size);
    const text = `${HEAD}${part}\n`;
    const where = `seed ${seed}, input ${n}: ${long ? "a line" : "nesting"} of ${size}: ` +
      JSON.stringify(part.slice(0, 80));
    if (!long && text.split("\n").some((l) => l.length > MAX_YAML_LINE)) {
      // Nesting on one line past the line bound: refused for the line, which is checked first.
      for (const e of refusedEveryWay(text, where)) {
        assertStringIncludes(e.message, "characters long", where);
      }
      continue;
    }
    for (const e of refusedEveryWay(text, where)) {
      assertEquals(e.problems.length, 1, where);
      const p = e.problems[0]!;
      assert(p.line >= 6, `line ${p.line} (${where})`);
      assertStringIncludes(
        p.message,
        long ? `more than the ${MAX_YAML_LINE} a line may have` : `${MAX_YAML_DEPTH} levels deep`,
        where,
      );
    }
    await assertRejectsRegistry(text, where);
  }
});

async function assertRejectsRegistry(text: string, where: string): Promise<void> {
  try {
    await parseRegistryText(text, "reg.yaml");
  } catch (error) {
    assert(error instanceof RegistryError, `${(error as Error)?.message} (${where})`);
    return;
  }
  throw new Error(`parseRegistryText accepted it (${where})`);
}

Deno.test("registry bounds: within the bounds, nesting and long lines are judged by the schema", () => {
  // 55 levels: not refused for a bound (the schema refuses the note, which is text).
  for (const part of [deep(rng(1), 55), deep(rng(2), 55), deep(rng(3), 55)]) {
    for (const e of refusedEveryWay(`${HEAD}${part}\n`, part.slice(0, 40), false)) {
      for (const p of e.problems) {
        assert(
          !p.message.includes("levels deep") && !p.message.includes("characters long"),
          p.message,
        );
      }
    }
  }
  // A note at the line bound is a valid registry.
  const note = `    note: ${"a".repeat(MAX_YAML_LINE - 10)}\n`;
  assertEquals(parseRegistry(`${HEAD}${note}`).services.web!.note!.length, MAX_YAML_LINE - 10);
});

Deno.test("deploy map bounds: a long line and deep nesting are refused, placed, naming the bound", () => {
  const head = "version: 1\nfiles:\n";
  for (
    const [text, says] of [
      [`${head}  - source: ${"a".repeat(10_000_000)}\n`, "characters long"],
      [`${head}  - source: ${"[".repeat(30_000)}\n`, "levels deep"],
      [
        `${head}${Array.from({ length: 3_000 }, (_, i) => `${" ".repeat(2 + i)}k:`).join("\n")}\n`,
        "levels deep",
      ],
    ] as const
  ) {
    try {
      parseDeployMap(text, "deploy.yaml");
      throw new Error("accepted");
    } catch (error) {
      assert(
        error instanceof DeployMapError,
        `${(error as Error)?.name}: ${(error as Error)?.message}`,
      );
      assertStringIncludes(error.message, says);
      assertStringIncludes(error.message, "deploy.yaml:");
    }
  }
});
