/**
 * Rendering a watcher run: `--json` and the text form, both from the same {@linkcode WatchResult}.
 *
 * @module
 */

import { printable } from "../../lib/printable.ts";
import type { WatchResult } from "./result.ts";
import { stateWords } from "./verdict.ts";
import { MAX_OWED } from "./state.ts";

/** The JSON form of a watcher run (`watch --json`), as a plain object. */
export function watchJson(result: WatchResult): Record<string, unknown> {
  const v = result.verdict;
  return {
    source: result.source,
    state: v.state,
    ...(v.problem !== undefined ? { problem: v.problem } : {}),
    exitCode: result.exitCode,
    detail: v.detail,
    checkedAt: result.checkedAt,
    ...(v.stampedAt !== undefined ? { stampedAt: v.stampedAt } : {}),
    ...(v.ageMs !== undefined ? { ageSeconds: Math.round(v.ageMs) / 1000 } : {}),
    ...(v.ageFrom !== undefined ? { ageFrom: v.ageFrom } : {}),
    ...(v.stamp !== undefined ? { stamp: v.stamp } : {}),
    maxAgeSeconds: result.thresholds.maxAgeMs / 1000,
    graceSeconds: result.thresholds.graceMs / 1000,
    ...(result.memory !== undefined
      ? {
        memory: {
          path: result.memory.path,
          transition: result.memory.transition,
          since: result.memory.since,
          ...(result.memory.previous !== undefined ? { previous: result.memory.previous } : {}),
        },
      }
      : {}),
    ...(result.notify !== undefined
      ? {
        notify: {
          url: result.notify.url,
          delivered: result.notify.delivered.length,
          owed: result.notify.owed.length,
          ...(result.notify.error !== undefined ? { error: result.notify.error } : {}),
        },
      }
      : {}),
    dropped: result.dropped,
    ...(result.ownStamp !== undefined ? { ownStamp: result.ownStamp } : {}),
  };
}

/** The text form of a watcher run, for people; rendered from the same result as the JSON. */
export function watchText(result: WatchResult): string {
  const v = result.verdict;
  const lines = [
    `mesh-reconcile watch ${printable(result.source)}: ${stateWords(v.state, v.problem)}: ${
      printable(v.detail)
    }`,
  ];
  const m = result.memory;
  if (m !== undefined) {
    if (m.previous === undefined) lines.push(`  state: first run, kept in ${m.path}`);
    else if (m.transition) {
      lines.push(
        `  state: changed from ${
          stateWords(m.previous.state, m.previous.problem)
        } (since ${m.previous.since})`,
      );
    } else lines.push(`  state: unchanged since ${m.since}`);
  }
  const n = result.notify;
  if (n !== undefined) {
    for (const d of n.delivered) {
      lines.push(
        `  notified ${n.url}: ${
          d.previous === undefined ? "first run" : stateWords(d.previous, d.previousProblem)
        } -> ${stateWords(d.state, d.problem)} (at ${d.at})`,
      );
    }
    if (n.error !== undefined) {
      lines.push(
        `  notification failed: ${
          printable(n.error)
        }; ${n.owed.length} owed, retried on the next run`,
      );
    }
  }
  if (result.dropped > 0) {
    lines.push(
      `  dropped ${result.dropped} owed notification${result.dropped === 1 ? "" : "s"} (${
        n === undefined ? "no --notify given" : `more than ${MAX_OWED} owed`
      })`,
    );
  }
  const s = result.ownStamp;
  if (s !== undefined) {
    lines.push(
      s.state === "refreshed"
        ? `  own stamp refreshed: ${s.path}`
        : `  own stamp withheld: ${s.path}: ${s.detail}`,
    );
  }
  return lines.join("\n") + "\n";
}
