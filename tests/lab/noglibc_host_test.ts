/**
 * The alpine and android one-file hosts where they are meant to run, on lab machines without
 * glibc (tests/lab/noglibc.ts), copied in as the only thing installed:
 *
 * - `musl` (Alpine-like, busybox, OpenRC): the alpine host detects OpenRC, applies files,
 *   directories and an OpenRC service (convergent: the second apply changes nothing); installed
 *   as docs/operations.md says for OpenRC (the file in /usr/lib/mesh, launcher.sh,
 *   packaging/mesh-host.openrc, its settings in /etc/conf.d) it runs the link against this
 *   machine's broker, enrolled by mesh-control, and applies control's signed push; a new version
 *   that is a truncated copy of the file, the symlink repointed to it, is noticed by the running
 *   link (which stands aside), refused at every start (exit 3), and the launcher rolls back to the
 *   known-good version, whose link applies the next push. The debian file
 *   there refuses with exit 2, naming the files that carry their own glibc.
 * - `android` (read-only root, /system/bin/sh, /data): the android host runs `--version`,
 *   `schema` and an apply of files and directories under /data with its cache and state there,
 *   started by its own first line (`#!/system/bin/sh`), and refuses a service or a package naming
 *   what it applies.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import "../support/mod.ts";
import { ROOT } from "../support/mod.ts";
import { oneFileHost } from "../support/onefile.ts";
import { bootLab, type LabMachine } from "./mod.ts";
import { mustControl, uniqueNode, waitFor } from "../control/support.ts";
import { enrollPrinted, withVhost } from "../control/vhost.ts";
import { TEST_KEYS } from "../support/signing.ts";

/** Runs `script` with the machine's sh; fails with its transcript when it exits non-zero. */
async function sh(m: LabMachine, script: string, env: Record<string, string> = {}) {
  const r = await m.exec(["sh", "-c", script], { allowFailure: true, env });
  if (r.code !== 0) {
    throw new Error(`in ${m.name} (exit ${r.code}): ${script}\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

/** Writes `text` to `path` in the machine (through a file copied in: no quoting). */
async function put(m: LabMachine, path: string, text: string, mode = "0644") {
  const local = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(local, text);
    await m.copyIn(local, path);
    await sh(m, `chmod ${mode} '${path}'`);
  } finally {
    await Deno.remove(local);
  }
}

interface Applied {
  outcome: string;
  changes: { id: string; change: string }[];
  problems?: { id: string; message: string }[];
}

interface Machine {
  name: string;
  verdict: string;
  reportedGeneration?: number;
}

async function board(env: Record<string, string>, node: string): Promise<Machine | undefined> {
  await mustControl(env, ["ingest", "--drain"]);
  const out = await mustControl(env, ["board", "--json", "--grace", "60s"]);
  return (JSON.parse(out.stdout).machines as Machine[]).find((m) => m.name === node);
}

const LIB = "/usr/lib/mesh";

Deno.test({
  name:
    "the alpine host on a machine without glibc: applies, links, and is rolled back from a truncated copy",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const [alpine, debian] = [await oneFileHost("alpine"), await oneFileHost("debian")];
    const bytes = await Deno.readFile(alpine);
    const truncated = await Deno.makeTempFile({ prefix: "mesh-host-truncated-" });
    await Deno.writeFile(truncated, bytes.subarray(0, bytes.length - 4096));
    const m = await bootLab("musl");
    try {
      // Installed as docs/operations.md says for OpenRC (busybox has no `install`).
      await sh(m, `mkdir -p ${LIB} /etc/mesh /etc/conf.d /srv`);
      await m.copyIn(alpine, `${LIB}/mesh-host-0.1.0`);
      await m.copyIn(`${ROOT}launcher.sh`, `${LIB}/launcher.sh`);
      await m.copyIn(`${ROOT}packaging/mesh-host.openrc`, "/etc/init.d/mesh-host");
      await m.copyIn(debian, "/root/mesh-host-debian");
      await sh(
        m,
        `chmod 0755 ${LIB}/mesh-host-0.1.0 ${LIB}/launcher.sh /etc/init.d/mesh-host /root/mesh-host-debian
ln -sfn mesh-host-0.1.0 ${LIB}/mesh-host
ln -s ${LIB}/mesh-host /usr/bin/mesh-host`,
      );
      // The debian file uses the machine's glibc: there is none.
      const wrong = await m.exec(["/root/mesh-host-debian", "--version"], { allowFailure: true });
      assertEquals(wrong.code, 2, wrong.stderr);
      assertStringIncludes(
        wrong.stderr,
        "this file is built for debian on x86_64 with glibc, and this machine has no glibc " +
          "(no /lib64/ld-linux-x86-64.so.2), as on Alpine or Android: copy mesh-host-alpine-x86_64",
      );

      const inventory = JSON.parse(await sh(m, "mesh-host inventory --json")) as {
        platform: { service: { manager?: string; reason: string } };
      };
      assertEquals(inventory.platform.service.manager, "openrc", JSON.stringify(inventory));

      // Files, directories and an OpenRC service, applied twice: the second changes nothing.
      const declaration = {
        version: 1,
        resources: [
          { id: "d", type: "directory", path: "/srv/alpine", mode: "0750" },
          { id: "f", type: "file", path: "/srv/alpine/hello", mode: "0640", content: "hello\n" },
          {
            id: "script",
            type: "file",
            path: "/etc/init.d/labsvc",
            mode: "0755",
            content: "#!/sbin/openrc-run\ncommand=/bin/sleep\ncommand_args=1000\n" +
              "command_background=true\npidfile=/run/labsvc.pid\n",
          },
          { id: "svc", type: "service", unit: "labsvc", state: "running", boot: "enabled" },
        ],
      };
      await put(m, "/root/d.json", JSON.stringify(declaration));
      const first = JSON.parse(await sh(m, "mesh-host apply /root/d.json --json")) as Applied;
      assertEquals(first.outcome, "applied", JSON.stringify(first));
      assertEquals(
        first.changes.filter((c) => c.change !== "unchanged").map((c) => c.id).sort(),
        ["d", "f", "script", "svc"],
      );
      const second = JSON.parse(await sh(m, "mesh-host apply /root/d.json --json")) as Applied;
      assertEquals(second.changes.filter((c) => c.change !== "unchanged"), []);
      assertEquals(
        (await sh(
          m,
          "stat -c %a /srv/alpine /srv/alpine/hello; rc-service labsvc status; rc-update show default | grep labsvc",
        )).split("\n").map((l) => l.replace(/ +/g, " ").trim()).filter(Boolean),
        ["750", "640", "* status: started", "labsvc | default"],
      );

      await withVhost(async (_inv, vhost) => {
        const node = uniqueNode("alpine");
        const { url } = await enrollPrinted(vhost, node, { extra: ["--system", "alpine"] });
        await put(m, "/etc/mesh/control.pub", await Deno.readTextFile(TEST_KEYS.controlKey));
        await put(
          m,
          "/etc/conf.d/mesh-host",
          `MESH_HOST_ARGS="link --broker ${url} --every 3s --reconcile-result none --node ${node}"\n` +
            "MESH_RESTART_DELAY=0\n",
          "0600",
        );
        await sh(m, "rc-update add mesh-host default && rc-service mesh-host start");
        const dir = await Deno.makeTempDir();
        try {
          const push = async (content: string, generation: number) => {
            await Deno.writeTextFile(
              `${dir}/m.json`,
              JSON.stringify({
                version: 1,
                resources: [{ id: "p", type: "file", path: "/srv/pushed", content, mode: "0644" }],
              }),
            );
            await mustControl(vhost.env, ["module", "add", `${dir}/m.json`, "--name", `m-${node}`]);
            if (generation === 1) {
              await mustControl(vhost.env, ["node", "assign", node, `m-${node}`]);
            }
            await mustControl(vhost.env, ["push", node]);
            await waitFor(`push ${generation} applied on the musl machine`, async () => {
              const seen = await board(vhost.env, node);
              return seen?.verdict === "ok" && seen.reportedGeneration === generation;
            }, 90_000);
            assertEquals(await sh(m, "cat /srv/pushed"), content);
          };
          await push("first\n", 1);
          assertEquals((await sh(m, "cat /var/lib/mesh/host/known-good")).trim(), "0.1.0");

          // A new version that is a truncated copy: every start of it exits 3, and after three
          // the launcher repoints to the known-good version, whose link applies the next push.
          await m.copyIn(truncated, `${LIB}/mesh-host-0.2.0`);
          await sh(m, `chmod 0755 ${LIB}/mesh-host-0.2.0`);
          const refused = await m.exec([`${LIB}/mesh-host-0.2.0`, "--version"], {
            allowFailure: true,
          });
          assertEquals(refused.code, 3);
          assertStringIncludes(refused.stderr, "it is truncated or altered; copy it again");
          // Repointed, not restarted: the running link (started through the carried loader) notices
          // at its next interval that its file is another one, and stands aside (exit 0).
          await sh(m, `ln -sfn mesh-host-0.2.0 ${LIB}/mesh-host`);
          await waitFor("the launcher rolled back to 0.1.0", async () => {
            const link = await m.exec(["readlink", `${LIB}/mesh-host`]);
            return link.stdout.trim() === "mesh-host-0.1.0";
          }, 60_000);
          await push("second\n", 2);
          const ps = await sh(m, "ps -o pid,args | grep -c '[m]ain.js link' || true");
          assert(Number(ps.trim()) >= 1, `no link runs after the rollback: ${ps}`);
        } finally {
          await m.exec(["rc-service", "mesh-host", "stop"], { allowFailure: true });
          await Deno.remove(dir, { recursive: true });
        }
      });
    } finally {
      await m.destroy();
      await Deno.remove(truncated);
    }
  },
});

Deno.test("the android host in an Android-like machine: runs from /data, applies files and directories, refuses a service and a package", async () => {
  const [android, debian] = [await oneFileHost("android"), await oneFileHost("debian")];
  const m = await bootLab("android");
  // The cache and the state on /data, as docs/operations.md says for Android: / is read-only.
  const env = { MESH_RUNTIME_CACHE: "/data/local/tmp/mesh/runtime" };
  const state = ["--state-dir", "/data/local/tmp/mesh/host"];
  try {
    await m.copyIn(android, "/data/local/tmp/mesh-host");
    await m.copyIn(debian, "/data/local/tmp/mesh-host-debian");
    await sh(m, "chmod 0755 /data/local/tmp/mesh-host /data/local/tmp/mesh-host-debian");
    // Started by its own first line (#!/system/bin/sh): there is no /bin/sh.
    const version = await m.exec(["/data/local/tmp/mesh-host", "--version"], { env });
    assertEquals(version.stdout.trim(), "0.1.0");
    const schema = await m.exec(["/data/local/tmp/mesh-host", "schema"], { env });
    assertStringIncludes(schema.stdout, '"directory"');
    const wrong = await m.exec(["sh", "/data/local/tmp/mesh-host-debian", "--version"], {
      allowFailure: true,
      env,
    });
    assertEquals(wrong.code, 2, wrong.stderr);
    assertStringIncludes(wrong.stderr, "this machine has no glibc");

    const base = "/data/local/tmp/srv";
    const resources = [
      { id: "d", type: "directory", path: base, mode: "0750" },
      { id: "f", type: "file", path: `${base}/hello`, mode: "0640", content: "hello\n" },
    ];
    await put(m, "/data/local/tmp/d.json", JSON.stringify({ version: 1, resources }));
    const apply = async () =>
      JSON.parse(
        (await m.exec([
          "/data/local/tmp/mesh-host",
          "apply",
          "/data/local/tmp/d.json",
          "--json",
          ...state,
        ], {
          env,
        })).stdout,
      ) as Applied;
    const first = await apply();
    assertEquals(first.outcome, "applied", JSON.stringify(first));
    assertEquals(first.changes.map((c) => c.change).sort(), ["created", "created"]);
    assertEquals((await apply()).changes.filter((c) => c.change !== "unchanged"), []);
    assertEquals(
      await sh(m, `cat ${base}/hello; stat -c %a ${base} ${base}/hello`),
      "hello\n750\n640\n",
    );

    await put(
      m,
      "/data/local/tmp/bad.json",
      JSON.stringify({
        version: 1,
        resources: [
          ...resources,
          { id: "s", type: "service", unit: "x", state: "running" },
          { id: "p", type: "package", package: "curl" },
        ],
      }),
    );
    const refused = await m.exec(
      ["/data/local/tmp/mesh-host", "apply", "/data/local/tmp/bad.json", "--json", ...state],
      { env, allowFailure: true },
    );
    assertEquals(refused.code, 2, refused.stderr + refused.stdout);
    const r = JSON.parse(refused.stdout) as Applied;
    assertEquals(r.outcome, "refused");
    assertEquals(r.problems?.map((p) => p.id), ["s", "p"]);
    for (const p of r.problems ?? []) {
      assertStringIncludes(p.message, "android refuses");
      assertStringIncludes(p.message, "(it applies directory, file, action)");
    }
  } finally {
    await m.destroy();
  }
});
