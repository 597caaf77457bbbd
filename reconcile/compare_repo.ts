/**
 * The deployment repository's findings (check `repo`), from a {@linkcode RepoObservation}. Pure:
 * it takes what was observed, the first-seen times remembered from earlier runs and "now", and
 * returns findings and the first-seen times to remember. Three stories, each its own words:
 *
 * - `uncommitted` (direction `rogue`: there, and no commit declares it): a path `git status`
 *   reports, one finding per path, named as a JSON string literal so spaces, quotes and
 *   newlines are unambiguous; and `local commit`: HEAD has commits the upstream does not.
 * - `deployed file` (direction `missing`: what the map declares is not there): a destination
 *   missing, not a regular file, or differing in content, owner, group or mode, each its own
 *   finding; and the map's own problems found only by looking (a source missing, not a file, or
 *   resolving outside the repository through a symlink, an owner or group this machine lacks).
 * - `not deployed` (direction `missing`): commits in `HEAD..@{upstream}` that have waited longer
 *   than the limit. A commit's wait is the longer of its age by committer time and the time
 *   since this reconciler first saw it there: committer time catches a commit pushed late, the
 *   first sighting catches a committer clock that is wrong (in the future) or a rebase. The
 *   author time is never used. No upstream, a detached HEAD and an upstream whose branch does
 *   not exist are findings too: nothing to compare with is not "nothing behind".
 *
 * @module
 */

import { formatDuration } from "../lib/duration.ts";
import { printable } from "../lib/printable.ts";
import type { CompareOptions, Finding, Observation } from "./finding.ts";
import type { DeployCheck, RepoObservation, StatusEntry } from "./observe/repo.ts";
import { DEPLOY_MAP_FILE } from "./repo_check.ts";
import type { SeenByRepo } from "./repo_seen.ts";
import type { Registry } from "./registry.ts";

/** Options for {@linkcode compareRepo}. */
export interface CompareRepoOptions {
  /** A commit waiting longer than this (ms) is a finding (`--behind-days`, default 7 days). */
  behindMs: number;
  /** "Now", ms since the epoch. */
  now: number;
  /** When each commit was first seen in `HEAD..@{upstream}` by an earlier run (id to ms). */
  firstSeen: Record<string, number>;
}

/** What {@linkcode compareRepo} returns. */
export interface RepoComparison {
  findings: Finding[];
  /**
   * First-seen times to remember (id to ms): every commit now in `HEAD..@{upstream}`, with its
   * earlier first sighting or, when new, "now". Commits deployed (or gone) are dropped. Absent
   * when the upstream could not be read (then what was remembered is kept as it was).
   */
  firstSeen?: Record<string, number>;
}

/** A path as findings say it: a JSON string literal, then escaped for terminals. */
export function quotePath(path: string): string {
  return printable(JSON.stringify(path));
}

/**
 * Compares what was observed of the repository with what it should be. A source that failed
 * gives no findings here (its absence of data is not evidence; the run reports the source).
 */
