/**
 * The backup the registry names (`backup.restic`): its snapshots, asked from restic itself with
 * `restic -r REPOSITORY --password-file FILE --no-lock --no-cache snapshots --json`, one command
 * however many state directories. Read-only: `--no-lock` writes no lock into the repository and
 * `--no-cache` keeps no local cache.
 *
 * Format read (restic's JSON output, `restic snapshots --json`; restic 0.14, Debian 12's
 * `restic`): an array of snapshots, each an object with at least
 *
 * ```json
 * {"time":"2026-12-06T05:50:01.123456789+00:00","tree":"…","paths":["/srv/web"],
 *  "hostname":"node1","username":"root","tags":["nightly"],"id":"64-hex","short_id":"8-hex"}
 * ```
 *
 * `time` is RFC 3339 with up to nine fraction digits; `tags` is absent or null when there are
 * none; `paths` are the paths as `restic backup` was given them (made absolute, not resolved).
 * An empty repository prints `[]`. Other fields (`parent`, `tree`, `uid`, `gid`, `excludes`,
 * `program_version`) are not read. The snapshots are not grouped by restic (`--latest` groups
 * by host and paths in one version, by host, paths and tags in another): the judge of
 * `../compare_backup.ts` picks, per declared directory, the newest snapshot that holds it.
 *
 * The state directories declared (and each snapshot path) are also resolved with `realpath`
 * where they exist on this machine, so a symlinked parent compares equal to its target.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { messageOf } from "../../lib/atomic.ts";
import type { SourceStatus } from "./source.ts";

/** What to ask: the repository and password file of the registry's `backup.restic`. */
export interface BackupRequest {
  /** `-r`: a path or a URL restic accepts (`/srv/restic`, `sftp:host:/x`, `rest:https://…`). */
  repository: string;
  /** `--password-file`: the file holding the repository's password. */
  passwordFile: string;
  /** The state directories declared (`state` of every entry), as written in the registry. */
  state: readonly string[];
}

/** One snapshot, as read from `restic snapshots --json`. */
export interface Snapshot {
  /** restic's snapshot id (64 hex digits). */
  id: string;
  /** When it was taken, in ms since the epoch. */
  time: number;
  /** `time` as restic printed it. */
  timeText: string;
  hostname: string;
  /** The paths backed up, as given to `restic backup`. */
  paths: string[];
  /** The paths, each also resolved (`realpath`) where it exists here, normalised. */
  resolved: string[][];
  tags: string[];
}

/** The backup as observed. */
export interface BackupObservation {
  /** This machine's host name (restic's default `--host` for a snapshot taken here). */
  hostname: string;
  snapshots: Snapshot[];
  /** For each declared directory: its normalised forms (as written, and resolved where it exists). */
  state: { path: string; forms: string[] }[];
}

/**
 * A path normalised for comparison: repeated slashes folded, `.` segments and a trailing slash
 * dropped (`/srv//web/./` is `/srv/web`); `/` stays `/`.
 */
export function normalisePath(path: string): string {
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  return "/" + parts.join("/");
}

/** `path` normalised, and its `realpath` too where it exists on this machine and differs. */
export function pathForms(path: string): string[] {
  const plain = normalisePath(path);
  let real: string | undefined;
  try {
    real = normalisePath(Deno.realPathSync(plain));
  } catch {
    real = undefined;
  }
  return real === undefined || real === plain ? [plain] : [plain, real];
}

/** An error in restic's output, naming where. */
function bad(where: string, what: string): Error {
  return new Error(`Cannot read restic snapshots --json: ${where}: ${what}`);
}

/**
 * Parses `restic snapshots --json` (the format in this module's documentation).
 *
 * @throws {Error} naming the snapshot and field when the output is not that format.
 */
export function parseSnapshots(text: string): Omit<Snapshot, "resolved">[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw bad("output", `not JSON (${messageOf(error)})`);
  }
  if (!Array.isArray(data)) throw bad("output", "not an array of snapshots");
  return data.map((raw, i) => {
    const at = `snapshot ${i}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw bad(at, "not an object");
    }
    const s = raw as Record<string, unknown>;
    const string = (key: string): string => {
      const v = s[key];
      if (typeof v !== "string" || v === "") throw bad(at, `${key} is not a non-empty string`);
      return v;
    };
    const strings = (key: string, optional: boolean): string[] => {
      const v = s[key];
      if ((v === undefined || v === null) && optional) return [];
      if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
        throw bad(at, `${key} is not a list of strings`);
      }
      return [...v];
    };
    const id = string("id");
    const timeText = string("time");
    // RFC 3339 with up to nine fraction digits; Date.parse is sure of three.
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(timeText);
    const time = m ? Date.parse(`${m[1]}${(m[2] ?? "").slice(0, 4)}${m[3]}`) : NaN;
    if (Number.isNaN(time)) throw bad(`${at} (${id})`, `time "${timeText}" is not RFC 3339`);
    return {
      id,
      time,
      timeText,
      hostname: string("hostname"),
      paths: strings("paths", false),
      tags: strings("tags", true),
    };
  });
}

/**
 * Asks restic for the snapshots of `request.repository`. Never throws: a password file that
 * cannot be read, restic missing or failing (wrong password, no repository there), or output
 * that is not the format read makes the `backup` source `failed` with the reason, and the check
 * is then not compared: coverage that cannot be read is never clean.
 */
export async function observeBackup(
  request: BackupRequest,
  options: { timeoutMs?: number } = {},
): Promise<{ backup?: BackupObservation; sources: SourceStatus[] }> {
  const argv = [
    "restic",
    "-r",
    request.repository,
    "--password-file",
    request.passwordFile,
    "--no-lock",
    "--no-cache",
    "snapshots",
    "--json",
  ];
  const method = `restic -r ${request.repository} snapshots --json`;
  const failed = (detail: string) => ({
    sources: [{ source: "backup", state: "failed" as const, method, detail }],
  });
  try {
    const info = Deno.statSync(request.passwordFile);
    if (!info.isFile) {
      return failed(`Cannot read restic password file "${request.passwordFile}": not a file`);
    }
  } catch (error) {
    return failed(
      `Cannot read restic password file "${request.passwordFile}": ${messageOf(error)}`,
    );
  }
  let snapshots;
  try {
    const out = await run(argv, {
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      // restic reads these before its flags; the flags given must be the ones that count.
      env: { RESTIC_REPOSITORY: "", RESTIC_PASSWORD: "", RESTIC_PASSWORD_COMMAND: "" },
    });
    snapshots = parseSnapshots(out.stdout);
  } catch (error) {
    return failed(`Cannot read the snapshots of "${request.repository}": ${messageOf(error)}`);
  }
  const backup: BackupObservation = {
    hostname: Deno.hostname(),
    snapshots: snapshots.map((s) => ({ ...s, resolved: s.paths.map(pathForms) })),
    state: request.state.map((path) => ({ path, forms: pathForms(path) })),
  };
  return {
    backup,
    sources: [{
      source: "backup",
      state: "observed",
      method,
      detail: `${snapshots.length} snapshot${snapshots.length === 1 ? "" : "s"}`,
    }],
  };
}
