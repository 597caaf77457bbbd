/**
 * The Deno permissions `mesh-control` runs with in its built forms (`deno task programs`,
 * scripts/build_programs.ts; its substrate image, scripts/substrate.ts; and every test or bench that
 * starts it as it ships). Declared here, beside its entry point, and nowhere else.
 *
 * @module
 */

/**
 * What the substrate image's `mesh-control` needs (it runs the control plane's services there:
 * ingest, status, board): the first four of {@linkcode CONTROL_PERMISSIONS}, in this order, which is
 * what the image's entry point carries (scripts/substrate.ts; its digest is pinned in
 * `bundles/substrate-<system>.lock`).
 *
 * - `--allow-net`: PostgreSQL (`MESH_DATABASE_URL`), the broker (`MESH_BROKER_URL`) and its
 *   management API (`MESH_BROKER_API_URL`), at addresses known only at run time.
 * - `--allow-env`: those addresses and credentials are given in the environment.
 * - `--allow-read`: the CA and credential files the URLs and options name (TLS), known only at run
 *   time.
 * - `--allow-sys`: as the image has always carried it. No command was seen to need it (`migrate`,
 *   `status` and `broker check` run without it, and the lab test runs every command with it);
 *   dropping it changes the image, whose digest `bundles/substrate-<system>.lock` pins, so it
 *   waits for the next regeneration of the lock.
 */
export const CONTROL_SERVICE_PERMISSIONS: readonly string[] = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-sys",
];

/**
 * `mesh-control`'s permissions, every command: {@linkcode CONTROL_SERVICE_PERMISSIONS} and
 *
 * - `--allow-write`: `board --html FILE` writes the file it is named (anywhere the operator says);
 *   `ca init`, `ca issue` and `ca renew` write the CA, certificates and keys under `--dir` (default
 *   `/etc/mesh`) or where `--cert`/`--key` say, and give a key to `--key-group` (`chown`). The
 *   substrate image's `mesh-control` has no `--allow-write`: its `ca` commands that write are
 *   refused by Deno (`ca show` runs).
 * - `--allow-run=git`: `module add` and `module build` ask a module's git source what its branch
 *   points at (`git ls-remote`, control/catalogue.ts); no other command runs anything. Deno
 *   resolves `git` on `PATH` when the program starts, as lib/command.ts runs it by name.
 */
export const CONTROL_PERMISSIONS: readonly string[] = [
  ...CONTROL_SERVICE_PERMISSIONS,
  "--allow-write",
  "--allow-run=git",
];

/**
 * What `mesh-control ca` and `mesh-control key` need in the substrate's image, where the Debian
 * bundle runs them (scripts/substrate.ts, with `/etc/mesh` mounted and no network) to make the
 * mesh's CA, issue and renew the substrate's server certificates, and make control's signing key
 * (`key init`) or say its public half (`key show`): the runtime's flags of the image's entry point
 * (no config, lock, remote modules or prompt), then
 *
 * - `--allow-read`: the CA's certificate and key, the certificates it renews, the signing key, and
 *   the program's own modules (code splitting) in the image;
 * - `--allow-write=/etc/mesh`: the CA's files (`ca.crt`, `secrets/ca.key`), the server
 *   certificates and their keys, the signing key (`secrets/signing.key`) and its public half
 *   (`control.pub`), and nothing else;
 * - `--allow-env`: `MESH_CA_FILE`, `MESH_SIGNING_KEY` and the like, as every command reads them.
 */
export const CONTROL_CA_PERMISSIONS: readonly string[] = [
  "--quiet",
  "--no-config",
  "--no-lock",
  "--no-remote",
  "--no-prompt",
  "--allow-read",
  "--allow-write=/etc/mesh",
  "--allow-env",
];
