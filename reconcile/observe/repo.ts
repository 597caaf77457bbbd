/**
 * The deployment repository: the git checkout on this machine that the estate is deployed from.
 * Read-only, like every observer: git runs with `GIT_OPTIONAL_LOCKS=0` so that `git status` does
 * not write the refreshed index back, nothing is fetched (the upstream is what was last fetched),
 * and destinations are compared, never written.
 *
 * Three readings, each its own kind of finding later:
 * - uncommitted edits: `git status --porcelain=v2 -z --branch --untracked-files=all`, parsed by
 *   {@linkcode parsePorcelainV2} as git-status(1), "Porcelain Format Version 2", documents it;
 * - the upstream: the `# branch.*` headers of the same call, then
 *   `git log -z --format=%H %ct %s HEAD..@{upstream}` for the commits not deployed, with their
 *   committer time (`%ct`; the author time, `%at`, says when a change was written, not when it
 *   was committed or pushed, and can be anything);
 * - the deploy map ({@linkcode DEPLOY_MAP_FILE}): each destination's type, owner, group, mode and
 *   whether its content equals the source's, read with `lstat` (a symlink is never followed).
 *
 * @module
 */

import { join } from "../../lib/path.ts";
import { readAccounts, readGroups } from "../../lib/accounts.ts";
import { messageOf } from "../../lib/atomic.ts";
import { readRegularFile } from "../../lib/regular_file.ts";
import { MAX_REGISTRY_BYTES } from "../registry_base.ts";
import { type CommandOutput, formatArgv, run } from "../../lib/command.ts";
import type { DeployEntry } from "../deploy_map.ts";
import { DEPLOY_MAP_FILE } from "../repo_check.ts";
import type { SourceStatus } from "./source.ts";

/** One path `git status` reports, by porcelain v2 line type. */
export type StatusEntry =
  | {
    /** `1`: an ordinary changed entry. */
    kind: "ordinary";
    /** Index (`X`) and work tree (`Y`) status, `.` for unchanged, e.g. `.M`, `A.`. */
    xy: string;
    /** `N...` for a plain file, `S<c><m><u>` for a submodule. */
    submodule: string;
    path: string;
  }
  | {
    /** `2`: renamed or copied (in the index). */
    kind: "renamed";
    xy: string;
    submodule: string;
    /** `R<score>` or `C<score>`, e.g. `R100`. */
    score: string;
    path: string;
    /** The path it was renamed or copied from. */
    origPath: string;
  }
  | {
    /** `u`: unmerged (a conflict). */
    kind: "unmerged";
    xy: string;
    submodule: string;
    path: string;
  }
  | { kind: "untracked"; path: string }
  | { kind: "ignored"; path: string };

/** What `git status --porcelain=v2 --branch` says. */
export interface PorcelainStatus {
  branch: {
    /** The commit checked out; absent before the first commit (`(initial)`). */
    oid?: string;
    /** The branch checked out; absent when HEAD is detached. */
    head?: string;
    /** The upstream branch, e.g. `origin/main`, when one is configured. */
    upstream?: string;
    /** Commits ahead of and behind the upstream; absent when the upstream ref does not exist. */
    ab?: { ahead: number; behind: number };
  };
  entries: StatusEntry[];
}

