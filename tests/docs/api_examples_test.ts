/**
 * The public module's examples cannot rot (issue 30 item 8):
 *
 * - every value `mod.ts` exports (a function, a class, a constant or a schema; not a `type`-only
 *   export) has an `@example` at its definition, as `deno doc --json mod.ts` reads it: a `ts`
 *   block (not `ignore`, which deno neither type-checks nor runs) that imports that name from
 *   `mod.ts`, as a user would;
 * - `deno test --doc` on the modules that define them type-checks every example and runs it.
 *   Examples that need the machine (observe, reconcile, batchEnable, run, ...) are written as a
 *   function nobody calls: type-checked, not run. They run with no permission but reading and
 *   writing a temporary directory of this test and the two variables the `yaml` package reads, so
 *   an example that reaches for the machine fails here instead of touching it.
 */

import { relative } from "node:path";
import { assert, assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

/** One declaration of an exported name, as `deno doc --json` gives it (the fields used here). */
interface DocDeclaration {
  location: { filename: string; line: number };
  kind: string;
  jsDoc?: { doc?: string; tags?: { kind: string; doc?: string }[] };
}

/** The names `mod.ts` exports, split into values and `type`-only exports. */
function modExports(text: string): { values: string[]; types: string[] } {
  const values: string[] = [];
  const types: string[] = [];
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const statements = code.split(";").map((s) => s.trim()).filter((s) => s !== "");
  for (const statement of statements) {
    const m = /^export\s+(type\s+)?\{([^}]*)\}\s*from\s*"[^"]+"$/.exec(statement);
    if (m === null) {
      throw new Error(
        `mod.ts: cannot read this export (only "export { ... } from" is read): ${
          statement.slice(0, 80)
        }`,
      );
    }
    for (const item of m[2]!.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      const name = /^(type\s+)?([A-Za-z_$][\w$]*)$/.exec(item);
      if (name === null) throw new Error(`mod.ts: cannot read the export "${item}"`);
      (m[1] !== undefined || name[1] !== undefined ? types : values).push(name[2]!);
    }
  }
  return { values, types };
}

/** Why `tag` is not an example of `name` as a user would write it; undefined when it is one. */
function exampleProblem(
  tag: { doc?: string },
  name: string,
  specifier: string,
): string | undefined {
  const fence = /^```(\S*)([^\n]*)\n([\s\S]*?)^```/m.exec(tag.doc ?? "");
  if (fence === null) return "its @example has no fenced code block";
  if (fence[1] !== "ts") return `its @example's block is \`\`\`${fence[1]}, not \`\`\`ts`;
  if (/\bignore\b/.test(fence[2]!)) {
    return "its @example is `ignore` (neither type-checked nor run): write it as a function " +
      "nobody calls instead";
  }
  const imported = [...fence[3]!.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g)]
    .filter((m) => m[2] === specifier)
    .flatMap((m) => m[1]!.split(",").map((s) => s.trim()));
  if (!imported.includes(name)) {
    return `its @example does not import ${name} from "${specifier}" (the path to mod.ts)`;
  }
  return undefined;
}

async function deno(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** What mod.ts exports, by name, with its declarations. */
async function documented(): Promise<Map<string, DocDeclaration[]>> {
  const out = await deno(["doc", "--json", "mod.ts"]);
  assertEquals(out.code, 0, `deno doc --json mod.ts: ${out.stderr}`);
  const json = JSON.parse(out.stdout) as {
    nodes: Record<string, { symbols: { name: string; declarations: DocDeclaration[] }[] }>;
  };
  const mod = json.nodes[new URL("mod.ts", `file://${ROOT}`).href];
  assert(mod !== undefined, "deno doc --json gave no node for mod.ts");
  return new Map(mod.symbols.map((s) => [s.name, s.declarations]));
}

/** The declarations of `name` that are values (a type alias or interface of the same name is not). */
const valueDeclarations = (declarations: DocDeclaration[]) =>
  declarations.filter((d) => d.kind !== "typeAlias" && d.kind !== "interface");

const pathOf = (d: DocDeclaration) => new URL(d.location.filename).pathname;

/** The specifier of mod.ts from the module at `path`, as a user's import in its JSDoc says it. */
function modSpecifier(path: string): string {
  const rel = relative(path.slice(0, path.lastIndexOf("/")), `${ROOT}mod.ts`);
  return rel.startsWith(".") ? rel : `./${rel}`;
}

Deno.test("every value mod.ts exports has an @example at its definition that imports it", async () => {
  const { values, types } = modExports(await Deno.readTextFile(`${ROOT}mod.ts`));
  assert(values.length >= 30, `expected mod.ts's values, read ${values.length}`);
  const docs = await documented();
  // The reading of mod.ts and deno doc agree on what it exports.
  assertEquals([...docs.keys()].sort(), [...values, ...types].sort());
  const problems: string[] = [];
  for (const name of values) {
    const declarations = valueDeclarations(docs.get(name)!);
    if (declarations.length === 0) problems.push(`${name}: deno doc finds no value declaration`);
    for (const d of declarations) {
      const where = `${name} (${relative(ROOT, pathOf(d))}:${d.location.line})`;
      const examples = (d.jsDoc?.tags ?? []).filter((t) => t.kind === "example");
      if (examples.length === 0) {
        problems.push(`${where}: no @example`);
        continue;
      }
      const specifier = modSpecifier(pathOf(d));
      for (const tag of examples) {
        const problem = exampleProblem(tag, name, specifier);
        if (problem !== undefined) problems.push(`${where}: ${problem}`);
      }
    }
  }
  assertEquals(problems, []);
});

Deno.test("deno test --doc type-checks and runs every example of mod.ts's modules", async () => {
  const docs = await documented();
  const { values } = modExports(await Deno.readTextFile(`${ROOT}mod.ts`));
  const files = [
    ...new Set(values.flatMap((n) => valueDeclarations(docs.get(n) ?? []).map(pathOf))),
  ].map((p) => relative(ROOT, p)).sort();
  assert(files.length >= 10, `expected the modules defining mod.ts's values, found ${files}`);
  const tmp = await Deno.makeTempDir({ prefix: "mesh-doc-examples-" });
  try {
    const out = await deno([
      "test",
      "--doc",
      `--allow-read=${tmp}`,
      `--allow-write=${tmp}`,
      "--allow-env=LOG_TOKENS,LOG_STREAM",
      ...files,
    ], { TMPDIR: tmp });
    const said = `${out.stdout}${out.stderr}`;
    assertEquals(out.code, 0, `deno test --doc ${files.join(" ")}:\n${said}`);
    // One test per example: each module's examples ran, none was left out.
    const ran = [...said.matchAll(/^running 1 test from \.\/(\S+)#\d+-\d+\.ts$/gm)].map((m) =>
      m[1]
    );
    for (const file of files) assert(ran.includes(file), `no example of ${file} ran:\n${said}`);
    const passed = /^ok \| (\d+) passed \| 0 failed/m.exec(said);
    assert(passed !== null && Number(passed[1]) >= values.length, said);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
