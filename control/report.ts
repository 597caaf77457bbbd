/**
 * The control plane's output layer: status and board, as text and as JSON, both rendered from
 * one {@linkcode Board} gathered before either is written (docs/design.md, "Board").
 *
 * Board properties, each asserted by a test: no field is ever `null` (absent is absent); a node
 * that never spoke carries no time field at all (not a zero time a page would show as 1970);
 * refused and failed stay distinct and carry how much applied; no field is named like a secret.
 *
 * @module
 */

import { formatDuration } from "../lib/duration.ts";
import { jsonSafe, jsonText, printable } from "../lib/printable.ts";
import type { Fleet, FleetCounts } from "./node_state.ts";
import {
  type DeclarationVerdict,
  isAlarm,
  type NodeKind,
  SILENCE_INTERVALS,
  type Verdict,
  VERDICT_WORDS,
  VERDICTS,
} from "./state.ts";
import {
  DRIFT_VERDICTS,
  DRIFT_WORDS,
  driftText,
  type DriftVerdict,
  type DriftView,
  isDriftAlarm,
} from "./drift.ts";

/** One machine on the board. Optional fields are absent, never null. */
export interface BoardMachine {
  name: string;
  system: string;
  /** `server` (silence is an alarm) or `episodic` (away is no alarm). */
  kind: NodeKind;
  verdict: Verdict;
  /** The verdict in words ("never spoke"). */
  words: string;
  /** Resources of the current declaration known applied. */
  applied: number;
  /** Resources of the current declaration. */
  total: number;
  /** Assigned modules, in order. */
  modules: string[];
  /** The current declaration's generation, when one was pushed. */
  generation?: number;
  /** The current declaration's digest, when one was pushed. */
  digest?: string;
  /** When the current declaration was pushed (absent for a node that never spoke). */
  pushedAt?: string;
  /** The generation the last report is about (absent for a node that never spoke). */
  reportedGeneration?: number;
  /**
   * When the control plane received the last report: when the node was last heard (absent for a
   * node that never spoke). The node's own clock is never used.
   */
  lastReportAt?: string;
  /** The reconcile interval the last report stated, in ms (absent for a node that never spoke). */
  intervalMs?: number;
  /** False when the last report stated no interval and the link's default was assumed. */
  intervalStated?: boolean;
  /** How long after `lastReportAt` the node is still heard, in ms (the silence rule). */
  quietAllowedMs?: number;
  /** True when it has been quiet longer than `quietAllowedMs` (absent for a node that never spoke). */
  overdue?: boolean;
  /**
   * What its reports say, for a node quiet for longer than allowed (`silent`, `away`, or an
   * episodic node away whose reports said `refused` or `failed`).
   */
  said?: DeclarationVerdict;
  /**
   * Why the last report is an unknown claim: the generation and digest it claims, and what was
   * pushed to the node (present only then; docs/design.md, "Hostile inputs", rule 7).
   */
  claim?: string;
  /** Why the last report was made (absent for a node that never spoke). */
  trigger?: string;
  /** The last report's problems (empty when none or when it never spoke). */
  problems: { id?: string; path?: string; message: string }[];
  /** The drift verdict from the node's latest mesh-reconcile result (./drift.ts). */
  drift: DriftView;
}

/** Everything status and board say, from one read of the fleet. */
export interface Board extends FleetCounts {
  /** When the read was made, by the database's clock (ISO 8601). */
  generatedAt: string;
  /** Every node, the ones not doing what they were told first. */
  machines: BoardMachine[];
}

/**
 * The board of one read of the fleet (./node_state.ts `readFleet`): its counts, and a machine for
 * each node read, in the read's order (the ones not doing what they were told first), parsed from
 * the JSON the database wrote. Of a read with `listedOnly` (what `status` reads), `statusText`,
 * `statusJson`, `behindMachines` and `attentionMachines` are those of the whole board (asserted by
 * tests/control/board_test.ts); `boardText` and `boardJson` of it are not the board's.
 */
export function boardOf(fleet: Fleet): Board {
  return {
    generatedAt: fleet.now.toISOString(),
    nodes: fleet.nodes,
    graceMs: fleet.graceMs,
    counts: fleet.counts,
    driftCounts: fleet.driftCounts,
    machines: fleet.machines.map((m) => JSON.parse(m) as BoardMachine),
  };
}