export function compareRepo(repo: RepoObservation, options: CompareRepoOptions): RepoComparison {
  const findings: Finding[] = [];
  const status = repo.status;
  const where = repo.top ?? repo.dir;
  const base = { check: "repo" as const };
  let firstSeen: Record<string, number> | undefined;
  if (status !== undefined) {
    for (const e of status.entries) {
      if (e.kind === "ignored") continue; // .gitignore, committed, says these are not content
      findings.push({
        ...base,
        direction: "rogue",
        subject: e.path,
        detail: `uncommitted edit in ${quotePath(where)}: ${describeEntry(e)}`,
      });
    }
    const b = status.branch;
    const at = b.oid ? b.oid.slice(0, 12) : "no commit";
    if (b.head === undefined) {
      findings.push({
        ...base,
        direction: "missing",
        subject: "HEAD",
        detail: `no upstream: HEAD of ${
          quotePath(where)
        } is detached at ${at}, so no branch says what should be deployed`,
      });
    } else if (b.upstream === undefined) {
      findings.push({
        ...base,
        direction: "missing",
        subject: b.head,
        detail: `no upstream: branch ${quotePath(b.head)} of ${
          quotePath(where)
        } tracks no upstream branch, so nothing says what should be deployed`,
      });
    } else if (b.ab === undefined) {
      findings.push({
        ...base,
        direction: "missing",
        subject: b.upstream,
        detail: `upstream gone: branch ${quotePath(b.head)} of ${quotePath(where)} tracks ${
          quotePath(b.upstream)
        }, which does not exist here (never fetched, or deleted on the remote)`,
      });
    } else {
      if (b.ab.ahead > 0) {
        findings.push({
          ...base,
          direction: "rogue",
          subject: b.upstream,
          detail: `local commit: ${quotePath(b.head)} of ${
            quotePath(where)
          } has ${b.ab.ahead} commit${b.ab.ahead === 1 ? "" : "s"} that ${
            quotePath(b.upstream)
          } does not (committed on this machine, not pushed)`,
        });
      }
      firstSeen = {};
      const late: { oid: string; subject: string; committed: number; wait: number; by: string }[] =
        [];
      for (const c of repo.behind) {
        const seen = Math.min(options.firstSeen[c.oid] ?? options.now, options.now);
        firstSeen[c.oid] = seen;
        const byCommit = options.now - c.committed;
        const bySeen = options.now - seen;
        const wait = Math.max(byCommit, bySeen);
        if (wait > options.behindMs) {
          late.push({
            ...c,
            wait,
            by: byCommit >= bySeen
              ? `committed ${new Date(c.committed).toISOString()}`
              : `first seen on the upstream ${new Date(seen).toISOString()}, committed ${
                new Date(c.committed).toISOString()
              }`,
          });
        }
      }
      if (late.length > 0) {
        const oldest = late.reduce((a, c) => (c.wait > a.wait ? c : a));
        findings.push({
          ...base,
          direction: "missing",
          subject: b.upstream,
          detail: `not deployed: ${late.length} of the ${repo.behind.length} commit${
            repo.behind.length === 1 ? "" : "s"
          } on ${quotePath(b.upstream)} that ${quotePath(where)} lacks ${
            late.length === 1 ? "has" : "have"
          } waited more than ${formatDuration(options.behindMs)}; the longest, ${
            oldest.oid.slice(0, 12)
          } ${quotePath(oldest.subject)}, ${formatDuration(oldest.wait)} (${oldest.by})`,
        });
      }
    }
  }
  for (const check of repo.deploy ?? []) findings.push(...deployFindings(check));
  return firstSeen === undefined ? { findings } : { findings, firstSeen };
}

const LETTER: Record<string, string> = {
  M: "modified",
  T: "changed type",
  A: "added",
  D: "deleted",
  R: "renamed",
  C: "copied",
  U: "updated but unmerged",
};
const UNMERGED: Record<string, string> = {
  DD: "both deleted",
  AU: "added by us",
  UD: "deleted by them",
  UA: "added by them",
  DU: "deleted by us",
  AA: "both added",
  UU: "both modified",
};

/** One `git status` entry in words, e.g. `"a b" modified in the work tree`. */
export function describeEntry(e: StatusEntry): string {
  const path = quotePath(e.path);
  if (e.kind === "untracked") return `${path} untracked`;
  if (e.kind === "ignored") return `${path} ignored`;
  const sub = e.submodule.startsWith("S")
    ? ` (submodule: ${
      [
        e.submodule[1] === "C" ? "new commits" : "",
        e.submodule[2] === "M" ? "modified content" : "",
        e.submodule[3] === "U" ? "untracked content" : "",
      ].filter(Boolean).join(", ") || "changed"
    })`
    : "";
  if (e.kind === "unmerged") {
    return `${path} unmerged, ${UNMERGED[e.xy] ?? `conflict ${e.xy}`}${sub}`;
  }
  const [x, y] = [e.xy[0]!, e.xy[1]!];
  const parts: string[] = [];
  if (e.kind === "renamed") {
    const how = e.score.startsWith("C") ? "copied" : "renamed";
    parts.push(`${how} from ${quotePath(e.origPath)} (staged, ${e.score.slice(1)}% similar)`);
  } else if (x !== ".") parts.push(`${LETTER[x] ?? x} (staged)`);
  if (y !== ".") parts.push(`${LETTER[y] ?? y} in the work tree`);
  return `${path} ${parts.join(" and ")}${sub}`;
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, "0");
}

