/**
 * The lab: machines with a real init, for the appliers, the launcher and the reconciler's
 * timers. Each lab machine is a podman container booted with a real init from a Debian root
 * filesystem built by `debootstrap` against Debian's archive and imported with `podman import`:
 *
 * - `systemd`: Debian with systemd, run with `--systemd=always /sbin/init`;
 * - `openrc`: Debian with sysvinit-core and OpenRC, run with `/sbin/init`.
 *
 * And two kinds without glibc, assembled from Debian packages in seconds (see ./noglibc.ts):
 *
 * - `musl`: laid out like Alpine (musl's loader, busybox, OpenRC carrying a private glibc
 *   outside glibc's standard paths), run with busybox's `/sbin/init`;
 * - `android`: laid out like Android (`/system/bin/sh` is busybox, `/system/build.prop`), no init.
 *
 * These two are always bare.
 *
 * Root filesystems are cached under {@linkcode LAB_CACHE} between runs (rebuilt only when
 * missing or incomplete). Deno and the checkout are bind-mounted in, so the host under test is
 * this project's own code running on that machine; a `bare` machine has neither (no Deno, no
 * checkout), for proving that one copied file is the whole install. Also: a local OCI registry (Debian
 * `docker-registry` on 127.0.0.1:5000) and the busybox image pushed there, pinned by digest.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { ensureImage, IMAGE, ROOT } from "../support/mod.ts";
import {
  buildNoglibcImage,
  isNoglibcKind,
  noglibcCommand,
  noglibcImage,
  type NoglibcKind,
  noglibcRunOptions,
} from "./noglibc.ts";

export * from "./noglibc.ts";

/** Where root filesystems and the registry's storage are kept between runs. */
export const LAB_CACHE = "/var/cache/mesh-lab";
/** The Debian release and mirror the lab is built from. */
export const SUITE = "bookworm";
export const MIRROR = "http://deb.debian.org/debian";

/** The kinds of lab machine debootstrapped from Debian. */
export type DebianKind = "systemd" | "openrc";
/** The kinds of lab machine. */
export type LabKind = DebianKind | NoglibcKind;
/** Every kind of lab machine, the Debian ones first. */
export const LAB_KINDS: readonly LabKind[] = ["systemd", "openrc", "musl", "android"];

const BUILD: Record<DebianKind, { include: string[]; then: string[] }> = {
  // dbus for systemctl; podman and crun so the container applier runs inside the machine.
  systemd: {
    include: ["systemd", "systemd-sysv", "dbus", "procps", "ca-certificates"],
    then: ["podman", "crun", "runc"],
  },
  // openrc conflicts with sysv-rc, which debootstrap would pull in with sysvinit-core: install
  // them afterwards with apt, which resolves the conflict.
  openrc: {
    include: ["procps", "ca-certificates"],
    then: ["openrc", "sysvinit-core", "podman", "crun", "runc"],
  },
};

/**
 * Mounts, on this VM, every cgroup v1 controller the kernel has enabled that is not mounted under
 * /sys/fs/cgroup, grouped as the kernel has bound them (the hierarchy ids of /proc/cgroups; one
 * hierarchy per controller where none is bound yet), with a link per controller name to a joined
 * mount, as systemd lays them out. Idempotent; nothing is done on a cgroup v2-only VM.
 *
 * Why: this VM's init mounts only some controllers (not net_cls, net_prio, perf_event, hugetlb).
 * A lab machine's own init then mounts the rest inside its container, in the shared kernel: OpenRC
 * binds net_cls and net_prio to one hierarchy each, systemd to one joined `net_cls,net_prio`, and
 * whichever booted second mounts nothing. Lab machines booted together (the fleet) raced: seen
 * here, OpenRC won, and in the systemd machine every `podman run` failed with "crun: creating
 * cgroup directory `/sys/fs/cgroup/net_prio/libpod_parent/...`: No such file or directory"
 * (crun follows /proc/self/cgroup, which names the hierarchy). Mounted here first, every lab
 * machine finds each hierarchy mounted, the same way, whatever boots first.
 *
 * @throws {CommandError} when a mount fails.
 */
