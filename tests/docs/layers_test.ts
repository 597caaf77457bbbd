/**
 * The layers go one way (issue 30 item 7; README.md, "Layout"):
 *
 * - no import circle among the production modules (everything outside tests/ and bench/):
 *   static imports, `import type`, re-exports and dynamic `import()` of a string literal all
 *   count, as `deno info --json` reads them;
 * - each layer ({@linkcode layerOf}) imports only the layers below it ({@linkcode MAY_IMPORT}):
 *   the bottom, lib/ with the resource types' schemas (resources/schemas.ts and
 *   resources/<type>/schema.ts), nothing above it; control/, builder/ and reconcile/ only the
 *   bottom (what they share with the host, the declaration and the container runtime, is there),
 *   so never host/;
 * - host/ (the applier contract, the apply, the command line) imports only the bottom; the
 *   resource types' appliers (resources/<type>/applier.ts, their helpers beside them,
 *   resources/fs.ts and the table resources/appliers.ts) import host/ and the bottom; systems/
 *   holds what differs (each system's entry point `systems/<system>/main.ts`, its `mod.ts`, its
 *   package applier) and imports the appliers, the system contract (host/system.ts) and the
 *   command line (host/cli.ts);
 * - a resource type's schema reaches, through everything it imports, only the bottom layer.
 *
 * Each failure names the files and the line of the import.
 */

import { join, relative } from "node:path";
import { assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

/** The folders and files that are production code. */
const PRODUCTION = [
  "host",
  "resources",
  "systems",
  "lib",
  "control",
  "builder",
  "reconcile",
  "scripts",
];

/** One import: the importing file, the imported file (both relative to the root), its line. */
export interface Edge {
  from: string;
  to: string;
  line: number;
}

async function productionFiles(): Promise<string[]> {
  const out = ["mod.ts"];
  async function walk(dir: string): Promise<void> {
    for await (const entry of Deno.readDir(join(ROOT, dir))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && path.endsWith(".ts")) out.push(path);
    }
  }
  for (const dir of PRODUCTION) await walk(dir);
  return out.sort();
}

interface InfoSpan {
  specifier: string;
  span?: { start: { line: number } };
}

interface InfoModule {
  specifier: string;
  dependencies?: { code?: InfoSpan; type?: InfoSpan }[];
}

/**
 * Every import between production files, read by `deno info --json` of a root importing them
 * all (code and type imports, dynamic imports of static specifiers).
 */
