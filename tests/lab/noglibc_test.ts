/**
 * The lab kinds without glibc (tests/lab/noglibc.ts): `musl` (Alpine-like, OpenRC carrying a
 * private glibc) and `android` (Android-like, no init) have nothing at glibc's standard paths, a
 * glibc program copied in does not start, busybox does; OpenRC boots `musl` to its default
 * runlevel and starts, reports and stops an init script; `android` has its layout.
 */

import { assert, assertEquals, assertMatch } from "../support/assert.ts";
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

/** Runs a shell script in the machine (its `sh`, busybox), failing on a non-zero exit. */
const sh = (m: LabMachine, script: string) => m.exec(["sh", "-euc", script]);

/** What every kind without glibc must show; `tmp` is a writable directory there. */
async function assertNoGlibc(m: LabMachine, tmp: string, privateLibc: string | undefined) {
  const present = await sh(
    m,
    `for p in ${GLIBC_PATHS.join(" ")}; do [ ! -e "$p" ] || echo "$p"; done`,
  );
  assertEquals(present.stdout, "", "glibc is at a standard path");
  // Anywhere at all, glibc's loader and libc are only OpenRC's private copy.
  const found = await sh(
    m,
    "find / -xdev \\( -name 'ld-linux*' -o -name 'libc.so.6' \\) | sort",
  );
  assertEquals(
    found.stdout.split("\n").filter(Boolean),
    privateLibc === undefined
      ? []
      : [`${privateLibc}/ld-linux-x86-64.so.2`, `${privateLibc}/libc.so.6`],
  );
  // A glibc program (this VM's) copied in does not start; busybox (static) does.
  await m.copyIn("/usr/bin/true", `${tmp}/glibc-true`);
  const glibc = await m.exec(["sh", "-c", `${tmp}/glibc-true; echo "exit $?"`]);
  assertEquals(glibc.stdout.trim(), "exit 127");
  assertMatch(glibc.stderr, /not found/);
  const sum = await sh(m, "printf abc | sha256sum");
  assertEquals(
    sum.stdout,
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n",
  );
}

Deno.test("musl lab machine: Alpine-like, no glibc, OpenRC runs an init script", async () => {
  const m = await bootLab("musl");
  try {
    assertEquals(m.checkout, undefined);
    await assertNoGlibc(m, "/tmp", OPENRC_LIBC);
    const release = await sh(
      m,
      '. /etc/os-release; echo "$ID $VERSION_ID"; cat /etc/alpine-release',
    );
    assertMatch(release.stdout, /^alpine (3\.\d+\.\d+)\n\1\n$/);
    // musl's loader answers (run bare it prints its version, exit 1).
    const musl = await m.exec(["/lib/ld-musl-x86_64.so.1"], { allowFailure: true });
    assertMatch(musl.stderr, /musl libc \(x86_64\)\nVersion 1\.2\.3/);

    assertMatch((await m.exec(["/sbin/openrc", "--version"])).stdout, /^openrc \(OpenRC\) 0\.45/);
    assertMatch((await m.exec(["rc-status"])).stdout, /^Runlevel: default$/m);
    await sh(
      m,
      `cat > /etc/init.d/meshsleep <<'EOF'
#!/sbin/openrc-run
command=/bin/sleep
command_args=1000
command_background=true
pidfile=/run/meshsleep.pid
EOF
chmod +x /etc/init.d/meshsleep`,
    );
    const status = () => m.exec(["rc-service", "meshsleep", "status"], { allowFailure: true });
    assertEquals((await status()).code, 3);
    await m.exec(["rc-service", "meshsleep", "start"]);
    const started = await status();
    assertEquals([started.code, started.stdout.trim()], [0, "* status: started"]);
    const pid = (await m.exec(["cat", "/run/meshsleep.pid"])).stdout.trim();
    assertEquals(
      (await m.exec(["cat", `/proc/${pid}/cmdline`])).stdout,
      "/bin/sleep\u00001000\u0000",
    );
    await m.exec(["rc-update", "add", "meshsleep", "default"]);
    assertMatch((await m.exec(["rc-update", "show", "default"])).stdout, /meshsleep \| default/);
    await m.exec(["rc-service", "meshsleep", "stop"]);
    const stopped = await status();
    assertEquals([stopped.code, stopped.stdout.trim()], [3, "* status: stopped"]);
    const gone = await m.exec(["cat", `/proc/${pid}/cmdline`], { allowFailure: true });
    assert(gone.stdout === "", `process ${pid} still runs: ${JSON.stringify(gone.stdout)}`);
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
echo hi > /data/local/tmp/x && cat /data/local/tmp/x
echo "$PATH" | tr : "\\n" | grep -x /system/bin
cat /proc/1/cmdline | tr '\\0' ' '`,
    ]);
    assertEquals(layout.stdout.split("\n"), [
      "no os-release",
      "ro.build.version.release=14",
      "ro.product.cpu.abi=x86_64",
      "/system/etc",
      "hi",
      "/system/bin",
      "/system/bin/sleep 2147483647 ",
    ]);
  } finally {
    await m.destroy();
  }
});
