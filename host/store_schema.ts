/**
 * The store's zod schemas (host/store.ts): its file, format 2 and format 1, and the journal's
 * intents. Loaded only when a store is not accepted by the validator generated from `StoreFile`
 * (./store_validators.js, by scripts/validators.ts: a store of format 1, or one with a problem to
 * report) or a journal is replayed: a no-op apply loads no zod.
 *
 * @module
 */

import { z } from "zod";
import { SOURCE_NAME_MESSAGE, SOURCE_NAME_PATTERN } from "./source_name.ts";
import { RESOURCE_TYPES } from "../lib/declaration.ts";
import { record } from "../lib/zod_record.ts";

/** A source's name: `bundle`, `link`, `local`, or a local declaration's file name without `.json`. */
export const SourceName = z.string().regex(SOURCE_NAME_PATTERN, SOURCE_NAME_MESSAGE);
/**
 * What a path was before this host first applied it (a takeover), saved so that it can be put
 * back when the resource leaves. A file's content is a copy under the state directory.
 */
export const Original = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("file"),
    mode: z.number().int(),
    uid: z.number().int(),
    gid: z.number().int(),
    /** The copy of the content, relative to the state directory (`originals/<sha256>`). */
    copy: z.string(),
  }),
  z.strictObject({
    kind: z.literal("directory"),
    mode: z.number().int(),
    uid: z.number().int(),
    gid: z.number().int(),
  }),
]);
/** What a path was before this host took it over. */
export type Original = z.output<typeof Original>;

/** One thing in the footprint. */
export const FootprintEntry = z.strictObject({
  /** The source that applied it: only that source ever removes it. */
  source: SourceName,
  id: z.string(),
  type: z.enum(RESOURCE_TYPES),
  /** What it is on the machine: a path, unit, package, container name, or the action's id. */
  subject: z.string(),
  /** Whether this host created it (only what it created is ever removed). */
  created: z.boolean(),
  /** When this host last changed it (created or updated it), ISO 8601. */
  applied: z.string(),
  /** What it was before this host took it over (present for a takeover that was saved). */
  original: Original.optional(),
});
/** One footprint entry. */
export type FootprintEntry = z.output<typeof FootprintEntry>;

/** Where a source's declaration comes from; `declarations` sources leave with their file. */
export const SourceOrigin = z.enum(["bundle", "link", "declarations", "command"]);
/** Where a source's declaration comes from. */
export type SourceOrigin = z.output<typeof SourceOrigin>;

/** What the store knows of one source besides its records. */
export const SourceInfo = z.strictObject({
  origin: SourceOrigin,
  /** The file it was last applied from (a local declaration or `apply --source NAME FILE`). */
  file: z.string().optional(),
  /** sha256 of the declaration last applied, `sha256:<hex>`. */
  declaration: z.string(),
  /** When it was last applied, ISO 8601. */
  applied: z.string(),
});
/** What the store knows of one source. */
export type SourceInfo = z.output<typeof SourceInfo>;

/** Format 1, written before sources existed: one footprint per state directory. */
export const EntryV1 = FootprintEntry.omit({ source: true, original: true });
export const StoreFileV1 = z.strictObject({
  version: z.literal(1),
  resources: z.array(EntryV1),
});

export const StoreFile = z.strictObject({
  version: z.literal(2),
  /**
   * The sources that applied something here, by name. A source named `__proto__` (an own key, as
   * JSON.parse makes it) is refused as any other name that is not a source's, not skipped
   * unchecked as by zod's own record (lib/zod_record.ts).
   */
  sources: record(SourceName, SourceInfo),
  /** In the order they were applied. */
  resources: z.array(FootprintEntry),
});

export const Intent = z.strictObject({
  /** Absent in a journal written before sources existed. */
  source: SourceName.optional(),
  id: z.string(),
  type: FootprintEntry.shape.type,
  subject: z.string(),
  /** Present for a takeover: the path exists and was saved; it is not this host's creation. */
  original: Original.optional(),
});
/** A creation about to happen, journaled. */
export type Intent = z.output<typeof Intent>;
