/**
 * `mesh-host-android`: the host built for android. The system and its bundle are pinned here by
 * imports (the system's appliers by a dynamic import of a static specifier: loaded only when a
 * command runs, and bundled all the same), so `deno run -A systems/android/main.ts` behaves exactly like
 * the compiled binary.
 *
 * @module
 */

import bundle from "../../bundles/substrate-android.lock" with { type: "text" };
import { hostMain } from "../../host/cli.ts";

if (import.meta.main) {
  const system = {
    name: "android",
    load: async () => (await import("./mod.ts")).android,
  } as const;
  Deno.exit(await hostMain(Deno.args, { system, bundle }));
}
