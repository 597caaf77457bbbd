/**
 * The `backup` check: every declared state directory (`state` of any entry) must be held by a
 * snapshot of the registry's `backup.restic` repository taken on this machine, and the newest
 * such snapshot must be younger than `backup.maxAge`. Pure: it reads the observation
 * (`./observe/backup.ts`) and returns findings with check `backup`.
 *
 * A snapshot holds a directory when one of its paths is the directory or a parent of it, paths
 * compared normalised (repeated and trailing slashes, `.` segments) and each also in its
 * resolved form where it exists on this machine (a symlinked parent is its target). Snapshots
 * are grouped here, not by restic's `--latest` (whose grouping changed between versions): only
 * those whose `hostname` is this machine's count, and the newest by `time` is judged.
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import type { BackupObservation, Snapshot } from "./observe/backup.ts";
import { formatDuration, parseDuration } from "../lib/duration.ts";

/** Whether `dir` (any of its forms) is `holder` (any of its forms) or lies below it. */
function holds(holder: readonly string[], dir: readonly string[]): boolean {
  return holder.some((h) => dir.some((d) => d === h || d.startsWith(h === "/" ? "/" : `${h}/`)));
}

/** The newest snapshot taken on this machine that holds `forms`, if any. */
export function newestHolding(
  backup: BackupObservation,
  forms: readonly string[],
): Snapshot | undefined {
  let best: Snapshot | undefined;
  for (const s of backup.snapshots) {
    if (s.hostname !== backup.hostname) continue;
    if (!s.resolved.some((p) => holds(p, forms))) continue;
    if (best === undefined || s.time > best.time) best = s;
  }
  return best;
}

/**
 * The `backup` findings (direction `missing`: the declared state is not backed up as declared):
 * a directory in no snapshot of this machine ("backup/missing"), or whose newest snapshot is
 * older than `maxAge` ("backup/stale", said so in its detail). Compared only when the registry
 * names a backup and it was observed; a `failed` backup source is not compared (the run is
 * unobservable).
 */
export function compareBackup(
  registry: Registry,
  observation: Observation,
  options: { now: number },
): Finding[] {
  const declared = registry.backup;
  const backup = observation.backup;
  if (declared === undefined || backup === undefined) return [];
  const maxAgeMs = parseDuration(declared.maxAge);
  const owners = new Map<string, string[]>();
  for (const [name, entry] of Object.entries(registry.services)) {
    for (const path of entry.state ?? []) owners.set(path, [...(owners.get(path) ?? []), name]);
  }
  const repository = declared.restic.repository;
  const findings: Finding[] = [];
  for (const { path, forms } of backup.state) {
    const service = owners.get(path)?.[0];
    const base = { check: "backup" as const, direction: "missing" as const, subject: path };
    const newest = newestHolding(backup, forms);
    if (newest === undefined) {
      findings.push({
        ...base,
        ...(service !== undefined ? { service } : {}),
        detail: `missing: state directory ${path} is in no snapshot of ${repository} taken ` +
          `on ${backup.hostname} (${backup.snapshots.length} snapshot${
            backup.snapshots.length === 1 ? "" : "s"
          } in all)`,
      });
      continue;
    }
    const age = options.now - newest.time;
    if (age > maxAgeMs) {
      findings.push({
        ...base,
        ...(service !== undefined ? { service } : {}),
        detail: `stale: the newest snapshot holding state directory ${path} is ${
          newest.id.slice(0, 8)
        } of ${newest.timeText}, ${formatDuration(age)} old, past maxAge ${declared.maxAge}`,
      });
    }
  }
  return findings;
}
