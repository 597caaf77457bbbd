/**
 * `mesh-host-arch`: the host built for arch. The system and its bundle are pinned here by
 * static imports, so `deno run -A host/arch.ts` behaves exactly like the compiled binary.
 *
 * @module
 */

import { arch } from "../systems/arch.ts";
import bundle from "../bundles/substrate-arch.lock" with { type: "text" };
import { hostMain } from "./cli.ts";

if (import.meta.main) {
  Deno.exit(await hostMain(Deno.args, { system: arch, bundle }));
}
