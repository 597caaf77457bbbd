/**
 * The `[Install]` section as systemd reads it: fragment then drop-ins, an empty assignment
 * resetting the list; what would pull the unit in, and the words for a unit nothing would.
 */
import { assert, assertEquals } from "../support/assert.ts";
import { aliasOnlyReason, parseInstallSection, pullingTargets } from "../../lib/unit_install.ts";

Deno.test("install targets from a fragment and its drop-ins; an empty assignment resets", () => {
  const fragment = "[Unit]\nWantedBy=not-here.target\n[Install]\nWantedBy=multi-user.target \\\n" +
    "  graphical.target\nAlias=x2.service\n# WantedBy=commented.target\n";
  assertEquals(pullingTargets(parseInstallSection([fragment])), [
    "multi-user.target",
    "graphical.target",
  ]);
  const reset = "[Install]\nWantedBy=\n";
  const install = parseInstallSection([fragment, reset]);
  assertEquals(pullingTargets(install), []);
  const reason = aliasOnlyReason("x.service", install);
  assert(reason?.includes("only Alias=x2.service"), reason);
  assert(reason?.includes("nothing would start it at boot"), reason);
  const required = parseInstallSection([fragment, reset, "[Install]\nRequiredBy=a.target\n"]);
  assertEquals(aliasOnlyReason("x.service", required), undefined);
  const none = aliasOnlyReason("t.timer", parseInstallSection(["[Timer]\nOnCalendar=daily\n"]));
  assert(none?.includes("link it nowhere"), none);
});
