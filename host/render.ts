/**
 * Rendering the host's results for people. Pure functions; only the CLI prints.
 *
 * @module
 */

import type { ApplyResult } from "./apply.ts";
import type { Change } from "./applier.ts";
import type { FootprintEntry } from "./store.ts";
import { printable } from "../lib/printable.ts";

/** A change in the conditional, for a dry run: nothing was done, this is what would be. */
const WOULD: Record<Change, string> = {
  created: "would create",
  updated: "would update",
  unchanged: "unchanged",
  removed: "would remove",
  restored: "would restore",
  forgotten: "would forget",
};

/**
 * The text form of an apply result, headed by the source it is about; `file`, the file the
 * source's declaration was read from, is named on a refused source's line (a problem's path is
 * inside that file).
 */
export function applyText(result: ApplyResult, options: { file?: string } = {}): string {
  const head = result.dryRun ? "dry run: would have " : "";
  const file = result.outcome === "refused" && options.file !== undefined
    ? ` (file "${printable(options.file)}")`
    : "";
  const source = `source ${result.source}${file}: `;
  const lines: string[] = [];
  switch (result.outcome) {
    case "applied":
      lines.push(
        `${source}${head}applied ${result.applied} of ${result.total} (declaration ${result.declaration})`,
      );
      break;
    case "failed":
      lines.push(
        `${source}${head}failed: applied ${result.applied} of ${result.total} before stopping (declaration ${result.declaration})`,
      );
      break;
    case "refused":
      lines.push(`${source}${refusedHead(result)}`);
      break;
  }
  const shown = result.changes.filter((c) => c.change !== "unchanged");
  const unchanged = result.changes.length - shown.length;
  const word = (c: Change) => result.dryRun ? WOULD[c] : c;
  const width = result.dryRun ? 13 : 9;
  for (const c of shown) {
    lines.push(`  ${word(c.change).padEnd(width)} ${c.type.padEnd(9)} ${c.id}`);
    if (c.detail) { for (const l of c.detail.split("\n")) lines.push(`      ${printable(l)}`); }
  }
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

/**
 * The first line of a refused source: what was refused (the source, and how many resources its
 * declaration held when it was read at all) and why (the first problem; the rest are listed
 * below it). Never "0 of 0": a declaration that could not be read has no resources to count.
 */
function refusedHead(result: ApplyResult): string {
  const what = result.total > 0
    ? `refused, none of its ${result.total} resource${result.total === 1 ? "" : "s"} applied`
    : "refused, nothing applied";
  const first = result.problems[0];
  const where = first
    ? [first.path || undefined, first.id ? `[${first.id}]` : undefined].filter(Boolean).join(" ")
    : "";
  const why = first
    ? `: ${where ? `${where}: ` : ""}${printable(first.message)}${
      result.problems.length > 1 ? ` (and ${result.problems.length - 1} more, below)` : ""
    }`
    : "";
  const declaration = result.declaration ? ` (declaration ${result.declaration})` : "";
  return `${what}${why}${declaration}`;
}

/** The text form of the footprint, each record with its source. */
export function ownedText(entries: readonly FootprintEntry[], store: string): string {
  if (entries.length === 0) return `the footprint is empty (${store})\n`;
  const lines = [`${entries.length} in the footprint (${store}):`];
  const width = Math.max(6, ...entries.map((e) => e.source.length));
  lines.push(`  ${"source".padEnd(width)} ${"type".padEnd(9)} ${"id".padEnd(24)} subject`);
  for (const e of entries) {
    lines.push(
      `  ${e.source.padEnd(width)} ${e.type.padEnd(9)} ${e.id.padEnd(24)} ${printable(e.subject)}${
        e.created || e.type === "action" || e.type === "service"
          ? ""
          : e.original
          ? "  (taken over: its original is put back when it leaves)"
          : "  (not created by this host: never removed)"
      }`,
    );
  }
  return lines.join("\n") + "\n";
}
