/**
 * Rule 5 (docs/design.md, "Hostile inputs") for mesh-host, mesh-reconcile and mesh-builder run as
 * processes: text from a declaration (a path, a file's content in a dry run's diff), a registry
 * entry (a state directory, an unknown key) or an option (a work directory) carrying
 * bidirectional controls, zero-width characters, a byte order mark or C1 controls is shown as
 * `<U+XXXX>` in text and in refusals, and `--json` keeps the very strings as `\uXXXX` escapes.
 * mesh-control's outputs are held in tests/control/disguise_test.ts.
 *
 * @module
 */

import { assertEquals } from "../support/assert.ts";
import { cli } from "../support/mod.ts";
import { assertJsonEscaped, assertShown, disguised } from "../support/disguise.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-disguise-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("mesh-host apply --dry-run shows a disguised path and diff as <U+XXXX>, --json as \\u escapes", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/${disguised("file")}`;
    await Deno.writeTextFile(path, "old\n");
    const declaration = `${dir}/declaration.json`;
    await Deno.writeTextFile(
      declaration,
      JSON.stringify({
        version: 1,
        resources: [{
          id: "conf",
          type: "file",
          path,
          content: `${disguised("line")}\n`,
          mode: "0644",
        }],
      }),
    );
    const args = ["apply", declaration, "--dry-run", "--state-dir", `${dir}/state`];
    const text = await cli("systems/debian/main.ts", args);
    assertEquals(text.code, 4, text.stderr);
    // The path in the change line, and the new content in the diff.
    assertShown(text.stdout.slice(0, text.stdout.indexOf("line")), "mesh-host: the path");
    assertShown(text.stdout.slice(text.stdout.indexOf("line")), "mesh-host: the diff");
    const json = await cli("systems/debian/main.ts", [...args, "--json"]);
    assertEquals(json.code, 4, json.stderr);
    assertJsonEscaped(json.stdout, "mesh-host --json");
    const result = JSON.parse(json.stdout) as { changes: { subject?: string }[] };
    assertEquals(JSON.stringify(result).includes(JSON.stringify(path).slice(1, -1)), true);
  });
});

Deno.test("mesh-reconcile shows a disguised registry entry as <U+XXXX>, --json as \\u escapes", async () => {
  await withDir(async (dir) => {
    const state = `/srv/${disguised("state")}`;
    const registry = `${dir}/registry.yaml`;
    await Deno.writeTextFile(
      registry,
      [
        "version: 1",
        "accounts: [root]",
        "services:",
        "  shop:",
        "    kind: service",
        "    user: root",
        "    container: shop",
        "    port: 8080",
        `    state: [${JSON.stringify(state)}]`,
        "",
      ].join("\n"),
    );
    const text = await cli("reconcile/main.ts", ["render", "backup", "--registry", registry]);
    assertEquals(text.code, 0, text.stderr);
    assertShown(text.stdout, "render backup");
    const json = await cli("reconcile/main.ts", [
      "render",
      "backup",
      "--registry",
      registry,
      "--json",
    ]);
    assertEquals(json.code, 0, json.stderr);
    assertJsonEscaped(json.stdout, "render backup --json");
    assertEquals(JSON.stringify(JSON.parse(json.stdout)).includes(state), true);
    // A registry entry the reader refuses is named in the refusal, escaped.
    const bad = `${dir}/bad.yaml`;
    await Deno.writeTextFile(
      bad,
      `version: 1\naccounts: [root]\nservices:\n  shop:\n    kind: service\n    ${
        JSON.stringify(disguised("key"))
      }: 1\n`,
    );
    const refused = await cli("reconcile/main.ts", ["check-registry", bad]);
    assertEquals(refused.code, 2, refused.stdout + refused.stderr);
    assertShown(refused.stdout + refused.stderr, "check-registry");
  });
});

Deno.test("mesh-builder shows a disguised work directory in its refusal as <U+XXXX>", async () => {
  const work = `/nonexistent/${disguised("work")}`;
  // A broker URL (nothing is reached: the work directory is checked first, at the start).
  const out = await cli("builder/main.ts", [
    "--broker",
    "amqp://builder:x@127.0.0.1:1/",
    "--work-dir",
    work,
  ]);
  assertEquals(out.code, 2, out.stderr);
  assertShown(out.stderr, "mesh-builder");
});
