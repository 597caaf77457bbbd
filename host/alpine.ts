/**
 * `mesh-host-alpine`: the host built for alpine. The system and its bundle are pinned here by
 * static imports, so `deno run -A host/alpine.ts` behaves exactly like the compiled binary.
 *
 * @module
 */

import { alpine } from "../systems/alpine.ts";
import bundle from "../bundles/substrate-alpine.lock" with { type: "text" };
import { hostMain } from "./cli.ts";

if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: alpine, bundle }));
}
