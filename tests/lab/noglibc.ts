/**
 * Lab machines without glibc, for proving that mesh's one-file hosts (`mesh-host-alpine-x86_64`,
 * `mesh-host-android-x86_64`) start on a root filesystem that has no glibc of its own:
 *
 * - `musl`: laid out like Alpine Linux 3.20 (`/etc/alpine-release`, `/etc/os-release` with
 *   `ID=alpine`): musl's loader at `/lib/ld-musl-x86_64.so.1`, busybox for `/bin/sh`, `/sbin/init`
 *   and every tool (applet symlinks in /bin, /sbin, /usr/bin, /usr/sbin where busybox's own
 *   `--list-full` puts them, as Alpine has them), and OpenRC, booted by busybox init from Alpine's
 *   `/etc/inittab` (sysinit, boot, default runlevels, so `/run/openrc/softlevel` says `default`
 *   as on the `openrc` kind).
 * - `android`: laid out like Android: `/system/bin/sh` (busybox at `/system/bin/busybox`, applet
 *   symlinks in /system/bin), `/system/build.prop`, `/etc` a link to `/system/etc`, a read-only
 *   root where only /data is writable (`/data/local/tmp` for anyone), no `/etc/os-release`, no
 *   `/tmp`, no `/var`, no service manager: the container's command is a
 *   shell sleeping forever. `PATH`, `ANDROID_ROOT`, `ANDROID_DATA` and `TMPDIR` (`/data/local/tmp`)
 *   are set as an Android shell has them; there is no /etc/passwd (as on Android).
 *
 * Both are assembled in seconds from Debian bookworm packages fetched from Debian's archive,
 * pinned with their SHA-256 in {@linkcode NOGLIBC_DEBS} (no debootstrap, no apk: no Alpine
 * repository is reachable here), unpacked with `dpkg-deb -x` and imported with `podman import`.
 * Versions used: musl 1.2.3-1, busybox-static 1:1.35.0-4+deb12u1+b1, openrc (with librc1 and
 * libeinfo1) 0.45.2-2+deb12u1, dpkg 1.21.23 (for `start-stop-daemon` only), libc6 2.36-9+deb12u14,
 * libaudit1 1:3.0.9-1, libcap-ng0 0.8.3-1+b3, libpam0g 1.5.2-6+deb12u3, libselinux1 3.4-1+b6,
 * libpcre2-8-0 10.42-1+deb12u2.
 *
 * OpenRC carries its own private glibc. Debian builds OpenRC against glibc, and no Alpine
 * repository (with a musl OpenRC) is reachable here; so glibc and the libraries OpenRC links
 * (libc6, librc1, libeinfo1, libaudit1, libcap-ng0, libpam0g, libselinux1, libpcre2-8-0) are put
 * in {@linkcode OPENRC_LIBC}, and every ELF file of OpenRC (`/sbin/openrc`, `openrc-run`,
 * `rc-service`, `rc-update`, `/bin/rc-status`, `supervise-daemon`, the helpers in /lib/rc/bin and
 * /lib/rc/sbin) and the `start-stop-daemon` its init scripts call (Debian's OpenRC has none of its
 * own and uses dpkg's, as on the `openrc` kind) is rewritten with `patchelf` (needed on this VM:
 * `apt-get install patchelf`) so that its interpreter is the private
 * `ld-linux-x86-64.so.2` and its RUNPATH the private directory; the private libraries get that
 * RUNPATH too. What matters for the tests is that nothing is at glibc's standard paths: no
 * `/lib64/ld-linux-x86-64.so.2`, no `libc.so.6` under /lib, /usr/lib or their
 * `x86_64-linux-gnu`, no `/etc/ld.so.cache`; a glibc program copied in does not start.
 *
 * Busybox is Debian's `busybox-static` (statically linked, needs no loader). Its applets are
 * listed in {@linkcode BUSYBOX_APPLETS}; note that it has no `flock`, `install`, `nohup`,
 * `pgrep`/`pkill` or `mountpoint`, and that its `xz` only decompresses (`xz -d`, `unxz`,
 * `xzcat`). Its `dpkg`, `dpkg-deb`, `rpm` and `rpm2cpio` applets are not linked (neither
 * Alpine nor Android has them, and they would make the machine look like Debian),
 * nor, on `musl`, its `start-stop-daemon` (dpkg's is there) and `/linuxrc`. Debian builds it with
 * the standalone shell: `sh` runs its own applets before anything in PATH (`PATH=/nowhere
 * sha256sum` works; `command -v tar` says `tar`), which Alpine's busybox does not do.
 *
 * The machines are always bare (no Deno, no checkout mounted: Deno could not run there). Measured
 * here: an image builds in about 3 s (`musl`) and 0.6 s (`android`), packages fetched once into
 * `<LAB_CACHE>/debs`; a machine boots in about 0.5 s (`musl` to OpenRC's default runlevel) and
 * restarts (`rebootLab`) in 2.7 s and 0.6 s.
 *
 * @module
 */

