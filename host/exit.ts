/**
 * `mesh-host`'s exit codes, below host/cli.ts (which renders what each means by command) and the
 * commands under host/commands/ that leave them.
 *
 * @module
 */

/** Exit code: applied. */
export const EXIT_APPLIED = 0;
/** Exit code: accepted and partly applied (failed). */
export const EXIT_FAILED = 1;
/** Exit code: refused (invalid input, a shape this system cannot apply, the wrong machine, no bundle). */
export const EXIT_REFUSED = 2;
/** Exit code: the host cannot work (its store cannot be read or written). */
export const EXIT_CANNOT_RUN = 3;
/**
 * Exit code of a dry run that found changes pending (nothing was changed): `--dry-run`, and
 * `bundle`, which is always one. A dry run exits 0 only when nothing would change, so a timer
 * can use it as a drift check.
 */
export const EXIT_PENDING = 4;