export async function mountCgroupHierarchies(): Promise<void> {
  const base = "/sys/fs/cgroup";
  let cgroups: string;
  try {
    cgroups = await Deno.readTextFile("/proc/cgroups");
  } catch {
    return;
  }
  const mountinfo = await Deno.readTextFile("/proc/self/mountinfo");
  // Field 5 is the mount point; after " - " come the type, the source and the super options.
  const mounted = new Set<string>();
  for (const line of mountinfo.split("\n")) {
    const right = line.split(" - ")[1];
    if (right === undefined || !right.startsWith("cgroup ")) continue;
    for (const option of right.split(" ")[2]!.split(",")) mounted.add(option);
  }
  const v1 = await Deno.stat(`${base}/memory`).then(() => true, () => false);
  if (!v1) return;
  const byHierarchy = new Map<string, string[]>();
  for (const line of cgroups.split("\n").slice(1)) {
    const [name, hierarchy, , enabled] = line.split("\t");
    if (!name || enabled !== "1" || mounted.has(name)) continue;
    const key = hierarchy === "0" ? `unbound:${name}` : hierarchy!;
    byHierarchy.set(key, [...(byHierarchy.get(key) ?? []), name]);
  }
  for (const controllers of byHierarchy.values()) {
    const joined = controllers.join(",");
    const dir = `${base}/${joined}`;
    await Deno.mkdir(dir, { recursive: true });
    await run(["mount", "-t", "cgroup", "-o", joined, "cgroup", dir]);
    if (controllers.length > 1) {
      for (const c of controllers) {
        await Deno.symlink(joined, `${base}/${c}`).catch(() => {});
      }
    }
  }
}

/**
 * Podman inside a lab machine: on overlayfs (the machine's own root) only vfs storage works,
 * and in a nested cgroup runc cannot mount its cgroup where crun can. The lab's registry on
 * the VM's loopback is plain HTTP. These are the lab machine's configuration, not the host's.
 */
const LAB_FILES: Record<string, string> = {
  "etc/containers/containers.conf":
    '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "crun"\ncgroup_manager = "cgroupfs"\n',
  "etc/containers/storage.conf":
    '[storage]\ndriver = "vfs"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n',
  "etc/containers/registries.conf.d/50-mesh-lab.conf":
    '[[registry]]\nlocation = "127.0.0.1:5000"\ninsecure = true\n',
};

