/**
 * What a node is doing relative to what it was told: the one classification that status, board
 * and `push --behind` share. Distinct outcomes keep distinct words (docs/design.md rule 3): refused is
 * not failed, outstanding (pushed, not yet reported) is not "never spoke", silent (a server that
 * stopped reporting) is not away (an episodic node that is elsewhere, by design).
 *
 * Two questions, kept apart:
 * - {@linkcode classify}: what the node's reports say about its current declaration (the
 *   declaration verdict). `push --behind` acts on this alone.
 * - {@linkcode judge}: that, and whether the node is still heard: its last report is judged by
 *   the control plane's receipt time against the reconcile interval the report stated (the
 *   silence rule, {@linkcode silenceAllowanceMs}). status and board show this.
 *
 * @module
 */

import { DEFAULT_INTERVAL_MS } from "../lib/link_interval.ts";
import type { NodeState } from "./node_state.ts";

export { NODE_KINDS, type NodeKind } from "./node_kind.ts";

/**
 * What a node's reports say about its current declaration:
 * - `ok`: its last report is a clean apply of its current declaration.
 * - `refused`: its last report refused its current declaration (nothing applied).
 * - `failed`: its last report accepted its current declaration and applied part of it.
 * - `outstanding`: it was pushed a declaration it has not reported on yet.
 * - `never-spoke`: it has never reported at all.
 * - `not-pushed`: it reports (its link is connected and says it holds no declaration from the
 *   control plane), and was never pushed one: heard, waiting for its first declaration. No alarm
 *   until a push is outstanding (then it is `outstanding`); `push --behind` pushes it.
 * - `unknown-claim`: its last report claims a generation, or a digest at that generation, that the
 *   control plane never pushed to it (docs/design.md, "Hostile inputs", rule 7): another node's
 *   declaration, one from before the node was enrolled anew, or a generation not pushed yet. Never
 *   `ok`, whatever outcome it claims; an alarm; `push --behind` pushes it.
 */
export type DeclarationVerdict =
  | "ok"
  | "refused"
  | "failed"
  | "outstanding"
  | "never-spoke"
  | "not-pushed"
  | "unknown-claim";

/**
 * A node's verdict on status and board: its {@linkcode DeclarationVerdict}, or
 * - `silent`: a `server` whose last report is older than its interval allows, whatever that
 *   report said (an alarm);
 * - `away`: an `episodic` node whose last report is older than its interval allows and whose
 *   reports said nothing wrong (no alarm; a declaration pushed meanwhile waits for it).
 */
export type Verdict = DeclarationVerdict | "silent" | "away";

/** Every verdict, in the order reports list them (alarms first, `ok` last). */
export const VERDICTS: readonly Verdict[] = [
  "refused",
  "failed",
  "unknown-claim",
  "silent",
  "outstanding",
  "never-spoke",
  "not-pushed",
  "away",
  "ok",
];

/** The words an operator reads for each verdict. */
export const VERDICT_WORDS: Record<Verdict, string> = {
  "ok": "ok",
  "refused": "refused",
  "failed": "failed",
  "silent": "silent",
  "outstanding": "outstanding",
  "never-spoke": "never spoke",
  "not-pushed": "not pushed",
  "unknown-claim": "unknown claim",
  "away": "away",
};

/** Whether a verdict means the node is not doing what it was told (status exits 1). */
export function isAlarm(verdict: Verdict): boolean {
  switch (verdict) {
    case "ok":
    case "away":
    case "not-pushed":
      return false;
    case "refused":
    case "failed":
    case "unknown-claim":
    case "silent":
    case "outstanding":
    case "never-spoke":
      return true;
  }
}

/** A node's declaration verdict and how much of its current declaration is known applied. */
export interface Classified {
  verdict: DeclarationVerdict;
  /** Resources of the current declaration known applied (0 when nothing is known). */
  applied: number;
  /** Resources of the current declaration (of the last report's, when none was pushed). */
  total: number;
}

/**
 * Whether `node`'s last report (one about a declaration, not `undeclared`) claims what the control
 * plane pushed to it: its current declaration (same generation and digest), or an earlier
 * generation with the digest pushed then (`report.pushed`, read from the inventory).
 */
export function claimPushed(node: NodeState): boolean {
  const { declaration: d, report: r } = node;
  if (r === undefined) return false;
  if (d !== undefined && r.generation === d.generation && r.digest === d.digest) return true;
  return r.pushed === true;
}

/**
 * Whether a report is a link's refusal of a message sent to it: `refused` at generation 0, which
 * no declaration has (generations count from 1). Its link kept what it held (docs/design.md,
 * "Signed declarations"); its problem says why it refused.
 */
export function refusedMessage(report: { outcome: string; generation: number }): boolean {
  return report.outcome === "refused" && report.generation === 0;
}

/**
 * Why `node`'s last report is an unknown claim, in words, or undefined when it is not one (it
 * claims what was pushed to it, says it holds no declaration, or the node never spoke).
 */
export function unknownClaimReason(node: NodeState): string | undefined {
  const { declaration: d, report: r } = node;
  if (r === undefined || r.outcome === "undeclared" || refusedMessage(r) || claimPushed(node)) {
    return undefined;
  }
  const claim = `its last report claims generation ${r.generation} with digest ${r.digest}`;
  if (d === undefined) return `${claim}, and nothing was ever pushed to it`;
  if (r.generation > d.generation) {
    return `${claim}, and the last generation pushed to it is ${d.generation}`;
  }
  return `${claim}, which was never pushed to it (its generation ${d.generation} has digest ${d.digest})`;
}

