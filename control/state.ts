/**
 * What a node is doing relative to what it was told: the verdicts that status, board and
 * `push --behind` share, what each means and the words an operator reads. Distinct outcomes keep
 * distinct words (docs/design.md rule 3): refused is not failed, outstanding (pushed, not yet
 * reported) is not "never spoke", silent (a server that stopped reporting) is not away (an
 * episodic node that is elsewhere, by design).
 *
 * Two questions, kept apart, both answered by the database in the statement that reads the fleet
 * (./node_state.ts `readFleet`, where the rules are written once):
 * - the declaration verdict: what the node's reports say about its current declaration.
 *   `push --behind` acts on this alone.
 * - the verdict: that, and whether the node is still heard: its last report is judged by the
 *   control plane's receipt time against the reconcile interval the report stated (the silence
 *   rule, {@linkcode SILENCE_INTERVALS}). status and board show this.
 *
 * @module
 */

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

/**
 * How many reconcile intervals a node may miss before its silence counts. The silence rule: a
 * node is still heard for this many intervals plus a grace after the control plane received its
 * last report (./node_state.ts applies it). Two intervals, because one missed report is a slow
 * apply or a broker restart; the grace covers the delivery from the node through the broker and
 * `ingest` into the inventory.
 */
export const SILENCE_INTERVALS = 2;
/** The grace added to the allowance by default, in ms: one minute. */
export const DEFAULT_GRACE_MS = 60_000;

/** Whether and how a node that spoke is still heard. */
export interface Presence {
  /** When the control plane received its last report (its receipt time; the node's clock is not asked). */
  lastHeard: Date;
  /** Its reconcile interval in ms, as its last report stated it (or the link's default). */
  intervalMs: number;
  /** False when the last report stated no interval (an older host): the default was used. */
  intervalStated: boolean;
  /** How long it may stay quiet, in ms ({@linkcode SILENCE_INTERVALS} intervals plus the grace). */
  allowedMs: number;
  /** How long it has been quiet, in ms (now minus `lastHeard`, never below 0). */
  quietMs: number;
  /** True when `quietMs` is beyond `allowedMs`. */
  overdue: boolean;
}
