/**
 * What every observer says about itself: which source it asked, how, and whether it could.
 *
 * @module
 */

/**
 * How one source was observed.
 * - `observed`: asked and answered; its data is complete.
 * - `absent`: this machine does not have it (e.g. no docker daemon answers); its data is empty
 *   because there is nothing, and the reason says how that was established.
 * - `failed`: it exists or should, and could not be asked; the run cannot be clean.
 */
export type SourceState = "observed" | "absent" | "failed";

/** One source of observation and how it went. */
export interface SourceStatus {
  /** The source, e.g. `podman`, `docker`, `sockets`, `caddy`. */
  source: string;
  /** The account asked, for per-account sources. */
  account?: string;
  state: SourceState;
  /** How it was asked (the command or endpoint). */
  method: string;
  /** What it said: a count when observed, the reason when absent or failed. */
  detail: string;
}
