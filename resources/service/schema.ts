/**
 * The `service` resource type's schema: a unit's running state, and its boot state when `boot`
 * is given. Its applier is ./applier.ts (systemd: ./systemd.ts; OpenRC: ./openrc.ts).
 *
 * @module
 */

import { z } from "zod";
import { UNIT_PATTERN } from "../../lib/resource_rules.ts";
import { Id } from "../../lib/resource_fields.ts";

/** `service`: a unit's running state, and its boot state when `boot` is given. */
export const Service = z.strictObject({
  id: Id,
  type: z.literal("service"),
  unit: z.string().regex(UNIT_PATTERN, "Must be a unit or service name"),
  state: z.enum(["running", "stopped"]),
  boot: z.enum(["enabled", "disabled"]).optional(),
});
