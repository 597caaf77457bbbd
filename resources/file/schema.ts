/**
 * The `file` resource type's schema: a regular file's content, mode (and owner and group when
 * given), all maintained. Its applier is ./applier.ts.
 *
 * @module
 */

import { z } from "zod";
import { AbsolutePath, AccountRef, Content, Id, Mode } from "../../lib/resource_fields.ts";

/** `file`: a regular file's content, mode (and owner and group when given), all maintained. */
export const File = z.strictObject({
  id: Id,
  type: z.literal("file"),
  path: AbsolutePath,
  content: Content,
  mode: Mode,
  owner: AccountRef.optional(),
  group: AccountRef.optional(),
});
