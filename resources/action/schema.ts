/**
 * The `action` resource type's schema (trusted input only): a command and the verify that is its
 * idempotency check. Its applier is ./applier.ts.
 *
 * @module
 */

import { z } from "zod";
import { Argv, ContainerName, Id } from "../../lib/resource_fields.ts";

/** `action` (trusted input only): a command and the verify that is its idempotency check. */
export const Action = z.strictObject({
  id: Id,
  type: z.literal("action"),
  command: Argv,
  verify: Argv,
  in: ContainerName.optional(),
});
