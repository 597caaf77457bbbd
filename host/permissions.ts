/**
 * The Deno permissions every `mesh-host-<system>` runs with in its built forms (`deno task hosts`,
 * scripts/build_hosts.ts, and every test or bench that starts it as it ships). Declared here,
 * beside its entry points, and nowhere else.
 *
 * @module
 */

/**
 * - `--allow-run` (every program): a declaration's `action` runs the argv it names (trusted
 *   input), and the appliers run the system's own tools (apt/dpkg, apk, pacman, systemctl,
 *   rc-service, podman/docker, runuser), so no list can name them in advance.
 * - `--allow-read`, `--allow-write`: it converges files and directories anywhere a declaration
 *   says, and keeps its store, journal and known-good under `/var/lib/mesh`.
 * - `--allow-env`: `MESH_*` settings, and the environment it gives the commands it runs.
 * - `--allow-sys=uid,gid,hostname,osRelease`: who it runs as, the machine's name and kernel
 *   (inventory), nothing else of the machine.
 * - `--allow-net`: the link's broker, at an address known only at run time.
 *
 * Not `--allow-all`: the host's work reads no path under `/proc`, `/sys` or `/dev`, which Deno
 * opens only to a program started with `--allow-all` itself (reconcile/permissions.ts says why
 * mesh-reconcile is). A read there is refused under these permissions, whatever `--allow-read`
 * says, so the OpenRC applier asks whether a pidfile's process is alive with `kill -0`
 * (resources/service/openrc.ts), and the service contract's lab test runs the host with these
 * permissions rather than `-A`.
 */
export const HOST_PERMISSIONS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-env",
  "--allow-sys=uid,gid,hostname,osRelease",
  "--allow-net",
];
