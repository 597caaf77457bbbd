/**
 * What the host's tests share: applying resources in-process through the path `mesh-host
 * apply` takes, and reading the footprint a state directory holds.
 *
 * @module
 */

import { applyBytes, type ApplyResult } from "../../host/apply.ts";
import type { System } from "../../host/system.ts";
import type { FootprintEntry } from "../../host/store.ts";

export type { FootprintEntry };

/** Applies `resources` (trusted input) for `system` with `stateDir`, as `mesh-host apply` does. */
export async function applyResources(
  system: System,
  stateDir: string,
  resources: unknown[],
  options: { dryRun?: boolean } = {},
): Promise<ApplyResult> {
  const bytes = new TextEncoder().encode(JSON.stringify({ version: 1, resources }));
  return await applyBytes(bytes, {
    system,
    stateDir,
    trusted: true,
    version: "test",
    dryRun: options.dryRun,
  });
}

/** The footprint saved in `stateDir` (`store.json`). */
export async function readFootprint(stateDir: string): Promise<FootprintEntry[]> {
  return JSON.parse(await Deno.readTextFile(`${stateDir}/store.json`)).resources;
}
