/**
 * Containers against the registry (checks `container` and `leftover`). Pure: reads the
 * observation, returns findings.
 *
 * - `container`: a `service` (or `site` with a container) whose container does not run in its
 *   account is missing (saying so when it exists and does not run); a running container no entry
 *   claims is rogue. Per account: `alice/web` is not `root/web`. A `batch` entry's container
 *   runs only while its job does: it is its own, never rogue, and never required to run (its
 *   timer grades it).
 * - `leftover`: a container that exists and does not run (`created`, `exited`, `paused`) and that
 *   no entry claims: its own finding, neither a rogue running container nor silence.
 *
 * A runtime that failed for an account is not compared there: its absence of data is not
 * evidence.
 *
 * @module
 */

import type { Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import { leftoverState } from "./observe/containers.ts";

/** `account/name` of every container an entry claims, to the entry's name. */
export function claimedContainers(registry: Registry): Map<string, string> {
  const claimed = new Map<string, string>();
  for (const [name, entry] of Object.entries(registry.services)) {
    if (!("container" in entry) || entry.container === undefined || entry.user === undefined) {
      continue;
    }
    claimed.set(`${entry.user}/${entry.container}`, name);
  }
  return claimed;
}

/** Check `container`: declared containers not running, running containers not declared. */
export function compareContainers(registry: Registry, observation: Observation): Finding[] {
  const findings: Finding[] = [];
  const failed = (source: string, account: string) =>
    observation.sources.some((s) =>
      s.source === source && s.state === "failed" && s.account === account
    );
  for (const [name, entry] of Object.entries(registry.services)) {
    if (!("container" in entry) || entry.container === undefined || entry.user === undefined) {
      continue;
    }
    if (entry.kind === "batch") continue; // runs only while its job does: graded by its timer
    if (failed("podman", entry.user) || failed("docker", entry.user)) continue;
    const running = observation.containers.some((c) =>
      c.account === entry.user && c.name === entry.container
    );
    if (running) continue;
    const there = observation.leftovers?.find((c) =>
      c.account === entry.user && c.name === entry.container
    );
    findings.push({
      check: "container",
      direction: "missing",
      service: name,
      subject: `${entry.user}/${entry.container}`,
      detail: `container "${entry.container}" of account ${entry.user} is not running${
        there ? ` (it exists: ${leftoverState(there)})` : ""
      }`,
    });
  }
  const claimed = claimedContainers(registry);
  for (const c of observation.containers) {
    if (claimed.has(`${c.account}/${c.name}`)) continue;
    findings.push({
      check: "container",
      direction: "rogue",
      subject: `${c.account}/${c.name}`,
      detail:
        `container "${c.name}" (${c.image}, ${c.runtime}) runs in account ${c.account} and no entry claims it`,
    });
  }
  return findings;
}

/** Check `leftover`: containers that exist, do not run, and no entry claims. */
export function compareLeftovers(registry: Registry, observation: Observation): Finding[] {
  const claimed = claimedContainers(registry);
  return (observation.leftovers ?? []).filter((c) => !claimed.has(`${c.account}/${c.name}`))
    .map((c) => ({
      check: "leftover",
      direction: "rogue",
      subject: `${c.account}/${c.name}`,
      detail: `container "${c.name}" (${c.image}, ${c.runtime}) of account ${c.account} ` +
        `exists and is not running (${leftoverState(c)}), and no entry claims it: remove it, ` +
        `or declare it`,
    }));
}
