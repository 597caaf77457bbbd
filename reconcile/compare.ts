/**
 * The anti-join: what the registry says should exist against what was observed, both ways. Every
 * check has the same shape, one row of {@linkcode CHECKS}: what it observes (the sources whose
 * answers it reads), how it compares (a pure function of the registry and the observation), and
 * the findings it can make (by direction, each with what it means). {@linkcode compare} walks the
 * table in order; a finding a row did not declare is a defect of this program, not drift.
 *
 * The shapes the checks share are in `./finding.ts`; each check's comparison is in its own
 * module and none imports another or this one.
 *
 * @module
 */

import type { CompareOptions, Direction, Finding, Observation } from "./finding.ts";
import type { Registry } from "./registry.ts";
import { compareContainers, compareLeftovers } from "./compare_containers.ts";
import { comparePorts } from "./compare_ports.ts";
import { compareAddresses, compareCertificates, compareRedirects } from "./compare_web.ts";
import { compareTimers } from "./compare_timers.ts";
import { compareBoot } from "./compare_boot.ts";
import { compareRoutes } from "./compare_route.ts";
import { compareRepoCheck } from "./compare_repo.ts";
import { compareBackup } from "./compare_backup.ts";

export type { Check, CompareOptions, Direction, Finding, Observation } from "./finding.ts";

/** One check: what it observes, how it compares, and the findings it can make. */
export interface CheckRow {
  /** The name findings carry (`check`). */
  check: Finding["check"];
  /**
   * What it observes: the sources (as `sources` names them) whose answers it reads. A failed one
   * is not compared, since missing data is not evidence; the check itself decides how narrowly
   * (per account, per runtime).
   */
  observes: readonly string[];
  /** The findings it can make, by direction, each with what it means. */
  findings: Readonly<Partial<Record<Direction, string>>>;
  /** How it compares: pure, never asks anything. */
  compare(registry: Registry, observation: Observation, options: CompareOptions): Finding[];
}

/** Every check, in the order {@linkcode compare} walks them (and findings come out). */
export const CHECKS: readonly CheckRow[] = [
  {
    check: "container",
    observes: ["podman", "docker"],
    findings: {
      missing: "a declared container (service, or site with one) is not running in its account",
      rogue: "a running container no entry claims",
    },
    compare: compareContainers,
  },
  {
    check: "leftover",
    observes: ["podman", "docker"],
    findings: {
      rogue: "a container that exists and is not running (created, exited, paused), unclaimed",
    },
    compare: compareLeftovers,
  },
  {
    check: "port",
    observes: ["sockets", "podman", "docker"],
    findings: {
      missing: "a declared port nothing listens on, published by another container, or held " +
        "by no process of the daemon's user",
      rogue: "a listening port no entry claims, named with its process or container",
    },
    compare: comparePorts,
  },
  {
    // Before `address`: a TLS address that does not answer is a certificate finding.
    check: "certificate",
    observes: ["caddy", "trust"],
    findings: {
      missing: "the certificate presented for a declared name (a web address, or a TLS port's " +
        "names) is not valid yet, expired, for another name, or expiring within the warning; " +
        "its chain needs an expired, not-yet-valid or non-CA issuer, ends at an untrusted " +
        "root or lacks an intermediate; or its TLS listener does not answer",
    },
    compare: compareCertificates,
  },
  {
    check: "address",
    observes: ["caddy"],
    findings: {
      missing: "a declared address the proxy does not serve, or whose listener does not answer",
      rogue: "a served address (or catch-all) no entry declares",
    },
    compare: compareAddresses,
  },
  {
    check: "redirect",
    observes: ["caddy"],
    findings: { missing: "a declared redirect that does not redirect, or redirects elsewhere" },
    compare: compareRedirects,
  },
  {
    check: "timer",
    observes: ["timers"],
    findings: {
      missing: "a batch entry's timer that does not exist, is not enabled for boot (pulled in), " +
        "is not active, or has no next trigger",
    },
    compare: compareTimers,
  },
  {
    check: "boot",
    observes: ["boot-units", "boot-podman", "boot-docker", "quadlet"],
    findings: {
      missing: "a declared container or daemon that nothing would start again after a reboot",
      rogue: "an unclaimed container that a reboot would bring back",
    },
    compare: compareBoot,
  },
  {
    check: "route",
    observes: ["caddy"],
    findings: {
      missing: "a served declared address whose handler, upstream, root or redirect target is " +
        "not what render caddy renders",
    },
    compare: compareRoutes,
  },
  {
    check: "repo",
    observes: ["repo", "deploy-map"],
    findings: {
      missing: "a deployed file unlike the deploy map; commits waiting past --behind-days; no " +
        "upstream",
      rogue: "an uncommitted edit in the checkout; a local commit the upstream lacks",
    },
    compare: compareRepoCheck,
  },
  {
    check: "backup",
    observes: ["backup"],
    findings: {
      missing: "a declared state directory in no snapshot of the registry's backup taken here " +
        "(missing), or whose newest snapshot is older than its maxAge (stale)",
    },
    compare: compareBackup,
  },
];

