/**
 * `run --repo`: the flags and the first sightings they point at, read before anything is
 * observed. The repository is observed with the machine (`./run.ts`, `./observe/repo.ts`) and
 * compared as the `repo` row of the check table (`./compare.ts`, `./compare_repo.ts`); the
 * first-seen times to remember come back in the result, and the command line writes them.
 *
 * @module
 */

import { dirname, resolve } from "../lib/path.ts";
import { loadRepoSeen, repoSeenPath, type SeenByRepo } from "./repo_seen.ts";

/** What `run` is asked to check of the repository. */
export interface RepoCheckOptions {
  /** The checkout's top directory (`--repo`). */
  dir: string;
  /** Commits waiting longer than this (ms) are a finding (`--behind-days`). */
  behindMs: number;
  /** First sightings remembered from earlier runs (see `./repo_seen.ts`). */
  seen: SeenByRepo;
}

/** What the command line gives for `run --repo`. */
export interface RepoFlags {
  /** `--repo`. */
  repo?: string;
  /** `--behind-days`, as typed. */
  behindDays?: string;
  /** `--state-dir`. */
  stateDir?: string;
}

/**
 * The deploy map's file name, at the top of the repository (reconcile/deploy_map.ts, which reads
 * it and is loaded only when a run checks a repository).
 */
export const DEPLOY_MAP_FILE = "deploy.yaml";

/** `--behind-days` when not given. */
export const DEFAULT_BEHIND_DAYS = 7;

/**
 * Reads `run`'s repository flags and the first-seen state they point at, before anything is
 * observed: `undefined` without `--repo`.
 *
 * @param registry the registry's path; its directory is the default state directory.
 * @returns the options for `reconcile`'s `repo` and the state file to write after the run.
 * @throws {Error} for `--behind-days` or `--state-dir` without `--repo`, a `--behind-days` that
 *   is not a number of days (0 to 3650), a state directory that does not exist, or a state file
 *   that exists and cannot be read.
 */
export async function repoCheckFromFlags(
  flags: RepoFlags,
  registry: string,
): Promise<{ options: RepoCheckOptions; seenPath: string } | undefined> {
  if (flags.repo === undefined) {
    if (flags.behindDays !== undefined || flags.stateDir !== undefined) {
      throw new Error(
        `${flags.behindDays !== undefined ? "--behind-days" : "--state-dir"} needs --repo`,
      );
    }
    return undefined;
  }
  const text = flags.behindDays ?? String(DEFAULT_BEHIND_DAYS);
  const days = /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : NaN;
  if (!(days >= 0 && days <= 3650)) {
    throw new Error(`--behind-days: must be a number of days from 0 to 3650, not "${text}"`);
  }
  const stateDir = flags.stateDir ?? dirname(resolve(registry));
  const info = await Deno.stat(stateDir).catch(() => undefined);
  if (!info?.isDirectory) {
    throw new Error(`--state-dir: "${stateDir}" is not an existing directory`);
  }
  const seenPath = repoSeenPath(stateDir);
  return {
    options: { dir: flags.repo, behindMs: days * 86_400_000, seen: await loadRepoSeen(seenPath) },
    seenPath,
  };
}
