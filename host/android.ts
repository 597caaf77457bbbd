/**
 * `mesh-host-android`: the host built for android. The system and its bundle are pinned here by
 * static imports, so `deno run -A host/android.ts` behaves exactly like the compiled binary.
 *
 * @module
 */

import { android } from "../systems/android.ts";
import bundle from "../bundles/substrate-android.lock" with { type: "text" };
import { hostMain } from "./cli.ts";

if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: android, bundle }));
}