import { run } from "../../lib/command.ts";
import { LAB_CACHE, type LabProgress, labStage } from "./mod.ts";

/** The lab kinds without glibc. */
export type NoglibcKind = "musl" | "android";

/** Whether `kind` is one of {@linkcode NoglibcKind}. */
export function isNoglibcKind(kind: string): kind is NoglibcKind {
  return kind === "musl" || kind === "android";
}

/** Where OpenRC's private glibc and libraries are, on the `musl` kind. */
export const OPENRC_LIBC = "/usr/lib/openrc-libc";

/** The Alpine release the `musl` kind says it is. */
export const ALPINE_RELEASE = "3.20.3";

/** One pinned Debian package: where it is in Debian's archive and its SHA-256. */
export interface PinnedDeb {
  package: string;
  version: string;
  url: string;
  sha256: string;
}

const POOL = "http://deb.debian.org/debian/pool/main";
const SECURITY = "http://deb.debian.org/debian-security/pool/updates/main";

/**
 * The Debian bookworm packages the two kinds are built from (from `apt-get download --print-uris`
 * on bookworm, 2026-12-06). When Debian replaces one (a point release or a security update removes
 * the old version from the archive), the fetch fails naming it: take the new URL and SHA-256 from
 * `apt-get download --print-uris PACKAGE`.
 */