const XY = /^[.MTADRCU]{2}$/;
const SUBMODULE = /^(N\.\.\.|S[C.][M.][U.])$/;
const MODE = /^[0-7]{6}$/;
const OID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * Parses the output of `git status --porcelain=v2 -z [--branch]` (git-status(1), "Porcelain
 * Format Version 2"). Records end in NUL, so paths are taken as they are: spaces, quotes and
 * newlines included, never quoted. Line types: `1` ordinary, `2` renamed or copied (followed by
 * the original path as its own NUL-terminated record), `u` unmerged, `?` untracked, `!` ignored;
 * headers start with `#`, and headers this parser does not know are ignored, as the
 * documentation asks of parsers.
 *
 * @throws {Error} naming the record when a line is of an unknown type or malformed, or the
 *   output is truncated: the whole output is refused, never read in part.
 */
export function parsePorcelainV2(text: string): PorcelainStatus {
  const status: PorcelainStatus = { branch: {}, entries: [] };
  if (text === "") return status;
  if (!text.endsWith("\0")) {
    throw new Error("Cannot read git status: the output does not end with NUL (truncated?)");
  }
  const records = text.slice(0, -1).split("\0");
  const bad = (record: string, why: string) =>
    new Error(`Cannot read git status: ${why} in record ${JSON.stringify(record)}`);
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const type = record.slice(0, 2);
    if (record.startsWith("# ")) {
      const [key, ...rest] = record.slice(2).split(" ");
      const value = rest.join(" ");
      if (key === "branch.oid") {
        if (value !== "(initial)") {
          if (!OID.test(value)) throw bad(record, "a malformed commit id");
          status.branch.oid = value;
        }
      } else if (key === "branch.head") {
        if (value === "") throw bad(record, "an empty branch name");
        if (value !== "(detached)") status.branch.head = value;
      } else if (key === "branch.upstream") {
        if (value === "") throw bad(record, "an empty upstream name");
        status.branch.upstream = value;
      } else if (key === "branch.ab") {
        const m = /^\+(\d+) -(\d+)$/.exec(value);
        if (!m) throw bad(record, "malformed ahead/behind counts");
        status.branch.ab = { ahead: Number(m[1]), behind: Number(m[2]) };
      }
      continue;
    }
    if (type === "? " || type === "! ") {
      const path = record.slice(2);
      if (path === "") throw bad(record, "an empty path");
      status.entries.push({ kind: type === "? " ? "untracked" : "ignored", path });
      continue;
    }
    const count = type === "1 " ? 8 : type === "2 " ? 9 : type === "u " ? 10 : 0;
    if (count === 0) throw bad(record, "an unknown line type");
    const { fields, path } = splitFields(record, count);
    if (fields === undefined || path === "") throw bad(record, "too few fields");
    const [, xy, submodule] = fields as [string, string, string];
    if (!XY.test(xy)) throw bad(record, `an unknown status "${xy}"`);
    if (!SUBMODULE.test(submodule)) throw bad(record, `an unknown submodule state "${submodule}"`);
    const modes = type === "u " ? fields.slice(3, 7) : fields.slice(3, 6);
    const oids = type === "u " ? fields.slice(7, 10) : fields.slice(6, 8);
    if (!modes.every((m) => MODE.test(m)) || !oids.every((o) => OID.test(o))) {
      throw bad(record, "a malformed mode or object id");
    }
    if (type === "1 ") status.entries.push({ kind: "ordinary", xy, submodule, path });
    else if (type === "u ") status.entries.push({ kind: "unmerged", xy, submodule, path });
    else {
      const score = fields[8]!;
      if (!/^[RC]\d{1,3}$/.test(score)) throw bad(record, `a malformed score "${score}"`);
      const origPath = records[++i];
      if (origPath === undefined || origPath === "") {
        throw bad(record, "no original path after a rename or copy");
      }
      status.entries.push({ kind: "renamed", xy, submodule, score, path, origPath });
    }
  }
  return status;
}

/** The first `count` space-separated fields of `record`, and the rest (the path, spaces kept). */
function splitFields(record: string, count: number): { fields?: string[]; path: string } {
  const fields: string[] = [];
  let at = 0;
  for (let n = 0; n < count; n++) {
    const space = record.indexOf(" ", at);
    if (space < 0) return { path: "" };
    fields.push(record.slice(at, space));
    at = space + 1;
  }
  return { fields, path: record.slice(at) };
}

/** A commit on the upstream that HEAD does not contain. */
export interface UpstreamCommit {
  /** Full commit id. */
  oid: string;
  /** Committer time, ms since the epoch (`%ct`). */
  committed: number;
  /** Subject line. */
  subject: string;
}

/** The source of one deploy map entry, as found in the checkout. */
export type DeploySourceState =
  | { state: "file"; size: number }
  | { state: "missing" }
  | { state: "not-file"; type: string }
  /** Resolves (through a symlink) outside the repository; `target` is where. */
  | { state: "outside"; target: string };

/** A destination of the deploy map, as found on the machine (never followed if a symlink). */
export type DestinationState =
  | { state: "missing" }
  | { state: "not-file"; type: string; target?: string }
  | {
    state: "file";
    uid: number;
    gid: number;
    /** Names of the owner and group where this machine has them. */
    user?: string;
    groupName?: string;
    /** Permission bits and setuid/setgid/sticky (`mode & 0o7777`). */
    mode: number;
    size: number;
    /** Whether its bytes equal the source's; absent when the source could not be read. */
    sameContent?: boolean;
  };