export async function productionImports(): Promise<{ files: string[]; edges: Edge[] }> {
  const files = await productionFiles();
  const dir = await Deno.makeTempDir({ prefix: "mesh-layers-" });
  try {
    const root = join(dir, "root.ts");
    await Deno.writeTextFile(
      root,
      files.map((f) => `import "${new URL(f, `file://${ROOT}`).href}";\n`).join(""),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", join(ROOT, "deno.json"), root],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`deno info failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: InfoModule[] };
    const production = new Set(files);
    const local = (specifier: string): string | undefined => {
      if (!specifier.startsWith("file://")) return undefined;
      const path = relative(ROOT, new URL(specifier).pathname);
      return production.has(path) ? path : undefined;
    };
    const edges: Edge[] = [];
    for (const module of info.modules) {
      const from = local(module.specifier);
      if (from === undefined) continue;
      for (const dependency of module.dependencies ?? []) {
        for (const kind of [dependency.code, dependency.type]) {
          const to = kind === undefined ? undefined : local(kind.specifier);
          if (to === undefined) continue;
          edges.push({ from, to, line: (kind!.span?.start.line ?? 0) + 1 });
        }
      }
    }
    return { files, edges };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The circles of `edges`: each strongly connected component of more than one file, as a path. */
export function circles(edges: Edge[]): string[] {
  const next = new Map<string, Map<string, number>>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, new Map());
    if (!next.get(e.from)!.has(e.to)) next.get(e.from)!.set(e.to, e.line);
  }
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || next.get(v)?.has(v)) components.push(component.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) connect(v);
  // Each component as one circle through its first file: a shortest way back to it.
  return components.map((component) => {
    const inside = new Set(component);
    const start = component[0]!;
    const previous = new Map<string, string>();
    const queue = [start];
    let end: string | undefined;
    while (queue.length > 0 && end === undefined) {
      const v = queue.shift()!;
      for (const w of next.get(v)?.keys() ?? []) {
        if (!inside.has(w)) continue;
        if (w === start) {
          end = v;
          break;
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    const path = [start];
    for (let v = end!; v !== start; v = previous.get(v)!) path.splice(1, 0, v);
    path.push(start);
    const steps = path.slice(0, -1).map((v, i) => `${v}:${next.get(v)!.get(path[i + 1]!)}`);
    return `${steps.join(" -> ")} -> ${start} (a circle of ${component.length} files: ${
      component.join(", ")
    })`;
  });
}

/** The layers of the production code, bottom first ({@linkcode layerOf}). */
export type Layer =
  | "bottom"
  | "host"
  | "appliers"
  | "systems"
  | "control"
  | "builder"
  | "reconcile"
  | "mod.ts";

/** How a failure names each layer. */
const LABEL: Readonly<Record<Layer, string>> = {
  bottom: "lib/ and the resource schemas (resources/schemas.ts, resources/<type>/schema.ts)",
  host: "host/",
  appliers: "the resource appliers (resources/ but the schemas)",
  systems: "systems/",
  control: "control/",
  builder: "builder/",
  reconcile: "reconcile/",
  "mod.ts": "mod.ts",
};

/**
 * The layer of a production file (relative to the root), or undefined for scripts/, which may
 * import any: lib/ and the resource types' schemas are the bottom; the rest of resources/ (the
 * appliers, their helpers, the table of them) is the appliers' layer; any other file is its
 * folder's.
 */
export function layerOf(file: string): Layer | undefined {
  if (file === "mod.ts") return "mod.ts";
  const parts = file.split("/");
  if (parts[0] === "lib" || isSchemaFile(file)) return "bottom";
  if (parts[0] === "resources") return "appliers";
  const top = parts[0] as Layer;
  return Object.hasOwn(MAY_IMPORT, top) ? top : undefined;
}

/**
 * Whether `file` is the list of the resource schemas, the table of their subjects, or one
 * resource type's schema.
 */
export function isSchemaFile(file: string): boolean {
  return file === "resources/schemas.ts" || file === "resources/subjects.ts" ||
    /^resources\/[^/]+\/schema\.ts$/.test(file);
}

/**
 * Which layers each layer's modules may import, besides their own (README.md, "Layout"); scripts/
 * may import any.
 */
export const MAY_IMPORT: Readonly<Record<Layer, readonly Layer[]>> = {
  bottom: [],
  control: ["bottom"],
  builder: ["bottom"],
  reconcile: ["bottom"],
  host: ["bottom"],
  appliers: ["host", "bottom"],
  systems: ["appliers", "host", "bottom"],
  "mod.ts": ["bottom", "reconcile"],
};

/** The imports `edges` holds that cross a layer the wrong way, each as "file:line imports file". */
export function wrongWay(edges: Edge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.from);
    const to = layerOf(e.to);
    if (from === undefined || from === to) continue;
    const allowed = MAY_IMPORT[from];
    const say = `${e.from}:${e.line} imports ${e.to}`;
    if (to === undefined || !allowed.includes(to)) {
      const may = allowed.length === 0
        ? "nothing outside itself"
        : `only ${allowed.map((l) => LABEL[l]).join(", ")}`;
      out.push(`${say} (${LABEL[from]} may import ${may})`);
    }
  }
  return [...new Set(out)].sort();
}

/**
 * For each resource type's schema (and their list) among `files`, what it reaches through its
 * imports outside the bottom layer, each as "schema reaches file (through a -> b -> file)".
 */
export function schemasReachAbove(files: string[], edges: Edge[]): string[] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const out: string[] = [];
  for (const schema of files.filter(isSchemaFile)) {
    const via = new Map<string, string>([[schema, schema]]);
    const queue = [schema];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of next.get(v) ?? []) {
        if (via.has(w)) continue;
        via.set(w, v);
        if (layerOf(w) !== "bottom") {
          const path = [w];
          for (let u = v; u !== schema; u = via.get(u)!) path.unshift(u);
          out.push(`${schema} reaches ${w} (through ${[schema, ...path].join(" -> ")})`);
        } else queue.push(w);
      }
    }
  }
  return out.sort();
}