export const NOGLIBC_DEBS: readonly PinnedDeb[] = [
  {
    package: "musl",
    version: "1.2.3-1",
    url: `${POOL}/m/musl/musl_1.2.3-1_amd64.deb`,
    sha256: "4fc1e3d9b579f5c682ca99a4d45aec08d72a2e6b82b4c2e1bbcb7095466ae96d",
  },
  {
    package: "busybox-static",
    version: "1:1.35.0-4+deb12u1+b1",
    url: `${POOL}/b/busybox/busybox-static_1.35.0-4%2bdeb12u1%2bb1_amd64.deb`,
    sha256: "3d3fdbe91d4660c873e14b092c213fe81c1da6362daa236eb25d0171eb108744",
  },
  {
    package: "openrc",
    version: "0.45.2-2+deb12u1",
    url: `${POOL}/o/openrc/openrc_0.45.2-2%2bdeb12u1_amd64.deb`,
    sha256: "9f640e175b1c5c56f20528940b231d44f1cafca1fd6d523becc9f1e8f0a44a6b",
  },
  {
    package: "librc1",
    version: "0.45.2-2+deb12u1",
    url: `${POOL}/o/openrc/librc1_0.45.2-2%2bdeb12u1_amd64.deb`,
    sha256: "ea3176be633d5dd6866dfef6c078612ab296a670ba793b77fb1d0fb548f3453b",
  },
  {
    package: "libeinfo1",
    version: "0.45.2-2+deb12u1",
    url: `${POOL}/o/openrc/libeinfo1_0.45.2-2%2bdeb12u1_amd64.deb`,
    sha256: "d8bbf623b67f309172d582962dcd77efaca05ea8c173484c418afcb4ce78d394",
  },
  {
    package: "dpkg",
    version: "1.21.23",
    url: `${POOL}/d/dpkg/dpkg_1.21.23_amd64.deb`,
    sha256: "f89e9f8d1a4a50ade44be3ed59a6ec55460fce205d2f8520c5c492137c5b609b",
  },
  {
    package: "libc6",
    version: "2.36-9+deb12u14",
    url: `${POOL}/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb`,
    sha256: "ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf",
  },
  {
    package: "libaudit1",
    version: "1:3.0.9-1",
    url: `${POOL}/a/audit/libaudit1_3.0.9-1_amd64.deb`,
    sha256: "30954df4b5a7c505661ba8ae5e6ea94f5805e408899fb400783bb166eb5ff306",
  },
  {
    package: "libcap-ng0",
    version: "0.8.3-1+b3",
    url: `${POOL}/libc/libcap-ng/libcap-ng0_0.8.3-1%2bb3_amd64.deb`,
    sha256: "b4b54769c77e4a71c8b33aee4d600ba28a9994a1c6f60d55d4ebe7fc44882e07",
  },
  {
    package: "libpam0g",
    version: "1.5.2-6+deb12u3",
    url: `${SECURITY}/p/pam/libpam0g_1.5.2-6%2bdeb12u3_amd64.deb`,
    sha256: "2cc3411d70739d7f09ee8f1dd145903320294e36bf6bda3cb56dd25eb9a8505f",
  },
  {
    package: "libselinux1",
    version: "3.4-1+b6",
    url: `${POOL}/libs/libselinux/libselinux1_3.4-1%2bb6_amd64.deb`,
    sha256: "2b07f5287b9105f40158b56e4d70cc1652dac56a408f3507b4ab3d061eed425f",
  },
  {
    package: "libpcre2-8-0",
    version: "10.42-1+deb12u2",
    url: `${SECURITY}/p/pcre2/libpcre2-8-0_10.42-1%2bdeb12u2_amd64.deb`,
    sha256: "d2f7edfcc7689b9e0761c2742cc824ac86a20768bc5e8057818dc6875291fe76",
  },
];

/** The packages whose libraries go into {@linkcode OPENRC_LIBC}. */
const OPENRC_LIBS = [
  "libc6",
  "librc1",
  "libeinfo1",
  "libaudit1",
  "libcap-ng0",
  "libpam0g",
  "libselinux1",
  "libpcre2-8-0",
];

/**
 * The applets of Debian's busybox-static 1:1.35.0-4+deb12u1+b1 (`busybox --list`), all linked on
 * both kinds except {@linkcode BUSYBOX_LEFT_OUT}.
 */
