/**
 * The `package` resource type's schema: a package present. It has no generic applier: each
 * system applies packages its own way (systems/<system>/, e.g. systems/debian/package_dpkg.ts).
 *
 * @module
 */

import { z } from "zod";
import { PACKAGE_PATTERN } from "../../lib/resource_rules.ts";
import { Id } from "../../lib/resource_fields.ts";

/** `package`: a package present. Never upgraded, never uninstalled. */
export const Package = z.strictObject({
  id: Id,
  type: z.literal("package"),
  package: z.string().regex(PACKAGE_PATTERN, "Must be a package name"),
});
