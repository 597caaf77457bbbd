/**
 * The tables in docs/ that list a kind (a resource type, a system, a reconcile check) are held to
 * the code's one table of that kind: a kind added, removed or renamed in the code and not in the
 * docs (or the other way) fails here, naming the table and what differs. So is reconcile's check
 * table to the list of check names lib/drift_checks.ts keeps for the result file and mesh-control.
 */

import { assertEquals } from "../support/assert.ts";
import { RESOURCE_TYPES } from "../../lib/declaration.ts";
import { SYSTEM_NAMES } from "../../host/system.ts";
import { SYSTEMS as ENROLLED } from "../../control/node_kind.ts";
import type { System } from "../../host/system.ts";
import { CHECKS } from "../../reconcile/compare.ts";
import { CHECKS as CHECK_NAMES } from "../../lib/drift_checks.ts";
import { alpine } from "../../systems/alpine/mod.ts";
import { android } from "../../systems/android/mod.ts";
import { arch } from "../../systems/arch/mod.ts";
import { debian } from "../../systems/debian/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SYSTEMS: Record<string, System> = { alpine, android, arch, debian };

/** The rows of the first Markdown table from the line starting `after`, each a list of trimmed cells. */
async function tableAfter(file: string, after: string): Promise<string[][]> {
  const lines = (await Deno.readTextFile(`${ROOT}${file}`)).split("\n");
  const start = lines.findIndex((l) => l.startsWith(after));
  if (start === -1) throw new Error(`${file} has no line starting "${after}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith("|")) {
      if (rows.length > 0) break;
      continue;
    }
    if (/^\|[\s|:-]+\|$/.test(line)) continue; // the separator
    rows.push(line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
  }
  return rows;
}

Deno.test("docs/declaration.md has one section per resource type, in the contract's order", async () => {
  const text = await Deno.readTextFile(`${ROOT}docs/declaration.md`);
  const sections = [...text.matchAll(/^## `([a-z]+)`$/gm)].map((m) => m[1]);
  assertEquals(sections, [...RESOURCE_TYPES]);
});

Deno.test("docs/mesh-host.md's table of types per system is the systems' appliers and refusals", async () => {
  const [header, ...rows] = await tableAfter(
    "docs/mesh-host.md",
    "What each type does, per system",
  );
  assertEquals(header!.slice(1), ["debian", "arch", "alpine", "android"]);
  assertEquals([...header!.slice(1)].sort(), [...SYSTEM_NAMES].sort(), "every system, once");
  const types = rows.flatMap((r) => r[0]!.split(",").map((t) => t.trim()));
  assertEquals(types, [...RESOURCE_TYPES], "every resource type, in the contract's order");
  for (const row of rows) {
    for (const [i, system] of header!.slice(1).entries()) {
      const refused = row[i + 1] === "refused by name";
      for (const type of row[0]!.split(",").map((t) => t.trim())) {
        const refuses = SYSTEMS[system]!.refuses[type as keyof System["refuses"]] !== undefined;
        assertEquals(refused, refuses, `${system}, ${type}: the table says ${row[i + 1]}`);
      }
    }
  }
});

Deno.test("docs/mesh-reconcile.md's table of checks is reconcile's, in the order it walks them", async () => {
  const [header, ...rows] = await tableAfter("docs/mesh-reconcile.md", "| check ");
  assertEquals(header![0], "check");
  assertEquals(rows.map((r) => r[0]!.replaceAll("`", "")), CHECKS.map((c) => c.check));
});

Deno.test("reconcile's check table has one row for each check lib/drift_checks.ts names", () => {
  const rows = CHECKS.map((c) => c.check);
  assertEquals(new Set(rows).size, rows.length, `a check twice in the table: ${rows.join(", ")}`);
  assertEquals([...rows].sort(), [...CHECK_NAMES].sort());
});

Deno.test("each system of lib/system_names.ts is a folder of systems/ (mod.ts, main.ts), and the one the inventory enrolls", async () => {
  const folders = [...Deno.readDirSync(`${ROOT}systems`)].filter((e) => e.isDirectory)
    .map((e) => e.name).sort();
  assertEquals(folders, [...SYSTEM_NAMES].sort());
  for (const system of SYSTEM_NAMES) {
    for (const file of ["mod.ts", "main.ts"]) {
      assertEquals(Deno.statSync(`${ROOT}systems/${system}/${file}`).isFile, true, system);
    }
    assertEquals(SYSTEMS[system]?.name, system, `tests/docs/tables_test.ts's SYSTEMS: ${system}`);
  }
  assertEquals(ENROLLED, SYSTEM_NAMES);
  // The inventory's check constraint: the newest migration that names the systems.
  const migrations = [...Deno.readDirSync(`${ROOT}control/migrations`)].map((e) => e.name).sort();
  let named: string[] | undefined;
  for (const name of migrations) {
    const sql = await Deno.readTextFile(`${ROOT}control/migrations/${name}`);
    const m = /system in \(([^)]*)\)/.exec(sql);
    if (m) named = m[1]!.split(",").map((s) => s.trim().replace(/^'|'$/g, ""));
  }
  assertEquals(named, [...SYSTEM_NAMES]);
});
