/**
 * `deno task lab up|down|status`: the lab for people (tests boot their own machines).
 *
 * - `up [systemd|openrc]`: builds what is missing, starts the registry and boots one machine of
 *   each kind (or the one named), printing how to enter them.
 * - `down`: removes every lab machine and stops the registry.
 * - `status`: lab machines running, images cached, registry answering.
 */

import { run } from "../lib/command.ts";
import "../tests/support/mod.ts";
import {
  bootLab,
  ensureLabImage,
  ensureRegistry,
  LAB_CACHE,
  labImage,
  type LabKind,
  REGISTRY,
  runningLabs,
  stopRegistry,
} from "../tests/lab/mod.ts";

const [command = "status", which] = Deno.args;
const kinds: LabKind[] = which === "systemd" || which === "openrc"
  ? [which]
  : ["systemd", "openrc"];
switch (command) {
  case "up": {
    await ensureRegistry();
    for (const kind of kinds) {
      await ensureLabImage(kind);
      const m = await bootLab(kind, { name: `mesh-lab-${kind}` }).catch((error) => {
        if (String(error).includes("already in use")) return undefined;
        throw error;
      });
      console.log(
        m
          ? `${kind}: up as ${m.name}; enter with: podman exec -it ${m.name} bash`
          : `${kind}: already up`,
      );
    }
    console.log(`registry: ${REGISTRY}`);
    break;
  }
  case "down": {
    for (const name of await runningLabs()) {
      await run(["podman", "rm", "-f", "-t", "0", name]);
      console.log(`removed ${name}`);
    }
    await stopRegistry();
    console.log("registry stopped");
    break;
  }
  case "status": {
    console.log(`machines: ${(await runningLabs()).join(", ") || "none"}`);
    for (const kind of ["systemd", "openrc"] as const) {
      const image = await labImage(kind);
      const has =
        (await run(["podman", "image", "exists", image], { allowFailure: true })).code === 0;
      console.log(`image ${image}: ${has ? "built" : "not built"} (cache ${LAB_CACHE})`);
    }
    const answers = await fetch(`http://${REGISTRY}/v2/`).then(
      (r) => (r.body?.cancel(), r.ok),
      () => false,
    );
    console.log(`registry ${REGISTRY}: ${answers ? "answers" : "not running"}`);
    break;
  }
  default:
    console.error("usage: deno task lab up [systemd|openrc] | down | status");
    Deno.exit(2);
}