/** Whether `status` lists a node: not doing what it was told, away, or with a drift alarm. */
const listedByStatus = (verdict: Verdict, drift: DriftVerdict) =>
  verdict !== "ok" || isDriftAlarm(drift);

/**
 * The nodes not doing what they were told (by their declaration verdict; every verdict but `ok`
 * and `away`).
 */
export function behindMachines(board: Board): BoardMachine[] {
  return board.machines.filter((m) => isAlarm(m.verdict));
}

/**
 * The nodes `status` exits 1 for: not doing what they were told, or whose drift verdict is an
 * alarm (drift, unobservable, unreadable, stale). An episodic node `away` is not one of them.
 */
export function attentionMachines(board: Board): BoardMachine[] {
  return board.machines.filter((m) => isAlarm(m.verdict) || isDriftAlarm(m.drift.verdict));
}

/**
 * The nodes `status` lists: those of {@linkcode attentionMachines}, and the episodic nodes away
 * (with when they were last heard; no alarm).
 */
export function statusMachines(board: Board): BoardMachine[] {
  return board.machines.filter((m) => listedByStatus(m.verdict, m.drift.verdict));
}

/**
 * A board's JSON text: its fields, then `machines` with one machine a line, each the database's
 * compact JSON (./node_state.ts), with every character a terminal would act on escaped
 * (lib/printable.ts `jsonSafe`).
 */
function jsonOf(head: Record<string, unknown>, machines: readonly string[]): string[] {
  const fields = jsonText(head);
  const parts = [`${fields.slice(0, -1)},"machines":[${machines.length === 0 ? "" : "\n"}`];
  // Joined a thousand at a time: a few flat strings, each one write.
  for (let i = 0; i < machines.length; i += 1000) {
    const some = machines.slice(i, i + 1000).map(jsonSafe).join(",\n");
    parts.push(i + 1000 < machines.length ? `${some},\n` : `${some}\n`);
  }
  parts.push("]}\n");
  return parts;
}

/**
 * `board --json` of a read of every node, as the parts the CLI writes one after the other (joined,
 * 9.6 MB of 10,100 nodes would be a cons string, which `TextEncoder` flattens before encoding);
 * `extra`'s fields (where the read came from) after the counts.
 */
export function boardJsonParts(fleet: Fleet, extra: Record<string, unknown> = {}): string[] {
  return jsonOf({
    generatedAt: fleet.now.toISOString(),
    nodes: fleet.nodes,
    graceMs: fleet.graceMs,
    counts: fleet.counts,
    driftCounts: fleet.driftCounts,
    ...extra,
  }, fleet.machines);
}

/** `board --json` of a board, as one text. */
export function boardJson(board: Board): string {
  const { machines, ...head } = board;
  return jsonOf(head, machines.map((m) => jsonText(m))).join("");
}

/**
 * `status --json`: the same machines as the board, only those not doing what they were told
 * (`behind` counts them), with a drift alarm, or away; `extra`'s fields (where the read came
 * from) after the counts.
 */
export function statusJson(board: Board, extra: Record<string, unknown> = {}): string {
  const machines = statusMachines(board);
  return jsonOf({
    generatedAt: board.generatedAt,
    nodes: board.nodes,
    behind: behindMachines(board).length,
    graceMs: board.graceMs,
    drifting: board.machines.filter((m) => isDriftAlarm(m.drift.verdict)).length,
    counts: board.counts,
    driftCounts: board.driftCounts,
    ...extra,
  }, machines.map((m) => jsonText(m))).join("");
}

function line(m: BoardMachine, board: Board): string {
  const how = `${m.applied} of ${m.total}`;
  const parts = [m.name.padEnd(20), m.words.padEnd(12), how.padEnd(10), m.kind.padEnd(8)];
  if (m.generation !== undefined) parts.push(`gen ${m.generation}`.padEnd(8));
  else parts.push("never pushed".padEnd(8));
  if (m.lastReportAt !== undefined) {
    parts.push(`reported ${m.lastReportAt} about gen ${m.reportedGeneration} (${m.trigger})`);
  }
  let out = printable(parts.join(" ").trimEnd());
  out += `\n${"".padEnd(21)}${driftText(m.drift)}`;
  const p = m.problems[0];
  if (p !== undefined && (m.verdict === "refused" || m.verdict === "failed")) {
    // The problem text comes from the node: escaped, so it cannot forge lines.
    const where = p.id ?? p.path;
    out += `\n${"".padEnd(21)}${printable(`${where ? `${where}: ` : ""}${p.message}`)}`;
    if (m.problems.length > 1) out += ` (+${m.problems.length - 1} more)`;
  }
  if (m.claim !== undefined) out += `\n${"".padEnd(21)}${printable(m.claim)}`;
  if (m.overdue) out += `\n${"".padEnd(21)}${quietLine(m, board)}`;
  return out;
}

