/**
 * `deno task demo`: a real report of the machine it runs on.
 *
 * 1. `mesh-reconcile init` adopts the live machine into a registry (in a temporary directory).
 * 2. `mesh-reconcile run` against that registry: what an operator starts from (zero drift).
 * 3. `mesh-reconcile run` against a registry that declares nothing: every container, port and
 *    address on this machine is rogue, which is what the anti-join says of an undeclared estate.
 *
 * The proxy is asked at localhost:2019 when something answers there; otherwise the demo says
 * so and runs with `--caddy-admin none`. On a machine not booted with systemd (sd_booted(3):
 * `/run/systemd/system` is not a directory) what a reboot would produce cannot be read, and a run
 * would say so and exit 2: the demo says why and runs with `--boot none`.
 */

import { main } from "../reconcile/main.ts";

const say = (s: string) => console.log(`\n=== ${s}\n`);
let admin = "localhost:2019";
try {
  await fetch(`http://${admin}/config/`, { signal: AbortSignal.timeout(2000) }).then((r) =>
    r.body?.cancel()
  );
} catch {
  say("No Caddy admin API answers at localhost:2019: running with --caddy-admin none");
  admin = "none";
}
const booted = await Deno.stat("/run/systemd/system").then((i) => i.isDirectory, () => false);
const boot = booted ? [] : ["--boot", "none"];
if (!booted) {
  say(
    "This machine is not booted with systemd (/run/systemd/system is not a directory), so what " +
      "a reboot would produce cannot be read: running with --boot none",
  );
}
const dir = await Deno.makeTempDir({ prefix: "mesh-demo-" });
try {
  const registry = `${dir}/registry.yaml`;
  say(`mesh-reconcile init --output ${registry} --caddy-admin ${admin}`);
  let code = await main(["init", "--output", registry, "--caddy-admin", admin]);
  if (code !== 0) Deno.exit(code);
  console.log(await Deno.readTextFile(registry));
  const flags = ["--caddy-admin", admin, ...boot].join(" ");
  say(`mesh-reconcile run --registry ${registry} --stamp ${dir}/stamp ${flags}`);
  code = await main([
    "run",
    "--registry",
    registry,
    "--stamp",
    `${dir}/stamp`,
    "--caddy-admin",
    admin,
    ...boot,
  ]);
  console.log(
    `(exit ${code}; stamp: ${await Deno.readTextFile(`${dir}/stamp`).then(
      (s) => s.trimEnd(),
      () => "not written",
    )})`,
  );
  const empty = `${dir}/empty.yaml`;
  await Deno.writeTextFile(
    empty,
    "# declares nothing: everything running here is rogue\nversion: 1\naccounts: [root]\nservices: {}\n",
  );
  say(`mesh-reconcile run --registry ${empty} ${flags}`);
  code = await main(["run", "--registry", empty, "--caddy-admin", admin, ...boot]);
  console.log(`(exit ${code})`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
