/**
 * What `run --repo` remembers between runs: when each commit waiting on the upstream was first
 * seen there. Kept in {@linkcode REPO_SEEN_FILE} in the state directory (`--state-dir`, by
 * default the registry's directory, which is already the state directory outside any checkout).
 *
 * Format: JSON, version 1, strict:
 * `{"version": 1, "repos": {"<top of the work tree>": {"<commit id>": "<ISO 8601 time>"}}}`.
 * Written atomically after every run that read the upstream; a file that exists and cannot be
 * read or is invalid stops the run (exit 2), never treated as empty, since forgetting would
 * restart every wait at zero.
 *
 * @module
 */

import { jsonTooDeep, jsonTooDeepMessage } from "../lib/text_bounds.ts";
import { join } from "../lib/path.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { readRegularTextFile } from "../lib/regular_file.ts";
import { formatPath } from "../lib/json_path.ts";

/** The file name in the state directory. */
export const REPO_SEEN_FILE = "repo-seen.json";

/**
 * The state file's schema, built on the first read (only a run with `--repo` reads one; zod is
 * loaded then).
 */
function buildRepoSeen(
  z: typeof import("zod").z,
  record: typeof import("../lib/zod_record.ts").record,
) {
  const Iso = z.iso.datetime({ offset: true, error: "Must be an ISO 8601 time" });
  // `record`, not zod's own: a key named `__proto__` (an own key, as JSON.parse makes it) is
  // refused at its place, not skipped unchecked (and its sightings forgotten).
  return z.strictObject({
    version: z.literal(1, { error: "Unsupported version; this program reads version 1" }),
    repos: record(
      z.string().startsWith("/", "Must be an absolute path"),
      record(z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "Must be a commit id"), Iso),
    ),
  });
}
let repoSeenSchema: ReturnType<typeof buildRepoSeen> | undefined;

/** First sightings per repository top: commit id to ms since the epoch. */
export type SeenByRepo = Record<string, Record<string, number>>;

/** The path of the state file in `stateDir`. */
export function repoSeenPath(stateDir: string): string {
  return join(stateDir, REPO_SEEN_FILE);
}

/** The largest first-seen state read, in bytes (a date per file of the repositories checked). */
const REPO_SEEN_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Reads the first-seen state; a file that does not exist is an empty state (nothing seen yet).
 *
 * @throws {Error} "Cannot read first-seen state ..." naming the file and, for invalid content,
 *   every problem with its JSON path.
 */
export async function loadRepoSeen(path: string): Promise<SeenByRepo> {
  let text: string;
  try {
    text = await readRegularTextFile(path, { maxBytes: REPO_SEEN_MAX_BYTES });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new Error(`Cannot read first-seen state "${path}": ${messageOf(error)}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`Cannot read first-seen state "${path}": not JSON (${messageOf(error)})`);
  }
  const deep = jsonTooDeep(text);
  if (deep !== undefined) {
    throw new Error(`Cannot read first-seen state "${path}": ${jsonTooDeepMessage(deep)}`);
  }
  repoSeenSchema ??= buildRepoSeen(
    (await import("zod")).z,
    (await import("../lib/zod_record.ts")).record,
  );
  const parsed = repoSeenSchema.safeParse(data);
  if (!parsed.success) {
    throw new Error(
      `Cannot read first-seen state "${path}": ${
        parsed.error.issues.map((i) =>
          `${formatPath(i.path.map((k) => (typeof k === "symbol" ? String(k) : k)))}: ${i.message}`
        ).join("; ")
      }`,
    );
  }
  const out: SeenByRepo = {};
  for (const [repo, commits] of Object.entries(parsed.data.repos)) {
    out[repo] = Object.fromEntries(Object.entries(commits).map(([id, t]) => [id, Date.parse(t)]));
  }
  return out;
}

/**
 * Writes the first-seen state atomically (temp file, fsync, rename).
 *
 * @throws {Error} "Cannot write ..." when the directory is missing or not writable.
 */
export async function saveRepoSeen(path: string, seen: SeenByRepo): Promise<void> {
  const repos: Record<string, Record<string, string>> = {};
  for (const repo of Object.keys(seen).sort()) {
    const commits = seen[repo]!;
    repos[repo] = Object.fromEntries(
      Object.keys(commits).sort().map((id) => [id, new Date(commits[id]!).toISOString()]),
    );
  }
  await writeFileAtomic(path, JSON.stringify({ version: 1, repos }, null, 2) + "\n");
}
