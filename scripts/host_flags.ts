/**
 * The flags a built host runs with (scripts/build_hosts.ts), besides its permissions (declared
 * beside its entry points, host/permissions.ts, and re-exported here), in a module of their own so that the
 * benches can start a program as a built host starts it (bench/link_memory_bench.ts, `--onefile`)
 * without running the build script.
 *
 * @module
 */

import { HOST_PERMISSIONS } from "../host/permissions.ts";

/** The permissions every host runs with, in both forms: declared in host/permissions.ts. */
export { HOST_PERMISSIONS };

/**
 * V8 flags every built host runs with (baked in by `deno compile`, on the one-file form's `deno
 * run` line; bench/host_bench.ts and bench/link_memory_bench.ts run with them too). A young
 * generation of 1 MiB (V8 lets its semi-spaces grow to 16 MiB) and V8's memory-saving mode keep
 * the link's heap at about 23 MiB over its interval applies, where by default it grew past 80 MiB
 * with 13 MiB live (bench/link_memory_bench.ts, 2026-12-01); an apply's CPU time is the same.
 * V8's optimising compilers (Maglev, TurboFan) are off: a host command runs its code too few
 * times to pay back compiling it (a no-op apply of 1,100 resources: CPU 0.375 -> 0.310 s), and
 * their code and working memory were ~7 MiB of the apply's peak RSS and ~11 MiB of the link's
 * (interleaved pairs on the 2-core VM, 2026-12-02).
 */
export const HOST_V8_FLAGS = [
  "--v8-flags=--max-semi-space-size=1,--optimize-for-size,--no-opt,--no-maglev",
];

/**
 * `deno run` flags the one-file form adds for one command (its header chooses them by the first
 * argument that is not an option; scripts/onefile.ts). The link starts once and runs for days:
 *
 * - without Deno's code cache, which saves it nothing worth keeping while its SQLite mapping and
 *   what it brings in stay resident (-1.4 MiB at the median over 1,000 applies);
 * - with V8's `gc` exposed, so that it collects its heap when an apply ends (host/link.ts,
 *   `collect`) instead of keeping the apply's garbage resident through the idle interval.
 *
 * (Over 1,000 applies as shipped: median 60.3 MiB, peak 60.9, against 63.5 and 73.8 without these
 * flags; bench/README.md, the standing table.) The short commands keep the code cache (their start)
 * and have no `gc`. The compiled form (`deno compile`) bakes one set of flags for every command,
 * so its link has neither.
 */
export const HOST_COMMAND_FLAGS: Record<string, string[]> = {
  link: ["--no-code-cache", "--v8-flags=--expose-gc"],
};
