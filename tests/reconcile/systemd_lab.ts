/**
 * Helpers for the reconcile tests that need systemd as init (timers, batch, boot): a systemd lab
 * machine (tests/lab), files written into it, `mesh-reconcile` run inside it from the read-only
 * checkout, and an honest record of every `systemctl` it ran: a wrapper of the same name
 * earlier on PATH (`/usr/local/sbin/systemctl`) appends each argv, with the account it ran as, to
 * a log when `MESH_TOOL_LOG` is set, and runs the real `/usr/bin/systemctl`. When
 * `MESH_TOOL_AFTER_ENABLE` is set, that shell command runs right after a real `systemctl enable`
 * (a test's way to make something happen between two steps of the program under test: someone
 * editing the registry, its directory going read-only).
 *
 * @module
 */

import type { LabMachine } from "../lab/mod.ts";

/** Where the wrapper logs (world-writable, so calls made as a rootless account are logged too). */
export const TOOL_LOG = "/run/mesh-tools.log";

/** Runs a shell script inside the machine with positional arguments. */
export async function sh(m: LabMachine, script: string, ...args: string[]) {
  return await m.exec(["sh", "-c", script, "sh", ...args]);
}

/** Writes `text` to `path` inside the machine (parents created). */
export async function writeIn(m: LabMachine, path: string, text: string): Promise<void> {
  await sh(m, 'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"', path, text);
}

/** Installs the logging `systemctl` wrapper. */
export async function installToolLog(m: LabMachine): Promise<void> {
  await writeIn(
    m,
    "/usr/local/sbin/systemctl",
    `#!/bin/sh\n[ -n "$MESH_TOOL_LOG" ] && printf '%s: systemctl %s\\n' "$(id -un)" "$*" >> "$MESH_TOOL_LOG"\n` +
      `/usr/bin/systemctl "$@"; rc=$?\n` +
      `[ -n "$MESH_TOOL_AFTER_ENABLE" ] && [ "$1" = enable ] && sh -c "$MESH_TOOL_AFTER_ENABLE"\n` +
      `exit $rc\n`,
  );
  await sh(m, `chmod 0755 /usr/local/sbin/systemctl && : > ${TOOL_LOG} && chmod 0666 ${TOOL_LOG}`);
}

/** A `mesh-reconcile` run inside the machine and the systemctl calls it made. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** `ACCOUNT: systemctl ARGS`, one per call, in order. */
  calls: string[];
}

/**
 * Runs `mesh-reconcile ARGS` inside the machine (the checkout at /mesh), logging systemctl;
 * `options.env` is added to its environment.
 */
export async function meshCli(
  m: LabMachine,
  args: string[],
  options: { env?: Record<string, string> } = {},
): Promise<CliRun> {
  await sh(m, `: > ${TOOL_LOG}`);
  const r = await m.exec(
    ["deno", "run", "-A", "--quiet", "/mesh/reconcile/main.ts", ...args],
    { allowFailure: true, env: { MESH_TOOL_LOG: TOOL_LOG, ...options.env } },
  );
  const calls = (await m.exec(["cat", TOOL_LOG])).stdout.split("\n").filter((l) => l !== "");
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, calls };
}

/**
 * Creates `user` with a user manager that runs from boot on (`loginctl enable-linger`). The lab's
 * root filesystem is debootstrap's minbase, which lacks `libpam-systemd` (Recommended by systemd,
 * so a normal Debian install has it): without it `user@UID.service` fails ("$XDG_RUNTIME_DIR is
 * not set"), so it is installed from Debian's archive first. Returns the uid.
 */
export async function lingeringUser(m: LabMachine, user: string): Promise<number> {
  const has = await m.exec(["test", "-e", "/lib/x86_64-linux-gnu/security/pam_systemd.so"], {
    allowFailure: true,
  });
  if (has.code !== 0) {
    await sh(
      m,
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq " +
        "--no-install-recommends libpam-systemd >/dev/null",
    );
  }
  await sh(m, 'id "$1" >/dev/null 2>&1 || useradd -m "$1"', user);
  await m.exec(["loginctl", "enable-linger", user]);
  const uid = Number((await m.exec(["id", "-u", user])).stdout.trim());
  for (let i = 0; i < 100; i++) {
    const up = await m.exec(["test", "-S", `/run/user/${uid}/systemd/private`], {
      allowFailure: true,
    });
    if (up.code === 0) return uid;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the user manager of ${user} did not start`);
}

/** Runs `systemctl --user ARGS` as `user` inside the machine (not logged). */
export async function userctl(m: LabMachine, user: string, uid: number, args: string[]) {
  return await m.exec([
    "runuser",
    "-u",
    user,
    "--",
    "env",
    `XDG_RUNTIME_DIR=/run/user/${uid}`,
    "/usr/bin/systemctl",
    "--user",
    ...args,
  ], { allowFailure: true });
}
