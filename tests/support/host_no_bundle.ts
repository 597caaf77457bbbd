/**
 * `mesh-host` for debian carrying **no** bundle, for tests that run the link on this machine:
 * the link applies the carried bundle at start and at every interval, and the real Debian bundle
 * (/var/lib/mesh, /usr/lib/mesh, /etc/mesh) must never be applied to the machine the tests run
 * on. Everything else is `systems/debian/main.ts`.
 *
 * @module
 */

import { debian } from "../../systems/debian/mod.ts";
import { hostMain } from "../../host/cli.ts";

if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: debian }));
}