const graph = await productionImports();

Deno.test("layers: production code has no import circle", () => {
  assertEquals(circles(graph.edges), []);
});

Deno.test("layers: each layer imports only the layers below it (control/, builder/, reconcile/ and host/ only lib/ and the schemas)", () => {
  assertEquals(wrongWay(graph.edges), []);
});

Deno.test("layers: a resource type's schema (resources/<type>/schema.ts) reaches only lib/ and the other schemas", () => {
  const schemas = graph.files.filter(isSchemaFile);
  assertEquals(schemas.includes("resources/schemas.ts"), true);
  assertEquals(schemas.includes("resources/file/schema.ts"), true);
  assertEquals(schemasReachAbove(graph.files, graph.edges), []);
});

Deno.test("layers: the circle finder names a circle and the wrong-way finder an upward import", () => {
  const edges: Edge[] = [
    { from: "host/a.ts", to: "host/b.ts", line: 3 },
    { from: "host/b.ts", to: "host/c.ts", line: 4 },
    { from: "host/c.ts", to: "host/a.ts", line: 5 },
    { from: "host/c.ts", to: "lib/d.ts", line: 6 },
    { from: "control/x.ts", to: "host/a.ts", line: 7 },
    { from: "host/cli.ts", to: "systems/mod.ts", line: 8 },
    { from: "systems/arch/main.ts", to: "systems/arch/mod.ts", line: 9 },
    { from: "lib/e.ts", to: "control/x.ts", line: 10 },
    { from: "resources/file/applier.ts", to: "host/c.ts", line: 11 },
    { from: "host/c.ts", to: "resources/fs.ts", line: 12 },
    { from: "resources/file/schema.ts", to: "lib/d.ts", line: 13 },
    { from: "lib/d.ts", to: "resources/schemas.ts", line: 14 },
    { from: "control/x.ts", to: "resources/file/schema.ts", line: 15 },
    { from: "resources/service/schema.ts", to: "resources/service/systemd.ts", line: 16 },
    { from: "systems/arch/mod.ts", to: "resources/appliers.ts", line: 17 },
    { from: "resources/file/schema.ts", to: "lib/f.ts", line: 18 },
    { from: "lib/f.ts", to: "resources/file/applier.ts", line: 19 },
  ];
  assertEquals(circles(edges), [
    "host/a.ts:3 -> host/b.ts:4 -> host/c.ts:5 -> host/a.ts (a circle of 3 files: host/a.ts, " +
    "host/b.ts, host/c.ts)",
  ]);
  const bottom = LABEL.bottom;
  assertEquals(wrongWay(edges), [
    `control/x.ts:7 imports host/a.ts (control/ may import only ${bottom})`,
    `host/c.ts:12 imports resources/fs.ts (host/ may import only ${bottom})`,
    `host/cli.ts:8 imports systems/mod.ts (host/ may import only ${bottom})`,
    `lib/e.ts:10 imports control/x.ts (${bottom} may import nothing outside itself)`,
    `lib/f.ts:19 imports resources/file/applier.ts (${bottom} may import nothing outside itself)`,
    `resources/service/schema.ts:16 imports resources/service/systemd.ts (${bottom} may import ` +
    "nothing outside itself)",
  ]);
  const schemas = ["resources/file/schema.ts", "resources/service/schema.ts", "lib/d.ts"];
  assertEquals(schemasReachAbove(schemas, edges), [
    "resources/file/schema.ts reaches resources/file/applier.ts (through " +
    "resources/file/schema.ts -> lib/f.ts -> resources/file/applier.ts)",
    "resources/service/schema.ts reaches resources/service/systemd.ts (through " +
    "resources/service/schema.ts -> resources/service/systemd.ts)",
  ]);
  assertEquals(graph.files.includes("mod.ts") && graph.edges.length > 100, true);
});
