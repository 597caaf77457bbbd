/**
 * `mesh-host` built for no system: it refuses everything and names the hosts that exist, since
 * a host that guessed its system would apply the wrong system's rules.
 *
 * @module
 */

import { SYSTEM_NAMES } from "./system.ts";

/** The refusal a host built for no system gives, whatever it was asked. */
export function refusal(): string {
  return `mesh-host: this host was built for no system and refuses everything; the hosts that exist are ${
    SYSTEM_NAMES.map((s) => `mesh-host-${s} (systems/${s}/main.ts)`).join(", ")
  }\n`;
}

if (import.meta.main) {
  Deno.stderr.writeSync(new TextEncoder().encode(refusal()));
  Deno.exit(2);
}