/** One deploy map entry and what was found at both ends. */
export interface DeployCheck {
  entry: DeployEntry;
  source: DeploySourceState;
  destination: DestinationState;
  /** uid of `entry.owner`; absent when no such account exists here. */
  uid?: number;
  /** gid of `entry.group`; absent when no such group exists here. */
  gid?: number;
}

/** What {@linkcode observeRepo} found. */
export interface RepoObservation {
  /** The directory given. */
  dir: string;
  /** The work tree's top (real path); absent when it could not be established. */
  top?: string;
  /** Absent when git could not be asked (then the `repo` source failed). */
  status?: PorcelainStatus;
  /** Commits in `HEAD..@{upstream}`, newest first. */
  behind: UpstreamCommit[];
  /** When the upstream was last fetched (ms, `FETCH_HEAD`'s time); absent when never. */
  lastFetch?: number;
  /** The deploy map's entries; absent when the map could not be read. */
  deploy?: DeployCheck[];
  sources: SourceStatus[];
}

/** Options for {@linkcode observeRepo}. */
export interface ObserveRepoOptions {
  /** Time limit of each git command, ms; default 30 000. */
  timeoutMs?: number;
}

/** The environment git runs with: never write the index, never prompt, messages in English. */
const GIT_ENV = {
  GIT_OPTIONAL_LOCKS: "0",
  GIT_TERMINAL_PROMPT: "0",
  LC_ALL: "C",
  GIT_PAGER: "cat",
};

/**
 * Observes the deployment repository at `dir`, which must be the top of a git work tree. Never
 * throws: a directory that is missing, not a git repository, or not the top of one, or a git
 * that fails, makes the `repo` source `failed`; a deploy map that is missing or invalid makes
 * the `deploy-map` source `failed` with every problem and its line. Changes nothing.
 */
export async function observeRepo(
  dir: string,
  options: ObserveRepoOptions = {},
): Promise<RepoObservation> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const out: RepoObservation = { dir, behind: [], sources: [] };
  const fail = (source: string, method: string, detail: string) => {
    out.sources.push({ source, state: "failed", method, detail });
    return out;
  };
  const git = (args: string[], cwd: string) =>
    run(["git", ...args], { cwd, env: GIT_ENV, timeoutMs, allowFailure: true });

  let real: string;
  try {
    real = await Deno.realPath(dir);
    if (!(await Deno.stat(real)).isDirectory) {
      return fail("repo", `stat ${dir}`, `"${dir}" is not a directory`);
    }
  } catch (error) {
    return fail(
      "repo",
      `stat ${dir}`,
      error instanceof Deno.errors.NotFound
        ? `"${dir}" does not exist`
        : `Cannot read "${dir}": ${messageOf(error)}`,
    );
  }

  const revParse = ["rev-parse", "--show-toplevel", "--absolute-git-dir"];
  let answer: CommandOutput;
  try {
    answer = await git(revParse, real);
  } catch (error) {
    return fail("repo", `git ${formatArgv(revParse)}`, messageOf(error));
  }
  if (answer.code !== 0) {
    const said = answer.stderr.trim().split("\n").pop() ?? "";
    return fail(
      "repo",
      `git ${formatArgv(revParse)}`,
      /not a git repository/i.test(answer.stderr)
        ? `"${dir}" is not a git repository (git: ${said})`
        : /must be run in a work tree/i.test(answer.stderr)
        ? `"${dir}" is a bare repository, not a checkout (git: ${said})`
        : `git could not read "${dir}" (exit ${answer.code}): ${said}`,
    );
  }
  const [top, gitDir] = answer.stdout.split("\n");
  if (top !== real) {
    return fail(
      "repo",
      `git ${formatArgv(revParse)}`,
      `"${dir}" is inside the work tree of "${top}", not the top of one: give the checkout's top`,
    );
  }
  out.top = top;

  // --renames: rename detection whatever status.renames says, so a rename is one entry.
  const statusArgs = [
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
    "--renames",
  ];
  const method = `git ${formatArgv(statusArgs)}`;
  try {
    const s = await git(statusArgs, top);
    if (s.code !== 0) return fail("repo", method, `exit ${s.code}: ${s.stderr.trim()}`);
    out.status = parsePorcelainV2(s.stdout);
    const b = out.status.branch;
    if (b.ab !== undefined && b.ab.behind > 0) {
      const logArgs = [
        "-c",
        "log.showSignature=false",
        "log",
        "-z",
        "--format=%H %ct %s",
        "HEAD..@{upstream}",
      ];
      const log = await git(logArgs, top);
      if (log.code !== 0) {
        return fail("repo", `git ${formatArgv(logArgs)}`, `exit ${log.code}: ${log.stderr.trim()}`);
      }
      out.behind = parseLog(log.stdout);
    }
    const fetchHead = await Deno.stat(join(gitDir ?? `${top}/.git`, "FETCH_HEAD")).catch(() =>
      undefined
    );
    if (fetchHead?.mtime) out.lastFetch = fetchHead.mtime.getTime();
  } catch (error) {
    return fail("repo", method, messageOf(error));
  }
  out.sources.push({
    source: "repo",
    state: "observed",
    method,
    detail: describeBranch(out),
  });

  await observeDeployMap(top, out);
  return out;
}