/** Why a node is silent or away: last heard, the rule, what it said, what waits for it. */
function quietLine(m: BoardMachine, board: Board): string {
  const interval = formatDuration(m.intervalMs!);
  const allowed = formatDuration(m.quietAllowedMs!);
  const quiet = formatDuration(Date.parse(board.generatedAt) - Date.parse(m.lastReportAt!));
  const rule = `reports every ${interval}${
    m.intervalStated ? "" : " (assumed: its reports state none)"
  }, heard for ${allowed} after (${SILENCE_INTERVALS} intervals + ${
    formatDuration(board.graceMs)
  } grace)`;
  const said = m.said === "outstanding"
    ? `generation ${m.generation} pushed ${m.pushedAt} is waiting for it`
    : `its last report said ${VERDICT_WORDS[m.said!]}`;
  const alarm = m.verdict === "away" ? "; episodic, no alarm" : "";
  return `last heard ${m.lastReportAt}, quiet ${quiet}; ${rule}; ${said}${alarm}`;
}

function countsLine(board: Board): string {
  return VERDICTS.map((v) => `${board.counts[v]} ${VERDICT_WORDS[v]}`).join(", ");
}

function driftCountsLine(board: Board): string {
  return `drift: ${
    DRIFT_VERDICTS.map((v) => `${board.driftCounts[v]} ${DRIFT_WORDS[v]}`).join(", ")
  }`;
}

/** "the one node is" or "all N nodes are". */
const allNodes = (n: number) => n === 1 ? "the one node is" : `all ${n} nodes are`;

/** `status`: the nodes not doing what they were told, or a sentence saying there are none. */
export function statusText(board: Board): string {
  if (board.nodes === 0) return "no nodes enrolled\n";
  const machines = statusMachines(board);
  const behind = behindMachines(board).length;
  const drifting = board.machines.filter((m) => isDriftAlarm(m.drift.verdict)).length;
  if (machines.length === 0) {
    return `${allNodes(board.nodes)} doing what ${
      board.nodes === 1 ? "it was" : "they were"
    } told (${countsLine(board)}); no drift alarm (${driftCountsLine(board)})\n`;
  }
  const lines = machines.map((m) => line(m, board)).join("\n") + "\n";
  if (behind === 0 && drifting === 0 && board.counts["not-pushed"] > 0) {
    // Nodes linked and never pushed (and perhaps episodic nodes away): listed, no alarm.
    const away = board.counts["away"] > 0 ? ", away (episodic, no alarm)" : "";
    return `${allNodes(board.nodes)} doing what ${
      board.nodes === 1 ? "it was" : "they were"
    } told${away} or not pushed (linked, never pushed a declaration: no alarm until one is) (${
      countsLine(board)
    }); no drift alarm (${driftCountsLine(board)})\n` + lines;
  }
  if (behind === 0 && drifting === 0) {
    // Only episodic nodes away: listed, no alarm.
    return `${allNodes(board.nodes)} doing what ${
      board.nodes === 1 ? "it was" : "they were"
    } told or ${board.nodes === 1 ? "is" : "are"} away (episodic, no alarm) (${
      countsLine(board)
    }); no drift alarm (${driftCountsLine(board)})\n` + lines;
  }
  return `${behind} of ${board.nodes} nodes are not doing what they were told (${
    countsLine(board)
  }); ${drifting} with a drift alarm (${driftCountsLine(board)})\n` + lines;
}

/** `board`: every node, the ones not doing what they were told first. */
export function boardText(board: Board): string {
  if (board.nodes === 0) return `board at ${board.generatedAt}: no nodes enrolled\n`;
  return `board at ${board.generatedAt}: ${board.nodes} node${board.nodes === 1 ? "" : "s"}: ${
    countsLine(board)
  }; ${driftCountsLine(board)}\n` +
    board.machines.map((m) =>
      line(m, board) +
      (m.modules.length ? `\n${"".padEnd(21)}modules: ${m.modules.join(", ")}` : "")
    ).join("\n") + "\n";
}
