/**
 * lib/init_system.ts: one rule for which init booted a machine, read by mesh-host (its service
 * applier, through host/platform.ts) and by mesh-reconcile (sdBooted, openrcBooted): on every
 * fixture below the two views agree.
 */

import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";
import { openrcBooted, sdBooted, serviceManagerAt } from "../../lib/init_system.ts";
import { detectServiceManager } from "../../host/platform.ts";

/** Each fixture: what it makes under the root, and the manager that runs there. */
const FIXTURES: { what: string; make: (root: string) => Promise<void>; manager?: string }[] = [
  { what: "nothing", make: async () => {} },
  {
    what: "a file where systemd's directory is",
    make: async (root) => {
      await Deno.mkdir(`${root}/run/systemd`, { recursive: true });
      await Deno.writeTextFile(`${root}/run/systemd/system`, "");
    },
  },
  {
    what: "/run/openrc alone (a plain rc-status makes it)",
    make: (root) => Deno.mkdir(`${root}/run/openrc`, { recursive: true }),
  },
  {
    what: "OpenRC's softlevel",
    make: async (root) => {
      await Deno.mkdir(`${root}/run/openrc`, { recursive: true });
      await Deno.writeTextFile(`${root}/run/openrc/softlevel`, "default\n");
    },
    manager: "openrc",
  },
  {
    what: "sd_booted's directory",
    make: (root) => Deno.mkdir(`${root}/run/systemd/system`, { recursive: true }),
    manager: "systemd",
  },
  {
    what: "both (systemd is asked first)",
    make: async (root) => {
      await Deno.mkdir(`${root}/run/systemd/system`, { recursive: true });
      await Deno.mkdir(`${root}/run/openrc`, { recursive: true });
      await Deno.writeTextFile(`${root}/run/openrc/softlevel`, "default\n");
    },
    manager: "systemd",
  },
];

for (const fixture of FIXTURES) {
  Deno.test(`init system: ${fixture.what}: host and reconcile read the same manager`, async () => {
    const root = await Deno.makeTempDir({ prefix: "mesh-init-" });
    try {
      await fixture.make(root);
      const host = (await detectServiceManager(root)).manager;
      assertEquals(host, fixture.manager);
      assertEquals(
        serviceManagerAt(`${root}/`).manager,
        fixture.manager,
        "a trailing / is one root",
      );
      const systemd = sdBooted(root);
      const openrc = openrcBooted(root);
      const reconcile = systemd.booted ? "systemd" : openrc.booted ? "openrc" : undefined;
      assertEquals(reconcile, host, `${systemd.reason}; ${openrc.reason}`);
      assertEquals(systemd.method, `stat ${root}/run/systemd/system`);
      assertEquals(openrc.method, `stat ${root}/run/openrc/softlevel`);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}

Deno.test("init system: the reasons name the path and what was found there", async () => {
  const root = await Deno.makeTempDir({ prefix: "mesh-init-" });
  try {
    assertStringIncludes(sdBooted(root).reason, `${root}/run/systemd/system does not exist`);
    assertStringIncludes(
      openrcBooted(root).reason,
      `${root}/run/openrc/softlevel does not exist: OpenRC did not boot this machine`,
    );
    const none = serviceManagerAt(root);
    assertStringIncludes(none.reason, "Neither systemd nor OpenRC runs this machine");
    await Deno.mkdir(`${root}/run/systemd`, { recursive: true });
    await Deno.writeTextFile(`${root}/run/systemd/system`, "");
    assertStringIncludes(sdBooted(root).reason, "is not a directory (sd_booted(3))");
    assert(serviceManagerAt(root).reason.includes("is not a directory"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
