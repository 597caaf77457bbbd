/**
 * packaging/mesh-reconcile-watch@.service and .timer: one watcher per watched machine on the
 * control plane's machine (docs/operations.md, "The watcher"). The instances verify without a word
 * (systemd-analyze verify) and each keeps its own settings, state and stamp, named by the instance.
 * Run end to end by tests/lab/fleet_test.ts.
 */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";

const hasSystemdAnalyze = await new Deno.Command("systemd-analyze", { args: ["--version"] })
  .output().then((o) => o.success, () => false);

Deno.test({
  name: "packaging: the mesh-reconcile-watch@ instances verify, each with its own files",
  ignore: !hasSystemdAnalyze,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mesh-watch-template-" });
    try {
      const binary = `${dir}/mesh-reconcile`;
      await Deno.writeTextFile(binary, "#!/bin/sh\nexit 0\n");
      await Deno.chmod(binary, 0o755);
      const units: string[] = [];
      for (const kind of ["service", "timer"]) {
        const text = await Deno.readTextFile(`${ROOT}packaging/mesh-reconcile-watch@.${kind}`);
        const path = `${dir}/mesh-reconcile-watch@web1.${kind}`;
        await Deno.writeTextFile(path, text.replaceAll("/usr/lib/mesh/mesh-reconcile", binary));
        units.push(path);
      }
      const out = await new Deno.Command("systemd-analyze", {
        args: ["verify", ...units],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assertEquals([out.code, said], [0, ""]);
      const service = await Deno.readTextFile(`${ROOT}packaging/mesh-reconcile-watch@.service`);
      assertMatch(service, /^EnvironmentFile=\/etc\/default\/mesh-reconcile-watch-%i$/m);
      assertMatch(service, /^StateDirectory=mesh\/reconcile-watch\/%i$/m);
      assertMatch(
        service,
        /^ExecStart=\S+ watch \$\{MESH_WATCH_SOURCE\} .* --state \/var\/lib\/mesh\/reconcile-watch\/%i\/state\.json --stamp \/var\/lib\/mesh\/reconcile-watch\/%i\/stamp /m,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
