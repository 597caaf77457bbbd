/**
 * The lab kinds without glibc (tests/lab/noglibc.ts): `musl` (Alpine-like, OpenRC carrying a
 * private glibc) and `android` (Android-like, no init) have nothing at glibc's standard paths, a
 * glibc program copied in does not start, busybox does; OpenRC boots `musl` to its default
 * runlevel and starts, reports and stops an init script; `android` has its layout, and its root
 * is read-only but for /data.
 *
 * Each `podman exec` costs about 0.4 s here, so each machine is checked with few shell scripts
 * whose whole transcript is compared.
 */

import { assertEquals } from "../support/assert.ts";
import { bootLab, type LabMachine, OPENRC_LIBC } from "./mod.ts";

/** glibc's standard places: none may exist on either kind. */
const GLIBC_PATHS = [
  "/lib64/ld-linux-x86-64.so.2",
  "/lib/ld-linux-x86-64.so.2",
  "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
  "/lib/libc.so.6",
  "/usr/lib/libc.so.6",
  "/lib/x86_64-linux-gnu/libc.so.6",
  "/usr/lib/x86_64-linux-gnu/libc.so.6",
  "/etc/ld.so.cache",
];

/** Runs a script with the machine's `sh` (busybox); returns its stdout's lines. */
async function transcript(m: LabMachine, script: string): Promise<string[]> {
  const out = await m.exec(["sh", "-uc", script]);
  return out.stdout.split("\n").filter(Boolean);
}

/**
 * What every kind without glibc must show: nothing at glibc's standard paths, glibc's loader and
 * libc nowhere but in `privateLibc` (OpenRC's), a glibc program (this VM's `true`, copied into
 * `tmp`) not starting, busybox (static) working.
 */
async function assertNoGlibc(m: LabMachine, tmp: string, privateLibc: string | undefined) {
  await m.copyIn("/usr/bin/true", `${tmp}/glibc-true`);
  const lines = await transcript(
    m,
    `for p in ${GLIBC_PATHS.join(" ")}; do [ ! -e "$p" ] || echo "present $p"; done
find / -xdev \\( -name 'ld-linux*' -o -name 'libc.so.6' \\) | sort | sed 's/^/found /'
${tmp}/glibc-true 2>&1 || echo "glibc-true exit $?"
printf abc | sha256sum`,
  );
  assertEquals(lines, [
    ...(privateLibc === undefined
      ? []
      : [`found ${privateLibc}/ld-linux-x86-64.so.2`, `found ${privateLibc}/libc.so.6`]),
    `sh: ${tmp}/glibc-true: not found`,
    "glibc-true exit 127",
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -",
  ]);
}

Deno.test("musl lab machine: Alpine-like, no glibc, OpenRC runs an init script", async () => {
  const m = await bootLab("musl");
  try {
    assertEquals(m.checkout, undefined);
    await assertNoGlibc(m, "/tmp", OPENRC_LIBC);
    const lines = await transcript(
      m,
      `. /etc/os-release; echo "$ID $VERSION_ID $(cat /etc/alpine-release)"
/lib/ld-musl-x86_64.so.1 2>&1 | head -2 | tr '\\n' ' '; echo
/sbin/openrc --version
rc-status | head -1
cat > /etc/init.d/meshsleep <<'END'
#!/sbin/openrc-run
command=/bin/sleep
command_args=1000
command_background=true
pidfile=/run/meshsleep.pid
END
chmod +x /etc/init.d/meshsleep
rc-service meshsleep status; echo "status exit $?"
rc-service meshsleep start; echo "start exit $?"
rc-service meshsleep status; echo "status exit $?"
pid=$(cat /run/meshsleep.pid); tr '\\0' ' ' </proc/$pid/cmdline; echo
rc-update add meshsleep default; rc-update show default
rc-service meshsleep stop; echo "stop exit $?"
rc-service meshsleep status; echo "status exit $?"
[ -z "$(cat /proc/$pid/cmdline 2>/dev/null)" ] && echo "daemon $pid gone"`,
    );
    const pid = lines.find((l) => l.startsWith("daemon "))?.split(" ")[1] ?? "?";
    // OpenRC says when it (re)caches dependencies, at a moment of its choosing: left out.
    const said = lines.map((l) => l.replace(/ +/g, " ").trim())
      .filter((l) => !l.startsWith("* Caching service dependencies"));
    assertEquals(said, [
      "alpine 3.20.3 3.20.3",
      "musl libc (x86_64) Version 1.2.3",
      "openrc (OpenRC) 0.45.2",
      "Runlevel: default",
      "* status: stopped",
      "status exit 3",
      "* Starting meshsleep ... [ ok ]",
      "start exit 0",
      "* status: started",
      "status exit 0",
      "/bin/sleep 1000",
      "* service meshsleep added to runlevel default",
      "meshsleep | default",
      "* Stopping meshsleep ...stopped /bin/sleep (pid " + pid + ")",
      "[ ok ]",
      "stop exit 0",
      "* status: stopped",
      "status exit 3",
      `daemon ${pid} gone`,
    ]);
  } finally {
    await m.destroy();
  }
});

Deno.test("android lab machine: Android-like, no glibc, no init", async () => {
  const m = await bootLab("android");
  try {
    assertEquals(m.checkout, undefined);
    await assertNoGlibc(m, "/data/local/tmp", undefined);
    const layout = await m.exec([
      "/system/bin/sh",
      "-euc",
      `[ ! -e /etc/os-release ] && echo "no os-release"
grep '^ro.build.version.release=' /system/build.prop
grep '^ro.product.cpu.abi=' /system/build.prop
readlink /etc
touch /x 2>/dev/null || echo "/ is read-only"
echo hi > /data/local/tmp/x && cat /data/local/tmp/x
echo "$PATH" | tr : '\\n' | grep -x /system/bin
dirname "$(mktemp -d)"
tr '\\0' ' ' </proc/1/cmdline`,
    ]);
    assertEquals(layout.stdout.split("\n"), [
      "no os-release",
      "ro.build.version.release=14",
      "ro.product.cpu.abi=x86_64",
      "/system/etc",
      "/ is read-only",
      "hi",
      "/system/bin",
      "/data/local/tmp",
      "/system/bin/sleep 2147483647 ",
    ]);
  } finally {
    await m.destroy();
  }
});
