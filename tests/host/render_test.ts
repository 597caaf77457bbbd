/**
 * The text a refused source is said with (host/render.ts): what was refused and why, never
 * "0 of 0".
 *
 * @module
 */

import type { ApplyResult } from "../../host/apply.ts";
import { applyText } from "../../host/render.ts";
import { assert, assertEquals, assertStringIncludes } from "../support/assert.ts";

const refused = (total: number, messages: string[]): ApplyResult => ({
  source: "local",
  outcome: "refused",
  applied: 0,
  total,
  changes: [],
  problems: messages.map((message, i) => ({ path: `resources[${i}].type`, message })),
  declaration: "sha256:abc",
});

Deno.test("a refused source says what was refused and why, never 0 of 0", () => {
  const unread = applyText(refused(0, ["type must be one of: file, directory"]));
  const head = unread.split("\n")[0]!;
  assertEquals(
    head,
    "source local: refused, nothing applied: resources[0].type: type must be one of: file, " +
      "directory (declaration sha256:abc)",
  );
  assert(!unread.includes("0 of 0"), unread);
  const counted = applyText(refused(3, ["held by source web", "another"])).split("\n")[0]!;
  assertStringIncludes(counted, "refused, none of its 3 resources applied: ");
  assertStringIncludes(counted, "held by source web (and 1 more, below)");
});

Deno.test("a refused source read from a file names the file; an applied one does not need to", () => {
  const withFile = applyText(refused(1, ["bad"]), { file: "/etc/mesh/declarations/web.json" });
  assertStringIncludes(
    withFile.split("\n")[0]!,
    'source local (file "/etc/mesh/declarations/web.json"): refused, none of its 1 resource',
  );
  const applied = applyText({ ...refused(1, []), outcome: "applied", applied: 1 }, {
    file: "/etc/mesh/declarations/web.json",
  });
  assert(applied.startsWith("source local: applied 1 of 1"), applied);
});