function deployFindings(c: DeployCheck): Finding[] {
  const e = c.entry;
  const at = `${DEPLOY_MAP_FILE}:${e.line}`;
  const dest = quotePath(e.destination);
  const src = quotePath(e.source);
  const one = (detail: string): Finding => ({
    check: "repo",
    direction: "missing",
    subject: e.destination,
    detail,
  });
  const out: Finding[] = [];
  // The map's own problems, found by looking.
  if (c.source.state === "outside") {
    out.push(one(
      `deploy map source outside the repository: ${at} names ${src} for ${dest}, and it resolves to ${
        quotePath(c.source.target)
      }; not compared`,
    ));
  } else if (c.source.state === "missing") {
    out.push(
      one(`deploy map source missing: ${at} names ${src} for ${dest}, not in the repository`),
    );
  } else if (c.source.state === "not-file") {
    out.push(one(`deploy map source not a file: ${at} names ${src} for ${dest}, ${c.source.type}`));
  }
  if (c.uid === undefined) {
    out.push(
      one(
        `deploy map owner unknown: ${at} says ${
          quotePath(e.owner)
        } for ${dest}, not an account on this machine`,
      ),
    );
  }
  if (c.gid === undefined) {
    out.push(
      one(
        `deploy map group unknown: ${at} says ${
          quotePath(e.group)
        } for ${dest}, not a group on this machine`,
      ),
    );
  }
  const d = c.destination;
  const what = `deployed file ${dest} (${at}, from ${src})`;
  if (d.state === "missing") return [...out, one(`${what} is missing`)];
  if (d.state === "not-file") {
    return [
      ...out,
      one(
        `${what} is ${d.type}${
          d.target ? ` to ${quotePath(d.target)}` : ""
        }, not a file (not followed)`,
      ),
    ];
  }
  if (d.sameContent === false && c.source.state === "file") {
    out.push(one(
      `${what} differs in content from the repository's (${d.size} bytes here, ${c.source.size} in the repository)`,
    ));
  }
  if (c.uid !== undefined && d.uid !== c.uid) {
    out.push(one(
      `${what} is owned by ${
        d.user ?? "uid"
      } (uid ${d.uid}), the deploy map says ${e.owner} (uid ${c.uid})`,
    ));
  }
  if (c.gid !== undefined && d.gid !== c.gid) {
    out.push(one(
      `${what} has group ${
        d.groupName ?? "gid"
      } (gid ${d.gid}), the deploy map says ${e.group} (gid ${c.gid})`,
    ));
  }
  if (d.mode !== e.mode) {
    const exec = (d.mode & 0o111) ^ (e.mode & 0o111);
    const why = exec === 0
      ? ""
      : (e.mode & exec) !== 0
      ? ": the executable bit is missing"
      : ": executable, and the map says it is not";
    out.push(one(`${what} has mode ${octal(d.mode)}, the deploy map says ${octal(e.mode)}${why}`));
  }
  return out;
}

/** The first sightings remembered for the observed checkout, or none. */
function firstSeenOf(repo: RepoObservation, options: CompareOptions): Record<string, number> {
  return repo.top === undefined ? {} : options.repo?.seen[repo.top] ?? {};
}

/**
 * Check `repo` as a row of the table: the observed repository (`run --repo`) compared with the
 * first sightings in `options.repo`; no findings when the repository was not observed.
 */
export function compareRepoCheck(
  _registry: Registry,
  observation: Observation,
  options: CompareOptions,
): Finding[] {
  if (observation.repo === undefined || options.repo === undefined) return [];
  return compareRepo(observation.repo, {
    behindMs: options.repo.behindMs,
    now: options.now,
    firstSeen: firstSeenOf(observation.repo, options),
  }).findings;
}

/**
 * The first sightings to keep after a run (every checkout remembered, this one's updated), or
 * undefined when the upstream could not be read (then what was remembered stays as it was).
 */
export function repoSeenAfter(
  observation: Observation,
  options: CompareOptions,
): SeenByRepo | undefined {
  const repo = observation.repo;
  if (repo === undefined || options.repo === undefined || repo.top === undefined) return undefined;
  const compared = compareRepo(repo, {
    behindMs: options.repo.behindMs,
    now: options.now,
    firstSeen: firstSeenOf(repo, options),
  });
  if (compared.firstSeen === undefined) return undefined;
  return { ...options.repo.seen, [repo.top]: compared.firstSeen };
}
