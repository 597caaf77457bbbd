/**
 * What render_test.ts and render_run_test.ts share: a registry's text from its services (a test
 * file cannot import another without registering that file's tests too).
 *
 * @module
 */

import { stringify } from "yaml";

/** A registry's `services`, by name, as written in the file. */
export type Services = Record<string, Record<string, unknown>>;

/** The YAML text of a version 1 registry holding `services` (the account `root`; `roots` if given). */
export function registryText(services: Services, roots?: string[]): string {
  return stringify({ version: 1, accounts: ["root"], ...(roots ? { roots } : {}), services });
}
