/**
 * The debian host carrying only the layout part of the Debian bundle (its directories and files),
 * for the launcher's lab test: that machine shares the VM's network, where the whole substrate
 * would bind the VM's own PostgreSQL and RabbitMQ ports. The whole bundle is applied in
 * tests/lab/fleet_test.ts, on a machine with its own address.
 *
 * @module
 */

import { debian } from "../../systems/debian/mod.ts";
import carried from "../../bundles/substrate-debian.lock" with { type: "text" };
import { hostMain } from "../../host/cli.ts";

const bundle = JSON.parse(carried) as { declaration: { resources: { type: string }[] } };
bundle.declaration.resources = bundle.declaration.resources.filter((r) =>
  r.type === "directory" || r.type === "file"
);
if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: debian, bundle: JSON.stringify(bundle) }));
}
