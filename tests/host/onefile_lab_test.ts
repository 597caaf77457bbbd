/**
 * One file is the whole install: a bare lab machine (systemd, no Deno, no checkout mounted)
 * gets the one-file debian host copied in and nothing else, and it works there: it detects the
 * machine, applies a declaration convergently and shows the bundle it carries.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { oneFileHost } from "../support/onefile.ts";
import { bootLab } from "../lab/mod.ts";

Deno.test("one file copied onto a bare Debian machine is the whole install", async () => {
  const file = await oneFileHost("debian");
  const m = await bootLab("systemd", { bare: true });
  try {
    // Bare: no Deno anywhere, no checkout.
    const deno = await m.exec(["sh", "-c", "command -v deno || ls /mesh"], { allowFailure: true });
    assert(deno.code !== 0, `the machine has Deno or a checkout: ${deno.stdout}`);
    await m.copyIn(file, "/usr/local/sbin/mesh-host");
    // It detects the machine it is on (its init, its package manager, its container runtime).
    const inventory = await m.exec(["mesh-host", "inventory", "--json"]);
    assertStringIncludes(inventory.stdout, "systemd");
    // It applies a declaration, convergently: the second apply changes nothing. (The carried
    // bundle raises the whole substrate, which binds ports this host-network machine shares with
    // the VM: that is tests/lab/fleet_test.ts, on a machine with its own address.)
    const declaration = JSON.stringify({
      version: 1,
      resources: [
        { id: "d", type: "directory", path: "/srv/onefile", mode: "0750" },
        { id: "f", type: "file", path: "/srv/onefile/hello", mode: "0640", content: "hello\n" },
        // Not a subject of the carried bundle (which declares podman): the bundle shown below
        // would otherwise be refused, source "local" holding it.
        { id: "p", type: "package", package: "procps" },
      ],
    });
    await m.exec(["sh", "-c", 'printf %s "$1" > /root/d.json', "sh", declaration]);
    const first = await m.exec(["mesh-host", "apply", "/root/d.json", "--json"], {
      allowFailure: true,
    });
    assertEquals(first.code, 0, first.stderr + first.stdout);
    const r1 = JSON.parse(first.stdout) as { outcome: string; changes: { change: string }[] };
    assertEquals(r1.outcome, "applied");
    assert(r1.changes.some((c) => c.change === "created"), first.stdout);
    const second = await m.exec(["mesh-host", "apply", "/root/d.json", "--json"]);
    const r2 = JSON.parse(second.stdout) as { outcome: string; changes: { change: string }[] };
    assertEquals(r2.changes.filter((c) => c.change !== "unchanged"), []);
    assertEquals((await m.exec(["stat", "-c", "%a", "/srv/onefile/hello"])).stdout.trim(), "640");
    assertStringIncludes((await m.exec(["cat", "/var/lib/mesh/host/known-good"])).stdout, ".");
    // It shows the bundle it carries (what reconcile would do), changing nothing.
    // A dry run like any other: exit 4, since applying it would change this bare machine.
    // The carried lock is the checkout's, pinning the images of the machine that committed it:
    // where this bare machine can have them, exit 4 (it would apply); where it cannot, the bundle
    // is refused whole (exit 2) with only such images named. Either way nothing is written.
    const shown = await m.exec(["mesh-host", "bundle"], { allowFailure: true });
    assertStringIncludes(shown.stdout, "bundle substrate-debian");
    if (shown.code === 4) {
      assertStringIncludes(shown.stdout, "dry run");
    } else {
      assertEquals(shown.code, 2, shown.stderr + shown.stdout);
      assertStringIncludes(shown.stdout, "source bundle: refused, none of its");
      const problems = shown.stdout.split("\nproblems:\n")[1]?.split("\n").filter((l) => l !== "");
      assert(problems !== undefined && problems.length > 0, shown.stdout);
      for (const line of problems) assert(/^ {2}\[[a-z-]+\]: Cannot have image /.test(line), line);
    }
    const secrets = await m.exec(["test", "-e", "/etc/mesh/secrets"], { allowFailure: true });
    assert(secrets.code !== 0, "bundle wrote /etc/mesh/secrets");
    // It runs from the cache it unpacked, under /var/lib/mesh.
    const cached = await m.exec([
      "sh",
      "-c",
      "ls /var/lib/mesh/runtime/runtime /var/lib/mesh/runtime/program",
    ]);
    assert(/[0-9a-f]{64}/.test(cached.stdout), cached.stdout);
    // And keeps that cache tidy (the machinery a bare Debian has: flock, /proc): each program
    // entry names its program; when a start unpacks what the cache lacked, an older version's
    // entry goes. Installed as docs/launcher.md says, beside its known-good version.
    const cache = "/var/lib/mesh/runtime";
    const current = (await m.exec([
      "find",
      `${cache}/program`,
      "-mindepth",
      "1",
      "-maxdepth",
      "1",
      "-type",
      "d",
      "-printf",
      "%f\n",
    ]))
      .stdout.trim();
    assert(/^[0-9a-f]{64}$/.test(current), `one program entry: ${current}`);
    assertStringIncludes(
      (await m.exec(["cat", `${cache}/program/${current}.name`])).stdout,
      "mesh-host-debian-x86_64 ",
    );
    const older = "0".repeat(64);
    await m.exec([
      "sh",
      "-c",
      `set -e; install -D -m 0755 /usr/local/sbin/mesh-host /usr/lib/mesh/mesh-host-$(cat /var/lib/mesh/host/known-good)
      cd ${cache}/program && cp -a ${current} ${older} && cp ${current}.name ${older}.name && rm -rf ${current}`,
    ]);
    assertEquals((await m.exec(["mesh-host", "--help"], { allowFailure: true })).code, 0);
    assertEquals(
      (await m.exec([
        "find",
        `${cache}/program`,
        "-mindepth",
        "1",
        "-maxdepth",
        "1",
        "-printf",
        "%f\n",
      ]))
        .stdout.trim().split("\n").sort(),
      // .seen: the identities of the files checked whole that carry this program.
      [current, `${current}.lock`, `${current}.name`, `${current}.seen`],
      "the older version's entry was not pruned",
    );
  } finally {
    await m.destroy();
  }
});
