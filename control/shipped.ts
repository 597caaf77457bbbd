/**
 * Modules shipped with the control plane: embedded in `mesh-control` and installed (or updated
 * to this version's content) by `migrate`, with origin `shipped`.
 *
 * @module
 */

import hostState from "./modules/mesh-host-state.json" with { type: "text" };
import { declarationDigest, parse } from "../lib/declaration.ts";
import type { Sql } from "./db.ts";

/** A module this control plane carries. */
export interface ShippedModule {
  name: string;
  /** Its declaration fragment (JSON, version 1). */
  body: string;
}

/**
 * Every shipped module. `mesh-host-state`: the host's state directory (`/var/lib/mesh/host`),
 * root's and private (0700), since it holds the footprint, the kept declaration and the journal.
 */
export const SHIPPED: readonly ShippedModule[] = [
  { name: "mesh-host-state", body: hostState },
];

/** What {@linkcode installShipped} did to one module. */
export interface ShippedChange {
  name: string;
  version: number;
  change: "created" | "updated" | "unchanged";
}

/**
 * Installs the shipped modules, each a new version when its content changed. A module of the same
 * name that is not shipped (handed over or built) is left alone and said.
 *
 * @throws {Error} when a shipped module does not parse (a defect of this build).
 */
export async function installShipped(
  sql: Sql,
): Promise<(ShippedChange | { name: string; skipped: string })[]> {
  const out: (ShippedChange | { name: string; skipped: string })[] = [];
  for (const m of SHIPPED) {
    parse(m.body);
    const digest = await declarationDigest(m.body);
    out.push(
      await sql.begin(async (tx) => {
        const [row] = await tx<{ version: number; digest: string; origin: string }[]>`
        select version, digest, origin from modules where name = ${m.name} for update`;
        if (row !== undefined && row.origin !== "shipped") {
          return {
            name: m.name,
            skipped: `a ${row.origin} module of that name exists; left alone`,
          };
        }
        if (row?.digest === digest) {
          return { name: m.name, version: row.version, change: "unchanged" as const };
        }
        const version = (row?.version ?? 0) + 1;
        await tx`
        insert into modules (name, version, digest, body, origin)
        values (${m.name}, ${version}, ${digest}, ${m.body}, 'shipped')
        on conflict (name) do update set version = excluded.version, digest = excluded.digest,
          body = excluded.body, updated_at = now()`;
        return {
          name: m.name,
          version,
          change: row === undefined ? "created" as const : "updated" as const,
        };
      }),
    );
  }
  return out;
}
