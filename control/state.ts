/**
 * What a node is doing relative to what it was told: the one classification that status, board
 * and `push --behind` share. Distinct outcomes keep distinct words (DESIGN.md rule 3): refused is
 * not failed, outstanding (pushed, not yet reported) is not "never spoke".
 *
 * @module
 */

import type { NodeState } from "./inventory.ts";

/**
 * - `ok`: its last report is a clean apply of its current declaration.
 * - `refused`: its last report refused its current declaration (nothing applied).
 * - `failed`: its last report accepted its current declaration and applied part of it.
 * - `outstanding`: it was pushed a declaration it has not reported on yet.
 * - `never-spoke`: it has never reported at all.
 */
export type Verdict = "ok" | "refused" | "failed" | "outstanding" | "never-spoke";

/** Every verdict, in the order reports list them. */
export const VERDICTS: readonly Verdict[] = [
  "refused",
  "failed",
  "outstanding",
  "never-spoke",
  "ok",
];

/** The words an operator reads for each verdict. */
export const VERDICT_WORDS: Record<Verdict, string> = {
  "ok": "ok",
  "refused": "refused",
  "failed": "failed",
  "outstanding": "outstanding",
  "never-spoke": "never spoke",
};

/** A node's verdict and how much of its current declaration is known applied. */
export interface Classified {
  verdict: Verdict;
  /** Resources of the current declaration known applied (0 when nothing is known). */
  applied: number;
  /** Resources of the current declaration (of the last report's, when none was pushed). */
  total: number;
}

/**
 * Classifies a node. A report is about the current declaration when it names the same digest at
 * the same or a later generation (a re-push of identical content is still outstanding until the
 * node reports that generation).
 */
export function classify(node: NodeState): Classified {
  const { declaration, report } = node;
  if (report === undefined) {
    return { verdict: "never-spoke", applied: 0, total: declaration?.total ?? 0 };
  }
  const current = declaration === undefined ||
    (report.digest === declaration.digest && report.generation >= declaration.generation);
  if (!current) {
    return { verdict: "outstanding", applied: 0, total: declaration.total };
  }
  const total = declaration?.total ?? report.total;
  switch (report.outcome) {
    case "applied":
      return { verdict: "ok", applied: report.applied, total };
    case "refused":
      return { verdict: "refused", applied: 0, total };
    case "failed":
      return { verdict: "failed", applied: report.applied, total };
  }
}
