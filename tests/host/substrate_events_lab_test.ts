/**
 * The Debian substrate keeps podman's events out of the journal, in the lab: on a systemd machine
 * podman 4.3 writes an event to journald for every `podman exec` (the substrate's probes run
 * several at every apply); once the host has applied the bundle's container runtime
 * configuration (the `container-runtime-config` and `container-runtime-events` resources of
 * `debianBundle`, the function the committed lock is written with), the same execs add no line
 * with SYSLOG_IDENTIFIER=podman to the journal and go to podman's bounded events file instead.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { bootLab, type LabMachine, pinnedBusybox } from "../lab/mod.ts";
import { debianBundle, PODMAN_EVENTS_CONF } from "../../scripts/substrate.ts";

interface Resource {
  id: string;
  type: string;
  path?: string;
}

/** Lines podman wrote to the journal so far. */
async function podmanLines(m: LabMachine): Promise<number> {
  await m.exec(["journalctl", "--sync"], { allowFailure: true });
  const r = await m.exec(["journalctl", "--no-pager", "-o", "cat", "SYSLOG_IDENTIFIER=podman"], {
    allowFailure: true,
  });
  return r.stdout.split("\n").filter((l) => l.trim() !== "").length;
}

async function execs(m: LabMachine, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await m.exec(["podman", "exec", "mesh-events-probe", "true"]);
}

Deno.test({
  name: "the substrate's podman configuration keeps podman's events out of the journal",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const image = await pinnedBusybox();
    const bundle = debianBundle({ store: image, broker: image, control: image }) as {
      declaration: { resources: Resource[] };
    };
    const resources = bundle.declaration.resources.filter((r) =>
      r.id === "container-runtime-config" || r.id === "container-runtime-events"
    );
    assertEquals(resources.map((r) => r.path), [
      "/etc/containers/containers.conf.d",
      PODMAN_EVENTS_CONF,
    ]);
    const m = await bootLab("systemd");
    try {
      await m.exec(["podman", "run", "-d", "--name", "mesh-events-probe", image, "sleep", "600"], {
        timeoutMs: 300_000,
      });
      // Before: every exec is in the journal (else this test would prove nothing).
      const before = await podmanLines(m);
      await execs(m, 5);
      const grown = (await podmanLines(m)) - before;
      assert(grown >= 5, `podman wrote ${grown} lines to the journal for 5 execs before`);

      await m.exec(["sh", "-c", "mkdir -p /tmp/decl"]);
      await m.exec([
        "sh",
        "-c",
        `cat >/tmp/decl/events.json <<'EOF'\n${JSON.stringify({ version: 1, resources })}\nEOF`,
      ]);
      const applied = await m.host("systems/debian/main.ts", [
        "apply",
        "/tmp/decl/events.json",
        "--source",
        "substrate-events",
        "--json",
      ]);
      const result = JSON.parse(applied.stdout) as { outcome: string };
      assertEquals(result.outcome, "applied", applied.stdout + applied.stderr);

      // After: the same execs add nothing to the journal, and podman's events file has them.
      const after = await podmanLines(m);
      await execs(m, 5);
      await new Promise((r) => setTimeout(r, 1000));
      assertEquals((await podmanLines(m)) - after, 0, "podman still writes events to the journal");
      const events = await m.exec([
        "podman",
        "events",
        "--stream=false",
        "--filter",
        "event=exec",
        "--filter",
        "container=mesh-events-probe",
      ]);
      assert(
        events.stdout.split("\n").filter((l) => l.includes("exec")).length >= 5,
        `podman's events file lacks the execs: ${events.stdout}`,
      );
    } finally {
      await m.destroy();
    }
  },
});
