/**
 * The shapes every check shares: what a finding is, what one run observed, and the options a
 * comparison takes. Types only; the checks themselves are in the table of `./compare.ts`, each
 * in its own `compare_*.ts` module, and none of them imports another.
 *
 * @module
 */

import type { LeftoverContainer, ObservedContainer } from "./observe/containers.ts";
import type { Listener } from "./observe/sockets.ts";
import type { AddressProbe, ServedAddress } from "./observe/proxy.ts";
import type { TlsProbe } from "./observe/tls_port.ts";
import type { SourceStatus } from "./observe/source.ts";
import type { ObservedTimer } from "./observe/timers.ts";
import type { BootObservation } from "./observe/boot.ts";
import type { RepoObservation } from "./observe/repo.ts";
import type { BackupObservation } from "./observe/backup.ts";
import type { SeenByRepo } from "./repo_seen.ts";
import type { CHECKS, DIRECTIONS } from "../lib/drift_checks.ts";

/**
 * The checks a finding can come from: lib/drift_checks.ts names them (for the result file's
 * schema and mesh-control, which read them without this program), one row each in the table of
 * `./compare.ts` (tests/docs/tables_test.ts holds the table to the list).
 */
export type Check = typeof CHECKS[number];

/** Which side of the anti-join a finding is on. */
export type Direction = typeof DIRECTIONS[number];

/** One difference between the registry and the machine (docs/design.md, "Reconcile result"). */
export interface Finding {
  check: Check;
  /** `missing`: declared and not there (or not healthy); `rogue`: there and not declared. */
  direction: Direction;
  /** The registry entry it belongs to; absent for rogue findings, which no entry claims. */
  service?: string;
  /** What the finding is about: a container (`account/name`), a port, an address. */
  subject: string;
  /** One sentence for people. */
  detail: string;
}

/** Everything observed, with how each source answered. */
export interface Observation {
  /** When the observation started, ISO 8601. */
  time: string;
  containers: ObservedContainer[];
  /** Containers that exist and do not run (absent: not observed, e.g. by `init`). */
  leftovers?: LeftoverContainer[];
  listeners: Listener[];
  /** Served addresses; only meaningful when the `caddy` source was observed. */
  addresses: ServedAddress[];
  /** One probe per declared served address. */
  probes: AddressProbe[];
  /** One probe per TLS port the registry declares (`tls`); absent: none declared or asked. */
  tlsProbes?: TlsProbe[];
  sources: SourceStatus[];
  /** The declared timers, when asked (`timers` sources); absent: timers are not compared. */
  timers?: ObservedTimer[];
  /** What the next boot would produce, when asked; absent: boot is not compared. */
  boot?: BootObservation;
  /** The deployment repository, with `run --repo`; absent: the repository is not compared. */
  repo?: RepoObservation;
  /** The snapshots of the registry's `backup`, when it names one and they were read. */
  backup?: BackupObservation;
}

/** Options every comparison receives. */
export interface CompareOptions {
  /** Certificates expiring within this many milliseconds are findings. */
  certWarnMs: number;
  /** "Now" for certificate validity and commit waits, in ms since the epoch. */
  now: number;
  /**
   * With `run --repo`: commits waiting longer than `behindMs` on the upstream are findings, a
   * commit's wait counted from its first sighting in `seen` when that is earlier.
   */
  repo?: { behindMs: number; seen: SeenByRepo };
}
