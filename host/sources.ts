/**
 * The sources of a host's declarations, and how `reconcile` and `link` gather them:
 *
 * - `bundle`: the declaration carried in the binary (trusted);
 * - `link`: the last declaration the control plane sent (kept in `link/declaration.json` under
 *   the state directory; untrusted: no actions);
 * - local declarations: each `NAME.json` in the declarations directory
 *   (`/etc/mesh/declarations`) is source `NAME` (trusted, as a local file given to `apply`);
 * - `local`: what `mesh-host apply FILE` applies without `--source`.
 *
 * Each source owns its own footprint (host/store.ts); host/apply.ts applies them.
 *
 * @module
 */

import { join } from "../lib/path.ts";
import { messageOf } from "../lib/atomic.ts";
import { readRegularFile, readRegularTextFile } from "../lib/regular_file.ts";
import { readSource, type SourceInput } from "./apply.ts";
import type { Declaration } from "../lib/declaration.ts";
import {
  declarationDigest,
  MAX_DECLARATION_BYTES,
  MAX_KEPT_DECLARATION_BYTES,
  subjectOf,
} from "../lib/declaration_base.ts";
import {
  claimKey,
  type Locations,
  type Migration,
  type SourceName,
  type SourceOrigin,
} from "./store.ts";
import { SOURCE_NAME_MESSAGE, SOURCE_NAME_PATTERN } from "./source_name.ts";
import type { SystemName } from "./system.ts";

export { DEFAULT_DECLARATIONS_DIR } from "./options.ts";

/** Names no local declaration or `apply --source` may take: the host's own sources. */
export const RESERVED_SOURCES: readonly SourceName[] = ["bundle", "link"];

/** Why `name` cannot be a source an operator names, or undefined when it can. */
export function sourceNameProblem(name: string): string | undefined {
  if (!SOURCE_NAME_PATTERN.test(name)) return `source "${name}": ${SOURCE_NAME_MESSAGE}`;
  if (RESERVED_SOURCES.includes(name)) {
    return `source "${name}" is the host's own (${
      RESERVED_SOURCES.join(", ")
    } are reserved): name a local declaration otherwise`;
  }
  return undefined;
}

/**
 * Reads every local declaration in `dir` (each `NAME.json`, sorted by name) as source `NAME`.
 * A file that cannot be read or parsed, or whose name is not a source name an operator may use,
 * is a refused input carrying its problems (that source keeps its footprint untouched); other
 * files (not ending in `.json`, or hidden) are not declarations and are skipped. A missing
 * directory holds none.
 *
 * @throws {Error} "Cannot read declarations directory ..." when it exists and cannot be listed.
 */
export async function readLocalDeclarations(dir: string): Promise<SourceInput[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".") || !entry.name.endsWith(".json")) continue;
      names.push(entry.name);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw new Error(`Cannot read declarations directory "${dir}": ${messageOf(error)}`, {
      cause: error,
    });
  }
  const inputs: SourceInput[] = [];
  for (const file of names.sort()) {
    const name = file.slice(0, -".json".length);
    const path = join(dir, file);
    const bad = sourceNameProblem(name);
    // A file refused for its name is labelled by its file name ("bundle.json"), which no source
    // of this run has: it must not stand for the host's own `bundle` in the results.
    const refusedAs = async (message: string, label = name): Promise<SourceInput> => ({
      name: label,
      origin: "declarations",
      file: path,
      digest: await declarationDigest(""),
      refused: [{ message }],
    });
    if (bad !== undefined) {
      inputs.push(await refusedAs(`Cannot use local declaration "${path}": ${bad}`, file));
      continue;
    }
    let bytes: Uint8Array;
    try {
      bytes = await readRegularFile(path, { maxBytes: MAX_DECLARATION_BYTES });
    } catch (error) {
      inputs.push(
        await refusedAs(`Cannot read local declaration "${path}": ${messageOf(error)}`),
      );
      continue;
    }
    inputs.push(
      await readSource(bytes, { name, origin: "declarations", file: path, trusted: true }),
    );
  }
  return inputs;
}

/**
 * The carried bundle as source `bundle`, or undefined when the host carries none (or an empty
 * one); a bundle that is invalid is a refused input with the reason.
 */