/** A finding a check did not declare: a defect of this program, never reported as drift. */
export class CheckDefect extends Error {
  override name = "CheckDefect";
}

/**
 * Compares `registry` with `observation`: every row of {@linkcode CHECKS}, in order. A check
 * whose source failed is not compared (its absence of data is not evidence); the caller reports
 * the failed source instead.
 *
 * @throws {CheckDefect} when a row returns a finding of another check or of a direction it does
 *   not declare.
 *
 * @example A declared container not running, and one nobody declared holding its port
 * ```ts
 * import { compare, type Observation, parseRegistry } from "../mod.ts";
 * import assert from "node:assert/strict";
 *
 * const registry = parseRegistry(`version: 1
 * accounts: [root]
 * services:
 *   shop: {kind: service, container: shop, user: root, port: 8080}
 * `);
 * const observation: Observation = {
 *   time: "2026-12-06T12:00:00.000Z",
 *   containers: [{
 *     account: "root",
 *     runtime: "podman",
 *     name: "shop-old",
 *     id: "4f1c0d2e",
 *     image: "localhost/shop:1.4",
 *     labels: {},
 *     ports: [{ hostIp: "", hostPort: 8080, containerPort: 80, protocol: "tcp" }],
 *   }],
 *   listeners: [],
 *   addresses: [],
 *   probes: [],
 *   sources: [
 *     {
 *       source: "podman",
 *       account: "root",
 *       state: "observed",
 *       method: "podman ps --all --format json",
 *       detail: "1 running",
 *     },
 *     {
 *       source: "sockets",
 *       state: "observed",
 *       method: "read /proc/net/tcp",
 *       detail: "0 listening",
 *     },
 *     {
 *       source: "caddy",
 *       state: "absent",
 *       method: "--caddy-admin none",
 *       detail: "this machine runs no reverse proxy",
 *     },
 *   ],
 * };
 * const findings = compare(registry, observation, {
 *   certWarnMs: 14 * 86_400_000,
 *   now: Date.parse(observation.time),
 * });
 * assert.deepEqual(findings.map((f) => [f.direction, f.check, f.subject]), [
 *   ["missing", "container", "root/shop"],
 *   ["rogue", "container", "root/shop-old"],
 *   ["missing", "port", "8080"],
 * ]);
 * ```
 */
export function compare(
  registry: Registry,
  observation: Observation,
  options: CompareOptions,
): Finding[] {
  return walkChecks(CHECKS, registry, observation, options);
}

/**
 * Walks `table` as {@linkcode compare} walks {@linkcode CHECKS}.
 *
 * @throws {CheckDefect} when a row returns a finding it does not declare.
 */
export function walkChecks(
  table: readonly CheckRow[],
  registry: Registry,
  observation: Observation,
  options: CompareOptions,
): Finding[] {
  return table.flatMap((row) => {
    const found = row.compare(registry, observation, options);
    for (const f of found) {
      if (f.check !== row.check || row.findings[f.direction] === undefined) {
        throw new CheckDefect(
          `Check "${row.check}" made a finding it does not declare: ${f.check} ${f.direction} ` +
            `${f.subject}`,
        );
      }
    }
    return found;
  });
}
