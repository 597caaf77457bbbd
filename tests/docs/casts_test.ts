/**
 * No `as unknown as` cast outside tests/: a value is given the type it has through a typed
 * declaration, an adapter or a type guard, not forced into another (issue 30). The test names
 * the file and line of each one found.
 */

import { assertEquals } from "../support/assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** What is not the project's own source: tests, build output, dotted directories. */
const SKIPPED = new Set(["tests", "dist", "node_modules"]);

/** Every `.ts` file under `dir` (relative to the repository), tests/ and build output left out. */
async function sources(dir = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    const path = `${dir}${entry.name}`;
    if (entry.name.startsWith(".") || (dir === "" && SKIPPED.has(entry.name))) continue;
    if (path === "bench/out") continue;
    if (entry.isDirectory) found.push(...await sources(`${path}/`));
    else if (entry.isFile && entry.name.endsWith(".ts")) found.push(path);
  }
  return found.sort();
}

/** The `file:line` of every `as unknown as` in `text`, `file` its path. */
export function castsIn(file: string, text: string): string[] {
  return text.split("\n").flatMap((line, i) =>
    /\bas\s+unknown\s+as\b/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []
  );
}

Deno.test("castsIn names the file and line of each cast", () => {
  assertEquals(
    castsIn("lib/x.ts", "const a = 1;\nconst b = a as unknown as string;\nconst c = a as number;"),
    ["lib/x.ts:2: const b = a as unknown as string;"],
  );
});

Deno.test("no `as unknown as` cast outside tests/", async () => {
  const files = await sources();
  const casts: string[] = [];
  for (const file of files) casts.push(...castsIn(file, await Deno.readTextFile(`${ROOT}${file}`)));
  assertEquals(casts, [], `${casts.length} cast(s) outside tests/:\n${casts.join("\n")}`);
});