export async function bundleSource(
  text: string | undefined,
  system: SystemName | undefined,
): Promise<{ input?: SourceInput; absent?: string }> {
  try {
    const { loadBundle } = await import("./bundle.ts");
    const bundle = await loadBundle(text, system);
    return {
      input: {
        name: "bundle",
        origin: "bundle",
        digest: bundle.digest,
        declaration: bundle.declaration,
      },
    };
  } catch (error) {
    const name = (error as Error).name;
    if (name === "NoBundleError" || name === "EmptyBundleError") {
      return { absent: messageOf(error) };
    }
    return {
      input: {
        name: "bundle",
        origin: "bundle",
        digest: await declarationDigest(text ?? ""),
        refused: [{ message: messageOf(error) }],
      },
    };
  }
}

/**
 * How the records of a store written before sources existed (format 1) are given a source:
 *
 * 1. a record that a source declares now, same type and subject, goes to that source: the link's
 *    kept declaration first, then the carried bundle, then each local declaration by name;
 * 2. any other record goes to the source that fed the state directory: `link` when it holds a
 *    kept link declaration (the link applied there), else `bundle` when the bundle declares any
 *    record of the store (the supervisor's `reconcile` applied there), else `local` (`apply
 *    FILE` applied there).
 *
 * Nothing is lost: every record keeps whether the host created it, and goes to exactly one
 * source; a record of rule 2 is removed only when that source is applied without it, as any
 * apply of the old single footprint would have removed it.
 */
export async function migrationFor(
  stateDir: string,
  options: { bundle?: Declaration; locals: SourceInput[] },
): Promise<Migration> {
  const claims: Migration["claims"] = [];
  const locations: Locations = new Map();
  const keysOf = (d: Declaration) =>
    new Set(d.resources.map((r) => claimKey(r.type, subjectOf(r), locations)));
  const kept = await keptLinkDeclaration(stateDir);
  if (kept !== undefined) claims.push({ source: "link", subjects: keysOf(kept) });
  if (options.bundle !== undefined) {
    claims.push({ source: "bundle", subjects: keysOf(options.bundle) });
  }
  for (const local of options.locals) {
    if (local.declaration !== undefined) {
      claims.push({ source: local.name, subjects: keysOf(local.declaration) });
    }
  }
  const linked = await Deno.stat(join(stateDir, "link", "declaration.json")).then(
    () => true,
    () => false,
  );
  return {
    claims,
    ...(linked ? { feeder: "link" } : {}),
    ...(options.bundle !== undefined ? { feederIfClaimed: "bundle" } : {}),
  };
}

/** The link's kept declaration, parsed, or undefined when there is none or it is unreadable. */
async function keptLinkDeclaration(stateDir: string): Promise<Declaration | undefined> {
  try {
    const text = await readRegularTextFile(join(stateDir, "link", "declaration.json"), {
      maxBytes: MAX_KEPT_DECLARATION_BYTES,
    });
    const message = JSON.parse(text) as { declaration?: unknown };
    if (typeof message.declaration !== "string") return undefined;
    const { parse } = await import("../lib/declaration.ts");
    return parse(message.declaration);
  } catch {
    return undefined;
  }
}

/** Where a file applied with `apply --source NAME FILE` comes from. */
export function originOfFile(
  file: string,
  name: SourceName,
  declarationsDir: string,
): SourceOrigin {
  return file === join(declarationsDir, `${name}.json`) ? "declarations" : "command";
}

/**
 * The link's kept declaration (`STATE/link/declaration.json`) as source `link`, untrusted (as the
 * link applies it), or undefined when the link has kept none. Read by `reconcile` on a node that
 * joined a mesh (host/joined.ts), whose own sources are its local declarations and this.
 *
 * @throws {StoreError} when the kept declaration exists and cannot be read (never taken as none).
 */
export async function keptLinkSource(stateDir: string): Promise<SourceInput | undefined> {
  const { readKept, LINK_DIR, KEPT_FILE } = await import("./link.ts");
  const kept = await readKept(join(stateDir, LINK_DIR, KEPT_FILE));
  if (kept === undefined) return undefined;
  const bytes = new TextEncoder().encode(kept.declaration);
  const digest = await declarationDigest(bytes);
  if (digest !== kept.digest) {
    return {
      name: "link",
      origin: "link",
      digest,
      refused: [{
        message:
          `The kept declaration's digest is ${digest}, not the ${kept.digest} it was sent with`,
      }],
    };
  }
  return await readSource(bytes, { name: "link", origin: "link", trusted: false });
}
