/**
 * The platform is detected once per process by one module (host/platform.ts), and the appliers,
 * `mesh-host inventory` and the builder use that one answer.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { cli } from "../support/mod.ts";
import {
  containerRuntime,
  detectPlatform,
  probeCounts,
  serviceManager,
} from "../../host/platform.ts";
import { applyResources } from "./support.ts";
import { debian } from "../../systems/debian/mod.ts";
import * as container from "../../resources/container/applier.ts";
import * as service from "../../resources/service/applier.ts";

Deno.test("one detection per process, shared by the appliers", async () => {
  const platform = await detectPlatform();
  // The appliers' modules hand out the platform's own functions, not probes of their own.
  assertEquals(container.containerRuntime, containerRuntime);
  assertEquals(service.serviceManager, serviceManager);
  // Asked again: the same answers (the same objects: nothing was probed twice).
  assert((await serviceManager()) === platform.service);
  if (platform.containers.runtime !== undefined) {
    assert((await containerRuntime()) === platform.containers.runtime);
  }
  // This VM: podman answers, no service manager booted it (the lab machines are where one does).
  assertEquals(platform.containers.runtime?.program, "podman");
  assertEquals(platform.service.manager, undefined);
});

Deno.test("the appliers ask the platform, which probes once per process", async () => {
  const platform = await detectPlatform();
  const before = probeCounts();
  const dir = await Deno.makeTempDir();
  try {
    const r = await applyResources(debian, `${dir}/state`, [
      { id: "s", type: "service", unit: "mesh-none.service", state: "running" },
    ]);
    // The service applier's verdict is the platform's answer, word for word.
    assertEquals(r.problems[0]?.message, platform.service.reason);
    await applyResources(debian, `${dir}/state`, [
      {
        id: "a",
        type: "action",
        command: ["true"],
        verify: ["true"],
        in: "mesh-no-such-container",
      },
    ]);
    await detectPlatform();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assertEquals(probeCounts(), before, "nothing was probed again");
});

Deno.test("inventory says what the appliers use, with the evidence", async () => {
  const here = await detectPlatform();
  const r = await cli("systems/debian/main.ts", ["inventory", "--json"]);
  assertEquals(r.code, 0, r.stderr);
  const shown = JSON.parse(r.stdout).platform;
  assertEquals([shown.service.manager ?? null, shown.service.reason], [
    here.service.manager ?? null,
    here.service.reason,
  ]);
  assertEquals(shown.containers.runtime.program, here.containers.runtime?.program);
  assertEquals(shown.containers.reason.split(";")[0], here.containers.reason.split(";")[0]);
  const text = await cli("systems/debian/main.ts", ["inventory"]);
  assert(text.stdout.startsWith("this host uses:\nservice manager   none: "), text.stdout);
});
