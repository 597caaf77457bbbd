/**
 * `mesh-host-debian`: the host built for debian. The system and its bundle are pinned here by
 * static imports, so `deno run -A host/debian.ts` behaves exactly like the compiled binary.
 *
 * @module
 */

import { debian } from "../systems/debian.ts";
import bundle from "../bundles/substrate-debian.lock" with { type: "text" };
import { hostMain } from "./cli.ts";

if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: debian, bundle }));
}