export const BUSYBOX_APPLETS: readonly string[] = (
  "[ [[ acpid adjtimex ar arch arp arping ascii ash awk base64 basename bc blkdiscard blockdev " +
  "brctl bunzip2 busybox bzcat bzip2 cal cat chgrp chmod chown chroot chvt clear cmp cp cpio " +
  "crc32 crond crontab cttyhack cut date dc dd deallocvt depmod devmem df diff dirname dmesg " +
  "dnsdomainname dos2unix dpkg dpkg-deb du dumpkmap dumpleases echo ed egrep env expand expr " +
  "factor fallocate false fatattr fdisk fgrep find findfs fold free freeramdisk fsfreeze fstrim " +
  "ftpget ftpput getopt getty grep groups gunzip gzip halt head hexdump hostid hostname httpd " +
  "hwclock i2cdetect i2cdump i2cget i2cset i2ctransfer id ifconfig ifdown ifup init insmod " +
  "ionice ip ipcalc ipneigh kill killall klogd last less link linux32 linux64 linuxrc ln " +
  "loadfont loadkmap logger login logname logread losetup ls lsmod lsscsi lzcat lzma lzop " +
  "md5sum mdev microcom mim mkdir mkdosfs mke2fs mkfifo mknod mkpasswd mkswap mktemp modinfo " +
  "modprobe more mount mt mv nameif nc netstat nl nologin nproc nsenter nslookup nuke od openvt " +
  "partprobe passwd paste patch pidof ping ping6 pivot_root poweroff printf ps pwd rdate " +
  "readlink realpath reboot renice reset resume rev rm rmdir rmmod route rpm rpm2cpio run-init " +
  "run-parts sed seq setkeycodes setpriv setsid sh sha1sum sha256sum sha3sum sha512sum shred " +
  "shuf sleep sort ssl_client start-stop-daemon stat strings stty su sulogin svc svok swapoff " +
  "swapon switch_root sync sysctl syslogd tac tail tar taskset tc tee telnet telnetd test tftp " +
  "time timeout top touch tr traceroute traceroute6 true truncate ts tty tunctl ubirename udhcpc " +
  "udhcpd uevent umount uname uncompress unexpand uniq unix2dos unlink unlzma unshare unxz unzip " +
  "uptime usleep uudecode uuencode vconfig vi w watch watchdog wc wget which who whoami xargs " +
  "xxd xz xzcat yes zcat"
).split(" ");

/** Applets not linked: package managers neither Alpine nor Android has. */
export const BUSYBOX_LEFT_OUT: readonly string[] = ["dpkg", "dpkg-deb", "rpm", "rpm2cpio"];

/**
 * Android's shell environment (what `adb shell` has): PATH, where Android keeps its system and
 * data, and TMPDIR (there is no /tmp: busybox `mktemp` fails without TMPDIR).
 */
export const ANDROID_ENV: Record<string, string> = {
  PATH: "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:" +
    "/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin",
  ANDROID_ROOT: "/system",
  ANDROID_DATA: "/data",
  // Android has no /tmp; its shell's temporary directory is this one.
  TMPDIR: "/data/local/tmp",
};

/** Alpine's /etc/inittab, console and tty lines left out (a container has neither). */
const ALPINE_INITTAB = `# /etc/inittab (Alpine Linux, without console and tty lines)

::sysinit:/sbin/openrc sysinit
::sysinit:/sbin/openrc boot
::wait:/sbin/openrc default

# Stuff to do before rebooting
::ctrlaltdel:/sbin/reboot
::shutdown:/sbin/openrc shutdown
`;

