/**
 * The `directory` resource type's schema: a directory with its mode (and owner and group when
 * given) maintained. Its applier is ./applier.ts.
 *
 * @module
 */

import { z } from "zod";
import { AbsolutePath, AccountRef, Id, Mode } from "../../lib/resource_fields.ts";

/** `directory`: a directory with its mode (and owner and group when given) maintained. */
export const Directory = z.strictObject({
  id: Id,
  type: z.literal("directory"),
  path: AbsolutePath,
  mode: Mode,
  owner: AccountRef.optional(),
  group: AccountRef.optional(),
});
