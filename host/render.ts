/**
 * Rendering the host's results for people. Pure functions; only the CLI prints.
 *
 * @module
 */

import type { ApplyResult } from "./apply.ts";
import type { FootprintEntry } from "./store.ts";
import { printable } from "../lib/printable.ts";

/** The text form of an apply result. */
export function applyText(result: ApplyResult): string {
  const head = result.dryRun ? "dry run: would have " : "";
  const lines: string[] = [];
  switch (result.outcome) {
    case "applied":
      lines.push(
        `${head}applied ${result.applied} of ${result.total} (declaration ${result.declaration})`,
      );
      break;
    case "failed":
      lines.push(
        `${head}failed: applied ${result.applied} of ${result.total} before stopping (declaration ${result.declaration})`,
      );
      break;
    case "refused":
      lines.push(
        `refused: nothing applied, 0 of ${result.total} (declaration ${result.declaration})`,
      );
      break;
  }
  const shown = result.changes.filter((c) => c.change !== "unchanged");
  const unchanged = result.changes.length - shown.length;
  for (const c of shown) lines.push(`  ${c.change.padEnd(9)} ${c.type.padEnd(9)} ${c.id}`);
  if (unchanged > 0) lines.push(`  unchanged: ${unchanged}`);
  if (result.problems.length > 0) {
    lines.push("problems:");
    for (const p of result.problems) {
      const where = [p.path || undefined, p.id ? `[${p.id}]` : undefined].filter(Boolean).join(" ");
      lines.push(`  ${where || "(declaration)"}: ${printable(p.message)}`);
    }
  }
  return lines.join("\n") + "\n";
}

/** The text form of the footprint. */
export function ownedText(entries: readonly FootprintEntry[], store: string): string {
  if (entries.length === 0) return `the footprint is empty (${store})\n`;
  const lines = [`${entries.length} in the footprint (${store}):`];
  for (const e of entries) {
    lines.push(
      `  ${e.type.padEnd(9)} ${e.id.padEnd(24)} ${printable(e.subject)}${
        e.created || e.type === "action" || e.type === "service"
          ? ""
          : "  (not created by this host: never removed)"
      }`,
    );
  }
  return lines.join("\n") + "\n";
}