/** Files written into each kind's root (paths relative to it). */
const FILES: Record<NoglibcKind, Record<string, string>> = {
  musl: {
    "etc/alpine-release": `${ALPINE_RELEASE}\n`,
    "etc/os-release": `NAME="Alpine Linux"\nID=alpine\nVERSION_ID=${ALPINE_RELEASE}\n` +
      `PRETTY_NAME="Alpine Linux v${ALPINE_RELEASE.split(".").slice(0, 2).join(".")}"\n` +
      `HOME_URL="https://alpinelinux.org/"\n` +
      `BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"\n`,
    "etc/inittab": ALPINE_INITTAB,
    // Alpine's users and groups (alpine-baselayout): OpenRC's checkpath wants root:uucp.
    "etc/passwd": [
      "root:x:0:0:root:/root:/bin/sh",
      "bin:x:1:1:bin:/bin:/sbin/nologin",
      "daemon:x:2:2:daemon:/sbin:/sbin/nologin",
      "lp:x:4:7:lp:/var/spool/lpd:/sbin/nologin",
      "sync:x:5:0:sync:/sbin:/bin/sync",
      "shutdown:x:6:0:shutdown:/sbin:/sbin/shutdown",
      "halt:x:7:0:halt:/sbin:/sbin/halt",
      "mail:x:8:12:mail:/var/mail:/sbin/nologin",
      "news:x:9:13:news:/usr/lib/news:/sbin/nologin",
      "uucp:x:10:14:uucp:/var/spool/uucppublic:/sbin/nologin",
      "cron:x:16:16:cron:/var/spool/cron:/sbin/nologin",
      "ftp:x:21:21::/var/lib/ftp:/sbin/nologin",
      "sshd:x:22:22:sshd:/dev/null:/sbin/nologin",
      "games:x:35:35:games:/usr/games:/sbin/nologin",
      "ntp:x:123:123:NTP:/var/empty:/sbin/nologin",
      "guest:x:405:100:guest:/dev/null:/sbin/nologin",
      "nobody:x:65534:65534:nobody:/:/sbin/nologin",
      "",
    ].join("\n"),
    "etc/group": [
      "root:x:0:root",
      "bin:x:1:root,bin,daemon",
      "daemon:x:2:root,bin,daemon",
      "sys:x:3:root,bin",
      "adm:x:4:root,daemon",
      "tty:x:5:",
      "disk:x:6:root",
      "lp:x:7:lp",
      "kmem:x:9:",
      "wheel:x:10:root",
      "floppy:x:11:root",
      "mail:x:12:mail",
      "news:x:13:news",
      "uucp:x:14:uucp",
      "cron:x:16:cron",
      "console:x:17:",
      "audio:x:18:",
      "cdrom:x:19:",
      "dialout:x:20:root",
      "ftp:x:21:",
      "sshd:x:22:",
      "input:x:23:",
      "tape:x:26:root",
      "video:x:27:root",
      "netdev:x:28:",
      "kvm:x:34:kvm",
      "games:x:35:",
      "shadow:x:42:",
      "www-data:x:82:",
      "users:x:100:games",
      "ntp:x:123:",
      "utmp:x:406:",
      "ping:x:999:",
      "nogroup:x:65533:",
      "nobody:x:65534:",
      "",
    ].join("\n"),
    "etc/shadow": "root:*::0:::::\nnobody:!::0:::::\n",
    // Debian's OpenRC reads insserv's configuration for LSB dependencies (says "Unable to read
    // /etc/insserv.conf" on every command without it); an empty one names none.
    "etc/insserv.conf": "",
    "etc/hostname": "lab-musl\n",
    "etc/hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
    "etc/resolv.conf": "",
    "etc/fstab": "",
    "etc/shells": "/bin/sh\n/bin/ash\n",
  },
  android: {
    "system/build.prop": [
      "# begin common build properties",
      "ro.build.id=UQ1A.240205.004",
      "ro.build.display.id=UQ1A.240205.004",
      "ro.build.version.incremental=11269751",
      "ro.build.version.sdk=34",
      "ro.build.version.release=14",
      "ro.build.version.security_patch=2024-02-05",
      "ro.build.type=userdebug",
      "ro.build.tags=test-keys",
      "ro.product.system.brand=Android",
      "ro.product.system.device=generic_x86_64",
      "ro.product.system.model=mesh lab android",
      "ro.product.cpu.abi=x86_64",
      "ro.product.cpu.abilist=x86_64",
      "ro.system.build.version.release=14",
      "",
    ].join("\n"),
    "system/etc/hosts": "127.0.0.1\tlocalhost\n::1\tip6-localhost\n",
    "system/etc/resolv.conf": "",
  },
};

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** A short digest of this module's text (recipe, pins and build), so a change builds anew. */
async function recipeTag(): Promise<string> {
  const text = await Deno.readTextFile(new URL(import.meta.url));
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(hash.slice(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The image a kind without glibc runs (tagged by this module's recipe). */
export async function noglibcImage(kind: NoglibcKind): Promise<string> {
  return `localhost/mesh-lab-${kind}:bookworm-${await recipeTag()}`;
}

/** The command a machine of `kind` is run with (its PID 1). */
export function noglibcCommand(kind: NoglibcKind): string[] {
  return kind === "musl"
    ? ["/sbin/init"]
    : ["/system/bin/sh", "-c", "exec /system/bin/sleep 2147483647"];
}

/**
 * The `podman run` options a machine of `kind` needs. `musl`: podman takes a command
 * `/sbin/init` for systemd (its systemd mode: stop signal SIGRTMIN+3, which busybox init ignores,
 * so a stop or restart waited its whole timeout; and tmpfs on /tmp and /run), so systemd mode is
 * off and the stop signal is SIGTERM (busybox init: run the `shutdown` actions, reboot, which in
 * a container ends it). `android`: its PID 1 is `sleep`, which SIGTERM does not stop: SIGKILL;
 * and as on Android, the root filesystem is read-only (no tmpfs put on /tmp, /run or /var/tmp
 * either) and only /data is writable: an anonymous volume, filled from the image's /data, kept
 * across restarts, removed with the container (`podman rm -v`).
 */
export function noglibcRunOptions(kind: NoglibcKind): string[] {
  return kind === "musl"
    ? ["--systemd=false", "--stop-signal", "SIGTERM"]
    : ["--stop-signal", "SIGKILL", "--read-only", "--read-only-tmpfs=false", "-v", "/data"];
}

/**
 * Fetches every package of {@linkcode NOGLIBC_DEBS} into `<LAB_CACHE>/debs` (kept between
 * builds) unless there already, and checks its SHA-256. Returns package name → local path.
 *
 * @throws {Error} "Cannot fetch PACKAGE VERSION from URL: ..." when the archive does not have it
 *   (anymore), or its SHA-256 differs.
 */
export async function fetchNoglibcDebs(): Promise<Map<string, string>> {
  const dir = `${LAB_CACHE}/debs`;
  await Deno.mkdir(dir, { recursive: true });
  const paths = new Map<string, string>();
  await Promise.all(NOGLIBC_DEBS.map(async (deb) => {
    const path = `${dir}/${decodeURIComponent(deb.url.slice(deb.url.lastIndexOf("/") + 1))}`;
    paths.set(deb.package, path);
    if (await exists(path)) return;
    const fail = (why: string) =>
      new Error(
        `Cannot fetch ${deb.package} ${deb.version} from ${deb.url}: ${why} (if Debian replaced ` +
          `it, pin the new one from \`apt-get download --print-uris ${deb.package}\`)`,
      );
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      const response = await fetch(deb.url);
      if (!response.ok) {
        await response.body?.cancel();
        throw fail(`HTTP ${response.status}`);
      }
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("Cannot fetch")) throw error;
      throw fail(error instanceof Error ? error.message : String(error));
    }
    const digest = Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    if (digest !== deb.sha256) throw fail(`its SHA-256 is ${digest}, not ${deb.sha256}`);
    await Deno.writeFile(`${path}.part`, bytes);
    await Deno.rename(`${path}.part`, path);
  }));
  return paths;
}

/**
 * Builds the image `image` of a kind without glibc ({@linkcode noglibcImage}): a few seconds.
 * Called by tests/lab/mod.ts `ensureLabImage`, under the kind's build lock, only when the image
 * is not there.
 *
 * @throws {CommandError} when dpkg-deb, patchelf, tar or podman fails (patchelf missing: install
 *   it on this VM with `apt-get install patchelf`); {@linkcode fetchNoglibcDebs}'s errors.
 */
export async function buildNoglibcImage(
  kind: NoglibcKind,
  image: string,
  say: LabProgress,
): Promise<void> {
  const work = `${LAB_CACHE}/${kind}-build`;
  await Deno.remove(work, { recursive: true }).catch(() => {});
  await Deno.mkdir(work, { recursive: true });
  try {
    const debs = await labStage(
      say,
      `${kind}: 1/3 fetch ${NOGLIBC_DEBS.length} Debian packages into ${LAB_CACHE}/debs`,
      fetchNoglibcDebs,
    );
    const root = `${work}/root`;
    await labStage(
      say,
      `${kind}: 2/3 assemble the root filesystem in ${root}`,
      () => (kind === "musl" ? assembleMusl : assembleAndroid)(root, `${work}/unpack`, debs),
    );
    await labStage(say, `${kind}: 3/3 podman import as ${image}`, async () => {
      const tar = `${work}/root.tar`;
      await run(["tar", "--numeric-owner", "-C", root, "-cf", tar, "."], {
        timeoutMs: 10 * 60_000,
      });
      const env = kind === "android" ? ANDROID_ENV : {};
      await run([
        "podman",
        "import",
        "--change",
        `CMD ${JSON.stringify(noglibcCommand(kind))}`,
        ...Object.entries(env).flatMap(([k, v]) => ["--change", `ENV ${k}=${v}`]),
        tar,
        image,
      ], { timeoutMs: 10 * 60_000 });
    });
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/** Unpacks `pkg` (`dpkg-deb -x`) into `dir`. */
async function unpack(debs: Map<string, string>, pkg: string, dir: string): Promise<void> {
  const path = debs.get(pkg);
  if (path === undefined) throw new Error(`Cannot unpack ${pkg}: it is not pinned`);
  await Deno.mkdir(dir, { recursive: true });
  await run(["dpkg-deb", "-x", path, dir]);
}

/** Writes `files` (paths relative to `root`) into `root`. */
async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  }
}

/**
 * Puts busybox at `root/<binary>` and links its applets (but `leftOut`) to it: at
 * `root/<flat>/NAME` when `flat` is given, else where `busybox --list-full` puts each.
 */
async function installBusybox(
  root: string,
  unpacked: string,
  binary: string,
  flat: string | undefined,
  leftOut: readonly string[],
): Promise<void> {
  await Deno.mkdir(`${root}/${binary.slice(0, binary.lastIndexOf("/"))}`, { recursive: true });
  await Deno.copyFile(`${unpacked}/bin/busybox`, `${root}/${binary}`);
  await Deno.chmod(`${root}/${binary}`, 0o755);
  const full = (await run([`${unpacked}/bin/busybox`, "--list-full"])).stdout.split("\n")
    .filter(Boolean);
  for (const path of full) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (leftOut.includes(name)) continue;
    const at = flat !== undefined ? `${flat}/${name}` : path;
    if (at === binary) continue;
    await Deno.mkdir(`${root}/${at.slice(0, at.lastIndexOf("/"))}`, { recursive: true });
    if (await Deno.lstat(`${root}/${at}`).then(() => true, () => false)) continue;
    await Deno.symlink(`/${binary}`, `${root}/${at}`);
  }
}

/** The ELF files under `dir` (regular files starting with `\x7fELF`), recursively. */
async function elfFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await elfFiles(path));
    else if (entry.isFile) {
      const file = await Deno.open(path);
      const head = new Uint8Array(4);
      const n = await file.read(head).finally(() => file.close());
      if (n === 4 && head[0] === 0x7f && head[1] === 0x45 && head[2] === 0x4c && head[3] === 0x46) {
        found.push(path);
      }
    }
  }
  return found;
}

