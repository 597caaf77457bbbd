/**
 * The examples and the documentation cannot rot:
 *
 * - every declaration in `examples/declarations/` and every `json` block of `docs/declaration.md`
 *   is accepted by the host's own parser (the path `apply` takes);
 * - every registry in `examples/registries/` and every `yaml` block of `docs/registry.md` is
 *   accepted by `mesh-reconcile check-registry` (the program, not a library call);
 * - the web server and the batch job are applied in the systemd lab: they converge, the second
 *   apply changes nothing, the page is served and the timer is active and enabled;
 * - every relative link in the README and in `docs/` names a file that exists, and nothing in
 *   them points outside the repository.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { reconcileCli, ROOT } from "../support/mod.ts";
import { parseTrusted } from "../../lib/declaration.ts";
import { bootLab } from "../lab/mod.ts";

const EXAMPLES = `${ROOT}examples/`;

async function files(dir: string, suffix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(suffix)) out.push(`${dir}${entry.name}`);
  }
  return out.sort();
}

/** The fenced code blocks of one language in a Markdown text. */
function fenced(markdown: string, language: string): string[] {
  const blocks: string[] = [];
  const re = new RegExp("^```" + language + "\\n([\\s\\S]*?)^```", "gm");
  for (const m of markdown.matchAll(re)) blocks.push(m[1]!);
  return blocks;
}

Deno.test("every example declaration is accepted by the host's parser", async () => {
  const paths = await files(`${EXAMPLES}declarations/`, ".json");
  assert(paths.length >= 3, `expected at least three example declarations, found ${paths.length}`);
  for (const path of paths) {
    const declaration = parseTrusted(await Deno.readFile(path));
    assert(declaration.resources.length > 0, `${path} declares nothing`);
  }
});

Deno.test("every json block of docs/declaration.md is accepted by the host's parser", async () => {
  const blocks = fenced(await Deno.readTextFile(`${ROOT}docs/declaration.md`), "json");
  assert(blocks.length >= 6, `expected an example per type, found ${blocks.length} blocks`);
  for (const [i, block] of blocks.entries()) {
    try {
      parseTrusted(block);
    } catch (error) {
      throw new Error(`docs/declaration.md, json block ${i + 1}: ${(error as Error).message}`);
    }
  }
});

Deno.test("every example registry and every yaml block of docs/registry.md is valid", async () => {
  const paths = await files(`${EXAMPLES}registries/`, ".yaml");
  assert(paths.length >= 2, `expected at least two example registries, found ${paths.length}`);
  const dir = await Deno.makeTempDir({ prefix: "mesh-doc-registry-" });
  try {
    const blocks = fenced(await Deno.readTextFile(`${ROOT}docs/registry.md`), "yaml");
    assert(blocks.length >= 2, `expected registry examples in docs/registry.md`);
    for (const [i, block] of blocks.entries()) {
      const path = `${dir}/doc-block-${i + 1}.yaml`;
      await Deno.writeTextFile(path, block);
      paths.push(path);
    }
    for (const path of paths) {
      const r = await reconcileCli(["check-registry", path]);
      assertEquals(r.code, 0, `${path}: ${r.stdout}${r.stderr}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the web and batch examples converge in the systemd lab", async () => {
  const m = await bootLab("systemd");
  try {
    for (const name of ["web", "batch"]) {
      const text = await Deno.readTextFile(`${EXAMPLES}declarations/${name}.json`);
      await m.exec(["sh", "-c", 'printf %s "$1" > /root/example.json', "sh", text]);
      const apply = async () => {
        const r = await m.host("systems/debian/main.ts", [
          "apply",
          "/root/example.json",
          "--json",
          "--state-dir",
          `/var/lib/mesh/example-${name}`,
        ], { allowFailure: true });
        return { code: r.code, result: JSON.parse(r.stdout) as { changes: { change: string }[] } };
      };
      const first = await apply();
      assertEquals(first.code, 0, `${name}: first apply ${JSON.stringify(first.result)}`);
      const second = await apply();
      assertEquals(second.code, 0);
      assertEquals(
        second.result.changes.filter((c) => c.change !== "unchanged"),
        [],
        `${name}: the second apply changed something`,
      );
    }
    const page = await m.exec(["busybox", "wget", "-qO-", "http://127.0.0.1:18480/"]);
    assert(page.stdout.includes("Served by a node that mesh-host keeps."), page.stdout);
    const ask = async (verb: string) =>
      (await m.exec(["systemctl", verb, "example-batch.timer"], { allowFailure: true })).stdout
        .trim();
    assertEquals(await ask("is-active"), "active");
    assertEquals(await ask("is-enabled"), "enabled");
  } finally {
    await m.destroy();
  }
});

Deno.test("links in the README and docs/ resolve inside the repository", async () => {
  const pages = [`${ROOT}README.md`];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/`);
      else if (entry.name.endsWith(".md")) pages.push(path);
    }
  };
  await walk(`${ROOT}docs/`);
  const broken: string[] = [];
  for (const page of pages) {
    const text = await Deno.readTextFile(page);
    const base = page.slice(0, page.lastIndexOf("/") + 1);
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!.split("#")[0]!;
      if (target === "" || /^[a-z]+:/.test(target)) continue;
      const resolved = new URL(target, `file://${base}`).pathname;
      if (!resolved.startsWith(ROOT)) broken.push(`${page}: ${m[1]} points outside the repository`);
      else if (!(await Deno.stat(resolved).then(() => true, () => false))) {
        broken.push(`${page}: ${m[1]} does not exist`);
      }
    }
    if (/\.\.\/shared\/|shared folder/.test(text)) {
      broken.push(`${page}: refers to a folder outside the repository`);
    }
  }
  assertEquals(broken, []);
});