/** Parses `git log -z --format=%H %ct %s`: NUL-separated records of id, committer time, subject. */
function parseLog(text: string): UpstreamCommit[] {
  const commits: UpstreamCommit[] = [];
  for (const record of text.split("\0")) {
    if (record === "") continue;
    const m = /^([0-9a-f]{40}(?:[0-9a-f]{24})?) (\d+) ?(.*)$/s.exec(record);
    if (!m) throw new Error(`Cannot read git log: malformed record ${JSON.stringify(record)}`);
    commits.push({ oid: m[1]!, committed: Number(m[2]) * 1000, subject: m[3]! });
  }
  return commits;
}

function describeBranch(o: RepoObservation): string {
  const b = o.status!.branch;
  const at = b.oid ? b.oid.slice(0, 12) : "no commit yet";
  const head = b.head === undefined ? `detached at ${at}` : `${b.head} at ${at}`;
  const upstream = b.upstream === undefined
    ? "no upstream"
    : b.ab === undefined
    ? `upstream ${b.upstream} missing`
    : `${b.ab.behind} behind and ${b.ab.ahead} ahead of ${b.upstream}, last fetched ${
      o.lastFetch === undefined ? "never (since the clone)" : new Date(o.lastFetch).toISOString()
    }`;
  const changes = o.status!.entries.filter((e) => e.kind !== "ignored").length;
  return `${head}; ${upstream}; ${changes} uncommitted path${changes === 1 ? "" : "s"}`;
}

async function observeDeployMap(top: string, out: RepoObservation): Promise<void> {
  const mapPath = join(top, DEPLOY_MAP_FILE);
  const method = `read ${mapPath}`;
  // The map's reader (the `yaml` package, zod) is loaded only for a run that checks a repository.
  const { DeployMapError, parseDeployMap } = await import("../deploy_map.ts");
  let entries: DeployEntry[];
  try {
    // A map is a registry-sized YAML file at most; read only if it is a regular file.
    const bytes = await readRegularFile(mapPath, { maxBytes: MAX_REGISTRY_BYTES });
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    entries = parseDeployMap(text, DEPLOY_MAP_FILE);
  } catch (error) {
    out.sources.push({
      source: "deploy-map",
      state: "failed",
      method,
      detail: error instanceof Deno.errors.NotFound
        ? `the repository has no ${DEPLOY_MAP_FILE}; a repository given to --repo must have one (files: [] says nothing is copied)`
        : error instanceof DeployMapError
        ? error.message
        : `Cannot read ${DEPLOY_MAP_FILE}: ${messageOf(error)}`,
    });
    return;
  }
  let passwd, groups;
  try {
    [passwd, groups] = await Promise.all([readAccounts(), readGroups()]);
  } catch (error) {
    out.sources.push({ source: "deploy-map", state: "failed", method, detail: messageOf(error) });
    return;
  }
  const checks: DeployCheck[] = [];
  try {
    for (const entry of entries) {
      const check: DeployCheck = {
        entry,
        source: await inspectSource(top, entry.source),
        destination: await inspectDestination(entry.destination),
      };
      const uid = passwd.get(entry.owner)?.uid;
      const gid = groups.get(entry.group);
      if (uid !== undefined) check.uid = uid;
      if (gid !== undefined) check.gid = gid;
      if (check.destination.state === "file") {
        const d = check.destination;
        const user = [...passwd.values()].find((a) => a.uid === d.uid)?.name;
        const group = [...groups].find(([, id]) => id === d.gid)?.[0];
        if (user !== undefined) d.user = user;
        if (group !== undefined) d.groupName = group;
      }
      if (check.source.state === "file" && check.destination.state === "file") {
        check.destination.sameContent = await sameContent(
          join(top, entry.source),
          entry.destination,
        );
      }
      checks.push(check);
    }
  } catch (error) {
    out.sources.push({ source: "deploy-map", state: "failed", method, detail: messageOf(error) });
    return;
  }
  out.deploy = checks;
  out.sources.push({
    source: "deploy-map",
    state: "observed",
    method,
    detail: `${checks.length} file${checks.length === 1 ? "" : "s"} mapped`,
  });
}