async function assembleMusl(root: string, scratch: string, debs: Map<string, string>) {
  await run(["patchelf", "--version"]).catch((error) => {
    throw new Error(
      `Cannot build the musl lab image: patchelf does not run on this machine ` +
        `(apt-get install patchelf): ${error instanceof Error ? error.message : error}`,
    );
  });
  await unpack(debs, "musl", root);
  // Alpine's name for musl's libc, next to its loader.
  await Deno.symlink("ld-musl-x86_64.so.1", `${root}/lib/libc.musl-x86_64.so.1`);
  await unpack(debs, "busybox-static", `${scratch}/busybox`);
  await installBusybox(root, `${scratch}/busybox`, "bin/busybox", undefined, [
    ...BUSYBOX_LEFT_OUT,
    "start-stop-daemon", // dpkg's is there, as Debian's OpenRC wants
    "linuxrc", // /linuxrc: Alpine has none
  ]);
  await unpack(debs, "openrc", root);
  await unpack(debs, "dpkg", `${scratch}/dpkg`);
  await Deno.copyFile(
    `${scratch}/dpkg/sbin/start-stop-daemon`,
    `${root}/sbin/start-stop-daemon`,
  );
  await Deno.chmod(`${root}/sbin/start-stop-daemon`, 0o755);
  // OpenRC's private glibc and libraries: every shared object of those packages, in one directory.
  const libc = `${root}${OPENRC_LIBC}`;
  await Deno.mkdir(libc, { recursive: true });
  for (const pkg of OPENRC_LIBS) {
    const dir = `${scratch}/${pkg}`;
    await unpack(debs, pkg, dir);
    for (const sub of ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"]) {
      if (!(await exists(`${dir}/${sub}`))) continue;
      for await (const entry of Deno.readDir(`${dir}/${sub}`)) {
        if (entry.isDirectory || !entry.name.includes(".so")) continue;
        await run(["cp", "-a", `${dir}/${sub}/${entry.name}`, `${libc}/${entry.name}`]);
      }
    }
  }
  const loader = `${OPENRC_LIBC}/ld-linux-x86-64.so.2`;
  const ownLibs = new Set(
    (await Promise.all(
      OPENRC_LIBS.filter((p) => p !== "libc6").map((p) => elfFiles(`${scratch}/${p}`)),
    )).flat().map((p) => p.slice(p.lastIndexOf("/") + 1)),
  );
  const programs = [
    ...await elfFiles(`${root}/sbin`),
    ...await elfFiles(`${root}/bin`),
    ...await elfFiles(`${root}/lib/rc`),
  ].filter((p) => !p.endsWith("/bin/busybox"));
  for (const program of programs) {
    await run(["patchelf", "--set-interpreter", loader, "--set-rpath", OPENRC_LIBC, program]);
  }
  for (const lib of ownLibs) {
    await run(["patchelf", "--set-rpath", OPENRC_LIBC, `${libc}/${lib}`]);
  }
  // What Debian's packages put where Alpine has nothing: documentation, and glibc's places.
  for (const path of ["usr/share", "lib/x86_64-linux-gnu", "lib64", "etc/ld.so.cache"]) {
    await Deno.remove(`${root}/${path}`, { recursive: true }).catch(() => {});
  }
  for (
    const dir of [
      "dev",
      "proc",
      "sys",
      "run",
      "root",
      "home",
      "mnt",
      "opt",
      "srv",
      "media",
      "etc/conf.d",
      "etc/insserv.conf.d",
      "etc/runlevels/sysinit",
      "etc/runlevels/boot",
      "etc/runlevels/default",
      "etc/runlevels/shutdown",
      "lib/rc/init.d",
      "usr/local/bin",
      "usr/local/sbin",
      "var/lib",
      "var/log",
      "var/cache",
      "var/tmp",
    ]
  ) {
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  }
  await Deno.mkdir(`${root}/tmp`, { recursive: true });
  await Deno.chmod(`${root}/tmp`, 0o1777);
  await Deno.chmod(`${root}/var/tmp`, 0o1777);
  await Deno.symlink("/run", `${root}/var/run`);
  await writeFiles(root, FILES.musl);
  await Deno.chmod(`${root}/etc/shadow`, 0o640);
}

async function assembleAndroid(root: string, scratch: string, debs: Map<string, string>) {
  await unpack(debs, "busybox-static", `${scratch}/busybox`);
  await installBusybox(
    root,
    `${scratch}/busybox`,
    "system/bin/busybox",
    "system/bin",
    BUSYBOX_LEFT_OUT,
  );
  await writeFiles(root, FILES.android);
  await Deno.symlink("/system/etc", `${root}/etc`);
  for (
    const dir of ["dev", "proc", "sys", "data/local/tmp", "sdcard", "vendor/bin", "system/xbin"]
  ) {
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  }
  await Deno.chmod(`${root}/data/local/tmp`, 0o1777);
}