/** A short digest of the recipe, so a changed recipe builds a new root instead of reusing one. */
async function recipeTag(kind: DebianKind): Promise<string> {
  const text = JSON.stringify({ suite: SUITE, build: BUILD[kind], files: LAB_FILES });
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(hash.slice(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The image a lab kind runs, built from its cached root filesystem (tagged by recipe). */
export async function labImage(kind: LabKind): Promise<string> {
  if (isNoglibcKind(kind)) return await noglibcImage(kind);
  return `localhost/mesh-lab-${kind}:${SUITE}-${await recipeTag(kind)}`;
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/**
 * Where a lab build says what stage it is in: called with one line (no newline) per stage, and
 * every {@linkcode PROGRESS_HEARTBEAT_MS} while a long stage (debootstrap, apt-get, tar, podman
 * import) runs, saying for how long it has run. `deno task lab up` writes them on stderr; the
 * tests pass none and stay quiet.
 */
export type LabProgress = (line: string) => void;

/** How often a long build stage says it is still running, milliseconds. */
export const PROGRESS_HEARTBEAT_MS = 30_000;

/** Options for {@linkcode ensureLabImage}. */
export interface LabImageOptions {
  /** Told each stage of a build as it starts (nothing when the image is already built). */
  progress?: LabProgress;
}

/**
 * Builds (or reuses) the root filesystem of `kind` and imports it as {@linkcode labImage}.
 * Takes about a minute the first time; nothing after. Concurrent callers, in any process, build
 * it once ({@linkcode withLabLock}).
 *
 * @throws {CommandError} when debootstrap or podman fails (e.g. the archive is unreachable).
 */
export async function ensureLabImage(
  kind: LabKind,
  options: LabImageOptions = {},
): Promise<string> {
  const image = isNoglibcKind(kind) ? await noglibcImage(kind) : await labImage(kind);
  const built = async () =>
    (await run(["podman", "image", "exists", image], { allowFailure: true })).code === 0;
  if (await built()) return image;
  const say = options.progress ?? (() => {});
  say(`${kind}: image ${image} is not built; waiting for the build lock ${LAB_CACHE}/${kind}.lock`);
  return await withLabLock(kind, async () => {
    // Another process may have built it while this one waited for the lock.
    if (await built()) {
      say(`${kind}: image ${image} was built by another process meanwhile`);
    } else if (isNoglibcKind(kind)) await buildNoglibcImage(kind, image, say);
    else await buildLabImage(kind, image, say);
    return image;
  });
}

/**
 * Runs `fn`, a long build stage, telling `say` that it starts (`WHAT ...`), every `heartbeatMs`
 * that it still runs (`WHAT: still running (N s)`), and when it ended (`WHAT: done (N s)` or
 * `WHAT: failed (N s)`).
 *
 * @throws whatever `fn` throws, after saying it failed.
 */
export async function labStage<T>(
  say: LabProgress,
  what: string,
  fn: () => Promise<T>,
  heartbeatMs: number = PROGRESS_HEARTBEAT_MS,
): Promise<T> {
  const started = Date.now();
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`;
  say(`${what} ...`);
  const timer = setInterval(() => say(`${what}: still running (${elapsed()})`), heartbeatMs);
  try {
    const result = await fn();
    say(`${what}: done (${elapsed()})`);
    return result;
  } catch (error) {
    say(`${what}: failed (${elapsed()})`);
    throw error;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Runs `fn` holding an exclusive lock on `<LAB_CACHE>/<kind>.lock` (flock, released when the
 * file is closed, so also when the process dies): two processes building the same root
 * filesystem at once (`deno task lab up` while a lab test runs) removed and debootstrapped the
 * same directory under each other, and the build failed inside dpkg with files missing.
 *
 * @throws whatever `fn` throws, after releasing the lock; `Deno.errors.*` if the lock file
 *   cannot be opened.
 */
export async function withLabLock<T>(kind: LabKind, fn: () => Promise<T>): Promise<T> {
  await Deno.mkdir(LAB_CACHE, { recursive: true });
  const file = await Deno.open(`${LAB_CACHE}/${kind}.lock`, { create: true, write: true });
  try {
    await file.lock(true);
    return await fn();
  } finally {
    file.close();
  }
}

async function buildLabImage(kind: DebianKind, image: string, say: LabProgress): Promise<void> {
  const tag = await recipeTag(kind);
  const root = `${LAB_CACHE}/${kind}-${tag}-root`;
  const done = `${LAB_CACHE}/${kind}-${tag}-root.complete`;
  if (!(await exists(done))) {
    await Deno.remove(root, { recursive: true }).catch(() => {});
    await Deno.mkdir(LAB_CACHE, { recursive: true });
    const { include, then } = BUILD[kind];
    await labStage(
      say,
      `${kind}: 1/4 debootstrap ${SUITE} from ${MIRROR} into ${root} (a few minutes)`,
      () =>
        run([
          "debootstrap",
          "--variant=minbase",
          `--include=${include.join(",")}`,
          SUITE,
          root,
          MIRROR,
        ], { timeoutMs: 15 * 60_000 }),
    );
    if (then.length > 0) {
      await labStage(say, `${kind}: 2/4 apt-get install ${then.join(" ")}`, () =>
        run([
          "chroot",
          root,
          "apt-get",
          "install",
          "-y",
          "-qq",
          "--no-install-recommends",
          ...then,
        ], {
          env: { DEBIAN_FRONTEND: "noninteractive" },
          timeoutMs: 15 * 60_000,
        }));
    }
    for (const [path, text] of Object.entries(LAB_FILES)) {
      await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeTextFile(`${root}/${path}`, text);
    }
    await run(["chroot", root, "apt-get", "clean"]);
    await Deno.writeTextFile(done, new Date().toISOString() + "\n");
  } else {
    say(`${kind}: root filesystem ${root} already built (1/4 and 2/4 skipped)`);
  }
  const tar = `${LAB_CACHE}/${kind}-${tag}-root.tar`;
  try {
    await labStage(
      say,
      `${kind}: 3/4 tar of ${root}`,
      () => run(["tar", "-C", root, "-cf", tar, "."], { timeoutMs: 10 * 60_000 }),
    );
    await labStage(
      say,
      `${kind}: 4/4 podman import as ${image}`,
      () =>
        run(["podman", "import", "--change", 'CMD ["/sbin/init"]', tar, image], {
          timeoutMs: 10 * 60_000,
        }),
    );
  } finally {
    await Deno.remove(tar).catch(() => {});
  }
}

/** A running lab machine. */
export interface LabMachine {
  kind: LabKind;
  /** The podman container's name. */
  name: string;
  /** Where the checkout is mounted inside (read-only); `undefined` on a bare machine. */
  checkout: string | undefined;
  /** Runs `argv` inside the machine; fails as {@linkcode run} does. */
  exec(
    argv: string[],
    options?: { allowFailure?: boolean; timeoutMs?: number; env?: Record<string, string> },
  ): Promise<
    { code: number | null; stdout: string; stderr: string }
  >;
  /** Copies a file of this VM into the machine at `dest` (`podman cp`). */
  copyIn(source: string, dest: string): Promise<void>;
  /**
   * Runs a host entry point (e.g. `systems/debian/main.ts`) inside the machine with `deno run -A`.
   * @throws {Error} on a bare machine, which has no Deno and no checkout.
   */
  host(entry: string, args: string[], options?: { allowFailure?: boolean }): Promise<
    { code: number | null; stdout: string; stderr: string }
  >;
  /** Stops and removes the machine. */
  destroy(): Promise<void>;
}

/** The label every lab machine carries. */
export const LAB_LABEL = "mesh.lab=1";

/** Options for {@linkcode bootLab}. */
export interface BootOptions {
  /** The container's name (default: `mesh-lab-<kind>-<random>`). */
  name?: string;
  /**
   * No Deno, no checkout and no Deno cache mounted in: the machine has only its Debian. The
   * `musl` and `android` kinds are bare whatever this says.
   */
  bare?: boolean;
  /**
   * The podman network (default `host`: the VM's, where the lab registry is 127.0.0.1:5000). A
   * machine on `bridge` has its own addresses and ports (see {@linkcode labAddress}).
   */
  network?: string;
  /** A fixed address on `network` (`podman run --ip`), so a machine stopped and started keeps it. */
  ip?: string;
  /** Told each stage of building the root filesystem, when it must be built (see {@linkcode LabProgress}). */
  progress?: LabProgress;
}

/**
 * Boots a lab machine of `kind` and waits until its init says it is up (systemd: `running` or
 * `degraded` from `is-system-running --wait`; OpenRC, on `openrc` and `musl`: the `default`
 * runlevel reached; `android`, which has no init: the container runs a command).
 */
export async function bootLab(kind: LabKind, options: BootOptions = {}): Promise<LabMachine> {
  const image = await ensureLabImage(kind, options.progress ? { progress: options.progress } : {});
  await mountCgroupHierarchies();
  const name = options.name ?? `mesh-lab-${kind}-${crypto.randomUUID().slice(0, 6)}`;
  // The kinds without glibc are always bare: Deno could not run there.
  const checkout = options.bare || isNoglibcKind(kind) ? undefined : "/mesh";
  const mounts: string[] = [];
  if (checkout !== undefined) {
    const deno = await Deno.realPath(Deno.execPath());
    const denoDir = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`;
    await Deno.mkdir(denoDir, { recursive: true });
    mounts.push(
      "-v",
      `${deno}:/usr/local/bin/deno:ro`,
      "-v",
      `${ROOT}:${checkout}:ro`,
      "-v",
      `${denoDir}:/root/.cache/deno`,
    );
  }
  await run([
    "podman",
    "run",
    "-d",
    "--name",
    name,
    "--hostname",
    `lab-${kind}`,
    "--label",
    LAB_LABEL,
    ...(kind === "systemd" ? ["--systemd=always"] : []),
    ...(isNoglibcKind(kind) ? noglibcRunOptions(kind) : []),
    // Privileged for podman inside; the VM's network, so 127.0.0.1:5000 is the lab registry.
    "--privileged",
    "--network",
    options.network ?? "host",
    ...(options.ip ? ["--ip", options.ip] : []),
    ...mounts,
    image,
    ...(isNoglibcKind(kind) ? noglibcCommand(kind) : ["/sbin/init"]),
  ]);
  const machine: LabMachine = {
    kind,
    name,
    checkout,
    async exec(argv, opts = {}) {
      const envArgs = Object.entries(opts.env ?? {}).flatMap(([k, v]) => ["--env", `${k}=${v}`]);
      return await run(["podman", "exec", ...envArgs, name, ...argv], {
        allowFailure: opts.allowFailure,
        timeoutMs: opts.timeoutMs ?? 300_000,
      });
    },
    async copyIn(source, dest) {
      await run(["podman", "cp", source, `${name}:${dest}`], { timeoutMs: 300_000 });
    },
    async host(entry, args, opts = {}) {
      if (checkout === undefined) {
        throw new Error(
          `Lab machine ${name} is bare: it has no Deno and no checkout to run ${entry}`,
        );
      }
      return await machine.exec(
        ["deno", "run", "-A", "--quiet", `${checkout}/${entry}`, ...args],
        opts,
      );
    },
    async destroy() {
      // -v: with the anonymous volumes it has (android's /data).
      await run(["podman", "rm", "-f", "-v", "-t", "0", name], { allowFailure: true });
    },
  };
  try {
    options.progress?.(`${kind}: booted ${name}; waiting for its init`);
    await waitForInit(machine);
  } catch (error) {
    await machine.destroy();
    throw error;
  }
  return machine;
}

/**
 * Waits until the machine's init says it is up (systemd: `running` or `degraded` from
 * `is-system-running --wait`; OpenRC, on `openrc` and `musl`: the `default` runlevel reached;
 * `android`, which has no init: `podman exec` runs `true` in it), at most a minute.
 *
 * @throws {Error} "Lab machine NAME did not come up: ..." after a minute.
 */
export async function waitForInit(machine: LabMachine): Promise<void> {
  const started = Date.now();
  for (;;) {
    const probe = machine.kind === "systemd"
      ? await machine.exec(["systemctl", "is-system-running", "--wait"], {
        allowFailure: true,
        timeoutMs: 60_000,
      })
      : machine.kind === "android"
      ? await machine.exec(["true"], { allowFailure: true })
      : await machine.exec(["cat", "/run/openrc/softlevel"], { allowFailure: true });
    const said = probe.stdout.trim();
    if (machine.kind === "systemd" && (said === "running" || said === "degraded")) return;
    if ((machine.kind === "openrc" || machine.kind === "musl") && said === "default") return;
    if (machine.kind === "android" && probe.code === 0) return;
    if (Date.now() - started > 60_000) {
      throw new Error(
        `Lab machine ${machine.name} did not come up: ${said || probe.stderr.trim()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Reboots a lab machine: its container is restarted (the init stops everything and boots
 * again; what is on its disk stays), and this waits for its init as {@linkcode bootLab} does.
 */
export async function rebootLab(machine: LabMachine): Promise<void> {
  await run(["podman", "restart", "-t", "30", machine.name], { timeoutMs: 180_000 });
  await waitForInit(machine);
}

/** The address of a lab machine booted on a podman network other than `host`. */
export async function labAddress(machine: LabMachine): Promise<string> {
  const out = await run([
    "podman",
    "inspect",
    machine.name,
    "--format",
    "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
  ]);
  const address = out.stdout.trim().split(/\s+/)[0];
  if (!address) throw new Error(`Lab machine ${machine.name} has no address of its own`);
  return address;
}

/** The local OCI registry's address. */
export const REGISTRY = "127.0.0.1:5000";

/**
 * Starts the local registry (Debian `docker-registry`, no auth, storage under the lab cache)
 * unless something already answers at {@linkcode REGISTRY}; it keeps running, like a service,
 * until `deno task lab down`.
 */
export async function ensureRegistry(): Promise<void> {
  const answers = async () => {
    try {
      const r = await fetch(`http://${REGISTRY}/v2/`);
      await r.body?.cancel();
      return r.ok;
    } catch {
      return false;
    }
  };
  if (await answers()) return;
  const dir = `${LAB_CACHE}/registry`;
  await Deno.mkdir(`${dir}/data`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/config.yml`,
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\n  delete:\n    enabled: true\nhttp:\n  addr: ${REGISTRY}\n`,
  );
  await run([
    "sh",
    "-c",
    `setsid docker-registry serve "$1/config.yml" >"$1/registry.log" 2>&1 </dev/null & echo $! >"$1/registry.pid"`,
    "sh",
    dir,
  ]);
  for (let i = 0; i < 100; i++) {
    if (await answers()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `The registry did not answer at ${REGISTRY}: ${await Deno.readTextFile(`${dir}/registry.log`)
      .catch(() => "")}`,
  );
}

/** Stops the registry started by {@linkcode ensureRegistry}, if it runs. */
export async function stopRegistry(): Promise<void> {
  const pid = await Deno.readTextFile(`${LAB_CACHE}/registry/registry.pid`).catch(() => "");
  if (/^\d+\s*$/.test(pid)) {
    try {
      Deno.kill(Number(pid), "SIGTERM");
    } catch { /* gone */ }
  }
  await Deno.remove(`${LAB_CACHE}/registry/registry.pid`).catch(() => {});
}

/**
 * Pushes the busybox test image to the local registry and returns its reference pinned by
 * digest, `127.0.0.1:5000/mesh-busybox@sha256:...`.
 */
export async function pinnedBusybox(): Promise<string> {
  await ensureRegistry();
  await ensureImage();
  const dir = await Deno.makeTempDir();
  try {
    const target = `${REGISTRY}/mesh-busybox:latest`;
    await run([
      "podman",
      "push",
      "--tls-verify=false",
      "--digestfile",
      `${dir}/digest`,
      IMAGE,
      target,
    ]);
    const digest = (await Deno.readTextFile(`${dir}/digest`)).trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) {
      throw new Error(`podman push gave no digest: ${digest}`);
    }
    return `${REGISTRY}/mesh-busybox@${digest}`;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Lab machines that are running now (by label). */
export async function runningLabs(): Promise<string[]> {
  const out = await run([
    "podman",
    "ps",
    "--filter",
    `label=${LAB_LABEL}`,
    "--format",
    "{{.Names}}",
  ]);
  return out.stdout.split("\n").filter(Boolean);
}

/**
 * Makes the lab registry reachable from a machine on the `bridge` network (or the podman network
 * named `network`): a TCP forwarder in this process from that network's gateway (port 5000) to
 * {@linkcode REGISTRY}, and in the machine a
 * registries.conf mirror for `127.0.0.1:5000` at that gateway, so images pinned as
 * `127.0.0.1:5000/...@sha256:...` are pulled from the same registry. Returns the function that
 * stops the forwarder.
 */
export async function registryForBridge(
  machine: LabMachine,
  network = "podman",
): Promise<() => void> {
  const gateway = (await run([
    "podman",
    "network",
    "inspect",
    network,
    "--format",
    "{{range .Subnets}}{{.Gateway}}{{end}}",
  ])).stdout.trim();
  const port = Number(REGISTRY.split(":")[1]);
  const listener = Deno.listen({ hostname: gateway, port });
  const open = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      open.add(conn);
      (async () => {
        try {
          const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
          open.add(upstream);
          await Promise.allSettled([
            conn.readable.pipeTo(upstream.writable),
            upstream.readable.pipeTo(conn.writable),
          ]);
          open.delete(upstream);
        } catch { /* a connection that failed is the client's error to see */ }
        open.delete(conn);
      })();
    }
  })().catch(() => {});
  await machine.exec([
    "sh",
    "-c",
    `printf '[[registry]]\\nlocation = "${REGISTRY}"\\ninsecure = true\\n\\n[[registry.mirror]]\\nlocation = "${gateway}:${port}"\\ninsecure = true\\n' > /etc/containers/registries.conf.d/50-mesh-lab.conf`,
  ]);
  return () => {
    listener.close();
    for (const c of open) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  };
}
