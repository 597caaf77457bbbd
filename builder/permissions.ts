/**
 * The Deno permissions `mesh-builder` runs with in its built forms (`deno task programs`,
 * scripts/build_programs.ts, and every test that starts it as it ships). Declared here, beside its
 * entry point, and nowhere else.
 *
 * @module
 */

/**
 * - `--allow-run=git,podman,docker`: it clones a request's source (`git`) and builds and pushes
 *   with the machine's container runtime, detected by asking `docker` and `podman`
 *   (lib/container_runtime.ts); nothing else. Deno resolves each name on `PATH` when the program starts
 *   (lib/command.ts runs them by name); one that is not installed (docker on a podman machine) is
 *   not found when asked, as without the list (checked on Deno 2.9.6), so the probe says it is
 *   absent, not refused.
 * - `--allow-read`, `--allow-write`: its work directory (`--work-dir`, any path the operator
 *   names), where each build's checkout and digest file live.
 * - `--allow-env`: its broker URL and the store's address (`MESH_BUILDER_*`, the store variable).
 * - `--allow-net`: the broker, at an address known only at run time.
 * - `--allow-sys=uid,gid,hostname,osRelease`: who and where it runs (the runtime's probe, the
 *   AMQP client's connection properties), nothing else of the machine.
 */
export const BUILDER_PERMISSIONS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-run=git,podman,docker",
  "--allow-env",
  "--allow-sys=uid,gid,hostname,osRelease",
  "--allow-net",
];