/**
 * Classifies a node by its reports alone. A report is judged against what was pushed to that
 * node: one claiming a generation, or a digest at that generation, never pushed to it is an
 * `unknown-claim`, whatever outcome it claims. A report is about the current declaration when it
 * names the current digest at the current generation; one about an earlier generation pushed to
 * it leaves the current one outstanding (a re-push of identical content is still outstanding until
 * the node reports that generation).
 */
export function classify(node: NodeState): Classified {
  const { declaration, report } = node;
  if (report === undefined) {
    return { verdict: "never-spoke", applied: 0, total: declaration?.total ?? 0 };
  }
  if (report.outcome === "undeclared") {
    // The link says it holds no declaration: never pushed one, or one pushed has not reached it.
    return declaration === undefined
      ? { verdict: "not-pushed", applied: 0, total: 0 }
      : { verdict: "outstanding", applied: 0, total: declaration.total };
  }
  if (refusedMessage(report)) {
    // The link refused a message sent to it (unsigned, not the control plane's, a replay,
    // unreadable): it claims no declaration, applied nothing, and its problem says why.
    return { verdict: "refused", applied: 0, total: declaration?.total ?? 0 };
  }
  if (declaration === undefined || !claimPushed(node)) {
    return { verdict: "unknown-claim", applied: 0, total: declaration?.total ?? 0 };
  }
  // Pushed, so a declaration exists: the current one, or an earlier generation.
  const current = declaration;
  if (report.generation !== current.generation || report.digest !== current.digest) {
    return { verdict: "outstanding", applied: 0, total: current.total };
  }
  const total = current.total;
  switch (report.outcome) {
    case "applied":
      return { verdict: "ok", applied: report.applied, total };
    case "refused":
      return { verdict: "refused", applied: 0, total };
    case "failed":
      return { verdict: "failed", applied: report.applied, total };
  }
}

/** How many reconcile intervals a node may miss before its silence counts. */
export const SILENCE_INTERVALS = 2;
/** The grace added to the allowance by default, in ms: one minute. */
export const DEFAULT_GRACE_MS = 60_000;

/**
 * The silence rule: how long (ms) after the control plane received a node's last report the node
 * is still heard: {@linkcode SILENCE_INTERVALS} reconcile intervals plus a grace. Two intervals,
 * because one missed report is a slow apply or a broker restart; the grace covers the delivery
 * from the node through the broker and `ingest` into the inventory.
 */
export function silenceAllowanceMs(intervalMs: number, graceMs: number): number {
  return SILENCE_INTERVALS * intervalMs + graceMs;
}

/** The control plane's clock, against which silence is judged. */
export interface Clock {
  /** Now, by the inventory database's clock (the one that stamped each report's receipt). */
  now: Date;
  /** Added to the allowance, in ms (default {@linkcode DEFAULT_GRACE_MS}). */
  graceMs: number;
}

/** Whether and how a node that spoke is still heard. */
export interface Presence {
  /** When the control plane received its last report (its receipt time; the node's clock is not asked). */
  lastHeard: Date;
  /** Its reconcile interval in ms, as its last report stated it (or the link's default). */
  intervalMs: number;
  /** False when the last report stated no interval (an older host): the default was used. */
  intervalStated: boolean;
  /** How long it may stay quiet, in ms ({@linkcode silenceAllowanceMs}). */
  allowedMs: number;
  /** How long it has been quiet, in ms (now minus `lastHeard`, never below 0). */
  quietMs: number;
  /** True when `quietMs` is beyond `allowedMs`. */
  overdue: boolean;
}

/** A node's verdict on status and board. */
export interface Judged {
  verdict: Verdict;
  /** What its reports say ({@linkcode classify}), which a silent or away verdict overrides. */
  said: DeclarationVerdict;
  /** Resources of the current declaration known applied. */
  applied: number;
  /** Resources of the current declaration. */
  total: number;
  /** Absent for a node that never spoke. */
  presence?: Presence;
}

/**
 * Judges a node: its declaration verdict, overridden by silence. A `server` overdue is `silent`
 * whatever its last report said. An `episodic` node overdue is `away` unless its reports said it
 * refused or failed its current declaration, or claimed what was never pushed to it (that stays
 * an alarm, with the presence said); a declaration pushed while it was away is waiting (`said` is
 * `outstanding`), never `failed`.
 * A node that never spoke stays `never-spoke` (no time is invented for it).
 */
export function judge(node: NodeState, clock: Clock): Judged {
  const classified = classify(node);
  const said = classified.verdict;
  const report = node.report;
  // Built without spreading a shared part (judged for every node of the fleet, in code that
  // runs once per command).
  if (report === undefined) {
    return { verdict: said, said, applied: classified.applied, total: classified.total };
  }
  const intervalMs = report.intervalMs ?? DEFAULT_INTERVAL_MS;
  const allowedMs = silenceAllowanceMs(intervalMs, clock.graceMs);
  const quietMs = Math.max(0, clock.now.getTime() - report.receivedAt.getTime());
  const presence: Presence = {
    lastHeard: report.receivedAt,
    intervalMs,
    intervalStated: report.intervalMs !== undefined,
    allowedMs,
    quietMs,
    overdue: quietMs > allowedMs,
  };
  let verdict: Verdict = classified.verdict;
  if (presence.overdue) {
    switch (node.kind) {
      case "server":
        verdict = "silent";
        break;
      case "episodic":
        verdict = classified.verdict === "refused" || classified.verdict === "failed" ||
            classified.verdict === "unknown-claim"
          ? classified.verdict
          : "away";
        break;
    }
  }
  return { verdict, said, applied: classified.applied, total: classified.total, presence };
}
