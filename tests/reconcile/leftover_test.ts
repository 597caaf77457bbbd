/**
 * Leftover containers: ones that exist and do not run (a `--rm` container that came back as
 * `Created`, one `Exited` by hand) are their own finding (`leftover`), never a rogue running
 * container and never silent. Real podman on this VM.
 */
import { assert, assertEquals } from "../support/assert.ts";
import {
  ensureImage,
  IMAGE,
  removeContainer,
  startContainer,
  TEST_LABEL,
  uniqueName,
} from "../support/mod.ts";
import { run } from "../../lib/command.ts";
import { parseRegistry } from "../../reconcile/registry.ts";
import { reconcile } from "../../reconcile/run.ts";

Deno.test("created and exited containers are leftovers; a claimed one is missing, saying it exists", async () => {
  await ensureImage();
  const created = uniqueName("leftover-created");
  const exited = uniqueName("leftover-exited");
  const declared = uniqueName("leftover-declared");
  const job = uniqueName("leftover-job");
  try {
    // what a reboot leaves of a `podman run --rm` container: created, never started
    await run([
      "podman",
      "create",
      "--rm",
      "--name",
      created,
      "--label",
      TEST_LABEL,
      IMAGE,
      "true",
    ]);
    for (const name of [exited, declared, job]) {
      await startContainer(name);
      await run(["podman", "stop", "-t", "0", name]);
    }
    const registry = parseRegistry(`version: 1
accounts: [root]
services:
  web:
    kind: service
    user: root
    container: ${declared}
  job:
    kind: batch
    timer: job.timer
    user: root
    container: ${job}
`);
    const result = await reconcile(registry, {
      registryPath: "r.yaml",
      caddyAdmin: "none",
      bootView: "none",
      runtimes: ["podman"],
    });
    const ours = (name: string) => result.findings.filter((f) => f.subject === `root/${name}`);
    const c = ours(created);
    assertEquals(c.map((f) => [f.check, f.direction]), [["leftover", "rogue"]], JSON.stringify(c));
    assert(c[0]!.detail.includes("is not running (created"), c[0]!.detail);
    assert(c[0]!.detail.includes("no entry claims it"), c[0]!.detail);
    const e = ours(exited);
    assertEquals(e.map((f) => [f.check, f.direction]), [["leftover", "rogue"]], JSON.stringify(e));
    assert(e[0]!.detail.includes("is not running (exited"), e[0]!.detail);
    const d = ours(declared);
    assertEquals(d.map((f) => [f.check, f.direction, f.service]), [[
      "container",
      "missing",
      "web",
    ]]);
    assert(d[0]!.detail.includes("is not running (it exists: exited"), d[0]!.detail);
    assertEquals(ours(job), [], "a batch entry's container, stopped, is its own");
  } finally {
    for (const name of [created, exited, declared, job]) await removeContainer(name);
  }
});
