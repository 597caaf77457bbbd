/**
 * The boot view asks `podman container inspect` for just the fields it reads
 * (`PODMAN_INSPECT_FORMAT`, one JSON object a line): on this machine's real podman, what it reads
 * from that is what it reads from the whole inspect document, for every restart policy, the
 * systemd unit label, labels that need quoting, and containers running or not.
 */

import { assertEquals } from "../support/assert.ts";
import { ensureImage, IMAGE, TEST_LABEL, uniqueName } from "../support/mod.ts";
import { run } from "../../lib/command.ts";
import {
  inspectLinesAsArray,
  parseInspect,
  PODMAN_INSPECT_FORMAT,
} from "../../reconcile/observe/boot.ts";

Deno.test("podman container inspect --format: what the boot view reads is the whole document's", async () => {
  await ensureImage();
  const names: string[] = [];
  const make = async (verb: "create" | "run", args: string[]) => {
    const name = uniqueName("mesh-inspect");
    names.push(name);
    await run([
      "podman",
      verb,
      ...(verb === "run" ? ["-d"] : []),
      "--name",
      name,
      "--label",
      TEST_LABEL,
      ...args,
      IMAGE,
      "sleep",
      "600",
    ]);
  };
  try {
    await make("run", ["--restart", "always", "--label", "PODMAN_SYSTEMD_UNIT=web.service"]);
    await make("create", ["--restart", "on-failure"]);
    await make("create", ["--restart", "unless-stopped", "--label", 'odd="quoted"\tand\\more']);
    await make("create", ["--restart", "no"]);
    await make("create", []);
    const whole = await run(["podman", "container", "inspect", ...names]);
    const narrow = await run([
      "podman",
      "container",
      "inspect",
      "--format",
      PODMAN_INSPECT_FORMAT,
      ...names,
    ]);
    const of = { account: "root", runtime: "podman" as const };
    const expected = await parseInspect(whole.stdout, of);
    assertEquals(await parseInspect(inspectLinesAsArray(narrow.stdout), of), expected);
    // and it is not empty: every policy and the unit label are there
    assertEquals(
      expected.map((c) => [c.state, c.restart, c.systemdUnit ?? null]),
      [
        ["running", "always", "web.service"],
        ["created", "on-failure", null],
        ["created", "unless-stopped", null],
        ["created", "no", null],
        ["created", "", null],
      ],
    );
  } finally {
    await run(["podman", "rm", "-f", "-t", "0", ...names], { allowFailure: true });
  }
});

Deno.test("inspectLinesAsArray: one JSON object a line, as an array; nothing is an empty one", () => {
  assertEquals(inspectLinesAsArray(""), "[]");
  assertEquals(inspectLinesAsArray('{"a":1}\n{"b":"x\\ny"}\n'), '[{"a":1},{"b":"x\\ny"}]');
});