function typeOf(info: Deno.FileInfo): string {
  return info.isDirectory
    ? "a directory"
    : info.isSymlink
    ? "a symbolic link"
    : info.isFifo
    ? "a FIFO"
    : info.isSocket
    ? "a socket"
    : info.isCharDevice || info.isBlockDevice
    ? "a device"
    : "not a regular file";
}

/** Where a source is: it must resolve, through any symlink, to a regular file inside `top`. */
async function inspectSource(top: string, source: string): Promise<DeploySourceState> {
  const path = join(top, source);
  let real: string;
  try {
    real = await Deno.realPath(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      // A dangling symlink may still point outside: say where, rather than "missing".
      const target = await Deno.readLink(path).catch(() => undefined);
      if (target !== undefined) {
        const abs = target.startsWith("/") ? target : join(path, "..", target);
        if (!abs.startsWith(`${top}/`)) return { state: "outside", target: abs };
      }
      return { state: "missing" };
    }
    throw new Error(`Cannot read the source "${source}": ${messageOf(error)}`);
  }
  if (!real.startsWith(`${top}/`) || real.startsWith(`${top}/.git/`)) {
    return { state: "outside", target: real };
  }
  const info = await Deno.stat(real);
  if (!info.isFile) return { state: "not-file", type: typeOf(info) };
  return { state: "file", size: info.size };
}

/** What is at a destination, read with `lstat`: a symlink there is reported, not followed. */
async function inspectDestination(destination: string): Promise<DestinationState> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(destination);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return { state: "missing" };
    }
    throw new Error(`Cannot read the destination "${destination}": ${messageOf(error)}`);
  }
  if (!info.isFile) {
    const target = info.isSymlink ? await Deno.readLink(destination).catch(() => undefined) : "";
    return {
      state: "not-file",
      type: typeOf(info),
      ...(target ? { target } : {}),
    };
  }
  return {
    state: "file",
    uid: info.uid ?? -1,
    gid: info.gid ?? -1,
    mode: (info.mode ?? 0) & 0o7777,
    size: info.size,
  };
}

/** Whether two regular files hold the same bytes (sizes first, then 64 KiB at a time). */
async function sameContent(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([Deno.stat(a), Deno.stat(b)]);
  if (sa.size !== sb.size) return false;
  using fa = await Deno.open(a, { read: true });
  using fb = await Deno.open(b, { read: true });
  const ba = new Uint8Array(1 << 16);
  const bb = new Uint8Array(1 << 16);
  for (;;) {
    const na = await readFull(fa, ba);
    const nb = await readFull(fb, bb);
    if (na !== nb) return false;
    if (na === 0) return true;
    for (let i = 0; i < na; i++) if (ba[i] !== bb[i]) return false;
  }
}

/** Reads until `buffer` is full or the file ends; returns how many bytes were read. */
async function readFull(file: Deno.FsFile, buffer: Uint8Array): Promise<number> {
  let n = 0;
  while (n < buffer.length) {
    const got = await file.read(buffer.subarray(n));
    if (got === null) break;
    n += got;
  }
  return n;
}
