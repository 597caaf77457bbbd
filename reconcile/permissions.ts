/**
 * The Deno permissions `mesh-reconcile` runs with in its built forms (`deno task programs`,
 * scripts/build_programs.ts, and every test or bench that starts it as it ships). Declared here,
 * beside its entry point, and nowhere else.
 *
 * @module
 */

/**
 * `--allow-all`, and why nothing narrower works:
 *
 * `mesh-reconcile init` and `run` read the kernel's socket tables (`/proc/net/tcp`,
 * `/proc/net/tcp6`), the fd links, `comm` and `status` of every process (who holds a port,
 * reconcile/observe/sockets.ts) and `/proc/PID/cgroup` (which unit a daemon runs in,
 * reconcile/observe/boot.ts and systemd.ts). Deno 2.x lets a program open no path under `/proc`,
 * `/sys` or `/dev` (bar `/dev/null`, `/dev/zero`, `/dev/random`, `/dev/urandom` and a pipe's
 * `/proc/self/fd/N`) unless it was started with the `--allow-all` flag itself: `--allow-read`,
 * `--allow-read=/proc`, and `--allow-all` with any `--deny-*` flag or a runtime
 * `Deno.permissions.revoke` all answer `Requires all access to "/proc/net/tcp", run again with the
 * --allow-all flag` (checked on Deno 2.9.6; the built file of the earlier narrow set could adopt and
 * observe nothing). Every path is refused alike: `/proc/self/net/tcp`, `/proc/<own pid>/net/tcp`,
 * `/proc/thread-self/net/tcp`, `/proc/1/net/tcp` (which is also another network namespace in a
 * container or a unit with its own network), `/proc/PID/status`, even a `readDir` of `/proc`.
 *
 * Reading them through subprocesses instead (`ss -tlnpe`, `ps -o cgroup`, `find -lname`) was
 * weighed and not taken: it would replace the kernel's own fixed table format by the prose of three
 * tools (`ss` gives neither the process's effective uid nor, on iproute2 6.1, a parsable cgroup),
 * and would buy no containment: the program already runs `podman`, `systemctl`, `git`, `caddy`
 * and `runuser` as root, and `--allow-run=runuser` alone can run anything as anyone. What it does
 * with that access is what it is written to do: it reads the machine, runs those commands, speaks
 * HTTP (Caddy's admin API, `stamp serve`, `watch`), and writes only the files it is named
 * (`--registry`, `--result`, the stamp, `batch`'s units and state).
 */
export const RECONCILE_PERMISSIONS: readonly string[] = ["--allow-all"];
